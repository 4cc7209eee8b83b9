// The flight recorder (docs/FLIGHT.md) on the decode workload on the `cpu` runtime, with no
// trigger firing: what it costs, what it holds, and what a window weighs.
//
//   BM_Flight_CpuDecode   decode (the CLI's shape: hidden=512 ffn=2048 layers=4 participants=2,
//                         seed 1) for `steps` steps (the benchmark's argument), run unrecorded and
//                         in flight mode (window_batches 16, window_mib 24) alternately in each
//                         iteration, so drift in the machine's speed hits both alike. After the
//                         flight run a window is written through dump_window() (outside the
//                         timed part), and one full capture of the same run is recorded once.
//   Counters: raw_ms, flight_ms (medians of whole runs, wall), flight_over_raw (their ratio; goal
//   <= 1.02), flight_over_raw_paired (the median of the per-iteration ratios); the same from the
//   process's CPU time (raw_cpu_ms, flight_cpu_ms, flight_over_raw_cpu, ..._cpu_paired), steadier
//   when other load on the machine takes most of the wall clock; held_mib and
//   peak_held_mib (FlightStats at the end of the run) against configured_mib; window_bytes (the
//   written window), full_bytes (the full capture), window_over_full; weights_bytes (the f16
//   weights) and batch_payload_bytes (16 batches' upload and readback payloads), and
//   window_over_goal = window_bytes / (weights_bytes + batch_payload_bytes) (goal <= 1).
//
//   build-rel/bench/vtrace_bench --benchmark_filter=Flight --benchmark_repetitions=3
//       --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "vtrace/recorder/recording_runtime.h"
#include "vtrace/runtime/registry.h"
#include "vtrace/workloads/decode_workload.h"
#include "vtrace/workloads/workload.h"

namespace {

namespace rt = vtrace::runtime;
namespace wl = vtrace::workloads;
namespace rec = vtrace::recorder;
using Clock = std::chrono::steady_clock;

constexpr std::uint64_t kWindowBatches = 16;
constexpr std::uint64_t kWindowMib = 24;

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// CPU seconds the process has used (every thread, user and system): on a shared VM whose other
// load takes most of the wall clock, the process's own CPU time is the steadier measure.
double process_cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

std::unique_ptr<rt::DeviceRuntime> open_cpu() {
  auto runtime = rt::default_registry().open("cpu", {.device_id = "device.vtrace.0"});
  return runtime ? std::move(*runtime) : nullptr;
}

std::filesystem::path temp_path(const char* tag) {
  return std::filesystem::temp_directory_path() /
         ("vtrace_bench_flight_" + std::to_string(::getpid()) + "_" + tag + ".vtrace");
}

rec::RecorderOptions flight_options() {
  rec::RecorderOptions o;
  o.mode = rec::CaptureMode::kFlight;
  o.flight.window_batches = kWindowBatches;
  o.flight.window_bytes = kWindowMib << 20;
  return o;
}

void BM_Flight_CpuDecode(benchmark::State& state) {
  wl::WorkloadSpec spec;
  spec.kind = wl::WorkloadKind::kDecode;
  spec.decode.steps = static_cast<std::uint32_t>(state.range(0));
  const auto window_path = temp_path("window");
  std::vector<double> raw_s, flight_s, paired, raw_cpu_s, flight_cpu_s, paired_cpu;
  rec::FlightStats stats;
  std::uint64_t window_bytes = 0;
  std::size_t round = 0;
  for (auto _ : state) {
    double raw = 0, flight = 0, raw_cpu = 0, flight_cpu = 0;
    for (std::size_t k = 0; k < 2; ++k) {
      const bool recorded = (round + k) % 2 == 1;
      auto inner = open_cpu();
      if (!inner) return state.SkipWithError("the cpu runtime cannot be opened");
      if (!recorded) {
        const auto t0 = Clock::now();
        const double c0 = process_cpu_seconds();
        auto report = wl::run_workload(spec, *inner, nullptr);
        raw = std::chrono::duration<double>(Clock::now() - t0).count();
        raw_cpu = process_cpu_seconds() - c0;
        if (!report) return state.SkipWithError(report.error().message.c_str());
        continue;
      }
      auto runtime =
          rec::RecordingRuntime::create(std::move(inner), "cpu", window_path, flight_options());
      if (!runtime) return state.SkipWithError(runtime.error().message().c_str());
      const auto t0 = Clock::now();
      const double c0 = process_cpu_seconds();
      auto report = wl::run_workload(spec, **runtime, nullptr);
      flight = std::chrono::duration<double>(Clock::now() - t0).count();
      flight_cpu = process_cpu_seconds() - c0;
      if (!report) return state.SkipWithError(report.error().message.c_str());
      state.PauseTiming();
      stats = *(*runtime)->flight_stats();
      auto written = (*runtime)->dump_window();
      if (!written) return state.SkipWithError(written.error().message.c_str());
      window_bytes = std::filesystem::file_size(window_path);
      (void)(*runtime)->close();
      state.ResumeTiming();
    }
    ++round;
    raw_s.push_back(raw);
    flight_s.push_back(flight);
    paired.push_back(flight / raw);
    raw_cpu_s.push_back(raw_cpu);
    flight_cpu_s.push_back(flight_cpu);
    paired_cpu.push_back(flight_cpu / raw_cpu);
  }
  // One full capture of the same run, for the size comparison.
  const auto full_path = temp_path("full");
  std::uint64_t full_bytes = 0, batch_payload = 0;
  {
    auto runtime = rec::RecordingRuntime::create(open_cpu(), "cpu", full_path, {});
    if (!runtime) return state.SkipWithError(runtime.error().message().c_str());
    auto report = wl::run_workload(spec, **runtime, nullptr);
    if (!report) return state.SkipWithError(report.error().message.c_str());
    if (auto closed = (*runtime)->close(); closed) full_bytes = closed->file_bytes;
    // Each step uploads its activations and reads back as many bytes of logits.
    batch_payload = kWindowBatches * 2 * (report->readback_bytes / report->readbacks);
  }
  std::filesystem::remove(full_path);
  std::filesystem::remove(window_path);
  const auto& o = spec.decode;
  const std::uint64_t weights_bytes =
      wl::decode_device_bytes(o) -
      (3 * 2ull * 3 * o.hidden + 2ull * 3 * o.ffn);  // less x, y, logits and h (3 tokens)
  const double raw = median_of(raw_s);
  const double flight = median_of(flight_s);
  state.counters["raw_ms"] = raw * 1e3;
  state.counters["flight_ms"] = flight * 1e3;
  state.counters["flight_over_raw"] = flight / raw;
  state.counters["flight_over_raw_paired"] = median_of(paired);
  state.counters["raw_cpu_ms"] = median_of(raw_cpu_s) * 1e3;
  state.counters["flight_cpu_ms"] = median_of(flight_cpu_s) * 1e3;
  state.counters["flight_over_raw_cpu"] = median_of(flight_cpu_s) / median_of(raw_cpu_s);
  state.counters["flight_over_raw_cpu_paired"] = median_of(paired_cpu);
  state.counters["configured_mib"] = static_cast<double>(kWindowMib);
  state.counters["held_mib"] = static_cast<double>(stats.held_bytes) / (1 << 20);
  state.counters["peak_held_mib"] = static_cast<double>(stats.peak_held_bytes) / (1 << 20);
  state.counters["held_batches"] = static_cast<double>(stats.held_batches);
  state.counters["window_bytes"] = static_cast<double>(window_bytes);
  state.counters["full_bytes"] = static_cast<double>(full_bytes);
  state.counters["window_over_full"] =
      full_bytes == 0 ? 0 : static_cast<double>(window_bytes) / static_cast<double>(full_bytes);
  state.counters["weights_bytes"] = static_cast<double>(weights_bytes);
  state.counters["batch_payload_bytes"] = static_cast<double>(batch_payload);
  state.counters["window_over_goal"] =
      static_cast<double>(window_bytes) / static_cast<double>(weights_bytes + batch_payload);
}
BENCHMARK(BM_Flight_CpuDecode)
    ->Arg(1000)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(5);

}  // namespace
