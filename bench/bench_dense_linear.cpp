// The dense-linear kernels side by side: the reference kernel, the cpu kernels (exact on 1 and
// on all threads, split-k on all threads; each instruction path the CPU has, exact on all
// threads) and OpenBLAS cblas_sgemm on f32 copies of the same operands (all threads; built only
// when CMake found OpenBLAS), on the decode shapes 8x4096x4096 and 1x4096x11008 and the prefill
// shape 128x4096x4096 (rows x in x out). GFLOP/s = 2*rows*in*out per second of wall time; the
// label names the ISA path. The reference kernel takes seconds on the prefill shape, so that one
// runs a single iteration per repetition. Compare medians:
//   build-rel/bench/vtrace_bench --benchmark_filter=DenseLinear --benchmark_repetitions=5
//     --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "cpu/dense_linear_cpu.h"
#include "reference/dense_linear_kernel.h"
#include "vtrace/runtime/f16.h"

#if VTRACE_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace {

namespace vr = vtrace::runtime;
using vr::cpu::DenseLinearEngine;
using vr::cpu::DenseLinearShape;

struct Operands {
  std::vector<std::uint8_t> input, weight, output;  // f16
  std::vector<float> input32, weight32, output32;   // the same values in f32 (sgemm)
};

// N(0,1) activations and N(0,0.02) weights, made once per shape.
const Operands& operands(const DenseLinearShape& s) {
  static std::map<std::tuple<std::size_t, std::size_t, std::size_t>, std::unique_ptr<Operands>>
      cache;
  auto& slot = cache[{s.rows, s.in_features, s.out_features}];
  if (!slot) {
    slot = std::make_unique<Operands>();
    std::mt19937 rng(42);
    auto fill = [&](std::size_t n, float sigma, std::vector<std::uint8_t>& f16,
                    std::vector<float>& f32) {
      std::normal_distribution<float> dist(0.0f, sigma);
      f16.resize(2 * n);
      f32.resize(n);
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint16_t bits = vr::f32_to_f16(dist(rng));
        f16[2 * i] = static_cast<std::uint8_t>(bits & 0xFF);
        f16[2 * i + 1] = static_cast<std::uint8_t>(bits >> 8);
        f32[i] = vr::f16_to_f32(bits);
      }
    };
    fill(s.rows * s.in_features, 1.0f, slot->input, slot->input32);
    fill(s.out_features * s.in_features, 0.02f, slot->weight, slot->weight32);
    slot->output.resize(2 * s.rows * s.out_features);
    slot->output32.resize(s.rows * s.out_features);
  }
  return *slot;
}

double flops(const DenseLinearShape& s) {
  return 2.0 * static_cast<double>(s.rows * s.in_features * s.out_features);
}

void finish(benchmark::State& state, const DenseLinearShape& s, const std::string& label) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops(s) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(label);
}

void bm_reference(benchmark::State& state, DenseLinearShape s) {
  const Operands& op = operands(s);
  for (auto _ : state) {
    auto out = vr::reference::dense_linear_f16(op.input, op.weight, s.rows, s.in_features,
                                               s.out_features);
    benchmark::DoNotOptimize(out.data());
  }
  finish(state, s, "scalar");
}

void bm_cpu(benchmark::State& state, DenseLinearShape s, unsigned threads, bool splitk,
            vr::cpu::Isa isa) {
  if (!vr::cpu::isa_supported(isa)) {
    state.SkipWithError(("this CPU has no " + std::string(vr::cpu::isa_name(isa)) + " path").c_str());
    return;
  }
  Operands& op = const_cast<Operands&>(operands(s));
  DenseLinearEngine engine(threads, isa);
  if (!engine.reserve(s, splitk)) {
    state.SkipWithError("the engine's scratch memory could not be allocated");
    return;
  }
  for (auto _ : state) {
    // Reserved above: the launches allocate nothing and cannot fail.
    const bool ran =
        splitk ? engine.dense_linear_splitk(op.input.data(), op.weight.data(), op.output.data(), s)
               : engine.dense_linear_exact(op.input.data(), op.weight.data(), op.output.data(), s);
    benchmark::DoNotOptimize(ran);
    benchmark::DoNotOptimize(op.output.data());
    benchmark::ClobberMemory();
  }
  finish(state, s,
         std::string(vr::cpu::isa_name(engine.isa())) + ", " + std::to_string(engine.threads()) +
             " thread" + (engine.threads() == 1 ? "" : "s"));
}

#if VTRACE_HAVE_OPENBLAS
void bm_sgemm(benchmark::State& state, DenseLinearShape s) {
  Operands& op = const_cast<Operands&>(operands(s));
  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  openblas_set_num_threads(threads);
  const auto m = static_cast<blasint>(s.rows);
  const auto n = static_cast<blasint>(s.out_features);
  const auto k = static_cast<blasint>(s.in_features);
  for (auto _ : state) {
    // out[rows][out] = in[rows][in] * weight[out][in]^T
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, op.input32.data(), k,
                op.weight32.data(), k, 0.0f, op.output32.data(), n);
    benchmark::DoNotOptimize(op.output32.data());
    benchmark::ClobberMemory();
  }
  finish(state, s, "openblas, " + std::to_string(threads) + " threads");
}
#endif

std::string shape_name(const DenseLinearShape& s) {
  return std::to_string(s.rows) + "x" + std::to_string(s.in_features) + "x" +
         std::to_string(s.out_features);
}

bool register_all() {
  const DenseLinearShape shapes[] = {{8, 4096, 4096}, {1, 4096, 11008}, {128, 4096, 4096}};
  for (const DenseLinearShape& s : shapes) {
    std::string suffix = "/";
    suffix += shape_name(s);
    auto* ref = benchmark::RegisterBenchmark(("DenseLinear/reference" + suffix).c_str(),
                                             bm_reference, s);
    ref->Unit(benchmark::kMillisecond)->UseRealTime();
    if (s.rows > 8) ref->Iterations(1);  // seconds per call
    const vr::cpu::Isa best = vr::cpu::detect_isa();
    benchmark::RegisterBenchmark(("DenseLinear/cpu_exact_1t" + suffix).c_str(), bm_cpu, s, 1u,
                                 false, best)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("DenseLinear/cpu_exact" + suffix).c_str(), bm_cpu, s, 0u, false,
                                 best)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("DenseLinear/cpu_splitk" + suffix).c_str(), bm_cpu, s, 0u,
                                 true, best)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    // Each instruction path on all threads (the runtime's --isa): what run-time dispatch gains.
    // A path this CPU lacks is skipped with the reason.
    for (const vr::cpu::Isa isa :
         {vr::cpu::Isa::kPortable, vr::cpu::Isa::kAvx2F16c, vr::cpu::Isa::kAvx512}) {
      benchmark::RegisterBenchmark(
          ("DenseLinear/cpu_isa/" + std::string(vr::cpu::isa_name(isa)) + suffix).c_str(), bm_cpu,
          s, 0u, false, isa)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    }
#if VTRACE_HAVE_OPENBLAS
    benchmark::RegisterBenchmark(("DenseLinear/openblas_sgemm" + suffix).c_str(), bm_sgemm, s)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
#endif
  }
  return true;
}

const bool registered = register_all();

}  // namespace
