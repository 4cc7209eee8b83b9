// The drift tools' cost on the CLI's default decode trace (decode hidden=512 ffn=2048 layers=4
// participants=2 steps=8 seed=1, recorded once on reference into a temp file):
//
//   BM_Drift_SeparateReplays   replay on reference, then on cpu: the baseline of lockstep;
//   BM_Drift_Compare/deep:0|1  compare --runtimes reference,cpu (deep off, on): the same two
//                              runtimes in lockstep; lockstep overhead = Compare/deep:0 /
//                              SeparateReplays (goal <= 1.1), the cost of --deep = deep:1 / deep:0;
//   BM_Drift_Replay/runtime    one replay, with events/s per runtime (reference, cpu, cpu-splitk).
//
//   build-release/bench/vtrace_bench --benchmark_filter=Drift --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "vtrace/drift/lockstep.h"
#include "vtrace/recorder/recording_runtime.h"
#include "vtrace/replayer/replay_trace.h"
#include "vtrace/runtime/registry.h"
#include "vtrace/workloads/workload.h"

namespace {

namespace rt = vtrace::runtime;
namespace wl = vtrace::workloads;

// The default decode trace, recorded once per process.
const std::filesystem::path& decode_trace() {
  static const std::filesystem::path path = [] {
    const auto p = std::filesystem::temp_directory_path() /
                   ("vtrace_bench_drift_" + std::to_string(::getpid()) + ".vtrace");
    wl::WorkloadSpec spec;
    spec.kind = wl::WorkloadKind::kDecode;
    auto inner = rt::default_registry().open("reference", {.device_id = "device.vtrace.0"});
    auto rec = vtrace::recorder::RecordingRuntime::create(std::move(*inner), "reference", p, {});
    if (rec && wl::run_workload(spec, **rec, nullptr)) (void)(*rec)->close();
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove(std::filesystem::temp_directory_path() /
                                  ("vtrace_bench_drift_" + std::to_string(::getpid()) + ".vtrace"),
                              ec);
    });
    return p;
  }();
  return path;
}

bool replay(const std::string& runtime, std::uint64_t* events = nullptr) {
  vtrace::replayer::ReplayTraceOptions o;
  o.runtime = runtime;
  auto r = vtrace::replayer::replay_trace(decode_trace(), o, rt::default_registry());
  if (!r || !r->matched()) return false;
  if (events != nullptr) *events = r->events;
  return true;
}

void BM_Drift_SeparateReplays(benchmark::State& state) {
  for (auto _ : state) {
    if (!replay("reference") || !replay("cpu")) return state.SkipWithError("a replay failed");
  }
}
BENCHMARK(BM_Drift_SeparateReplays)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Drift_Compare(benchmark::State& state) {
  vtrace::drift::CompareOptions o;
  o.runtimes = {"reference", "cpu"};
  o.deep = state.range(0) != 0;
  std::size_t commands = 0;
  for (auto _ : state) {
    auto r = vtrace::drift::compare_trace(decode_trace(), o, rt::default_registry());
    if (!r || !r->matched()) return state.SkipWithError("compare failed or did not match");
    commands = r->commands.size();
  }
  state.counters["commands_compared"] = static_cast<double>(commands);
}
BENCHMARK(BM_Drift_Compare)
    ->ArgName("deep")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_Drift_Replay(benchmark::State& state, const char* runtime) {
  std::uint64_t events = 0;
  for (auto _ : state) {
    // cpu-splitk drifts on this trace: the replay reports mismatches, which is not a failure here.
    vtrace::replayer::ReplayTraceOptions o;
    o.runtime = runtime;
    auto r = vtrace::replayer::replay_trace(decode_trace(), o, rt::default_registry());
    if (!r) return state.SkipWithError("the replay failed");
    events = r->events;
  }
  state.counters["events_per_s"] = benchmark::Counter(
      static_cast<double>(events), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK_CAPTURE(BM_Drift_Replay, reference, "reference")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Drift_Replay, cpu, "cpu")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Drift_Replay, cpu_splitk, "cpu-splitk")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
