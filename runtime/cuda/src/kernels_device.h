// The strict dense-linear kernels' device code (kernels.h says what they compute), included by
// kernels.cu, which nvcc compiles and which launches them, and by
// tests/runtime/cuda_arith_test.cpp, which compiles this very code for the host through
// tests/runtime/cuda_host_shim.h (one std::thread per CUDA thread, a barrier for __syncthreads) and
// checks each kernel's indexing, staging rings and tails against the reference without a GPU. So
// this header uses only what that shim provides: threadIdx, blockIdx, __shared__, __align__,
// __syncthreads, __ldg, uint4, float4, make_uint4, make_float4, __global__, __device__,
// __launch_bounds__, and on the host only, check_vector_access (16-byte accesses aligned),
// dynamic_shared (the block's dynamic shared memory) and the cp.async queue (copy_async_*).
//
// Host code here too: the launches' choices (vector_loads, decode_blocks, for_each_row_chunk,
// with_decode_rows), which kernels.cu launches with and the host test runs the kernels with.
//
// The per-element arithmetic, the group reduction and the tiled kernel's layouts are
// strict_arith.h's; the decode kernel's stage layout is here. Parallelism is over outputs only:
// each output's accumulator lives in one thread and sees k ascending, one tile after the other.
//
// Thread rules: CUDA kernels (one launch per call of kernels.cu's launchers). Errors: none here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "strict_arith.h"

// Full unrolling where nvcc compiles this (the ring slots must be constants to live in
// registers); nothing on the host, where it is a test of the indexing.
#ifdef __CUDACC__
#define VTRACE_UNROLL _Pragma("unroll")
#define VTRACE_UNROLL_PRAGMA(text) _Pragma(#text)
#define VTRACE_UNROLL_BY(n) VTRACE_UNROLL_PRAGMA(unroll n)
#else
#define VTRACE_UNROLL
#define VTRACE_UNROLL_BY(n)
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

// Four floats of shared memory at a 16-byte aligned address, as one 16-byte access (load_float:
// one float). On the device a float4 (float) access; on the host (the shim) a memcpy, so the
// test's build reads the floats through no other type, after the shim's check that the address
// is aligned as the device needs.
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
__device__ inline float load_float(const float* p) {
#ifdef __CUDA_ARCH__
  return *p;
#else
  float v;
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

// The block's dynamic shared memory as 16-byte groups (the launch sizes it): extern __shared__
// on the device, the shim's per-block buffer on the host.
#ifdef __CUDACC__
#define VTRACE_DYNAMIC_SHARED(name) extern __shared__ __align__(16) uint4 name[]
#else
#define VTRACE_DYNAMIC_SHARED(name) uint4* const name = ::vtrace::cuda_host_shim::dynamic_shared()
#endif

// cp.async: a 16-byte copy from global to shared memory that completes asynchronously (both
// addresses 16-byte aligned); copy_async_commit closes this thread's group of copies, and
// copy_async_wait<N> waits until at most N of its committed groups are still in flight. On the
// host, the shim's queue, which performs a group's copies only when it is waited for.
__device__ inline void copy_async_16(void* shared_dst, const void* global_src) {
#ifdef __CUDA_ARCH__
  const auto address = static_cast<unsigned>(__cvta_generic_to_shared(shared_dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(address), "l"(global_src)
               : "memory");
#elif !defined(__CUDACC__)
  ::vtrace::cuda_host_shim::copy_async_16(shared_dst, global_src);
#else
  (void)shared_dst, (void)global_src;
#endif
}
__device__ inline void copy_async_commit() {
#ifdef __CUDA_ARCH__
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#elif !defined(__CUDACC__)
  ::vtrace::cuda_host_shim::copy_async_commit();
#endif
}
template <int N>
__device__ inline void copy_async_wait() {
#ifdef __CUDA_ARCH__
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#elif !defined(__CUDACC__)
  ::vtrace::cuda_host_shim::copy_async_wait(N);
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

// Writes a thread's micro-tile (the tiled and the pipelined kernels): accumulator (i, j) is
// output (first_row + i, first_out + j), written when that is inside rows x out_features.
template <std::size_t R, std::size_t O>
__device__ inline void store_micro_tile(std::uint8_t* out, const float (&acc)[R][O],
                                        long long first_row, long long first_out, long long rows,
                                        long long out_features) {
  VTRACE_UNROLL
  for (std::size_t i = 0; i < R; ++i) {
    const long long r = first_row + static_cast<long long>(i);
    VTRACE_UNROLL
    for (std::size_t j = 0; j < O; ++j) {
      const long long o = first_out + static_cast<long long>(j);
      if (r < rows && o < out_features) store_output(out, r * out_features + o, acc[i][j]);
    }
  }
}

// --- decode: rows <= kDecodeMaxRows ------------------------------------------------------------
// A block owns kDecodeTileOut consecutive outputs of every row and walks k in tiles of TileK
// through a ring of Stages shared-memory stages: while tile t is reduced, the copies of the next
// Stages - 1 tiles are in flight (cp.async: global to shared without passing through registers,
// so a block can keep tens of KiB in flight). A stage holds the block's 32 weight lines and its
// Rows input lines as f16 bits, in 16-byte groups; all Warps warps copy, each warp instruction
// 512 contiguous bytes of one line. Per tile the block converts the input groups once into an
// f32 tile (tile_a), then thread (x, y) with y < kRowThreads adds the tile's products of weight
// line x to the accumulators of its rows y * RowsPerThread + j, k ascending, converting each
// weight as it uses it (a thread past the last row computes a copy of the last row's and writes
// nothing); warps past kRowThreads only copy and convert. A warp is 32 x's of one y, so every
// lane reads the same input floats (a broadcast); the weight groups of a line are stored
// XOR-swizzled by line, so that the 8 lanes of a quarter warp reading group g of 8 consecutive
// lines hit 32 distinct banks. docs/CUDA.md says what was measured and why.
constexpr int kDecodeSwizzle = 8;

// How decode_kernel<Rows> runs (kernels.cu launches with these; docs/CUDA.md, "What was
// measured"): rows per thread, k per tile, stages, warps per block.
template <int Rows>
struct DecodeConfig {
  static constexpr int kRowsPerThread = 1;
  static constexpr int kTileK = 512;
  static constexpr int kStages = 2;
  static constexpr int kWarps = Rows < 4 ? 4 : Rows;
};

template <int Rows, int RowsPerThread, int TileK, int Stages, int Warps>
struct DecodeShape {
  static_assert(RowsPerThread >= 1 && RowsPerThread <= Rows);
  static_assert(TileK % (kGroup * kDecodeSwizzle) == 0 && Stages >= 2);
  static constexpr int kRowThreads = (Rows + RowsPerThread - 1) / RowsPerThread;  // reducing warps
  static_assert(kRowThreads <= Warps);
  static constexpr int kThreads = kDecodeTileOut * Warps;  // blockDim (32, Warps)
  static constexpr int kGroupsPerLine = TileK / kGroup;
  static constexpr int kLines = kDecodeTileOut + Rows;  // weight lines first, then input rows
  static constexpr int kStageGroups = kLines * kGroupsPerLine;
  static constexpr int kCopiesPerThread = (kStageGroups + kThreads - 1) / kThreads;
  static constexpr int kInputGroups = Rows * kGroupsPerLine;
  static constexpr int kConversionsPerThread = (kInputGroups + kThreads - 1) / kThreads;
  static constexpr auto kInputFloats = static_cast<unsigned>(Rows * TileK);
  // The launch's dynamic shared memory: the stages.
  static constexpr std::size_t kSharedBytes =
      static_cast<std::size_t>(Stages) * kStageGroups * sizeof(uint4);
};

// Where a decode block's tiles come from (decode_kernel's and converted_decode_kernel's): its
// kDecodeTileOut weight lines from col0 (a stage's lines 0..31), then the input rows.
struct DecodeSources {
  const std::uint8_t* in;
  const std::uint8_t* w;
  long long col0;
  long long k;
  long long out_features;
  bool vec;
  // Stages group gi of line `line` of the tile at k0 (count: its valid k) into *dst: one
  // cp.async when it is a whole 16-byte aligned group, else loaded and stored at once
  // (load_group zeroes what is past a short end); nothing for a group past the k tail or the
  // last output, which is never read.
  __device__ void stage_group(uint4* dst, int line, int gi, long long k0, int count) const {
    const int valid = count - gi * kGroup < kGroup ? count - gi * kGroup : kGroup;
    const bool is_weight = line < kDecodeTileOut;
    const long long src_line = is_weight ? col0 + line : line - kDecodeTileOut;
    if (valid <= 0 || (is_weight && src_line >= out_features)) return;  // never read
    const std::uint8_t* src = (is_weight ? w : in) + 2 * (src_line * k + k0 + gi * kGroup);
    if (vec && valid == kGroup) {
      copy_async_16(dst, src);
    } else {
      *dst = load_group(src, valid, vec);
    }
  }
};

// Where group g of line `line` (weight lines 0..31, then input rows) lives in a stage.
template <int GroupsPerLine>
__device__ inline int decode_stage_slot(int line, int g) {
  const bool is_weight = line < kDecodeTileOut;
  return line * GroupsPerLine + (is_weight ? g ^ (line % kDecodeSwizzle) : g);
}

template <int Rows, int RowsPerThread = DecodeConfig<Rows>::kRowsPerThread,
          int TileK = DecodeConfig<Rows>::kTileK, int Stages = DecodeConfig<Rows>::kStages,
          int Warps = DecodeConfig<Rows>::kWarps>
__global__ void __launch_bounds__(DecodeShape<Rows, RowsPerThread, TileK, Stages, Warps>::kThreads)
    decode_kernel(const std::uint8_t* in, const std::uint8_t* w, std::uint8_t* out, long long k,
                  long long out_features, bool vec) {
  using Shape = DecodeShape<Rows, RowsPerThread, TileK, Stages, Warps>;
  constexpr int kGroupsPerLine = Shape::kGroupsPerLine;
  VTRACE_DYNAMIC_SHARED(stages);
  __shared__ __align__(16) float tile_a[Shape::kInputFloats];
  const int x = static_cast<int>(threadIdx.x);
  const int y = static_cast<int>(threadIdx.y);
  const int tid = y * kDecodeTileOut + x;
  const long long col0 = static_cast<long long>(blockIdx.x) * kDecodeTileOut;
  const bool reduces = y < Shape::kRowThreads && col0 + x < out_features;
  // This thread's rows; one past the last is read as the last (its sums are never written).
  int row[static_cast<unsigned>(RowsPerThread)];
  VTRACE_UNROLL
  for (int j = 0; j < RowsPerThread; ++j) {
    const int r = y * RowsPerThread + j;
    row[j] = r < Rows ? r : Rows - 1;
  }

  // Starts the copies of tile k0 into stage `stage`: each of this thread's groups
  // (DecodeSources::stage_group).
  const DecodeSources sources{in, w, col0, k, out_features, vec};
  auto copy_tile = [&](int stage, long long k0) {
    const int count = tile_count(k, k0, TileK);
    uint4* dst_stage = stages + stage * Shape::kStageGroups;
    VTRACE_UNROLL
    for (int i = 0; i < Shape::kCopiesPerThread; ++i) {
      const int g = tid + i * Shape::kThreads;
      if (g >= Shape::kStageGroups) break;
      const int line = g / kGroupsPerLine;  // weight lines first, then input rows
      const int gi = g % kGroupsPerLine;
      sources.stage_group(dst_stage + decode_stage_slot<kGroupsPerLine>(line, gi), line, gi, k0,
                          count);
    }
  };
  // Converts the input groups of `stage` into tile_a (stale groups past the k tail too: they
  // are never read).
  auto convert_inputs = [&](int stage) {
    const uint4* src_stage = stages + stage * Shape::kStageGroups;
    VTRACE_UNROLL
    for (int i = 0; i < Shape::kConversionsPerThread; ++i) {
      const int g = tid + i * Shape::kThreads;
      if (g >= Shape::kInputGroups) break;
      const int r = g / kGroupsPerLine;
      const int gi = g % kGroupsPerLine;
      const uint4 v = src_stage[decode_stage_slot<kGroupsPerLine>(kDecodeTileOut + r, gi)];
      float* dst = &tile_a[r * TileK + gi * kGroup];
      store_float4(dst, make_float4(staged_value(static_cast<std::uint16_t>(v.x & 0xFFFFu)),
                                    staged_value(static_cast<std::uint16_t>(v.x >> 16)),
                                    staged_value(static_cast<std::uint16_t>(v.y & 0xFFFFu)),
                                    staged_value(static_cast<std::uint16_t>(v.y >> 16))));
      store_float4(dst + 4, make_float4(staged_value(static_cast<std::uint16_t>(v.z & 0xFFFFu)),
                                        staged_value(static_cast<std::uint16_t>(v.z >> 16)),
                                        staged_value(static_cast<std::uint16_t>(v.w & 0xFFFFu)),
                                        staged_value(static_cast<std::uint16_t>(v.w >> 16))));
    }
  };

  float acc[static_cast<unsigned>(RowsPerThread)];
  VTRACE_UNROLL
  for (int j = 0; j < RowsPerThread; ++j) acc[j] = +0.0f;
  // This thread's operands of group gi of a tile: its weight group and each row's 8 inputs.
  struct Operands {
    uint4 w;
    float4 a[static_cast<unsigned>(RowsPerThread)][2];
  };
  auto operands_at = [&](const uint4* stage, int gi) {
    Operands o;
    o.w = stage[decode_stage_slot<kGroupsPerLine>(x, gi)];
    VTRACE_UNROLL
    for (int j = 0; j < RowsPerThread; ++j) {
      o.a[j][0] = load_float4(&tile_a[row[j] * TileK + gi * kGroup]);
      o.a[j][1] = load_float4(&tile_a[row[j] * TileK + gi * kGroup + 4]);
    }
    return o;
  };
  // Adds the products of one group's operands, k ascending.
  auto add_group = [&](const Operands& o) {
    float wv[kGroup];
    VTRACE_UNROLL
    for (int e = 0; e < kGroup; ++e) wv[e] = staged_value(group_element(o.w, e));
    VTRACE_UNROLL
    for (int j = 0; j < RowsPerThread; ++j) {
      const float av[kGroup] = {o.a[j][0].x, o.a[j][0].y, o.a[j][0].z, o.a[j][0].w,
                                o.a[j][1].x, o.a[j][1].y, o.a[j][1].z, o.a[j][1].w};
      acc[j] = reduce_group(acc[j], av, wv);
    }
  };
  // A whole tile, two groups at a time in two sets of registers: each set is read from shared
  // memory while the other one's products are added (the latency hides behind the accumulator
  // chain, and no register is copied from one set to the other).
  static_assert(kGroupsPerLine % 2 == 0);
  auto reduce_full_tile = [&](const uint4* stage) {
    Operands even = operands_at(stage, 0);
    VTRACE_UNROLL_BY(2)
    for (int gi = 0; gi < kGroupsPerLine; gi += 2) {
      const Operands odd = operands_at(stage, gi + 1);
      add_group(even);
      even = operands_at(stage, gi + 2 < kGroupsPerLine ? gi + 2 : gi);  // the last one unused
      add_group(odd);
    }
  };

  const long long tiles = (k + TileK - 1) / TileK;
  // One commit per tile slot, empty or not, so that "all but the newest Stages - 2 groups" is
  // always "up to tile t".
  VTRACE_UNROLL
  for (int s = 0; s < Stages - 1; ++s) {
    if (s < tiles) copy_tile(s, s * TileK);
    copy_async_commit();
  }
  for (long long t = 0; t < tiles; ++t) {
    const long long k0 = t * TileK;
    const int stage = static_cast<int>(t % Stages);
    copy_async_wait<Stages - 2>();  // this thread's copies of tile t have landed
    __syncthreads();  // everyone's have, and everyone is done with tile t - 1 and tile_a
    if (t + Stages - 1 < tiles) {
      copy_tile(static_cast<int>((t + Stages - 1) % Stages), k0 + (Stages - 1) * TileK);
    }
    copy_async_commit();
    convert_inputs(stage);
    __syncthreads();
    if (!reduces) continue;
    const uint4* tile = stages + stage * Shape::kStageGroups;
    const int count = tile_count(k, k0, TileK);
    if (count == TileK) {
      reduce_full_tile(tile);
    } else {
      for (int kk = 0; kk < count; ++kk) {
        const uint4 h = tile[decode_stage_slot<kGroupsPerLine>(x, kk / kGroup)];
        const float wk = staged_value(group_element(h, kk % kGroup));
        VTRACE_UNROLL
        for (int j = 0; j < RowsPerThread; ++j) {
          acc[j] = accumulate(acc[j], tile_a[row[j] * TileK + kk], wk);
        }
      }
    }
  }
  if (!reduces) return;
  VTRACE_UNROLL
  for (int j = 0; j < RowsPerThread; ++j) {
    const int r = y * RowsPerThread + j;
    if (r < Rows) store_output(out, r * out_features + col0 + x, acc[j]);
  }
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

// --- converted decode: rows <= kDecodeMaxRows, the candidate for decode_kernel's place ---------
// What it changes against decode_kernel, whose 8-row run issues 4.4 instructions per product
// because each row's warp converts every weight again as it uses it (docs/CUDA.md, "What was
// measured"): every f16 operand is converted once per block, into f32 tiles, and a warp holds
// RowLanes rows x (32 / RowLanes) * OutsPerLane outputs (RowLanes is 8, or the launch's rows
// rounded up to a power of two: strict_arith.h, ConvertedConfig; lane = row + RowLanes * g:
// output j of lane g is (32 / RowLanes) * j + g of the warp's; at 8 rows, 8 x 4 * OutsPerLane),
// so a lane's products of 4 k cost their FFMAs and 1 + OutsPerLane shared reads: one
// float4 of its input row and one of each of its outputs' weights, each a broadcast to the
// lanes that share it (the lines one read instruction touches are consecutive, and the tile
// stride of TileK + 4 floats puts 8 consecutive lines in 8 distinct 16-byte bank groups). The
// block's last ConvertWarps warps only copy and convert: they cp.async the block's 32 weight
// lines and Rows input lines, tile t + Stages - 1, into a ring of f16 stages, and convert tile t
// into one of two f32 tiles, each thread the groups it copied itself (so its own cp.async wait
// is all the ordering a stage needs), while the reducing warps add tile t - 1's products from
// the other f32 tile, k ascending; one barrier per tile hands the tiles over. Which one the
// runtime launches is for a GPU to say (strict_arith.h, Decode); until then decode_kernel.
template <int Rows, int RowLanes, int OutsPerLane, int TileK, int Stages, int ConvertWarps>
struct ConvertedShape {
  static_assert(Rows >= 1 && Rows <= kDecodeMaxRows);
  static_assert(Rows <= RowLanes && RowLanes <= 32 && 32 % RowLanes == 0);
  static_assert(TileK % (4 * kGroup) == 0 && Stages >= 2 && ConvertWarps >= 1);
  // A warp's lanes: kRowLanes rows of kLaneGroups groups; a lane past the last row computes a
  // copy of the last row's sums and writes nothing.
  static constexpr int kRowLanes = RowLanes;
  static constexpr int kLaneGroups = 32 / kRowLanes;
  static constexpr int kOutsPerWarp = kLaneGroups * OutsPerLane;
  static_assert(OutsPerLane >= 1 && kDecodeTileOut % kOutsPerWarp == 0);
  static constexpr int kReduceWarps = kDecodeTileOut / kOutsPerWarp;
  static constexpr int kWarps = kReduceWarps + ConvertWarps;  // blockDim (32, kWarps)
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kConvertThreads = 32 * ConvertWarps;
  static constexpr int kLines = kDecodeTileOut + Rows;  // weight lines first, then input rows
  static constexpr int kGroupsPerLine = TileK / kGroup;
  static constexpr int kStageGroups = kLines * kGroupsPerLine;
  static constexpr int kGroupsPerThread = (kStageGroups + kConvertThreads - 1) / kConvertThreads;
  static constexpr int kStride = TileK + 4;  // floats from one line of an f32 tile to the next
  static constexpr int kTileFloats = kLines * kStride;
  // The launch's dynamic shared memory: the f16 stages, then the two f32 tiles.
  static constexpr std::size_t kStageBytes =
      static_cast<std::size_t>(Stages) * kStageGroups * sizeof(uint4);
  static constexpr std::size_t kSharedBytes = kStageBytes + 2 * kTileFloats * sizeof(float);
};
// The shape of configuration C (strict_arith.h, ConvertedConfig) at Rows rows.
template <int Rows, typename C>
using ConvertedShapeOf = ConvertedShape<Rows, C::row_lanes(Rows), C::kOutsPerLane, C::kTileK,
                                        C::kStages, C::kConvertWarps>;

template <int Rows, int RowLanes, int OutsPerLane, int TileK, int Stages, int ConvertWarps>
__global__ void __launch_bounds__(
    ConvertedShape<Rows, RowLanes, OutsPerLane, TileK, Stages, ConvertWarps>::kThreads)
    converted_decode_kernel(const std::uint8_t* in, const std::uint8_t* w, std::uint8_t* out,
                            long long k, long long out_features, bool vec) {
  using Shape = ConvertedShape<Rows, RowLanes, OutsPerLane, TileK, Stages, ConvertWarps>;
  VTRACE_DYNAMIC_SHARED(shared);
  uint4* const stages = shared;
  // The f32 tiles, as raw floats after the stages (read and written through load_float4,
  // store_float4 and load_float only).
  float* const tiles = reinterpret_cast<float*>(shared + Stages * Shape::kStageGroups);
  const int x = static_cast<int>(threadIdx.x);
  const int y = static_cast<int>(threadIdx.y);
  const long long col0 = static_cast<long long>(blockIdx.x) * kDecodeTileOut;
  const long long tiles_k = (k + TileK - 1) / TileK;

  if (y >= Shape::kReduceWarps) {
    // A converting thread: groups ct, ct + kConvertThreads, ... of every tile's stage.
    const int ct = (y - Shape::kReduceWarps) * 32 + x;
    const DecodeSources sources{in, w, col0, k, out_features, vec};
    auto copy_tile = [&](long long t) {
      const long long k0 = t * TileK;
      const int count = tile_count(k, k0, TileK);
      uint4* const stage = stages + static_cast<int>(t % Stages) * Shape::kStageGroups;
      VTRACE_UNROLL
      for (int i = 0; i < Shape::kGroupsPerThread; ++i) {
        const int g = ct + i * Shape::kConvertThreads;
        if (g >= Shape::kStageGroups) break;
        sources.stage_group(stage + g, g / Shape::kGroupsPerLine, g % Shape::kGroupsPerLine, k0,
                            count);
      }
    };
    auto convert_tile = [&](long long t) {
      const uint4* const stage = stages + static_cast<int>(t % Stages) * Shape::kStageGroups;
      float* const tile = tiles + static_cast<int>(t % 2) * Shape::kTileFloats;
      VTRACE_UNROLL
      for (int i = 0; i < Shape::kGroupsPerThread; ++i) {
        const int g = ct + i * Shape::kConvertThreads;
        if (g >= Shape::kStageGroups) break;
        const uint4 v = stage[g];
        const float4 lo =
            make_float4(staged_value(group_element(v, 0)), staged_value(group_element(v, 1)),
                        staged_value(group_element(v, 2)), staged_value(group_element(v, 3)));
        const float4 hi =
            make_float4(staged_value(group_element(v, 4)), staged_value(group_element(v, 5)),
                        staged_value(group_element(v, 6)), staged_value(group_element(v, 7)));
        float* const dst = tile + (g / Shape::kGroupsPerLine) * Shape::kStride +
                           (g % Shape::kGroupsPerLine) * kGroup;
        // A warp's lanes store consecutive groups, 32 bytes apart: lanes 4 to 7 of every 8
        // store their second half first, so that each store instruction's 8-lane quarters
        // cover all 8 16-byte bank groups (one wavefront per quarter, not two).
        const bool second_first = (x & 4) != 0;
        store_float4(dst + (second_first ? 4 : 0), second_first ? hi : lo);
        store_float4(dst + (second_first ? 0 : 4), second_first ? lo : hi);
      }
    };
    // One commit per tile slot, empty or not, so that "all but the newest Stages - 2 groups" is
    // always "up to tile t".
    VTRACE_UNROLL
    for (int s = 0; s < Stages - 1; ++s) {
      if (s < tiles_k) copy_tile(s);
      copy_async_commit();
    }
    for (long long t = 0; t <= tiles_k; ++t) {
      if (t < tiles_k) {
        copy_async_wait<Stages - 2>();  // this thread's copies of tile t have landed
        // Into the stage of tile t - 1, which this thread converted in the last round.
        if (t + Stages - 1 < tiles_k) copy_tile(t + Stages - 1);
        copy_async_commit();
        convert_tile(t);
      }
      __syncthreads();  // tile t converted; tile t - 1's products added
    }
    return;
  }

  // A reducing thread: row x % kRowLanes (the last row past it) of the warp's outputs
  // kLaneGroups * j + x / kRowLanes.
  const int row_lane = x % Shape::kRowLanes;
  const int row = row_lane < Rows ? row_lane : Rows - 1;
  const int first_out = y * Shape::kOutsPerWarp + x / Shape::kRowLanes;
  // Whether this lane's first output is one (a later one may not be: lines past the last output
  // hold stale values, whose sums are computed and never written).
  const bool reduces = col0 + first_out < out_features;
  float acc[static_cast<unsigned>(OutsPerLane)];
  VTRACE_UNROLL
  for (int j = 0; j < OutsPerLane; ++j) acc[j] = +0.0f;
  for (long long t = 0; t <= tiles_k; ++t) {
    if (t >= 1 && reduces) {
      const float* const tile = tiles + static_cast<int>((t - 1) % 2) * Shape::kTileFloats;
      const float* const a = tile + (kDecodeTileOut + row) * Shape::kStride;
      const float* const b = tile + first_out * Shape::kStride;  // output j: 4 * j lines on
      const int count = tile_count(k, (t - 1) * TileK, TileK);
      if (count == TileK) {
        VTRACE_UNROLL
        for (int kk = 0; kk < TileK; kk += 4) {
          const float4 av = load_float4(a + kk);
          VTRACE_UNROLL
          for (int j = 0; j < OutsPerLane; ++j) {
            const float4 bv = load_float4(b + j * Shape::kLaneGroups * Shape::kStride + kk);
            acc[j] = accumulate(acc[j], av.x, bv.x);
            acc[j] = accumulate(acc[j], av.y, bv.y);
            acc[j] = accumulate(acc[j], av.z, bv.z);
            acc[j] = accumulate(acc[j], av.w, bv.w);
          }
        }
      } else {
        for (int kk = 0; kk < count; ++kk) {
          const float av = load_float(a + kk);
          VTRACE_UNROLL
          for (int j = 0; j < OutsPerLane; ++j) {
            acc[j] = accumulate(acc[j], av,
                                load_float(b + j * Shape::kLaneGroups * Shape::kStride + kk));
          }
        }
      }
    }
    __syncthreads();  // the converters' tile t is there; tile t - 1's products are added
  }
  VTRACE_UNROLL
  for (int j = 0; j < OutsPerLane; ++j) {
    const long long o = col0 + first_out + j * Shape::kLaneGroups;
    if (row_lane < Rows && o < out_features) store_output(out, row_lane * out_features + o, acc[j]);
  }
}

// --- the launches' choices: host code that kernels.cu launches with and the host test too -----
// Whether a launch reads its operands as 16-byte groups (vec): when both start 16-byte aligned
// and k is a multiple of 8, every group of every line does; otherwise byte loads.
inline bool vector_loads(const void* input, const void* weight, long long k) {
  return reinterpret_cast<std::uintptr_t>(input) % 16 == 0 &&
         reinterpret_cast<std::uintptr_t>(weight) % 16 == 0 && k % kGroup == 0;
}

// The decode kernel's blocks for out_features outputs (blockDim is (kDecodeTileOut, Warps)).
inline unsigned decode_blocks(long long out_features) {
  return static_cast<unsigned>((out_features + kDecodeTileOut - 1) / kDecodeTileOut);
}

// The launches of a kernel whose blocks own tile_rows x tile_out outputs (the tiled and the
// pipelined kernels): the row blocks in chunks of at most max_chunk (kernels.cu: kMaxRowBlocks,
// gridDim.y's limit), one launch(blocks_x, blocks_y, row_base) per chunk, row_base its first
// row, in ascending order; stops at the first launch that answers false and answers false then.
inline constexpr unsigned long long kMaxRowBlocks = 65535;
template <typename Launch>
bool for_each_row_chunk(long long rows, long long out_features, int tile_rows, int tile_out,
                        unsigned long long max_chunk, Launch&& launch) {
  const auto row_blocks = static_cast<unsigned long long>((rows + tile_rows - 1) / tile_rows);
  const auto blocks_x = static_cast<unsigned>((out_features + tile_out - 1) / tile_out);
  for (unsigned long long first = 0; first < row_blocks; first += max_chunk) {
    const unsigned long long count =
        row_blocks - first < max_chunk ? row_blocks - first : max_chunk;
    if (!launch(blocks_x, static_cast<unsigned>(count),
                static_cast<long long>(first) * tile_rows)) {
      return false;
    }
  }
  return true;
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
  store_micro_tile(out, acc, row0 + ty * kTiledMicroRows, col0 + tx * kTiledMicroOut, rows,
                   out_features);
}

// --- pipelined: more rows, the candidate for the tiled kernel's place --------------------------
// What it changes against tiled_kernel, whose prefill run left each SM one warp per scheduler
// and two barriers per 16 k (docs/CUDA.md, "What was measured"): the micro-tile is a parameter
// (4 x 4 gives a 64 x 64 block 8 warps where 4 x 8 gives it 4), and the shared-memory tile is
// double-buffered, so one barrier per tile suffices and the global loads of tile t + 1 are in
// flight while tile t's products are added. Which configuration replaces tiled_kernel is for a
// GPU to say: bench_cuda.cpp runs each beside it (strict_arith.h, Prefill) and checks its outputs
// equal the tiled kernel's bit for bit; until then the runtime launches tiled_kernel.
//
// A block owns TileRows x TileOut outputs; thread (tx, ty) the micro-tile of rows
// ty * MicroRows + i and outputs tx * MicroOut + j, a warp a patch of 8 x 4 such threads. Per tile
// of TileK, every thread loads its groups of the input and weight lines into registers (group g of
// an operand: line g % lines, k offset (g / lines) * 8, so a warp's stores to the transposed tile
// are consecutive floats), the whole block stores them converted into the stage not being read, and
// every accumulator steps through the tile's k-slices in order (micro_step).
template <int TileRows, int TileOut, int MicroRows, int MicroOut, int TileK>
struct PipelinedShape {
  static_assert(TileRows % MicroRows == 0 && TileOut % MicroOut == 0);
  static_assert(MicroRows % 4 == 0 && MicroOut % 4 == 0, "the micro-tiles are read as float4");
  static_assert(TileK % kGroup == 0);
  static constexpr int kThreadsOut = TileOut / MicroOut;     // tx's range
  static constexpr int kThreadsRows = TileRows / MicroRows;  // ty's range
  static constexpr int kThreads = kThreadsRows * kThreadsOut;
  // A warp is a patch of kWarpTx x kWarpTy threads (8 x 4 where the tile allows), so that its
  // reads of a k-slice are kWarpTx consecutive weight float4s and kWarpTy consecutive input
  // float4s per row of them: one shared-memory wavefront each (a warp 16 x 2 would need two
  // for its weights).
  static constexpr int kWarpTx = kThreadsOut < 8 ? kThreadsOut : 8;
  static constexpr int kWarpTy = 32 / kWarpTx;
  static constexpr int kWarpsAcross = kThreadsOut / kWarpTx;
  static_assert(32 % kWarpTx == 0 && kThreadsOut % kWarpTx == 0 && kThreadsRows % kWarpTy == 0,
                "the warps tile the block's threads");
  static constexpr int kGroupsPerLine = TileK / kGroup;
  // A k-slice's floats: the lines, plus 4 (keeps each slice 16-byte aligned).
  static constexpr int kAStride = TileRows + 4;
  static constexpr int kWStride = TileOut + 4;
  static constexpr int kAGroups = TileRows * kGroupsPerLine;
  static constexpr int kWGroups = TileOut * kGroupsPerLine;
  static constexpr int kALoads = (kAGroups + kThreads - 1) / kThreads;  // per thread and tile
  static constexpr int kWLoads = (kWGroups + kThreads - 1) / kThreads;
  static constexpr std::size_t kSharedBytes =
      2 * static_cast<std::size_t>(TileK) * (kAStride + kWStride) * sizeof(float);
  static_assert(kSharedBytes <= 48 * 1024, "static shared memory is at most 48 KiB");
};

template <int TileRows, int TileOut, int MicroRows, int MicroOut, int TileK>
__global__ void __launch_bounds__(
    PipelinedShape<TileRows, TileOut, MicroRows, MicroOut, TileK>::kThreads)
    pipelined_kernel(const std::uint8_t* in, const std::uint8_t* w, std::uint8_t* out,
                     long long rows, long long row_base, long long k, long long out_features,
                     bool vec) {
  using Shape = PipelinedShape<TileRows, TileOut, MicroRows, MicroOut, TileK>;
  __shared__ __align__(16) float stage_a[2][TileK * Shape::kAStride];
  __shared__ __align__(16) float stage_w[2][TileK * Shape::kWStride];
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid % 32;
  const int warp = tid / 32;
  const int tx = lane % Shape::kWarpTx + Shape::kWarpTx * (warp % Shape::kWarpsAcross);
  const int ty = lane / Shape::kWarpTx + Shape::kWarpTy * (warp / Shape::kWarpsAcross);
  const long long row0 = row_base + static_cast<long long>(blockIdx.y) * TileRows;
  const long long col0 = static_cast<long long>(blockIdx.x) * TileOut;

  // This thread's groups of the next tile, between its global loads and its shared stores.
  uint4 next_a[static_cast<unsigned>(Shape::kALoads)];
  uint4 next_w[static_cast<unsigned>(Shape::kWLoads)];
  // Group g of `lines` lines starting at `first` of `operand` (line count `limit`), tile k0;
  // zeros past the k tail and past the last line.
  auto load = [&](const std::uint8_t* operand, long long first, long long limit, int lines, int g,
                  long long k0) {
    const int line = g % lines;
    const int gi = g / lines;
    const int count = tile_count(k, k0, TileK);
    const int valid = count - gi * kGroup < kGroup ? count - gi * kGroup : kGroup;
    if (valid <= 0 || first + line >= limit) return make_uint4(0, 0, 0, 0);
    return load_group(operand + 2 * ((first + line) * k + k0 + gi * kGroup), valid, vec);
  };
  auto load_tile = [&](long long k0) {
    VTRACE_UNROLL
    for (int i = 0; i < Shape::kALoads; ++i) {
      const int g = tid + i * Shape::kThreads;
      if (g < Shape::kAGroups) next_a[i] = load(in, row0, rows, TileRows, g, k0);
    }
    VTRACE_UNROLL
    for (int i = 0; i < Shape::kWLoads; ++i) {
      const int g = tid + i * Shape::kThreads;
      if (g < Shape::kWGroups) next_w[i] = load(w, col0, out_features, TileOut, g, k0);
    }
  };
  // Stores group g (of `lines` lines) transposed into a stage of slices `stride` floats apart.
  auto store = [&](float* stage, int stride, int lines, int g, const uint4& v) {
    const int line = g % lines;
    const int kk0 = (g / lines) * kGroup;
    VTRACE_UNROLL
    for (int e = 0; e < kGroup; ++e) {
      stage[(kk0 + e) * stride + line] = staged_value(group_element(v, e));
    }
  };
  auto store_tile = [&](int buffer) {
    VTRACE_UNROLL
    for (int i = 0; i < Shape::kALoads; ++i) {
      const int g = tid + i * Shape::kThreads;
      if (g < Shape::kAGroups) store(stage_a[buffer], Shape::kAStride, TileRows, g, next_a[i]);
    }
    VTRACE_UNROLL
    for (int i = 0; i < Shape::kWLoads; ++i) {
      const int g = tid + i * Shape::kThreads;
      if (g < Shape::kWGroups) store(stage_w[buffer], Shape::kWStride, TileOut, g, next_w[i]);
    }
  };

  float acc[static_cast<unsigned>(MicroRows)][static_cast<unsigned>(MicroOut)];
  VTRACE_UNROLL
  for (int i = 0; i < MicroRows; ++i) {
    VTRACE_UNROLL
    for (int j = 0; j < MicroOut; ++j) acc[i][j] = +0.0f;
  }
  // The products of k-slice kk of stage `buffer`.
  auto slice = [&](int buffer, int kk) {
    float a[static_cast<unsigned>(MicroRows)];
    float b[static_cast<unsigned>(MicroOut)];
    VTRACE_UNROLL
    for (int q = 0; q < MicroRows; q += 4) {
      const float4 v = load_float4(&stage_a[buffer][kk * Shape::kAStride + ty * MicroRows + q]);
      a[q] = v.x, a[q + 1] = v.y, a[q + 2] = v.z, a[q + 3] = v.w;
    }
    VTRACE_UNROLL
    for (int q = 0; q < MicroOut; q += 4) {
      const float4 v = load_float4(&stage_w[buffer][kk * Shape::kWStride + tx * MicroOut + q]);
      b[q] = v.x, b[q + 1] = v.y, b[q + 2] = v.z, b[q + 3] = v.w;
    }
    micro_step(acc, a, b);
  };

  const long long tiles = (k + TileK - 1) / TileK;
  load_tile(0);
  store_tile(0);
  __syncthreads();
  for (long long t = 0; t < tiles; ++t) {
    // Tile t is in stage t % 2. The other stage was last read in tile t - 1, which every thread
    // finished before the barrier that ended it: it can take tile t + 1 once tile t is added.
    const int buffer = static_cast<int>(t % 2);
    const bool more = t + 1 < tiles;  // the same for every thread of the block
    if (more) load_tile((t + 1) * TileK);
    const int count = tile_count(k, t * TileK, TileK);
    if (count == TileK) {
      VTRACE_UNROLL
      for (int kk = 0; kk < TileK; ++kk) slice(buffer, kk);
    } else {
      for (int kk = 0; kk < count; ++kk) slice(buffer, kk);
    }
    if (more) store_tile(1 - buffer);
    __syncthreads();
  }
  store_micro_tile(out, acc, row0 + ty * MicroRows, col0 + tx * MicroOut, rows, out_features);
}

}  // namespace vtrace::runtime::cuda::kernels::device
