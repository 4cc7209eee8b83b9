// The strict CUDA kernel's per-element arithmetic, written once for the device and the host.
//
// Every function here is `VTRACE_HD` (__host__ __device__ under nvcc, plain inline under g++),
// so the kernels (kernels_device.h) call exactly the code that tests/runtime/cuda_arith_test.cpp
// runs on the host against the reference runtime's dense-linear kernel (the fmaf step on random
// f16 operands; the kernels themselves, through a shim, on randomized shapes with odd tails).
//
// Why the strict kernel equals the reference bit for bit (spec 11.1): the reference computes
// acc = acc + (a * w) with a multiply and an add, each rounded to f32. a and w are f16 values
// (11-bit significands), so a * w has at most 22 significant bits and an exponent within f32's
// normal range (2^-48 .. 2^32): the product is exact in f32. fmaf(a, w, acc) rounds a * w + acc
// once; the reference rounds the exact product (a no-op) and then the sum once: the same value,
// NaN, infinity and signed zero included. One accumulator per output from +0, k ascending, no k
// split, then the f32 -> f16 conversion (round to nearest even; NaN written as 0x7E00): that
// one is vtrace/runtime/f16_bits.h's, the very code the reference's f16.h runs. The f16 -> f32
// staging of the operands is staged_value below (exact; only NaN payloads are the hardware's).
//
// Thread rules: pure functions. Errors: none (every bit pattern has a defined result).
#pragma once

#include <cstddef>
#include <cstdint>

#include "vtrace/runtime/f16_bits.h"  // VTRACE_HD and the conversions, the reference's own code

namespace vtrace::runtime::cuda::strict {

// The bit pattern of every output whose accumulator is NaN (the reference's, open question 15.3).
inline constexpr std::uint16_t kNanOutput = 0x7E00;

// The tile sizes of the two strict kernels (kernels_device.h): the decode kernel (rows <=
// kDecodeMaxRows, kDecodeTileOut outputs per block) walks k in tiles of its DecodeConfig's
// kTileK, the tiled kernel in tiles of kTiledTileK. Inside a tile each output still adds its
// products k ascending, and tiles are visited in ascending order, so the order is the
// reference's.
inline constexpr int kDecodeMaxRows = 8;
inline constexpr int kDecodeTileOut = 32;
inline constexpr int kTiledTileK = 16;
inline constexpr int kTiledTileRows = 64;
inline constexpr int kTiledTileOut = 64;

// One step of an output's reduction: acc + a * w with one rounding (the product is exact).
VTRACE_HD inline float accumulate(float acc, float a, float w) {
#ifdef __CUDA_ARCH__
  return __fmaf_rn(a, w, acc);
#else
  return __builtin_fmaf(a, w, acc);
#endif
}

// The f32 value of an operand's f16 bits, as the kernels stage it. On the device, the hardware
// conversion (cvt.f32.f16, one instruction where f16_bits::to_f32 takes about 25 with its
// branches: staging is most of the decode kernel's instructions): like to_f32 it is exact for
// every number, subnormals included, and for both infinities and signed zeros, and it turns a NaN
// into a NaN, but the NaN's payload bits are the hardware's. Those bits never reach an output: a
// NaN operand makes its product NaN, then the accumulator, which output_bits writes as
// kNanOutput whatever its payload. So the outputs equal the reference's bit for bit either way
// (the conformance suite checks every f16 pattern on the device). On the host (where the tests
// run the kernels' code through a shim), f16_bits::to_f32.
VTRACE_HD inline float staged_value(std::uint16_t bits) {
#ifdef __CUDA_ARCH__
  float value;
  asm("cvt.f32.f16 %0, %1;" : "=f"(value) : "h"(bits));
  return value;
#else
  return f16_bits::to_f32(bits);
#endif
}

// The accumulator written as the output's f16 bits: NaN as kNanOutput, else f16_bits::from_f32.
VTRACE_HD inline std::uint16_t output_bits(float acc) {
  return acc != acc ? kNanOutput : f16_bits::from_f32(acc);
}

// --- The tiles (kernels_device.h) ------------------------------------------------------------
// Both strict kernels stage a tile of k into shared memory (the tiled kernel as f32; the decode
// kernel its inputs as f32 and its weights as f16 bits, converted with staged_value as they are
// used) and then let each output's thread add the tile's products k ascending into its
// accumulator, tiles in ascending order. The tiled kernel's layout and the group reduction are
// these functions, called by the kernels, whose code the tests also run on the host
// (cuda_host_shim.h) against the reference: a staging or walking bug that reorders or drops a k
// shows up there.

// The number of valid k in the tile starting at k0 (the last tile of an odd k is short).
VTRACE_HD inline int tile_count(long k, long k0, int tile_k) {
  return k - k0 < tile_k ? static_cast<int>(k - k0) : tile_k;
}

// Adds a group's products to one output, k ascending: a and w hold 8 consecutive k of the
// output's input line and weight line.
VTRACE_HD inline float reduce_group(float acc, const float (&a)[8], const float (&w)[8]) {
  for (int e = 0; e < 8; ++e) acc = accumulate(acc, a[e], w[e]);
  return acc;
}

// Tiled kernel: a tile holds kTiledTileK k-slices; slice kk holds kTiledTileRows input values
// and kTiledTileOut weight values (transposed, so a thread's micro-tile reads consecutive floats).
inline constexpr int kTiledMicroRows = 4;
inline constexpr int kTiledMicroOut = 8;
inline constexpr int kTiledThreads =
    (kTiledTileRows / kTiledMicroRows) * (kTiledTileOut / kTiledMicroOut);
inline constexpr int kTiledAStride = kTiledTileRows + 4;
inline constexpr int kTiledWStride = kTiledTileOut + 4;
VTRACE_HD inline int tiled_a_slot(int kk, int row) { return kk * kTiledAStride + row; }
VTRACE_HD inline int tiled_w_slot(int kk, int out) { return kk * kTiledWStride + out; }

// Which kernel takes more than kDecodeMaxRows rows: the tiled kernel, which the runtime
// launches, or a configuration of the pipelined kernel (kernels_device.h), a candidate for its
// place that bench_cuda.cpp measures beside it on a GPU. Each name says the block's outputs
// (rows x outputs), each thread's, and the k per tile.
enum class Prefill : std::uint8_t {
  kTiled,
  kPipelined64x64Micro4x4K32,
  kPipelined32x64Micro4x4K32,
  kPipelined64x64Micro4x8K32,
};
// The one the runtime launches (kernels.h's default). A candidate takes this place once a GPU
// run has timed it faster (bench_cuda.cpp); the conformance suite then checks it on the device.
inline constexpr Prefill kRuntimePrefill = Prefill::kTiled;

// Which kernel takes 1 to kDecodeMaxRows rows: the decode kernel, which the runtime launches
// (each row's warp converts every weight as it uses it), or a configuration of the converted
// decode kernel (kernels_device.h: each operand converted once per block into f32 tiles), a
// candidate for its place that bench_cuda.cpp measures beside it on a GPU. Each name says a
// reducing warp's rows x outputs (one output per lane, or two), or that its rows fit the launch's
// (FitRows: 1 x 32 at 1 row, 2 x 16 at 2, 4 x 8 at 3 and 4, 8 x 4 at 5 to 8).
enum class Decode : std::uint8_t {
  kStreaming,
  kConvertedWarp8x4,
  kConvertedWarp8x8,
  kConvertedFitRows,
};
// The one the runtime launches (kernels.h's default); promoted as kRuntimePrefill is.
inline constexpr Decode kRuntimeDecode = Decode::kStreaming;
// The kernels one launch takes: the runtime's by default; bench_cuda.cpp names candidates.
struct KernelChoice {
  Prefill prefill = kRuntimePrefill;
  Decode decode = kRuntimeDecode;
};

template <int TileRows, int TileOut, int MicroRows, int MicroOut, int TileK>
struct PipelinedConfig {
  static constexpr int kTileRows = TileRows;
  static constexpr int kTileOut = TileOut;
  static constexpr int kMicroRows = MicroRows;
  static constexpr int kMicroOut = MicroOut;
  static constexpr int kTileK = TileK;
};
// A reducing warp's lanes are row_lanes(rows) rows of 32 / row_lanes(rows) outputs each (a lane
// past the last row computes a copy of the last row's sums): kDecodeMaxRows rows whatever the
// launch's, or with FitRows the launch's rows rounded up to a power of two, so that at 1 row
// every lane of a reducing warp is an output of its own (1 reducing warp per block, not 8).
template <int OutsPerLane, int TileK, int Stages, int ConvertWarps, bool FitRows = false>
struct ConvertedConfig {
  static constexpr int kOutsPerLane = OutsPerLane;
  static constexpr int kTileK = TileK;
  static constexpr int kStages = Stages;
  static constexpr int kConvertWarps = ConvertWarps;
  static constexpr int row_lanes(int rows) {
    if (!FitRows) return kDecodeMaxRows;
    int lanes = 1;
    while (lanes < rows) lanes *= 2;
    return lanes;
  }
};
// Calls f(ConvertedConfig<...>{}) with the configuration `decode` names and answers true;
// answers false, calling nothing, for kStreaming (or a value outside the enumeration). The
// warps of 8 rows take tiles of 256 k through 3 stages, converted by 4 warps beside the 8 or 4
// reducing ones. FitRows takes tiles of 128 k through 4 stages, so that at 1 row a block's
// shared memory (68,640 bytes) lets three blocks share an SM, as the decode kernel's do: every
// block of the 1 x 4096 x 11008 shape at once, one reducing warp each.
template <typename F>
bool with_converted_config(Decode decode, F&& f) {
  switch (decode) {
    case Decode::kConvertedWarp8x4:
      f(ConvertedConfig<1, 256, 3, 4>{});
      return true;
    case Decode::kConvertedWarp8x8:
      f(ConvertedConfig<2, 256, 3, 4>{});
      return true;
    case Decode::kConvertedFitRows:
      f(ConvertedConfig<1, 128, 4, 4, true>{});
      return true;
    case Decode::kStreaming:
      break;
  }
  return false;
}
// Calls f(PipelinedConfig<...>{}) with the configuration `prefill` names and answers true;
// answers false, calling nothing, for kTiled (or a value outside the enumeration).
template <typename F>
bool with_pipelined_config(Prefill prefill, F&& f) {
  switch (prefill) {
    case Prefill::kPipelined64x64Micro4x4K32:
      f(PipelinedConfig<64, 64, 4, 4, 32>{});
      return true;
    case Prefill::kPipelined32x64Micro4x4K32:
      f(PipelinedConfig<32, 64, 4, 4, 32>{});
      return true;
    case Prefill::kPipelined64x64Micro4x8K32:
      f(PipelinedConfig<64, 64, 4, 8, 32>{});
      return true;
    case Prefill::kTiled:
      break;
  }
  return false;
}

// One k-slice of a thread's micro-tile of Rows x Outs outputs (the tiled kernel's and the
// pipelined kernel's): every accumulator adds its product (k ascending across calls). a: the
// slice's Rows inputs, w: its Outs weights.
template <std::size_t Rows, std::size_t Outs>
VTRACE_HD inline void micro_step(float (&acc)[Rows][Outs], const float* a, const float* w) {
  for (std::size_t i = 0; i < Rows; ++i) {
    for (std::size_t j = 0; j < Outs; ++j) acc[i][j] = accumulate(acc[i][j], a[i], w[j]);
  }
}

}  // namespace vtrace::runtime::cuda::strict
