// The CUDA dense-linear kernels on the GPU (docs/BENCHMARKS.md, "GPU"): the strict kernel
// (kernels.h, the `cuda` runtime's) and cublasGemmEx (`cuda-cublas`'s, tensor cores allowed) on
// the decode shapes 8x4096x4096 and 1x4096x11008 and the prefill shape 128x4096x4096 (rows x in
// x out, as bench_dense_linear.cpp). Each iteration is timed with CUDA events around one launch
// per operand set, back to back, and counts as one launch's time (UseManualTime): the sum over
// the sets divided by their number. Counters, from the summed event times:
//   GB/s      (input + weight + output bytes) per second (each operand is read or written once)
//   GFLOP/s   2 * rows * in * out per second
//   %HBM      GB/s against the H200's 4.8 TB/s of HBM3e (SXM and NVL alike)
//   %FP32     GFLOP/s against the FP32 FMA peak of the GPU at hand: SMs x peak clock x 128 FP32
//             lanes per SM (sm_90, the architecture the kernels are built for) x 2; 132 SMs at
//             1980 MHz on an H200 SXM: 66.9 TFLOP/s. `peak GFLOP/s` says the figure used.
// Every launch reads its operands from HBM, not from L2: there are several sets of operands,
// at least twice the GPU's L2 size apart (8x4096x4096's 33.6 MB of weights would otherwise stay
// in the H200's 50 MB L2 from one launch to the next, and %HBM would count L2 bandwidth), and
// each launch takes the set that was used longest ago. Nothing else writes memory in between
// (a memset flush would leave L2 full of dirty lines that the timed launch writes back).
// The ratio to cuBLAS is the strict kernel's time over cuBLAS's on the same shape
// (scripts/gpu-check.sh prints it). Candidates for the runtime kernels' places run too, named
// strict_<candidate>: on the prefill shape the pipelined kernel's configurations (strict_arith.h,
// Prefill), on the decode shapes the converted decode kernel's (Decode). Before it is timed, each
// one's outputs are compared with the runtime's kernel's on the same operands, on the GPU, and a
// candidate that differs in one bit is not timed but reported (SkipWithError) with the count.
// Without a usable GPU every benchmark is skipped with the reason. Built only in a CUDA build.
#if VTRACE_HAVE_CUDA

#include <benchmark/benchmark.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <expected>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "cublas_linear.h"
#include "kernels.h"
#include "vtrace/runtime/f16.h"

namespace {

namespace vr = vtrace::runtime;

constexpr double kH200BandwidthGBs = 4800.0;
constexpr double kFp32LanesPerSm = 128.0;  // sm_90

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

// The host bytes of `count` f16 values drawn from N(0, sigma) (seed 42; +0.0 where sigma is 0),
// generated once per (count, sigma) and kept: Google Benchmark calls a benchmark function several
// times (to size its iterations, once per repetition), and drawing 45 million normal values each
// time took minutes on the GPU machine's CPU.
const std::vector<std::uint8_t>& host_operand(std::size_t count, float sigma) {
  static std::map<std::pair<std::size_t, float>, std::vector<std::uint8_t>> cache;
  auto [it, inserted] = cache.try_emplace({count, sigma});
  if (inserted) {
    std::vector<std::uint8_t>& bytes = it->second;
    bytes.assign(2 * count, 0);
    if (sigma > 0.0f) {
      std::mt19937 rng(42);
      std::normal_distribution<float> dist(0.0f, sigma);
      for (std::size_t i = 0; i < count; ++i) {
        const std::uint16_t bits = vr::f32_to_f16(dist(rng));
        bytes[2 * i] = static_cast<std::uint8_t>(bits & 0xFF);
        bytes[2 * i + 1] = static_cast<std::uint8_t>(bits >> 8);
      }
    }
  }
  return it->second;
}

// Device operands of one shape: N(0,1) activations, N(0,0.02) weights (f16), a zeroed output
// (host_operand's bytes); uploaded and complete on the device when the constructor returns.
struct DeviceOperands {
  std::uint8_t* input = nullptr;
  std::uint8_t* weight = nullptr;
  std::uint8_t* output = nullptr;
  std::string failure;
  DeviceOperands(std::size_t rows, std::size_t in, std::size_t out) {
    const auto upload = [&](std::uint8_t** where, std::size_t count, float sigma) {
      const std::vector<std::uint8_t>& bytes = host_operand(count, sigma);
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
    // A cudaMemcpy from pageable memory may return before its DMA has landed, and the launches
    // run on a non-blocking stream that does not wait for the legacy default stream.
    if (const cudaError_t status = cudaDeviceSynchronize();
        status != cudaSuccess && failure.empty())
      failure = cudaGetErrorString(status);
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
using vtrace::runtime::cuda::strict::Decode;
using vtrace::runtime::cuda::strict::KernelChoice;
using vtrace::runtime::cuda::strict::Prefill;

// Whether `choice` names a candidate: a kernel other than the runtime's.
bool is_candidate(KernelChoice choice) {
  return choice.prefill != vtrace::runtime::cuda::strict::kRuntimePrefill ||
         choice.decode != vtrace::runtime::cuda::strict::kRuntimeDecode;
}

// How many of the rows * out f16 outputs of `choice`'s launch on `o` differ from the runtime
// kernel's on the same operands (run here into a scratch buffer), or why they could not be read.
std::expected<std::size_t, std::string> outputs_differing_from_runtime(
    const DeviceOperands& o, std::size_t rows, std::size_t in, std::size_t out, KernelChoice choice,
    cudaStream_t stream) {
  namespace kernels = vtrace::runtime::cuda::kernels;
  const std::size_t bytes = 2 * rows * out;
  void* scratch = nullptr;
  if (cudaMalloc(&scratch, bytes) != cudaSuccess) return std::unexpected("cudaMalloc failed");
  std::vector<std::uint8_t> candidate(bytes);
  std::vector<std::uint8_t> runtime(bytes);
  const bool ran =
      kernels::launch_strict_dense_linear(o.input, o.weight, o.output, rows, in, out, stream,
                                          choice) == cudaSuccess &&
      kernels::launch_strict_dense_linear(o.input, o.weight, static_cast<std::uint8_t*>(scratch),
                                          rows, in, out, stream) == cudaSuccess &&
      cudaStreamSynchronize(stream) == cudaSuccess &&
      cudaMemcpy(candidate.data(), o.output, bytes, cudaMemcpyDeviceToHost) == cudaSuccess &&
      cudaMemcpy(runtime.data(), scratch, bytes, cudaMemcpyDeviceToHost) == cudaSuccess;
  (void)cudaFree(scratch);
  if (!ran) return std::unexpected("the launches to compare with the runtime's kernel failed");
  std::size_t differing = 0;
  for (std::size_t e = 0; e < bytes; e += 2) {
    differing += candidate[e] != runtime[e] || candidate[e + 1] != runtime[e + 1] ? 1u : 0u;
  }
  return differing;
}

void BM_CudaDenseLinear(benchmark::State& state, Kernel kernel, KernelChoice choice) {
  if (const std::string why = gpu_unavailable(); !why.empty()) {
    state.SkipWithError(("GPU benchmark skipped: " + why).c_str());
    return;
  }
  const auto rows = static_cast<std::size_t>(state.range(0));
  const auto in = static_cast<std::size_t>(state.range(1));
  const auto out = static_cast<std::size_t>(state.range(2));
  std::string failure;
  // The GPU: its L2 size (how many operand sets), its SMs and peak clock (the FP32 peak).
  int device = 0;
  int l2_bytes = 0;
  int sms = 0;
  int clock_khz = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device) != cudaSuccess ||
      l2_bytes <= 0 || sms <= 0 || clock_khz <= 0) {
    failure = "the GPU's L2 size, SM count or clock cannot be queried";
  }
  const double operand_bytes = 2.0 * static_cast<double>(rows * in + out * in + rows * out);
  // Between two uses of a set, the other sets read at least twice the L2 size.
  std::size_t sets = 0;
  if (failure.empty()) {
    sets = 1 +
           static_cast<std::size_t>(std::ceil(2.0 * static_cast<double>(l2_bytes) / operand_bytes));
  }
  std::vector<std::unique_ptr<DeviceOperands>> ops;
  for (std::size_t k = 0; k < sets && failure.empty(); ++k) {
    ops.push_back(std::make_unique<DeviceOperands>(rows, in, out));
    failure = ops.back()->failure;
  }
  const vtrace::runtime::cuda::CublasApi* cublas = nullptr;
  if (failure.empty() && kernel == Kernel::kCublas) {
    const auto loaded = vtrace::runtime::cuda::load_cublas();
    if (loaded) {
      cublas = *loaded;
    } else {
      failure = loaded.error();
    }
  }
  cublasHandle_t handle = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  if (failure.empty() && cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
    failure = "cudaStreamCreateWithFlags failed";
  }
  if (failure.empty() &&
      (cudaEventCreate(&start) != cudaSuccess || cudaEventCreate(&stop) != cudaSuccess)) {
    failure = "cudaEventCreate failed";
  }
  if (failure.empty() && kernel == Kernel::kCublas &&
      cublas->create(&handle) != CUBLAS_STATUS_SUCCESS) {
    failure = "cublasCreate failed";
  }
  const auto launch = [&](const DeviceOperands& o) -> bool {
    if (kernel == Kernel::kStrict) {
      return vtrace::runtime::cuda::kernels::launch_strict_dense_linear(
                 o.input, o.weight, o.output, rows, in, out, stream, choice) == cudaSuccess;
    }
    return vtrace::runtime::cuda::cublas_dense_linear(
               *cublas, handle, o.input, o.weight, o.output, static_cast<int>(rows),
               static_cast<int>(in), static_cast<int>(out), stream) == CUBLAS_STATUS_SUCCESS;
  };
  const auto launch_all = [&]() {
    for (const auto& o : ops) {
      if (!launch(*o)) return false;
    }
    return true;
  };
  // Warm up (module load, cuBLAS heuristics), then time each round of launches with events.
  if (failure.empty() && (!launch_all() || cudaStreamSynchronize(stream) != cudaSuccess)) {
    failure = "the warm-up launches failed";
  }
  if (failure.empty() && kernel == Kernel::kStrict && is_candidate(choice)) {
    const auto differing =
        outputs_differing_from_runtime(*ops.front(), rows, in, out, choice, stream);
    if (!differing) {
      failure = differing.error();
    } else if (*differing != 0) {
      failure = std::to_string(*differing) + " of " + std::to_string(rows * out) +
                " outputs differ from the runtime kernel's: not timed";
    }
  }
  double seconds = 0.0;
  std::int64_t launches = 0;
  if (failure.empty()) {
    for (auto _ : state) {
      cudaEventRecord(start, stream);
      const bool ok = launch_all();
      cudaEventRecord(stop, stream);
      float ms = 0.0f;
      if (!ok || cudaEventSynchronize(stop) != cudaSuccess ||
          cudaEventElapsedTime(&ms, start, stop) != cudaSuccess) {
        failure = "a timed launch failed";
        break;
      }
      state.SetIterationTime(static_cast<double>(ms) / 1e3 / static_cast<double>(sets));
      seconds += static_cast<double>(ms) / 1e3;
      launches += static_cast<std::int64_t>(sets);
    }
  }
  if (!failure.empty()) {
    state.SkipWithError(failure.c_str());
  } else if (launches > 0 && seconds > 0.0) {
    const double n = static_cast<double>(launches);
    const double flops =
        2.0 * static_cast<double>(rows) * static_cast<double>(in) * static_cast<double>(out);
    const double gbs = operand_bytes * n / seconds / 1e9;
    const double gflops = flops * n / seconds / 1e9;
    const double peak_gflops = static_cast<double>(sms) * static_cast<double>(clock_khz) * 1e3 *
                               kFp32LanesPerSm * 2.0 / 1e9;
    state.counters["GB/s"] = gbs;
    state.counters["GFLOP/s"] = gflops;
    state.counters["%HBM"] = 100.0 * gbs / kH200BandwidthGBs;
    state.counters["%FP32"] = 100.0 * gflops / peak_gflops;
    state.counters["peak GFLOP/s"] = peak_gflops;
    state.counters["operand sets"] = static_cast<double>(sets);
  }
  state.SetLabel(kernel == Kernel::kCublas ? "cublas, operands from HBM"
                 : !is_candidate(choice)   ? "strict, operands from HBM"
                                           : "strict candidate, bit-identical to the runtime's "
                                             "kernel, operands from HBM");
  ops.clear();
  if (handle != nullptr) cublas->destroy(handle);
  if (start != nullptr) cudaEventDestroy(start);
  if (stop != nullptr) cudaEventDestroy(stop);
  if (stream != nullptr) cudaStreamDestroy(stream);
}

void shapes(benchmark::internal::Benchmark* b) {
  b->Args({8, 4096, 4096})->Args({1, 4096, 11008})->Args({128, 4096, 4096});
  b->ArgNames({"rows", "in", "out"})->UseManualTime()->Unit(benchmark::kMicrosecond);
}
void decode_shapes(benchmark::internal::Benchmark* b) {
  b->Args({8, 4096, 4096})->Args({1, 4096, 11008});
  b->ArgNames({"rows", "in", "out"})->UseManualTime()->Unit(benchmark::kMicrosecond);
}
void prefill_shape(benchmark::internal::Benchmark* b) {
  b->Args({128, 4096, 4096});
  b->ArgNames({"rows", "in", "out"})->UseManualTime()->Unit(benchmark::kMicrosecond);
}

BENCHMARK_CAPTURE(BM_CudaDenseLinear, strict, Kernel::kStrict, KernelChoice{})->Apply(shapes);
BENCHMARK_CAPTURE(BM_CudaDenseLinear, cublas, Kernel::kCublas, KernelChoice{})->Apply(shapes);
BENCHMARK_CAPTURE(BM_CudaDenseLinear, strict_converted_8x4, Kernel::kStrict,
                  KernelChoice{.decode = Decode::kConvertedWarp8x4})
    ->Apply(decode_shapes);
BENCHMARK_CAPTURE(BM_CudaDenseLinear, strict_converted_8x8, Kernel::kStrict,
                  KernelChoice{.decode = Decode::kConvertedWarp8x8})
    ->Apply(decode_shapes);
BENCHMARK_CAPTURE(BM_CudaDenseLinear, strict_converted_fit_rows, Kernel::kStrict,
                  KernelChoice{.decode = Decode::kConvertedFitRows})
    ->Apply(decode_shapes);
BENCHMARK_CAPTURE(BM_CudaDenseLinear, strict_pipelined_64x64_4x4_k32, Kernel::kStrict,
                  KernelChoice{.prefill = Prefill::kPipelined64x64Micro4x4K32})
    ->Apply(prefill_shape);
BENCHMARK_CAPTURE(BM_CudaDenseLinear, strict_pipelined_32x64_4x4_k32, Kernel::kStrict,
                  KernelChoice{.prefill = Prefill::kPipelined32x64Micro4x4K32})
    ->Apply(prefill_shape);
BENCHMARK_CAPTURE(BM_CudaDenseLinear, strict_pipelined_64x64_4x8_k32, Kernel::kStrict,
                  KernelChoice{.prefill = Prefill::kPipelined64x64Micro4x8K32})
    ->Apply(prefill_shape);

}  // namespace

#endif  // VTRACE_HAVE_CUDA
