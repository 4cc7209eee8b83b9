// The CUDA dense-linear kernels on the GPU (docs/BENCHMARKS.md, "GPU"): the strict kernel
// (kernels.h, the `cuda` runtime's) and cublasGemmEx (`cuda-cublas`'s, tensor cores allowed) on
// the decode shapes 8x4096x4096 and 1x4096x11008 and the prefill shape 128x4096x4096 (rows x in
// x out, as bench_dense_linear.cpp). Each iteration is timed with CUDA events around one launch
// (UseManualTime). Counters, from the summed event times:
//   GB/s      (input + weight + output bytes) per second (each operand is read or written once)
//   GFLOP/s   2 * rows * in * out per second
//   %HBM      GB/s against the H200's 4.8 TB/s;  %FP32  GFLOP/s against its 67 TFLOP/s of FP32 FMA
// Before each timed launch a scratch buffer of twice the GPU's L2 size is overwritten (outside
// the timed events), so every launch reads its operands from HBM: 8x4096x4096's 33.6 MB of
// weights would otherwise stay in the H200's 50 MB L2 from one launch to the next, and %HBM
// would count L2 bandwidth.
// The ratio to cuBLAS is the strict kernel's time over cuBLAS's on the same shape
// (scripts/gpu-check.sh prints it). Without a usable GPU every benchmark is skipped with the
// reason. Built only in a CUDA build.
#if VTRACE_HAVE_CUDA

#include <benchmark/benchmark.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "cublas_linear.h"
#include "kernels.h"
#include "vtrace/runtime/f16.h"

namespace {

namespace vr = vtrace::runtime;

constexpr double kH200BandwidthGBs = 4800.0;
constexpr double kH200Fp32Gflops = 67000.0;

// Why no GPU benchmark can run here, or empty.
std::string gpu_unavailable() {
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess) {
    return std::string("no CUDA device is available (cudaGetDeviceCount: ") +
           cudaGetErrorString(status) + ")";
  }
  return devices == 0 ? "no CUDA device is available (cudaGetDeviceCount found none)" : "";
}

// Device operands of one shape: N(0,1) activations, N(0,0.02) weights (f16), an output.
struct DeviceOperands {
  std::uint8_t* input = nullptr;
  std::uint8_t* weight = nullptr;
  std::uint8_t* output = nullptr;
  std::string failure;
  DeviceOperands(std::size_t rows, std::size_t in, std::size_t out) {
    std::mt19937 rng(42);
    const auto upload = [&](std::uint8_t** where, std::size_t count, float sigma) {
      std::normal_distribution<float> dist(0.0f, sigma);
      std::vector<std::uint8_t> bytes(2 * count);
      for (std::size_t i = 0; i < count; ++i) {
        const std::uint16_t bits = vr::f32_to_f16(dist(rng));
        bytes[2 * i] = static_cast<std::uint8_t>(bits & 0xFF);
        bytes[2 * i + 1] = static_cast<std::uint8_t>(bits >> 8);
      }
      void* p = nullptr;
      cudaError_t status = cudaMalloc(&p, bytes.size());
      if (status == cudaSuccess) {
        *where = static_cast<std::uint8_t*>(p);
        status = cudaMemcpy(p, bytes.data(), bytes.size(), cudaMemcpyHostToDevice);
      }
      if (status != cudaSuccess && failure.empty()) failure = cudaGetErrorString(status);
    };
    upload(&input, rows * in, 1.0f);
    upload(&weight, out * in, 0.02f);
    upload(&output, rows * out, 0.0f);
  }
  DeviceOperands(const DeviceOperands&) = delete;
  DeviceOperands& operator=(const DeviceOperands&) = delete;
  ~DeviceOperands() {
    (void)cudaFree(input);
    (void)cudaFree(weight);
    (void)cudaFree(output);
  }
};

enum class Kernel : std::uint8_t { kStrict, kCublas };

void BM_CudaDenseLinear(benchmark::State& state, Kernel kernel) {
  if (const std::string why = gpu_unavailable(); !why.empty()) {
    state.SkipWithError(("GPU benchmark skipped: " + why).c_str());
    return;
  }
  const auto rows = static_cast<std::size_t>(state.range(0));
  const auto in = static_cast<std::size_t>(state.range(1));
  const auto out = static_cast<std::size_t>(state.range(2));
  DeviceOperands ops(rows, in, out);
  cublasHandle_t handle = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  std::string failure = ops.failure;
  if (failure.empty() && cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
    failure = "cudaStreamCreateWithFlags failed";
  }
  if (failure.empty() &&
      (cudaEventCreate(&start) != cudaSuccess || cudaEventCreate(&stop) != cudaSuccess)) {
    failure = "cudaEventCreate failed";
  }
  if (failure.empty() && kernel == Kernel::kCublas &&
      cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
    failure = "cublasCreate failed";
  }
  const auto launch = [&]() -> bool {
    if (kernel == Kernel::kStrict) {
      return vtrace::runtime::cuda::kernels::launch_strict_dense_linear(
                 ops.input, ops.weight, ops.output, rows, in, out, stream) == cudaSuccess;
    }
    return vtrace::runtime::cuda::cublas_dense_linear(
               handle, ops.input, ops.weight, ops.output, static_cast<int>(rows),
               static_cast<int>(in), static_cast<int>(out), stream) == CUBLAS_STATUS_SUCCESS;
  };
  // The L2 flush buffer (see the top of this file).
  void* flush = nullptr;
  std::size_t flush_bytes = 0;
  if (failure.empty()) {
    int device = 0;
    int l2_bytes = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device) != cudaSuccess ||
        l2_bytes <= 0) {
      failure = "the GPU's L2 size cannot be queried";
    } else {
      flush_bytes = 2 * static_cast<std::size_t>(l2_bytes);
      if (cudaMalloc(&flush, flush_bytes) != cudaSuccess)
        failure = "cudaMalloc of the L2 flush failed";
    }
  }
  // Warm up (module load, cuBLAS heuristics), then time each launch with events.
  if (failure.empty() && (!launch() || !launch() || cudaStreamSynchronize(stream) != cudaSuccess)) {
    failure = "the warm-up launches failed";
  }
  double seconds = 0.0;
  std::int64_t launches = 0;
  if (failure.empty()) {
    int fill = 0;
    for (auto _ : state) {
      if (cudaMemsetAsync(flush, ++fill & 0xFF, flush_bytes, stream) != cudaSuccess) {
        failure = "the L2 flush failed";
        break;
      }
      cudaEventRecord(start, stream);
      const bool ok = launch();
      cudaEventRecord(stop, stream);
      float ms = 0.0f;
      if (!ok || cudaEventSynchronize(stop) != cudaSuccess ||
          cudaEventElapsedTime(&ms, start, stop) != cudaSuccess) {
        failure = "a timed launch failed";
        break;
      }
      state.SetIterationTime(static_cast<double>(ms) / 1e3);
      seconds += static_cast<double>(ms) / 1e3;
      ++launches;
    }
  }
  if (!failure.empty()) {
    state.SkipWithError(failure.c_str());
  } else if (launches > 0 && seconds > 0.0) {
    const double n = static_cast<double>(launches);
    const double bytes = 2.0 * static_cast<double>(rows * in + out * in + rows * out);
    const double flops =
        2.0 * static_cast<double>(rows) * static_cast<double>(in) * static_cast<double>(out);
    const double gbs = bytes * n / seconds / 1e9;
    const double gflops = flops * n / seconds / 1e9;
    state.counters["GB/s"] = gbs;
    state.counters["GFLOP/s"] = gflops;
    state.counters["%HBM"] = 100.0 * gbs / kH200BandwidthGBs;
    state.counters["%FP32"] = 100.0 * gflops / kH200Fp32Gflops;
  }
  state.SetLabel(kernel == Kernel::kStrict ? "strict, L2 flushed" : "cublas, L2 flushed");
  if (flush != nullptr) cudaFree(flush);
  if (handle != nullptr) cublasDestroy(handle);
  if (start != nullptr) cudaEventDestroy(start);
  if (stop != nullptr) cudaEventDestroy(stop);
  if (stream != nullptr) cudaStreamDestroy(stream);
}

void shapes(benchmark::internal::Benchmark* b) {
  b->Args({8, 4096, 4096})->Args({1, 4096, 11008})->Args({128, 4096, 4096});
  b->ArgNames({"rows", "in", "out"})->UseManualTime()->Unit(benchmark::kMicrosecond);
}

BENCHMARK_CAPTURE(BM_CudaDenseLinear, strict, Kernel::kStrict)->Apply(shapes);
BENCHMARK_CAPTURE(BM_CudaDenseLinear, cublas, Kernel::kCublas)->Apply(shapes);

}  // namespace

#endif  // VTRACE_HAVE_CUDA
