// Lab: time the strict kernels' variants on the GPU and check each bitwise against a host
// reference (one f32 accumulator per output, k ascending, fmaf). Not part of the build
// (README.md in this folder says how it was built and run; lab-6-f32-weights.txt came from a
// state of it and of the kernel with an f32-weights variant, since removed).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kernels_device.h"
#include "kernels_v1.h"

namespace dev = vtrace::runtime::cuda::kernels::device;
namespace st = vtrace::runtime::cuda::strict;
namespace f16 = vtrace::runtime::f16_bits;

#define CK(x)                                                                      \
  do {                                                                             \
    cudaError_t e_ = (x);                                                          \
    if (e_ != cudaSuccess) {                                                       \
      std::printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); \
      std::exit(1);                                                                \
    }                                                                              \
  } while (0)

struct Shape { long rows, k, out; };

std::vector<std::uint16_t> random_f16(std::size_t n, float sigma, unsigned seed) {
  std::vector<std::uint16_t> v(n);
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, sigma);
  for (auto& x : v) x = f16::from_f32(d(rng));
  return v;
}

std::vector<std::uint16_t> host_reference(const std::vector<std::uint16_t>& a,
                                          const std::vector<std::uint16_t>& w, Shape s) {
  std::vector<std::uint16_t> out(static_cast<std::size_t>(s.rows * s.out));
  std::vector<float> af(a.size()), wf(w.size());
  for (std::size_t i = 0; i < a.size(); ++i) af[i] = f16::to_f32(a[i]);
  for (std::size_t i = 0; i < w.size(); ++i) wf[i] = f16::to_f32(w[i]);
  const unsigned nt = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < nt; ++t) {
    pool.emplace_back([&, t] {
      for (long idx = t; idx < s.rows * s.out; idx += nt) {
        const long r = idx / s.out, o = idx % s.out;
        float acc = 0.0f;
        const float* ar = &af[static_cast<std::size_t>(r * s.k)];
        const float* wr = &wf[static_cast<std::size_t>(o * s.k)];
        for (long kk = 0; kk < s.k; ++kk) acc = std::fma(ar[kk], wr[kk], acc);
        out[static_cast<std::size_t>(idx)] = acc != acc ? 0x7E00 : f16::from_f32(acc);
      }
    });
  }
  for (auto& th : pool) th.join();
  return out;
}

using Launch = std::function<void(const std::uint8_t*, const std::uint8_t*, std::uint8_t*, Shape,
                                  cudaStream_t)>;

template <int Rows, int Rpt, int TK, int S, int Warps>
void launch_decode(const std::uint8_t* a, const std::uint8_t* w, std::uint8_t* o, Shape s,
                   cudaStream_t st) {
  using Sh = dev::DecodeShape<Rows, Rpt, TK, S, Warps>;
  static cudaError_t c = cudaFuncSetAttribute(dev::decode_kernel<Rows, Rpt, TK, S, Warps>,
      cudaFuncAttributeMaxDynamicSharedMemorySize, int(Sh::kSharedBytes));
  CK(c);
  dim3 grid(static_cast<unsigned>((s.out + st::kDecodeTileOut - 1) / st::kDecodeTileOut));
  dim3 block(st::kDecodeTileOut, Warps);
  dev::decode_kernel<Rows, Rpt, TK, S, Warps><<<grid, block, Sh::kSharedBytes, st>>>(a, w, o, s.k, s.out, s.k % 8 == 0);
}
template <int Rows>
void launch_cfg(const std::uint8_t* a, const std::uint8_t* w, std::uint8_t* o, Shape s,
                cudaStream_t st) {
  using C = dev::DecodeConfig<Rows>;
  launch_decode<Rows, C::kRowsPerThread, C::kTileK, C::kStages, C::kWarps>(a, w, o, s, st);
}

template <int Rows>
void launch_decode_v1(const std::uint8_t* a, const std::uint8_t* w, std::uint8_t* o, Shape s,
                      cudaStream_t st) {
  dim3 grid(static_cast<unsigned>((s.out + 31) / 32));
  dim3 block(32, Rows);
  lab_v1::decode_kernel<Rows><<<grid, block, 0, st>>>(a, w, o, s.k, s.out, s.k % 8 == 0);
}
void launch_tiled_v1(const std::uint8_t* a, const std::uint8_t* w, std::uint8_t* o, Shape s,
                     cudaStream_t st) {
  dim3 grid(static_cast<unsigned>((s.out + 63) / 64), static_cast<unsigned>((s.rows + 63) / 64));
  lab_v1::tiled_kernel<<<grid, lab_v1_strict::kTiledThreads, 0, st>>>(a, w, o, s.rows, 0, s.k, s.out, s.k % 8 == 0);
}


// E1/E2: the decode kernel's load pattern alone: a warp reads its 32 lines' chunks of CHUNK
// bytes per tile (lanes split each line's chunk), ring depth 2, XORs everything.
template <int Chunk>
__global__ void pattern_kernel(const uint4* w, long long line_u4, long long lines, unsigned* sink) {
  const long long line0 = static_cast<long long>(blockIdx.x) * 32;
  constexpr int kPerLine = Chunk / 16;        // uint4 per line per tile
  constexpr int kPerThread = 32 * kPerLine / 32;
  unsigned x = 0;
  for (long long t = 0; t * kPerLine < line_u4; ++t) {
    uint4 r[kPerThread];
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int g = threadIdx.x + i * 32;
      const long long line = line0 + g / kPerLine;
      r[i] = line < lines ? __ldg(&w[line * line_u4 + t * kPerLine + g % kPerLine]) : make_uint4(0,0,0,0);
    }
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) x ^= r[i].x ^ r[i].y ^ r[i].z ^ r[i].w;
  }
  if (x == 0x12345678u) sink[0] = x;
}
// E3: a linear streaming read of the whole buffer.
__global__ void linear_kernel(const uint4* w, long long n, unsigned* sink) {
  unsigned x = 0;
  for (long long i = blockIdx.x * 256LL + threadIdx.x; i < n; i += 256LL * gridDim.x) {
    const uint4 v = __ldg(&w[i]);
    x ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (x == 0x12345678u) sink[0] = x;
}

void bandwidth(const char* name, int which, long lines, long k) {
  const std::size_t bytes = static_cast<std::size_t>(lines * k * 2);
  int l2 = 0;
  CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  const int sets = 1 + int(std::ceil(2.0 * l2 / double(bytes)));
  std::vector<uint4*> W(sets);
  for (auto& p : W) { CK(cudaMalloc(&p, bytes)); CK(cudaMemset(p, 1, bytes)); }
  unsigned* sink; CK(cudaMalloc(&sink, 4));
  cudaStream_t st; CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  auto go = [&](uint4* p) {
    const long long u4 = k * 2 / 16;
    const unsigned blocks = static_cast<unsigned>((lines + 31) / 32);
    if (which == 1) pattern_kernel<256><<<blocks, 32, 0, st>>>(p, u4, lines, sink);
    if (which == 2) pattern_kernel<1024><<<blocks, 32, 0, st>>>(p, u4, lines, sink);
    if (which == 3) linear_kernel<<<132 * 8, 256, 0, st>>>(p, static_cast<long long>(bytes / 16), sink);
  };
  for (auto* p : W) go(p);
  CK(cudaStreamSynchronize(st));
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  std::vector<double> times;
  for (int rep = 0; rep < 30; ++rep) {
    CK(cudaEventRecord(e0, st));
    for (auto* p : W) go(p);
    CK(cudaEventRecord(e1, st));
    CK(cudaEventSynchronize(e1));
    float ms; CK(cudaEventElapsedTime(&ms, e0, e1));
    times.push_back(1000.0 * ms / sets);
  }
  CK(cudaGetLastError());
  std::sort(times.begin(), times.end());
  const double us = times[times.size() / 2];
  std::printf("%-28s %ld lines x %ld k: median %9.2f us  %7.1f GB/s (%5.1f%%)\n", name, lines, k, us,
              bytes / us / 1e3, 100.0 * bytes / us / 1e3 / 4800.0);
  std::fflush(stdout);
  for (auto* p : W) CK(cudaFree(p));
  CK(cudaFree(sink));
}

void run(const char* name, Launch launch, Shape s, bool timed, bool l2_warm = false) {
  const auto a = random_f16(static_cast<std::size_t>(s.rows * s.k), 1.0f, 1);
  const auto w = random_f16(static_cast<std::size_t>(s.out * s.k), 0.02f, 2);
  static std::vector<std::uint16_t> expected;
  static Shape expected_shape{0, 0, 0};
  if (expected_shape.rows != s.rows || expected_shape.k != s.k || expected_shape.out != s.out) {
    expected = host_reference(a, w, s);
    expected_shape = s;
  }
  const double bytes = 2.0 * double(s.rows * s.k + s.out * s.k + s.rows * s.out);
  int l2 = 0;
  CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  const int sets = timed && !l2_warm ? 1 + int(std::ceil(2.0 * l2 / bytes)) : 1;
  std::vector<std::uint8_t*> A(sets), W(sets), O(sets);
  for (int i = 0; i < sets; ++i) {
    CK(cudaMalloc(&A[i], a.size() * 2));
    CK(cudaMalloc(&W[i], w.size() * 2));
    CK(cudaMalloc(&O[i], expected.size() * 2));
    CK(cudaMemcpy(A[i], a.data(), a.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(W[i], w.data(), w.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemset(O[i], 0xFF, expected.size() * 2));
  }
  cudaStream_t stream;
  CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  launch(A[0], W[0], O[0], s, stream);
  CK(cudaGetLastError());
  CK(cudaStreamSynchronize(stream));
  std::vector<std::uint16_t> got(expected.size());
  CK(cudaMemcpy(got.data(), O[0], got.size() * 2, cudaMemcpyDeviceToHost));
  std::size_t diff = 0;
  for (std::size_t i = 0; i < got.size(); ++i) diff += got[i] != expected[i];
  double median_us = 0;
  if (timed) {
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    std::vector<double> times;
    for (int rep = 0; rep < 30; ++rep) {
      CK(cudaEventRecord(e0, stream));
      for (int i = 0; i < sets; ++i) launch(A[i], W[i], O[i], s, stream);
      CK(cudaEventRecord(e1, stream));
      CK(cudaEventSynchronize(e1));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      times.push_back(1000.0 * ms / sets);
    }
    std::sort(times.begin(), times.end());
    median_us = times[times.size() / 2];
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
  }
  int sms = 0, clk = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  CK(cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0));
  const double peak = sms * (clk * 1e3) * 256.0;
  const double flops = 2.0 * double(s.rows) * double(s.k) * double(s.out);
  if (timed) {
    std::printf("%-28s %4ldx%5ldx%5ld  %s  median %9.2f us  %7.1f GB/s (%5.1f%% of 4.8 TB/s)  %5.1f%% FP32\n",
                name, s.rows, s.k, s.out, diff == 0 ? "bit-exact" : "MISMATCH ", median_us,
                bytes / median_us / 1e3, 100.0 * bytes / median_us / 1e3 / 4800.0,
                100.0 * flops / (median_us * 1e-6) / peak);
  } else {
    std::printf("%-28s %4ldx%5ldx%5ld  %s (%zu of %zu differ)\n", name, s.rows, s.k, s.out,
                diff == 0 ? "bit-exact" : "MISMATCH ", diff, got.size());
  }
  std::fflush(stdout);
  for (int i = 0; i < sets; ++i) {
    CK(cudaFree(A[i]));
    CK(cudaFree(W[i]));
    CK(cudaFree(O[i]));
  }
  CK(cudaStreamDestroy(stream));
}

int main(int argc, char** argv) {
  cudaDeviceProp p{};
  CK(cudaGetDeviceProperties(&p, 0));
  std::printf("%s, %d SMs, L2 %d bytes\n", p.name, p.multiProcessorCount, p.l2CacheSize);
  if (argc > 1 && std::string(argv[1]) == "profile") {
    run("decode cfg", launch_cfg<8>, Shape{8, 4096, 4096}, false);
    run("decode cfg", launch_cfg<1>, Shape{1, 4096, 11008}, false);
    return 0;
  }
  for (Shape s : {Shape{1, 1031, 777}, Shape{3, 4099, 300}, Shape{5, 1000, 97}, Shape{8, 257, 33},
                  Shape{2, 4096, 1000}, Shape{7, 2048, 64}}) {
    run("decode cfg", [](auto... x) {
      const Shape s = std::get<3>(std::tuple(x...));
      if (s.rows == 1) launch_cfg<1>(x...);
      if (s.rows == 2) launch_cfg<2>(x...);
      if (s.rows == 3) launch_cfg<3>(x...);
      if (s.rows == 5) launch_cfg<5>(x...);
      if (s.rows == 7) launch_cfg<7>(x...);
      if (s.rows == 8) launch_cfg<8>(x...);
    }, s, false);
  }
  const Shape d8{8, 4096, 4096}, d1{1, 4096, 11008}, pf{128, 4096, 4096};
  run("decode v1 (HEAD)", launch_decode_v1<8>, d8, true);
  run("d8 cfg", launch_cfg<8>, d8, true);
  run("d4 cfg", launch_cfg<4>, Shape{4, 4096, 4096}, true);
  run("decode v1 (HEAD)", launch_decode_v1<1>, d1, true);
  run("d1 cfg", launch_cfg<1>, d1, true);
  run("tiled v1 (HEAD)", launch_tiled_v1, pf, true);
  return 0;
}
