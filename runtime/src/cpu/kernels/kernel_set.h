// The per-ISA building blocks of the dense-linear engine (private to vtrace_runtime).
//
// The engine (dense_linear_engine.cpp) owns the blocking, the scratch and the threads; a
// KernelSet supplies the few loops that touch the data, one set per instruction path:
//  - convert_input: f16 bytes -> f32 (the activations, once per launch);
//  - pack_weight: a block of nb weight rows (output features) x kc k-values -> panels of `nr`
//    outputs laid out [panel][k][nr] f32 (lanes past nb are zero), so the micro-kernel loads
//    contiguous vectors across outputs. `next` (or null) is the same rows' next k-tile, at least
//    kc long: the SIMD sets prefetch it while they pack, since the walk over a block's rows (each
//    visited kc values at a time) defeats the hardware prefetchers;
//  - micro[mr-1][np-1]: mr rows x (np panels of nr outputs) over kc k-values, k ascending, one
//    f32 accumulator per output (FMA; the product of two f16 values is exact in f32). It starts
//    from +0 (accumulate=false) or from the f32 values in `c` (accumulate=true), and stores the
//    accumulators back to `c` exactly, so k-tiles chain without changing the order of additions;
//  - add: left[i] = left[i] + right[i] (the split-k tree);
//  - store_output: f32 accumulators -> f16 bytes, round to nearest even, NaN -> 0x7E00.
// Every set gives the same bits as the portable one. Thread rules: pure functions on the buffers
// they are given. Pointers to f16 bytes have no alignment guarantee; f32 buffers are the
// engine's scratch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "cpu/dense_linear_cpu.h"  // Isa

namespace vtrace::runtime::cpu::kernels {

inline constexpr std::size_t kMaxMr = 6;  // rows per micro-kernel call
inline constexpr std::size_t kMaxNp = 4;  // panels per micro-kernel call

using MicroFn = void (*)(const float* a, std::size_t lda, const float* b, std::size_t panel_stride,
                         std::size_t kc, float* c, std::size_t ldc, bool accumulate);

struct KernelSet {
  std::size_t nr = 0;                  // outputs per packed panel
  std::size_t np_for_mr[kMaxMr] = {};  // panels per micro-kernel call, by rows (index mr-1)
  void (*convert_input)(const std::uint8_t* src, float* dst, std::size_t n) = nullptr;
  void (*pack_weight)(const std::uint8_t* weight, std::size_t ldw, std::size_t nb, std::size_t kc,
                      float* dst, std::size_t panel_stride, std::size_t nr,
                      const std::uint8_t* next) = nullptr;
  MicroFn micro[kMaxMr][kMaxNp] = {};
  void (*add)(float* left, const float* right, std::size_t n) = nullptr;
  void (*store_output)(const float* acc, std::uint8_t* out, std::size_t n) = nullptr;
};

// Fills set.micro from an instruction path's micro-kernel template: Micro::get<MR, NP>() returns
// its kernel for MR rows x NP panels (each file wraps its own `micro<MR, NP>` in such a struct).
template <typename Micro, std::size_t... Row>
void fill_micro(KernelSet& set, std::index_sequence<Row...> /*rows*/ = {}) {
  if constexpr (sizeof...(Row) == 0) {
    fill_micro<Micro>(set, std::make_index_sequence<kMaxMr>{});
  } else {
    ((set.micro[Row][0] = Micro::template get<Row + 1, 1>(),
      set.micro[Row][1] = Micro::template get<Row + 1, 2>(),
      set.micro[Row][2] = Micro::template get<Row + 1, 3>(),
      set.micro[Row][3] = Micro::template get<Row + 1, 4>()),
     ...);
  }
}

// The x86 sets exist only where the compiler targets x86 (their files compile to nothing
// elsewhere, and isa_supported says only portable is): the portable path builds anywhere.
// VTRACE_PORTABLE_KERNELS_ONLY makes an x86 compiler see these files as any other target's
// does: tests/runtime/portable_kernels_build_test.sh compiles them so, warnings as errors.
#if (defined(__x86_64__) || defined(__i386__)) && !defined(VTRACE_PORTABLE_KERNELS_ONLY)
#define VTRACE_X86_KERNELS 1
#else
#define VTRACE_X86_KERNELS 0
#endif

// Each defined in its own file; only call the one whose ISA is supported (isa_supported).
const KernelSet& portable_kernel_set();  // kernels_portable.cpp
#if VTRACE_X86_KERNELS
const KernelSet& avx2_kernel_set();      // kernels_avx2.cpp
const KernelSet& avx512_kernel_set();    // kernels_avx512.cpp (reuses the AVX2 pack/convert)
#endif
// The set of an instruction path (dense_linear_engine.cpp): one of the three above (portable for
// every path where VTRACE_X86_KERNELS is 0).
const KernelSet& kernel_set(Isa isa);

}  // namespace vtrace::runtime::cpu::kernels
