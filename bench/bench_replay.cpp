// Replay throughput and replay-versus-direct cost, on the decode workload (default options:
// hidden 512, ffn 2048, 4 layers, 2 participants, 8 steps) and the contract workload.
//
//   BM_Replay_DecodeDirect   the decode workload run directly on a fresh reference runtime (it
//                            generates its seeded weights file, as a product run would).

//   BM_Replay_DecodeTrace    `vtrace replay` of its trace: open, build the plan, open two
//                            reference runtimes, execute and check everything.
//   BM_Replay_DecodePlanned  the engine alone (plan built once outside the loop).
//   BM_Replay_ContractTrace  the contract trace: many small events, the per-event cost.
//   BM_Replay_DecodeRatio    both, alternated inside each iteration; counter replay_over_direct is
//                            sum(replay time) / sum(direct time). Goal: <= 1.05.
// events/s and bytes/s (payload bytes: uploads plus checked readbacks) via counters and
// SetBytesProcessed.
#include <benchmark/benchmark.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

#include <unistd.h>

#include "vtrace/recorder/recording_runtime.h"
#include "vtrace/replayer/replay_trace.h"
#include "vtrace/runtime/registry.h"
#include "vtrace/workloads/workload.h"

namespace {

namespace rt = vtrace::runtime;
namespace rp = vtrace::replayer;
namespace wl = vtrace::workloads;

struct Fixture {
  std::filesystem::path dir;
  std::filesystem::path decode_trace;
  std::filesystem::path contract_trace;
  wl::WorkloadSpec decode;
  std::optional<rp::ReplayPlan> decode_plan;
  std::uint64_t decode_events = 0;
  std::uint64_t decode_payload_bytes = 0;
  std::string error;

  ~Fixture() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

bool record(const wl::WorkloadSpec& spec, const std::filesystem::path& path, std::string& error) {
  const auto& registry = rt::default_registry();
  auto inner = registry.open("reference", {.device_id = "device.vtrace.0"});
  auto foreign = registry.open("reference", {.device_id = "device.vtrace.1"});
  if (!inner || !foreign) {
    error = "the reference runtime cannot be opened";
    return false;
  }
  auto recording = vtrace::recorder::RecordingRuntime::create(std::move(*inner), "reference", path);
  if (!recording) {
    error = recording.error().message();
    return false;
  }
  auto report = wl::run_workload(spec, **recording, foreign->get());
  if (!(*recording)->close() || !report) {
    error = report ? "closing the trace failed" : report.error().message;
    return false;
  }
  return true;
}

const Fixture& fixture() {
  static Fixture f = [] {
    Fixture x;
    x.dir = std::filesystem::temp_directory_path() / ("vtrace-bench-replay-" + std::to_string(::getpid()));
    std::filesystem::create_directories(x.dir);
    x.decode.kind = wl::WorkloadKind::kDecode;
    // Both sides generate the seeded weights (the workload writes and reads a safetensors
    // file), so the direct run pays exactly the product's cost; replay uploads them from the trace.
    x.decode_trace = x.dir / "decode.vtrace";
    if (!record(x.decode, x.decode_trace, x.error)) return x;
    wl::WorkloadSpec contract;
    contract.kind = wl::WorkloadKind::kContract;
    x.contract_trace = x.dir / "contract.vtrace";
    if (!record(contract, x.contract_trace, x.error)) return x;
    auto reader = vtrace::schema::TraceReader::open(x.decode_trace);
    if (!reader) {
      x.error = reader.error().message;
      return x;
    }
    auto plan = rp::ReplayPlan::build(**reader);
    if (!plan) {
      x.error = plan.error().message;
      return x;
    }
    x.decode_events = plan->steps().size();
    x.decode_payload_bytes = plan->payload_bytes();
    x.decode_plan = std::move(*plan);
    return x;
  }();
  return f;
}

double run_direct(const Fixture& f, std::string& error) {
  const auto t0 = std::chrono::steady_clock::now();
  auto runtime = rt::default_registry().open("reference", {.device_id = "device.vtrace.0"});
  if (!runtime) {
    error = runtime.error().message();
    return 0;
  }
  auto report = wl::run_workload(f.decode, **runtime, nullptr);
  if (!report) error = report.error().message;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double run_replay(const std::filesystem::path& trace, std::string& error) {
  const auto t0 = std::chrono::steady_clock::now();
  auto report = rp::replay_trace(trace, {}, rt::default_registry());
  if (!report) {
    error = report.error().message;
  } else if (!report->matched()) {
    error = "replay did not match";
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void set_throughput(benchmark::State& state, std::uint64_t events, std::uint64_t bytes) {
  state.SetItemsProcessed(static_cast<std::int64_t>(static_cast<std::uint64_t>(state.iterations()) * events));
  state.SetBytesProcessed(static_cast<std::int64_t>(static_cast<std::uint64_t>(state.iterations()) * bytes));
  state.counters["events_per_s"] = benchmark::Counter(
      static_cast<double>(static_cast<std::uint64_t>(state.iterations()) * events), benchmark::Counter::kIsRate);
}

void BM_Replay_DecodeDirect(benchmark::State& state) {
  const auto& f = fixture();
  if (!f.error.empty()) return state.SkipWithError(f.error.c_str());
  std::string error;
  for (auto _ : state) run_direct(f, error);
  if (!error.empty()) state.SkipWithError(error.c_str());
}

void BM_Replay_DecodeTrace(benchmark::State& state) {
  const auto& f = fixture();
  if (!f.error.empty()) return state.SkipWithError(f.error.c_str());
  std::string error;
  for (auto _ : state) run_replay(f.decode_trace, error);
  if (!error.empty()) state.SkipWithError(error.c_str());
  set_throughput(state, f.decode_events, f.decode_payload_bytes);
}

void BM_Replay_DecodePlanned(benchmark::State& state) {
  const auto& f = fixture();
  if (!f.error.empty()) return state.SkipWithError(f.error.c_str());
  bool matched = true;
  for (auto _ : state) {
    auto runtime = rt::default_registry().open("reference", {.device_id = "device.vtrace.0"});
    auto aux = rt::default_registry().open("reference", {.device_id = "device.vtrace.1"});
    if (!runtime || !aux) return state.SkipWithError("the reference runtime cannot be opened");
    matched = rp::execute_plan(*f.decode_plan, **runtime, **aux, {}).matched() && matched;
  }
  if (!matched) state.SkipWithError("replay did not match");
  set_throughput(state, f.decode_events, f.decode_payload_bytes);
}

void BM_Replay_ContractTrace(benchmark::State& state) {
  const auto& f = fixture();
  if (!f.error.empty()) return state.SkipWithError(f.error.c_str());
  auto reader = vtrace::schema::TraceReader::open(f.contract_trace);
  if (!reader) return state.SkipWithError(reader.error().message.c_str());
  const std::uint64_t events = (*reader)->event_count();
  std::string error;
  for (auto _ : state) run_replay(f.contract_trace, error);
  if (!error.empty()) state.SkipWithError(error.c_str());
  set_throughput(state, events, 0);
}

void BM_Replay_DecodeRatio(benchmark::State& state) {
  const auto& f = fixture();
  if (!f.error.empty()) return state.SkipWithError(f.error.c_str());
  std::string error;
  double direct = 0;
  double replay = 0;
  for (auto _ : state) {
    direct += run_direct(f, error);
    replay += run_replay(f.decode_trace, error);
  }
  if (!error.empty()) state.SkipWithError(error.c_str());
  state.counters["replay_over_direct"] = direct > 0 ? replay / direct : 0;
}

BENCHMARK(BM_Replay_DecodeDirect)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Replay_DecodeTrace)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Replay_DecodePlanned)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Replay_ContractTrace)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Replay_DecodeRatio)->Unit(benchmark::kMillisecond);

}  // namespace
