// The strict dense-linear kernels' device code (kernels.h says what they compute), included by
// kernels.cu, which nvcc compiles and which launches them, and by
// tests/runtime/cuda_kernels_host_test.cpp, which compiles this very code for the host through
// tests/runtime/cuda_host_shim.h (one std::thread per CUDA thread, a barrier for __syncthreads) and
// checks each kernel's indexing, staging ring and tails against the reference without a GPU. So
// this header uses only what that shim provides: threadIdx, blockIdx, __shared__, __align__,
// __syncthreads, __ldg, uint4, float4, make_uint4, make_float4, __global__, __device__,
// __launch_bounds__, and on the host only, check_vector_access (16-byte accesses aligned).
//
// The per-element arithmetic, the tile layouts and the per-tile reductions are strict_arith.h's.
// Parallelism is over outputs only: each output's accumulator lives in one thread and sees k
// ascending, one tile after the other.
//
// Thread rules: CUDA kernels (one launch per call of kernels.cu's launchers). Errors: none here.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "strict_arith.h"

// Full unrolling where nvcc compiles this (the ring slots must be constants to live in
// registers); nothing on the host, where it is a test of the indexing.
#ifdef __CUDACC__
#define VTRACE_UNROLL _Pragma("unroll")
#else
#define VTRACE_UNROLL
#endif

namespace vtrace::runtime::cuda::kernels::device {

using namespace vtrace::runtime::cuda::strict;

constexpr int kGroup = 8;  // f16 elements per staged group (16 bytes, one vector load)

// Eight f16 bit patterns of one line, from `valid` (1..8) elements at `p`. With `vec` (16-byte
// aligned group) one 16-byte load; otherwise byte loads (any alignment); missing ones are 0.
__device__ inline uint4 load_group(const std::uint8_t* p, int valid, bool vec) {
  if (vec && valid == kGroup) return __ldg(reinterpret_cast<const uint4*>(p));
  std::uint32_t h[kGroup] = {};
  for (int e = 0; e < valid; ++e) h[e] = p[2 * e] | (static_cast<std::uint32_t>(p[2 * e + 1]) << 8);
  return make_uint4(h[0] | (h[1] << 16), h[2] | (h[3] << 16), h[4] | (h[5] << 16),
                    h[6] | (h[7] << 16));
}

// Where g++ compiles this header (the test, through the shim): the shim's check that a 16-byte
// access is 16-byte aligned, which the device requires and a host memcpy would not. Nothing in
// nvcc's host pass, which never runs device code.
__device__ inline void host_check_vector_access(const void* p) {
#ifndef __CUDACC__
  ::vtrace::cuda_host_shim::check_vector_access(p);
#else
  (void)p;
#endif
}

// Four floats of shared memory at a 16-byte aligned address, as one 16-byte access. On the
// device a float4 access; on the host (the shim) a memcpy, so the test's build reads the floats
// through no other type, after the shim's check that the address is aligned as the device needs.
__device__ inline float4 load_float4(const float* p) {
#ifdef __CUDA_ARCH__
  return *reinterpret_cast<const float4*>(p);
#else
  host_check_vector_access(p);
  float4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
#endif
}
__device__ inline void store_float4(float* p, const float4& v) {
#ifdef __CUDA_ARCH__
  *reinterpret_cast<float4*>(p) = v;
#else
  host_check_vector_access(p);
  std::memcpy(p, &v, sizeof v);
#endif
}

__device__ inline std::uint16_t group_element(const uint4& g, int e) {
  const std::uint32_t word = e < 2 ? g.x : e < 4 ? g.y : e < 6 ? g.z : g.w;
  return static_cast<std::uint16_t>((e & 1) != 0 ? word >> 16 : word & 0xFFFFu);
}

__device__ inline void store_output(std::uint8_t* out, long long element, float acc) {
  const std::uint16_t bits = output_bits(acc);
  out[2 * element] = static_cast<std::uint8_t>(bits & 0xFFu);
  out[2 * element + 1] = static_cast<std::uint8_t>(bits >> 8);
}

// --- decode: rows <= kDecodeMaxRows ------------------------------------------------------------
// A block owns kDecodeTileOut consecutive outputs of every row: thread (x, y) the output
// col0 + x of row y. Per k tile it stages the block's weight lines and the input rows
// (decode_slot), then each thread reduces its pair of lines (reduce_tile). The kernel is a
// template over the row count, so that each thread's share of a tile's 16-byte groups
// (DecodeShape::kGroupsPerThread) is a constant and the thread keeps the next kDepth tiles in
// registers: a ring of kDepth slots, slot s holding tile t + kDepth once tile t is staged. With
// few rows a block is one or two warps and a tile's reduction is short, so one tile in flight
// would leave the memory latency exposed; the depth keeps about 40 KiB of loads in flight per
// SM at the shapes of the benchmarks (1 row: 2.6 one-warp blocks per SM x 2 tiles x 8.25 KiB;
// 8 rows: one block x 4 tiles x 10 KiB).
constexpr int kDecodeGroupsPerLine = kDecodeTileK / kGroup;

template <int Rows>
struct DecodeShape {
  static constexpr int kThreads = kDecodeTileOut * Rows;
  static constexpr auto kInputFloats = static_cast<unsigned>(Rows * kDecodeStride);
  static constexpr int kLines = kDecodeTileOut + Rows;  // weight lines first, then input rows
  static constexpr int kGroups = kLines * kDecodeGroupsPerLine;
  static constexpr int kGroupsPerThread = (kGroups + kThreads - 1) / kThreads;
  // About 36 staged groups (144 registers) per thread at most, 4 tiles at most.
  static constexpr int kDepthByRegisters = 36 / kGroupsPerThread;
  static constexpr int kDepth = kDepthByRegisters < 1   ? 1
                                : kDepthByRegisters > 4 ? 4
                                                        : kDepthByRegisters;
};

template <int Rows>
__global__ void __launch_bounds__(kDecodeTileOut* Rows, 1)
    decode_kernel(const std::uint8_t* in, const std::uint8_t* w, std::uint8_t* out, long long k,
                  long long out_features, bool vec) {
  using Shape = DecodeShape<Rows>;
  __shared__ __align__(16) float tile_a[Shape::kInputFloats];
  __shared__ __align__(16) float tile_w[kDecodeTileOut * kDecodeStride];
  const int x = static_cast<int>(threadIdx.x);
  const int y = static_cast<int>(threadIdx.y);
  const int tid = y * kDecodeTileOut + x;
  const long long col0 = static_cast<long long>(blockIdx.x) * kDecodeTileOut;

  uint4 ring[Shape::kDepth][Shape::kGroupsPerThread];
  // Calls visit(i, is_weight, line, kk, valid) for each of this thread's groups of a tile with
  // `count` valid k that holds data: i, its index in a ring slot; line, its line of the weight
  // tile (output col0 + line) or of the input tile (row line); kk, its first k in the tile;
  // valid, its element count (1 to 8). Groups past the k tail or the last output are skipped.
  auto each_group = [&](int count, auto&& visit) {
    VTRACE_UNROLL
    for (int i = 0; i < Shape::kGroupsPerThread; ++i) {
      const int g = tid + i * Shape::kThreads;
      if (g >= Shape::kGroups) break;
      const int tile_line = g / kDecodeGroupsPerLine;  // weight lines first, then input rows
      const int kk = (g % kDecodeGroupsPerLine) * kGroup;
      const int valid = count - kk < kGroup ? count - kk : kGroup;
      const bool is_weight = tile_line < kDecodeTileOut;
      const int line = is_weight ? tile_line : tile_line - kDecodeTileOut;
      if (valid <= 0 || (is_weight && col0 + line >= out_features)) continue;
      visit(i, is_weight, line, kk, valid);
    }
  };
  // Loads tile k0's groups of this thread into `slot`.
  auto load_tile = [&](uint4(&slot)[Shape::kGroupsPerThread], long long k0) {
    each_group(
        tile_count(k, k0, kDecodeTileK), [&](int i, bool is_weight, int line, int kk, int valid) {
          const long long src_line = is_weight ? col0 + line : line;
          slot[i] = load_group((is_weight ? w : in) + 2 * (src_line * k + k0 + kk), valid, vec);
        });
  };
  // Converts the groups of `slot` (tile k0) into the shared tile: a whole group as two float4
  // stores (decode_slot of a group's first k is 16-byte aligned), a short one element by element.
  auto store_tile = [&](const uint4(&slot)[Shape::kGroupsPerThread], long long k0) {
    each_group(tile_count(k, k0, kDecodeTileK), [&](int i, bool is_weight, int line, int kk,
                                                    int valid) {
      float* dst = &(is_weight ? tile_w : tile_a)[decode_slot(line, kk)];
      if (valid == kGroup) {
        const uint4& v = slot[i];
        store_float4(dst, make_float4(staged_value(static_cast<std::uint16_t>(v.x & 0xFFFFu)),
                                      staged_value(static_cast<std::uint16_t>(v.x >> 16)),
                                      staged_value(static_cast<std::uint16_t>(v.y & 0xFFFFu)),
                                      staged_value(static_cast<std::uint16_t>(v.y >> 16))));
        store_float4(dst + 4, make_float4(staged_value(static_cast<std::uint16_t>(v.z & 0xFFFFu)),
                                          staged_value(static_cast<std::uint16_t>(v.z >> 16)),
                                          staged_value(static_cast<std::uint16_t>(v.w & 0xFFFFu)),
                                          staged_value(static_cast<std::uint16_t>(v.w >> 16))));
      } else {
        for (int e = 0; e < valid; ++e) dst[e] = staged_value(group_element(slot[i], e));
      }
    });
  };

  const long long tiles = (k + kDecodeTileK - 1) / kDecodeTileK;
  VTRACE_UNROLL
  for (int s = 0; s < Shape::kDepth; ++s) {
    if (s < tiles) load_tile(ring[s], s * kDecodeTileK);
  }
  float acc = +0.0f;
  // Tile t is in slot t % kDepth; the inner loop is unrolled so every slot index is a constant.
  for (long long t0 = 0; t0 < tiles; t0 += Shape::kDepth) {
    VTRACE_UNROLL
    for (int s = 0; s < Shape::kDepth; ++s) {
      const long long t = t0 + s;
      if (t >= tiles) break;  // the same for every thread of the block
      const long long k0 = t * kDecodeTileK;
      __syncthreads();  // every thread is done with the previous tile
      store_tile(ring[s], k0);
      __syncthreads();
      if (t + Shape::kDepth < tiles) load_tile(ring[s], (t + Shape::kDepth) * kDecodeTileK);
      if (col0 + x < out_features) {
        acc = reduce_tile(acc, &tile_a[decode_slot(y, 0)], &tile_w[decode_slot(x, 0)],
                          tile_count(k, k0, kDecodeTileK));
      }
    }
  }
  if (col0 + x < out_features) store_output(out, y * out_features + col0 + x, acc);
}

// Calls f(std::integral_constant<int, R>{}) for R == rows when rows is 1 to kDecodeMaxRows (the
// row counts decode_kernel is instantiated for) and answers true; answers false, calling
// nothing, for any other count. Host code: the launcher and the host test dispatch through it.
template <typename F, int... R>
bool with_decode_rows_of(long long rows, F& f, std::integer_sequence<int, R...> /*rows - 1*/) {
  return ((rows == R + 1 ? (f(std::integral_constant<int, R + 1>{}), true) : false) || ...);
}
template <typename F>
bool with_decode_rows(long long rows, F&& f) {
  return with_decode_rows_of(rows, f, std::make_integer_sequence<int, kDecodeMaxRows>{});
}

// --- tiled: more rows ----------------------------------------------------------------------------
// A block owns kTiledTileRows x kTiledTileOut outputs; thread (tx, ty) the micro-tile of rows
// ty * 4 + i and outputs tx * 8 + j. Per k tile of kTiledTileK it stages the block's input and
// weight lines transposed (tiled_a_slot, tiled_w_slot) and steps every accumulator through the
// tile's k-slices in order (micro_step). Each thread loads one group of each operand per tile,
// the next kTiledDepth tiles' while the current one is reduced.
constexpr int kTiledGroupsPerLine = kTiledTileK / kGroup;  // 2
constexpr int kTiledDepth = 2;                             // tiles in flight per thread
static_assert(kTiledTileRows * kTiledGroupsPerLine == kTiledThreads);
static_assert(kTiledTileOut * kTiledGroupsPerLine == kTiledThreads);

__global__ void __launch_bounds__(kTiledThreads)
    tiled_kernel(const std::uint8_t* in, const std::uint8_t* w, std::uint8_t* out, long long rows,
                 long long row_base, long long k, long long out_features, bool vec) {
  __shared__ __align__(16) float tile_a[kTiledTileK * kTiledAStride];
  __shared__ __align__(16) float tile_w[kTiledTileK * kTiledWStride];
  const int tid = static_cast<int>(threadIdx.x);
  const int tx = tid % (kTiledTileOut / kTiledMicroOut);
  const int ty = tid / (kTiledTileOut / kTiledMicroOut);
  const long long row0 = row_base + static_cast<long long>(blockIdx.y) * kTiledTileRows;
  const long long col0 = static_cast<long long>(blockIdx.x) * kTiledTileOut;
  // This thread's group of each operand: line tid / 2, k offset (tid % 2) * 8.
  const int line = tid / kTiledGroupsPerLine;
  const int kk0 = (tid % kTiledGroupsPerLine) * kGroup;
  const bool a_line_valid = row0 + line < rows;
  const bool w_line_valid = col0 + line < out_features;

  // A ring of kTiledDepth slots: slot s holds this thread's group of each operand for tile
  // t + kTiledDepth once tile t is staged (so the loads of two tiles are in flight).
  uint4 ring_a[kTiledDepth];
  uint4 ring_w[kTiledDepth];
  auto load_tile = [&](uint4& slot_a, uint4& slot_w, long long k0) {
    const int count = tile_count(k, k0, kTiledTileK);
    const int valid = count - kk0 < kGroup ? count - kk0 : kGroup;
    slot_a = make_uint4(0, 0, 0, 0);
    slot_w = make_uint4(0, 0, 0, 0);
    if (valid <= 0) return;
    if (a_line_valid) slot_a = load_group(in + 2 * ((row0 + line) * k + k0 + kk0), valid, vec);
    if (w_line_valid) slot_w = load_group(w + 2 * ((col0 + line) * k + k0 + kk0), valid, vec);
  };
  auto store_tile = [&](const uint4& slot_a, const uint4& slot_w, long long k0) {
    const int count = tile_count(k, k0, kTiledTileK);
    const int valid = count - kk0 < kGroup ? count - kk0 : kGroup;
    for (int e = 0; e < valid; ++e) {
      tile_a[tiled_a_slot(kk0 + e, line)] =
          a_line_valid ? staged_value(group_element(slot_a, e)) : 0.0f;
      tile_w[tiled_w_slot(kk0 + e, line)] =
          w_line_valid ? staged_value(group_element(slot_w, e)) : 0.0f;
    }
  };

  float acc[kTiledMicroRows][kTiledMicroOut];
  VTRACE_UNROLL
  for (int i = 0; i < kTiledMicroRows; ++i) {
    VTRACE_UNROLL
    for (int j = 0; j < kTiledMicroOut; ++j) acc[i][j] = +0.0f;
  }
  const long long tiles = (k + kTiledTileK - 1) / kTiledTileK;
  VTRACE_UNROLL
  for (int s = 0; s < kTiledDepth; ++s) {
    if (s < tiles) load_tile(ring_a[s], ring_w[s], s * kTiledTileK);
  }
  // Tile t is in slot t % kTiledDepth; the inner loop is unrolled so every slot is a constant.
  for (long long t0 = 0; t0 < tiles; t0 += kTiledDepth) {
    VTRACE_UNROLL
    for (int s = 0; s < kTiledDepth; ++s) {
      const long long t = t0 + s;
      if (t >= tiles) break;  // the same for every thread of the block
      const long long k0 = t * kTiledTileK;
      __syncthreads();
      store_tile(ring_a[s], ring_w[s], k0);
      __syncthreads();
      if (t + kTiledDepth < tiles) load_tile(ring_a[s], ring_w[s], (t + kTiledDepth) * kTiledTileK);
      const int count = tile_count(k, k0, kTiledTileK);
      for (int kk = 0; kk < count; ++kk) {
        const float4 a4 = load_float4(&tile_a[tiled_a_slot(kk, ty * kTiledMicroRows)]);
        const float4 w0 = load_float4(&tile_w[tiled_w_slot(kk, tx * kTiledMicroOut)]);
        const float4 w1 = load_float4(&tile_w[tiled_w_slot(kk, tx * kTiledMicroOut + 4)]);
        const float a[kTiledMicroRows] = {a4.x, a4.y, a4.z, a4.w};
        const float b[kTiledMicroOut] = {w0.x, w0.y, w0.z, w0.w, w1.x, w1.y, w1.z, w1.w};
        micro_step(acc, a, b);
      }
    }
  }
  VTRACE_UNROLL
  for (int i = 0; i < kTiledMicroRows; ++i) {
    const long long r = row0 + ty * kTiledMicroRows + i;
    VTRACE_UNROLL
    for (int j = 0; j < kTiledMicroOut; ++j) {
      const long long o = col0 + tx * kTiledMicroOut + j;
      if (r < rows && o < out_features) store_output(out, r * out_features + o, acc[i][j]);
    }
  }
}

}  // namespace vtrace::runtime::cuda::kernels::device
