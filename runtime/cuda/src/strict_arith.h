// The strict CUDA kernel's per-element arithmetic, written once for the device and the host.
//
// Every function here is `VTRACE_HD` (__host__ __device__ under nvcc, plain inline under g++),
// so the kernels in kernels.cu call exactly the code that tests/runtime/cuda_arith_test.cpp runs
// on the host against the reference runtime's dense-linear kernel (the fmaf step on random f16
// operands; randomized shapes with odd tails; the kernels' tile order).
//
// Why the strict kernel equals the reference bit for bit (spec 11.1): the reference computes
// acc = acc + (a * w) with a multiply and an add, each rounded to f32. a and w are f16 values
// (11-bit significands), so a * w has at most 22 significant bits and an exponent within f32's
// normal range (2^-48 .. 2^32): the product is exact in f32. fmaf(a, w, acc) rounds a * w + acc
// once; the reference rounds the exact product (a no-op) and then the sum once: the same value,
// NaN, infinity and signed zero included. One accumulator per output from +0, k ascending, no k
// split, then the f32 -> f16 conversion (round to nearest even; NaN written as 0x7E00). The
// conversions are vtrace/runtime/f16_bits.h's: the very code the reference's f16.h runs.
//
// Thread rules: pure functions. Errors: none (every bit pattern has a defined result).
#pragma once

#include <cstdint>
#include <vector>

#include "vtrace/runtime/f16_bits.h"  // VTRACE_HD and the conversions, the reference's own code

namespace vtrace::runtime::cuda::strict {

// The bit pattern of every output whose accumulator is NaN (the reference's, open question 15.3).
inline constexpr std::uint16_t kNanOutput = 0x7E00;

// The tile sizes of the two strict kernels (kernels.cu): the decode kernel (rows <= kDecodeMaxRows)
// walks k in tiles of kDecodeTileK, the tiled kernel in tiles of kTiledTileK. Inside a tile each
// output still adds its products k ascending, and tiles are visited in ascending order, so the
// order is the reference's; host_tiled_accumulate() below replays that walk for the tests.
inline constexpr int kDecodeMaxRows = 8;
inline constexpr int kDecodeTileK = 128;
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

// The accumulator written as the output's f16 bits: NaN as kNanOutput, else f16_bits::from_f32.
VTRACE_HD inline std::uint16_t output_bits(float acc) {
  return acc != acc ? kNanOutput : f16_bits::from_f32(acc);
}

// --- The tiles (kernels.cu) ------------------------------------------------------------------
// Both strict kernels stage a tile of k into shared memory as f32 (f16_to_f32 at staging) and
// then let each output's thread add the tile's products k ascending into its accumulator, tiles
// in ascending order. The layout of a staged tile and the per-tile reduction are these functions,
// called by the kernels and by the host emulations below, which the tests compare with the
// reference: a staging or walking bug that reorders or drops a k shows up on the host.

// The number of valid k in the tile starting at k0 (the last tile of an odd k is short).
VTRACE_HD inline int tile_count(long k, long k0, int tile_k) {
  return k - k0 < tile_k ? static_cast<int>(k - k0) : tile_k;
}

// Decode kernel: a tile holds kDecodeTileOut weight rows and up to kDecodeMaxRows input rows,
// each as kDecodeStride floats (kDecodeTileK and a pad that keeps float4 reads conflict-free).
inline constexpr int kDecodeStride = kDecodeTileK + 4;
VTRACE_HD inline int decode_slot(int line, int kk) { return line * kDecodeStride + kk; }

// Adds a staged tile's products to one output: a and w point at the output's input line and
// weight line of the tile (consecutive k), count valid k.
VTRACE_HD inline float reduce_tile(float acc, const float* a, const float* w, int count) {
  for (int kk = 0; kk < count; ++kk) acc = accumulate(acc, a[kk], w[kk]);
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

// One k-slice of a thread's micro-tile: every accumulator adds its product (k ascending across
// calls). a: the slice's kTiledMicroRows inputs, w: its kTiledMicroOut weights.
VTRACE_HD inline void micro_step(float (&acc)[kTiledMicroRows][kTiledMicroOut], const float* a,
                                 const float* w) {
  for (int i = 0; i < kTiledMicroRows; ++i) {
    for (int j = 0; j < kTiledMicroOut; ++j) acc[i][j] = accumulate(acc[i][j], a[i], w[j]);
  }
}

// --- Host emulations of the kernels' walks (tests only; no device code) --------------------------
#ifndef __CUDA_ARCH__

// The decode kernel on the host: out[rows][out] from f16 bits, rows <= kDecodeMaxRows, staged
// tile by tile through decode_slot and reduced with reduce_tile, one block of kDecodeTileOut
// outputs at a time. `out` holds rows * out_features f16 bits.
inline void host_emulate_decode(const std::uint16_t* in, const std::uint16_t* w, std::uint16_t* out,
                                int rows, long k, long out_features) {
  std::vector<float> tile_a_store(kDecodeMaxRows * kDecodeStride);
  std::vector<float> tile_w_store(kDecodeTileOut * kDecodeStride);
  float* tile_a = tile_a_store.data();
  float* tile_w = tile_w_store.data();
  for (long block = 0; block < out_features; block += kDecodeTileOut) {
    float acc[kDecodeMaxRows][kDecodeTileOut] = {};
    for (long k0 = 0; k0 < k; k0 += kDecodeTileK) {
      const int count = tile_count(k, k0, kDecodeTileK);
      for (int r = 0; r < rows; ++r) {
        for (int kk = 0; kk < count; ++kk)
          tile_a[decode_slot(r, kk)] = f16_bits::to_f32(in[r * k + k0 + kk]);
      }
      for (int c = 0; c < kDecodeTileOut && block + c < out_features; ++c) {
        for (int kk = 0; kk < count; ++kk) {
          tile_w[decode_slot(c, kk)] = f16_bits::to_f32(w[(block + c) * k + k0 + kk]);
        }
      }
      for (int r = 0; r < rows; ++r) {
        for (int c = 0; c < kDecodeTileOut && block + c < out_features; ++c) {
          acc[r][c] =
              reduce_tile(acc[r][c], &tile_a[decode_slot(r, 0)], &tile_w[decode_slot(c, 0)], count);
        }
      }
    }
    for (int r = 0; r < rows; ++r) {
      for (int c = 0; c < kDecodeTileOut && block + c < out_features; ++c) {
        out[r * out_features + block + c] = output_bits(acc[r][c]);
      }
    }
  }
}

// The tiled kernel on the host: blocks of kTiledTileRows x kTiledTileOut outputs, each thread's
// kTiledMicroRows x kTiledMicroOut micro-tile (rows ty * 4 + i, outputs tx * 8 + j, as in
// kernels.cu), staged through tiled_a_slot/tiled_w_slot and stepped with micro_step.
inline void host_emulate_tiled(const std::uint16_t* in, const std::uint16_t* w, std::uint16_t* out,
                               long rows, long k, long out_features) {
  constexpr int kThreadRows = kTiledTileRows / kTiledMicroRows;  // 16
  constexpr int kThreadCols = kTiledTileOut / kTiledMicroOut;    // 8
  std::vector<float> tile_a_store(kTiledTileK * kTiledAStride);
  std::vector<float> tile_w_store(kTiledTileK * kTiledWStride);
  float* tile_a = tile_a_store.data();
  float* tile_w = tile_w_store.data();
  using MicroTile = float[kTiledMicroRows][kTiledMicroOut];
  std::vector<MicroTile> acc_store(kThreadRows * kThreadCols);
  MicroTile* acc = acc_store.data();
  for (long row0 = 0; row0 < rows; row0 += kTiledTileRows) {
    for (long col0 = 0; col0 < out_features; col0 += kTiledTileOut) {
      for (MicroTile& tile : acc_store) {
        for (auto& line : tile) {
          for (float& v : line) v = +0.0f;
        }
      }
      for (long k0 = 0; k0 < k; k0 += kTiledTileK) {
        const int count = tile_count(k, k0, kTiledTileK);
        for (int kk = 0; kk < count; ++kk) {
          for (int m = 0; m < kTiledTileRows; ++m) {
            tile_a[tiled_a_slot(kk, m)] =
                row0 + m < rows ? f16_bits::to_f32(in[(row0 + m) * k + k0 + kk]) : 0.0f;
          }
          for (int n = 0; n < kTiledTileOut; ++n) {
            tile_w[tiled_w_slot(kk, n)] =
                col0 + n < out_features ? f16_bits::to_f32(w[(col0 + n) * k + k0 + kk]) : 0.0f;
          }
        }
        for (int ty = 0; ty < kThreadRows; ++ty) {
          for (int tx = 0; tx < kThreadCols; ++tx) {
            for (int kk = 0; kk < count; ++kk) {
              // As the kernel reads them: consecutive floats from the micro-tile's first slot.
              micro_step(acc[ty * kThreadCols + tx],
                         &tile_a[tiled_a_slot(kk, ty * kTiledMicroRows)],
                         &tile_w[tiled_w_slot(kk, tx * kTiledMicroOut)]);
            }
          }
        }
      }
      for (int ty = 0; ty < kThreadRows; ++ty) {
        for (int tx = 0; tx < kThreadCols; ++tx) {
          for (int i = 0; i < kTiledMicroRows; ++i) {
            for (int j = 0; j < kTiledMicroOut; ++j) {
              const long r = row0 + ty * kTiledMicroRows + i;
              const long o = col0 + tx * kTiledMicroOut + j;
              if (r < rows && o < out_features)
                out[r * out_features + o] = output_bits(acc[ty * kThreadCols + tx][i][j]);
            }
          }
        }
      }
    }
  }
}

#endif  // __CUDA_ARCH__

}  // namespace vtrace::runtime::cuda::strict
