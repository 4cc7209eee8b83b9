// The drift tools' cost on the CLI's default decode trace (decode hidden=512 ffn=2048 layers=4
// participants=2 steps=8 seed=1, recorded once on reference into a temp file):
//
//   BM_Drift_SeparateReplays   replay on reference, then on cpu: the baseline of lockstep;
//   BM_Drift_Compare/mode:0|1|2  compare --runtimes reference,cpu (0 plain, 1 --deep,
//                              2 --resync): the same two runtimes in lockstep; lockstep overhead =
//                              mode:0 / SeparateReplays (goal <= 1.1), the cost of --deep =
//                              mode:1 / mode:0, of --resync = mode:2 / mode:0;
//   BM_Drift_Extract           extract the trace's 20th dense linear (a mid-batch command) into a
//                              repro: the baseline replay up to it, its state, the recording;
//   BM_Drift_Replay/runtime    one replay, with events/s per runtime (reference, cpu, cpu-splitk).
//
//   build-release/bench/vtrace_bench --benchmark_filter=Drift --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "vtrace/drift/extract.h"
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
  o.deep = state.range(0) >= 1;
  o.resync = state.range(0) == 2;
  std::size_t commands = 0;
  for (auto _ : state) {
    auto r = vtrace::drift::compare_trace(decode_trace(), o, rt::default_registry());
    if (!r || !r->matched()) return state.SkipWithError("compare failed or did not match");
    commands = r->commands.size();
  }
  state.counters["commands_compared"] = static_cast<double>(commands);
}
BENCHMARK(BM_Drift_Compare)
    ->ArgName("mode")
    ->Arg(0)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_Drift_Extract(benchmark::State& state) {
  auto plan = vtrace::replayer::open_plan(decode_trace());
  if (!plan) return state.SkipWithError("the trace does not plan");
  std::uint64_t event = 0;
  unsigned seen = 0;
  for (const auto& s : plan->steps()) {
    if (std::holds_alternative<vtrace::replayer::step::EncodeDenseLinear>(s.body) && ++seen == 20) {
      event = s.ordinal;
    }
  }
  const auto out = decode_trace().string() + ".repro.vtrace";
  vtrace::drift::ExtractOptions o;
  o.first_event = o.last_event = event;
  for (auto _ : state) {
    auto r = vtrace::drift::extract_commands(decode_trace(), out, o, rt::default_registry());
    if (!r || !r->reproduces_baseline) return state.SkipWithError("extract failed");
  }
  std::error_code ec;
  std::filesystem::remove(out, ec);
}
BENCHMARK(BM_Drift_Extract)->Unit(benchmark::kMillisecond)->UseRealTime();

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
