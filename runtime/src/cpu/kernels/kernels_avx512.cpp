// The AVX-512 kernel set: the AVX2 micro-kernel with 16 lanes (panels of 32 outputs = 2 zmm),
// the same accumulator layout and k order. Packing, input conversion, the split-k add and the
// output conversion are the AVX2 ones (an AVX-512 CPU has AVX2; isa_supported(kAvx512)
// requires both), called through avx2_kernel_set().
#include "cpu/kernels/kernel_set.h"

#if VTRACE_X86_KERNELS
#include <immintrin.h>

#define VTRACE_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,fma,f16c")))

namespace vtrace::runtime::cpu::kernels {

namespace {

constexpr std::size_t kNr = 32;

template <std::size_t MR, std::size_t NP>
VTRACE_AVX512 void micro(const float* a, std::size_t lda, const float* b,
                         std::size_t panel_stride, std::size_t kc, float* c, std::size_t ldc,
                         bool accumulate) {
  __m512 acc[MR][NP][2];
#pragma GCC unroll 8
  for (std::size_t r = 0; r < MR; ++r) {
#pragma GCC unroll 8
    for (std::size_t p = 0; p < NP; ++p) {
#pragma GCC unroll 2
      for (std::size_t v = 0; v < 2; ++v) {
        acc[r][p][v] = accumulate ? _mm512_loadu_ps(c + r * ldc + p * kNr + v * 16)
                                  : _mm512_setzero_ps();
      }
    }
  }
  for (std::size_t k = 0; k < kc; ++k) {
    __m512 bv[NP][2];
#pragma GCC unroll 8
    for (std::size_t p = 0; p < NP; ++p) {
      bv[p][0] = _mm512_loadu_ps(b + p * panel_stride + k * kNr);
      bv[p][1] = _mm512_loadu_ps(b + p * panel_stride + k * kNr + 16);
    }
#pragma GCC unroll 8
    for (std::size_t r = 0; r < MR; ++r) {
      const __m512 x = _mm512_set1_ps(a[r * lda + k]);
#pragma GCC unroll 8
      for (std::size_t p = 0; p < NP; ++p) {
        acc[r][p][0] = _mm512_fmadd_ps(x, bv[p][0], acc[r][p][0]);
        acc[r][p][1] = _mm512_fmadd_ps(x, bv[p][1], acc[r][p][1]);
      }
    }
  }
#pragma GCC unroll 8
  for (std::size_t r = 0; r < MR; ++r) {
#pragma GCC unroll 8
    for (std::size_t p = 0; p < NP; ++p) {
      _mm512_storeu_ps(c + r * ldc + p * kNr, acc[r][p][0]);
      _mm512_storeu_ps(c + r * ldc + p * kNr + 16, acc[r][p][1]);
    }
  }
}

// The micro-kernels of this path, for fill_micro (kernel_set.h).
struct Micro {
  template <std::size_t MR, std::size_t NP>
  static MicroFn get() {
    return &micro<MR, NP>;
  }
};

KernelSet make_set() {
  KernelSet set = avx2_kernel_set();  // convert, pack (takes nr), add, store_output
  set.nr = kNr;
  fill_micro<Micro>(set);
  return set;
}

}  // namespace

const KernelSet& avx512_kernel_set() {
  static const KernelSet set = make_set();
  return set;
}

}  // namespace vtrace::runtime::cpu::kernels

#endif  // VTRACE_X86_KERNELS
