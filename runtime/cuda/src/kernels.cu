// The strict dense-linear kernels (kernels.h). The per-element arithmetic, the tile layouts and
// the per-tile reductions are strict_arith.h's, shared with the host emulations the tests check
// against the reference. Parallelism is over outputs only: each output's accumulator lives in
// one thread and sees k ascending, one tile after the other.
#include <cuda_runtime.h>

#include "kernels.h"
#include "strict_arith.h"

namespace vtrace::runtime::cuda::kernels {

namespace {

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
// (decode_slot), then each thread reduces its pair of lines (reduce_tile). The next tile's
// groups are loaded into registers while the current one is reduced.
constexpr int kDecodeGroupsPerLine = kDecodeTileK / kGroup;
constexpr int kDecodeMaxGroupsPerThread =
    ((kDecodeTileOut + 1) * kDecodeGroupsPerLine + kDecodeTileOut - 1) / kDecodeTileOut;

__global__ void __launch_bounds__(kDecodeTileOut* kDecodeMaxRows)
    decode_kernel(const std::uint8_t* in, const std::uint8_t* w, std::uint8_t* out, int rows,
                  long long k, long long out_features, bool vec) {
  __shared__ __align__(16) float tile_a[kDecodeMaxRows * kDecodeStride];
  __shared__ __align__(16) float tile_w[kDecodeTileOut * kDecodeStride];
  const int x = static_cast<int>(threadIdx.x);
  const int y = static_cast<int>(threadIdx.y);
  const int tid = y * kDecodeTileOut + x;
  const int threads = kDecodeTileOut * rows;
  const long long col0 = static_cast<long long>(blockIdx.x) * kDecodeTileOut;
  const int lines = kDecodeTileOut + rows;  // weight lines first, then input rows
  const int groups = lines * kDecodeGroupsPerLine;

  uint4 staged[kDecodeMaxGroupsPerThread];
  // Loads tile k0's groups of this thread into `staged`.
  auto load_tile = [&](long long k0) {
    const int count = tile_count(k, k0, kDecodeTileK);
#pragma unroll
    for (int i = 0; i < kDecodeMaxGroupsPerThread; ++i) {
      const int g = tid + i * threads;
      if (g >= groups) break;
      const int line = g / kDecodeGroupsPerLine;
      const int kk = (g % kDecodeGroupsPerLine) * kGroup;
      const int valid = count - kk < kGroup ? count - kk : kGroup;
      const bool is_weight = line < kDecodeTileOut;
      const long long src_line = is_weight ? col0 + line : line - kDecodeTileOut;
      if (valid <= 0 || (is_weight && src_line >= out_features)) continue;
      const std::uint8_t* base = is_weight ? w : in;
      staged[i] = load_group(base + 2 * (src_line * k + k0 + kk), valid, vec);
    }
  };
  // Converts the staged groups into the shared tile.
  auto store_tile = [&](long long k0) {
    const int count = tile_count(k, k0, kDecodeTileK);
#pragma unroll
    for (int i = 0; i < kDecodeMaxGroupsPerThread; ++i) {
      const int g = tid + i * threads;
      if (g >= groups) break;
      const int line = g / kDecodeGroupsPerLine;
      const int kk = (g % kDecodeGroupsPerLine) * kGroup;
      const int valid = count - kk < kGroup ? count - kk : kGroup;
      const bool is_weight = line < kDecodeTileOut;
      if (valid <= 0 || (is_weight && col0 + line >= out_features)) continue;
      float* tile = is_weight ? tile_w : tile_a;
      const int tile_line = is_weight ? line : line - kDecodeTileOut;
      for (int e = 0; e < valid; ++e) {
        tile[decode_slot(tile_line, kk + e)] = f16_bits::to_f32(group_element(staged[i], e));
      }
    }
  };

  float acc = +0.0f;
  load_tile(0);
  for (long long k0 = 0; k0 < k; k0 += kDecodeTileK) {
    __syncthreads();  // every thread is done with the previous tile
    store_tile(k0);
    __syncthreads();
    if (k0 + kDecodeTileK < k) load_tile(k0 + kDecodeTileK);  // in flight during the reduction
    if (col0 + x < out_features) {
      acc = reduce_tile(acc, &tile_a[decode_slot(y, 0)], &tile_w[decode_slot(x, 0)],
                        tile_count(k, k0, kDecodeTileK));
    }
  }
  if (col0 + x < out_features) store_output(out, y * out_features + col0 + x, acc);
}

// --- tiled: more rows ----------------------------------------------------------------------------
// A block owns kTiledTileRows x kTiledTileOut outputs; thread (tx, ty) the micro-tile of rows
// ty * 4 + i and outputs tx * 8 + j. Per k tile of kTiledTileK it stages the block's input and
// weight lines transposed (tiled_a_slot, tiled_w_slot) and steps every accumulator through the
// tile's k-slices in order (micro_step). Each thread loads one group of each operand per tile,
// the next tile's while the current one is reduced.
constexpr int kTiledGroupsPerLine = kTiledTileK / kGroup;  // 2
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

  uint4 staged_a = make_uint4(0, 0, 0, 0);
  uint4 staged_w = make_uint4(0, 0, 0, 0);
  auto load_tile = [&](long long k0) {
    const int count = tile_count(k, k0, kTiledTileK);
    const int valid = count - kk0 < kGroup ? count - kk0 : kGroup;
    if (valid <= 0) return;
    if (a_line_valid) staged_a = load_group(in + 2 * ((row0 + line) * k + k0 + kk0), valid, vec);
    if (w_line_valid) staged_w = load_group(w + 2 * ((col0 + line) * k + k0 + kk0), valid, vec);
  };
  auto store_tile = [&](long long k0) {
    const int count = tile_count(k, k0, kTiledTileK);
    const int valid = count - kk0 < kGroup ? count - kk0 : kGroup;
    for (int e = 0; e < valid; ++e) {
      tile_a[tiled_a_slot(kk0 + e, line)] =
          a_line_valid ? f16_bits::to_f32(group_element(staged_a, e)) : 0.0f;
      tile_w[tiled_w_slot(kk0 + e, line)] =
          w_line_valid ? f16_bits::to_f32(group_element(staged_w, e)) : 0.0f;
    }
  };

  float acc[kTiledMicroRows][kTiledMicroOut];
#pragma unroll
  for (int i = 0; i < kTiledMicroRows; ++i) {
#pragma unroll
    for (int j = 0; j < kTiledMicroOut; ++j) acc[i][j] = +0.0f;
  }
  load_tile(0);
  for (long long k0 = 0; k0 < k; k0 += kTiledTileK) {
    __syncthreads();
    store_tile(k0);
    __syncthreads();
    if (k0 + kTiledTileK < k) load_tile(k0 + kTiledTileK);
    const int count = tile_count(k, k0, kTiledTileK);
    for (int kk = 0; kk < count; ++kk) {
      const float4 a4 =
          *reinterpret_cast<const float4*>(&tile_a[tiled_a_slot(kk, ty * kTiledMicroRows)]);
      const float4 w0 =
          *reinterpret_cast<const float4*>(&tile_w[tiled_w_slot(kk, tx * kTiledMicroOut)]);
      const float4 w1 =
          *reinterpret_cast<const float4*>(&tile_w[tiled_w_slot(kk, tx * kTiledMicroOut + 4)]);
      const float a[kTiledMicroRows] = {a4.x, a4.y, a4.z, a4.w};
      const float b[kTiledMicroOut] = {w0.x, w0.y, w0.z, w0.w, w1.x, w1.y, w1.z, w1.w};
      micro_step(acc, a, b);
    }
  }
#pragma unroll
  for (int i = 0; i < kTiledMicroRows; ++i) {
    const long long r = row0 + ty * kTiledMicroRows + i;
#pragma unroll
    for (int j = 0; j < kTiledMicroOut; ++j) {
      const long long o = col0 + tx * kTiledMicroOut + j;
      if (r < rows && o < out_features) store_output(out, r * out_features + o, acc[i][j]);
    }
  }
}

}  // namespace

cudaError_t launch_strict_dense_linear(const std::uint8_t* input, const std::uint8_t* weight,
                                       std::uint8_t* output, std::uint64_t rows,
                                       std::uint64_t in_features, std::uint64_t out_features,
                                       cudaStream_t stream) {
  const auto k = static_cast<long long>(in_features);
  const auto outs = static_cast<long long>(out_features);
  const bool vec = reinterpret_cast<std::uintptr_t>(input) % 16 == 0 &&
                   reinterpret_cast<std::uintptr_t>(weight) % 16 == 0 && in_features % kGroup == 0;
  if (rows <= static_cast<std::uint64_t>(kDecodeMaxRows)) {
    const dim3 grid(static_cast<unsigned>((out_features + kDecodeTileOut - 1) / kDecodeTileOut));
    const dim3 block(kDecodeTileOut, static_cast<unsigned>(rows));
    decode_kernel<<<grid, block, 0, stream>>>(input, weight, output, static_cast<int>(rows), k,
                                              outs, vec);
    return cudaGetLastError();
  }
  // gridDim.y is at most 65535: launch the row blocks in chunks.
  constexpr unsigned long long kMaxRowBlocks = 65535;
  const unsigned long long row_blocks = (rows + kTiledTileRows - 1) / kTiledTileRows;
  const dim3 block(kTiledThreads);
  for (unsigned long long first = 0; first < row_blocks; first += kMaxRowBlocks) {
    const unsigned long long count =
        row_blocks - first < kMaxRowBlocks ? row_blocks - first : kMaxRowBlocks;
    const dim3 grid(static_cast<unsigned>((out_features + kTiledTileOut - 1) / kTiledTileOut),
                    static_cast<unsigned>(count));
    tiled_kernel<<<grid, block, 0, stream>>>(input, weight, output, static_cast<long long>(rows),
                                             static_cast<long long>(first * kTiledTileRows), k,
                                             outs, vec);
    if (const cudaError_t launched = cudaGetLastError(); launched != cudaSuccess) return launched;
  }
  return cudaSuccess;
}

}  // namespace vtrace::runtime::cuda::kernels
