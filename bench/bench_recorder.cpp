// Recorder overhead on the CLI's decode workload: the WorkloadSpec `vtrace record --workload
// decode` uses by default (vtrace::workloads, decode hidden=512 ffn=2048 layers=4 participants=2
// steps=8 seed=1: seeded weights written to and read from a safetensors file, uploaded once, then
// 8 steps of upload -> 9 dense linears -> wait -> readback with counter checks). Each iteration is
// a whole run: open the reference runtime, run the workload, and for the recorder close the trace
// (summary, footer, fsync, rename). Per-iteration wall time (UseRealTime).
//
//   BM_Recorder_DecodeRaw              the unwrapped reference runtime.
//   BM_Recorder_DecodeRecorded         the same wrapped in a RecordingRuntime writing a temp file,
//                                      with the CLI's RecorderOptions (flush_before_submit on).
//   BM_Recorder_DecodeRecordedDevNull  the same recording into /dev/null (no fsync, no rename).
//   BM_Recorder_DecodeOverhead         raw, recorded and recorded-without-flush_before_submit runs
//                                      alternated inside each iteration (the order rotates), so
//                                      machine noise hits all of them alike. Counters, from the
//                                      medians of the per-run times: raw_ms, recorded_ms,
//                                      recorded_over_raw (the overhead ratio),
//                                      no_submit_flush_over_raw, submit_flush_cost
//                                      (recorded / recorded without flush_before_submit); and
//                                      recorded_over_raw_paired, the median of the per-iteration
//                                      recorded/raw ratios.
//
// Size counters (BM_Recorder_DecodeRecorded): trace_bytes (the finished .vtrace file),
// payload_bytes (every uploaded and read-back byte the trace references, concatenated in call
// order), payload_zstd3_bytes (those bytes through ZSTD_compress level 3: what "just zstd the
// data" would cost), trace_vs_zstd3 = trace_bytes / payload_zstd3_bytes.
//
//   BM_Recorder_CpuSteadyState/flush_before_submit:1|0
//                                      the overhead on the fast `cpu` runtime, where the recorder's
//                                      share is largest: decode hidden=1024 ffn=4096 layers=4
//                                      participants=2 steps=65 (69 MB of weights, read from a
//                                      safetensors file written once), run raw and recorded
//                                      (alternating order) in each iteration, with the CLI's
//                                      options (1) or without the flush before submit (0). A
//                                      ForwardingRuntime outermost notes when each submit arrives;
//                                      the interval between two consecutive step submits is one
//                                      whole step as the product sees it. Counters: raw_step_ms
//                                      and recorded_step_ms (medians over every step of every
//                                      run), step_overhead = recorded / raw (goal <= 1.03),
//                                      step_overhead_paired (median of the per-iteration ratios),
//                                      weights_recording_mb_per_s = weight MB / (the recorded run's
//                                      time to its first step - the raw run's), the one-time cost
//                                      of recording the weights.
//
//   build-rel/bench/vtrace_bench --benchmark_filter=Recorder --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "vtrace/recorder/recording_runtime.h"
#include "vtrace/runtime/f16.h"
#include "vtrace/runtime/forwarding_runtime.h"
#include "vtrace/runtime/registry.h"
#include "vtrace/runtime/safetensors.h"
#include "vtrace/schema/byte_io.h"
#include "vtrace/schema/event_links.h"
#include "vtrace/schema/events.h"
#include "vtrace/schema/trace_reader.h"
#include "vtrace/workloads/workload.h"

namespace {

namespace rt = vtrace::runtime;
namespace wl = vtrace::workloads;
namespace fb = vtrace::fb;
namespace vs = vtrace::schema;
using Bytes = std::vector<std::uint8_t>;
using Clock = std::chrono::steady_clock;

// What `vtrace record --workload decode` runs (cli/record_command.cpp: DecodeOptions defaults,
// seed 1).
wl::WorkloadSpec decode_spec() {
  wl::WorkloadSpec spec;
  spec.kind = wl::WorkloadKind::kDecode;
  return spec;
}

// The CLI's recorder options: defaults (level 1), the spec as workload description.
vtrace::recorder::RecorderOptions cli_options(const wl::WorkloadSpec& spec) {
  vtrace::recorder::RecorderOptions options;
  options.workload_description = spec.describe();
  return options;
}

std::filesystem::path temp_trace(const char* tag) {
  return std::filesystem::temp_directory_path() /
         ("vtrace_bench_recorder_" + std::to_string(::getpid()) + "_" + tag + ".vtrace");
}

std::unique_ptr<rt::DeviceRuntime> open_runtime(const std::string& name) {
  auto runtime = rt::default_registry().open(name, {.device_id = "device.vtrace.0"});
  return runtime ? std::move(*runtime) : nullptr;
}

// One raw run; false on any failure (error says which).
bool run_raw(const wl::WorkloadSpec& spec, std::string& error,
             const std::string& runtime_name = "reference") {
  auto runtime = open_runtime(runtime_name);
  if (!runtime) {
    error = "the reference runtime cannot be opened";
    return false;
  }
  auto report = wl::run_workload(spec, *runtime, nullptr);
  if (!report) {
    error = report.error().message;
    return false;
  }
  benchmark::DoNotOptimize(report->readback_digest);
  return true;
}

// One recorded run into `sink`, closed; false on any failure.
bool run_recorded(const wl::WorkloadSpec& spec, std::unique_ptr<vs::ByteSink> sink,
                  vtrace::recorder::RecorderOptions options, std::string& error,
                  std::uint64_t* file_bytes = nullptr,
                  const std::string& runtime_name = "reference") {
  auto runtime = open_runtime(runtime_name);
  if (!runtime || !sink) {
    error = "the runtime or the trace sink cannot be opened";
    return false;
  }
  auto recorder = vtrace::recorder::RecordingRuntime::create(std::move(runtime), runtime_name,
                                                             std::move(sink), std::move(options));
  if (!recorder) {
    error = recorder.error().message();
    return false;
  }
  auto report = wl::run_workload(spec, **recorder, nullptr);
  auto closed = (*recorder)->close();
  if (!report || !closed) {
    error = report ? "the recorder could not write its trace" : report.error().message;
    return false;
  }
  if (file_bytes != nullptr) *file_bytes = closed->file_bytes;
  return true;
}

bool run_recorded_file(const wl::WorkloadSpec& spec, const std::filesystem::path& path,
                       vtrace::recorder::RecorderOptions options, std::string& error,
                       std::uint64_t* file_bytes = nullptr,
                       const std::string& runtime_name = "reference") {
  auto sink = vs::open_file_sink(path);
  if (!sink) {
    error = sink.error().message;
    return false;
  }
  return run_recorded(spec, std::move(*sink), std::move(options), error, file_bytes,
                      runtime_name);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Every payload the trace references (uploads, readbacks, imported weights), in call order.
bool referenced_payloads(const std::filesystem::path& path, Bytes& out) {
  auto reader = vs::TraceReader::open(path);
  if (!reader) return false;
  std::vector<vs::BlobId> ids;
  auto visited = (*reader)->visit_events(
      0, (*reader)->event_count(), [&](std::uint64_t, std::span<const std::uint8_t> record) {
        const auto links = vs::event_links(*vs::event_of(record));
        ids.insert(ids.end(), links.payloads.begin(), links.payloads.end());
        return true;
      });
  if (!visited) return false;
  for (const auto& id : ids) {
    auto bytes = (*reader)->blob(id);
    if (!bytes) return false;
    out.insert(out.end(), bytes->begin(), bytes->end());
  }
  return true;
}

void BM_Recorder_DecodeRaw(benchmark::State& state) {
  const auto spec = decode_spec();
  std::string error;
  for (auto _ : state) {
    if (!run_raw(spec, error)) return state.SkipWithError(error.c_str());
  }
}
BENCHMARK(BM_Recorder_DecodeRaw)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Recorder_DecodeRecorded(benchmark::State& state) {
  const auto spec = decode_spec();
  const auto path = temp_trace("file");
  std::string error;
  std::uint64_t trace_bytes = 0;
  for (auto _ : state) {
    if (!run_recorded_file(spec, path, cli_options(spec), error, &trace_bytes)) {
      return state.SkipWithError(error.c_str());
    }
  }
  // Size figures, once, outside the timed loop, from the last trace written.
  Bytes payloads;
  if (!referenced_payloads(path, payloads)) {
    return state.SkipWithError("the recorded trace cannot be read back");
  }
  std::filesystem::remove(path);
  Bytes compressed(ZSTD_compressBound(payloads.size()));
  const std::size_t z =
      ZSTD_compress(compressed.data(), compressed.size(), payloads.data(), payloads.size(), 3);
  if (ZSTD_isError(z)) return state.SkipWithError("zstd failed on the payload bytes");
  state.counters["trace_bytes"] = static_cast<double>(trace_bytes);
  state.counters["payload_bytes"] = static_cast<double>(payloads.size());
  state.counters["payload_zstd3_bytes"] = static_cast<double>(z);
  state.counters["trace_vs_zstd3"] = static_cast<double>(trace_bytes) / static_cast<double>(z);
}
BENCHMARK(BM_Recorder_DecodeRecorded)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Recorder_DecodeRecordedDevNull(benchmark::State& state) {
  const auto spec = decode_spec();
  std::string error;
  for (auto _ : state) {
    auto sink = vs::open_raw_file_sink("/dev/null");
    if (!sink) return state.SkipWithError("cannot open /dev/null");
    if (!run_recorded(spec, std::move(*sink), cli_options(spec), error)) {
      return state.SkipWithError(error.c_str());
    }
  }
}
BENCHMARK(BM_Recorder_DecodeRecordedDevNull)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Recorder_DecodeOverhead(benchmark::State& state) {
  const auto spec = decode_spec();
  const auto path = temp_trace("ratio");
  auto no_submit_flush = cli_options(spec);
  no_submit_flush.flush_before_submit = false;
  std::array<std::vector<double>, 3> seconds;  // raw, recorded, recorded without submit flush
  std::string error;
  std::size_t round = 0;
  for (auto _ : state) {
    for (std::size_t k = 0; k < 3; ++k) {
      const std::size_t which = (round + k) % 3;
      const auto t0 = Clock::now();
      bool ok = false;
      if (which == 0) ok = run_raw(spec, error);
      if (which == 1) ok = run_recorded_file(spec, path, cli_options(spec), error);
      if (which == 2) ok = run_recorded_file(spec, path, no_submit_flush, error);
      if (!ok) return state.SkipWithError(error.c_str());
      seconds[which].push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
    ++round;
  }
  std::filesystem::remove(path);
  const double raw = median(seconds[0]);
  const double recorded = median(seconds[1]);
  const double unflushed = median(seconds[2]);
  state.counters["raw_ms"] = raw * 1e3;
  state.counters["recorded_ms"] = recorded * 1e3;
  state.counters["recorded_over_raw"] = raw > 0 ? recorded / raw : 0;
  state.counters["no_submit_flush_over_raw"] = raw > 0 ? unflushed / raw : 0;
  state.counters["submit_flush_cost"] = unflushed > 0 ? recorded / unflushed : 0;
  // The same ratio per iteration (runs next to each other), then the median: robust to load that
  // changes between iterations.
  std::vector<double> paired;
  for (std::size_t i = 0; i < seconds[0].size(); ++i) {
    if (seconds[0][i] > 0) paired.push_back(seconds[1][i] / seconds[0][i]);
  }
  state.counters["recorded_over_raw_paired"] = median(paired);
}
BENCHMARK(BM_Recorder_DecodeOverhead)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(5);

// Writes seeded f16 weights for `o` (the decode workload's tensor names and shapes) to `path`;
// returns their bytes, 0 on failure.
std::uint64_t write_decode_weights(const wl::DecodeOptions& o, const std::filesystem::path& path) {
  std::vector<rt::TensorToWrite> tensors;
  std::uint64_t bytes = 0;
  std::uint32_t state = 12345;
  const auto make = [&](std::string name, std::uint64_t out, std::uint64_t in) {
    std::vector<std::uint8_t> data(out * in * 2);
    // Uniform in +-sqrt(3/in), as the workload's own weights: activations keep unit variance.
    const float scale = std::sqrt(3.0f / static_cast<float>(in));
    for (std::size_t i = 0; i < data.size(); i += 2) {
      state = state * 1664525u + 1013904223u;
      const float u = static_cast<float>(state >> 8) / 16777216.0f;
      const std::uint16_t bits = rt::f32_to_f16((2.0f * u - 1.0f) * scale);
      data[i] = static_cast<std::uint8_t>(bits & 0xFF);
      data[i + 1] = static_cast<std::uint8_t>(bits >> 8);
    }
    bytes += data.size();
    tensors.push_back({std::move(name), rt::ElementType::kF16, {out, in}, std::move(data)});
  };
  for (std::uint32_t layer = 0; layer < o.layers; ++layer) {
    make("layers." + std::to_string(layer) + ".up.weight", o.ffn, o.hidden);
    make("layers." + std::to_string(layer) + ".down.weight", o.hidden, o.ffn);
  }
  make("head.weight", o.hidden, o.hidden);
  return rt::write_safetensors(path, tensors) ? bytes : 0;
}

// The runtime's own time: the calls of a decode step that do real work (the kernels run inside
// submit on the host runtimes), summed, so a step's time splits into the runtime's and the rest
// (the workload's own work, and in a recorded run the recorder's).
class InnerClock final : public rt::ForwardingRuntime {
 public:
  using ForwardingRuntime::ForwardingRuntime;
  template <typename F>
  auto timed(F&& f) const {
    const auto t0 = Clock::now();
    auto r = f();
    busy += std::chrono::duration<double>(Clock::now() - t0).count();
    return r;
  }
  rt::Result<rt::CommandPtr> encode_upload(std::span<const std::uint8_t> source,
                                           const rt::HostTransferLayout& layout,
                                           const rt::Buffer& destination,
                                           std::uint64_t offset) override {
    return timed(
        [&] { return ForwardingRuntime::encode_upload(source, layout, destination, offset); });
  }
  rt::Result<rt::CommandPtr> encode_dense_linear(const rt::DenseLinearRequest& request) override {
    return timed([&] { return ForwardingRuntime::encode_dense_linear(request); });
  }
  std::expected<rt::FencePtr, rt::DefinitelyNotSubmitted> submit(rt::Stream& stream,
                                                                 rt::CommandBatch batch) override {
    return timed([&] { return ForwardingRuntime::submit(stream, std::move(batch)); });
  }
  std::expected<rt::TerminalReceipt, rt::FenceIndeterminate> wait_fence(
      const rt::Fence& fence) override {
    return timed([&] { return ForwardingRuntime::wait_fence(fence); });
  }
  rt::Result<std::vector<std::uint8_t>> readback(rt::Stream& stream, const rt::Buffer& source,
                                                 const rt::CopyRegion& region,
                                                 const rt::HostTransferLayout& layout) override {
    if (!time_readbacks) return ForwardingRuntime::readback(stream, source, region, layout);
    return timed([&] { return ForwardingRuntime::readback(stream, source, region, layout); });
  }
  mutable double busy = 0;  // seconds
  // Off for the flight recorder: its checkpoints read back through this runtime, and that time is
  // the recorder's. The product's own readbacks (a few KiB per step) then count outside the
  // runtime in both runs alike.
  bool time_readbacks = true;
};

// The product's view of time: the moment each submit call arrives at the outermost runtime. The
// interval between two consecutive submits of the decode loop is one whole step (the upload, the
// encodes, the submit, the wait, the readback, and the recorder's work for all of them).
class SubmitClock final : public rt::ForwardingRuntime {
 public:
  using ForwardingRuntime::ForwardingRuntime;
  std::expected<rt::FencePtr, rt::DefinitelyNotSubmitted> submit(rt::Stream& stream,
                                                                 rt::CommandBatch batch) override {
    arrivals.push_back(Clock::now());
    inner_busy.push_back(inner_clock->busy);
    return ForwardingRuntime::submit(stream, std::move(batch));
  }
  const InnerClock* inner_clock = nullptr;
  std::vector<Clock::time_point> arrivals;
  std::vector<double> inner_busy;  // the InnerClock's total at each arrival
};

struct StepTimes {
  std::vector<double> steps;  // seconds per step, over pairs of consecutive steps (below)
  std::vector<double> rest;   // the same less the runtime's own time (InnerClock)
  double to_first_step = 0;   // seconds from opening the runtime to the first step's submit
};

// One run of `spec` on cpu, raw or recorded (the SubmitClock outermost either way).
bool timed_run(const wl::WorkloadSpec& spec, const std::filesystem::path* trace,
               const vtrace::recorder::RecorderOptions& options, StepTimes& out,
               std::string& error) {
  const auto t0 = Clock::now();
  auto cpu = open_runtime("cpu");
  if (!cpu) {
    error = "the cpu runtime cannot be opened";
    return false;
  }
  const bool flight = options.mode == vtrace::recorder::CaptureMode::kFlight;
  auto inner = std::make_unique<InnerClock>(std::move(cpu));
  inner->time_readbacks = !flight;
  const InnerClock* inner_clock = inner.get();
  std::unique_ptr<rt::DeviceRuntime> runtime = std::move(inner);
  vtrace::recorder::RecordingRuntime* recorder = nullptr;
  if (trace != nullptr) {
    std::unique_ptr<vs::ByteSink> sink;
    if (!flight) {
      auto opened = vs::open_file_sink(*trace);
      if (!opened) {
        error = opened.error().message;
        return false;
      }
      sink = std::move(*opened);
    }
    // Flight mode writes windows beside a path (nothing while no trigger fires).
    auto created = flight ? vtrace::recorder::RecordingRuntime::create(std::move(runtime), "cpu",
                                                                       *trace, options)
                          : vtrace::recorder::RecordingRuntime::create(std::move(runtime), "cpu",
                                                                       std::move(sink), options);
    if (!created) {
      error = created.error().message();
      return false;
    }
    recorder = created->get();
    runtime = std::move(*created);
  }
  SubmitClock clock(std::move(runtime));
  clock.inner_clock = inner_clock;
  auto report = wl::run_workload(spec, clock, nullptr);
  if (!report) {
    error = report.error().message;
    return false;
  }
  if (recorder != nullptr && !recorder->close()) {
    error = "the recorder could not write its trace";
    return false;
  }
  const auto& a = clock.arrivals;
  if (a.size() < spec.decode.steps) {
    error = "fewer submits than steps";
    return false;
  }
  const std::size_t first_step = a.size() - spec.decode.steps;
  out.to_first_step = std::chrono::duration<double>(a[first_step] - t0).count();
  // Steps alternate between a packed batch and a participant loop (decode_workload.cpp), whose
  // times differ by half: one sample is the mean of two consecutive steps, so the samples have
  // one mode and their median means something.
  for (std::size_t i = first_step + 2; i < a.size(); i += 2) {
    const double pair = std::chrono::duration<double>(a[i] - a[i - 2]).count();
    out.steps.push_back(pair / 2);
    out.rest.push_back((pair - (clock.inner_busy[i] - clock.inner_busy[i - 2])) / 2);
  }
  return true;
}

void BM_Recorder_CpuSteadyState(benchmark::State& state) {
  wl::WorkloadSpec spec = decode_spec();
  spec.decode.hidden = 1024;
  spec.decode.ffn = 4096;
  spec.decode.layers = 4;
  spec.decode.steps = 65;
  const auto weights = std::filesystem::temp_directory_path() /
                       ("vtrace_bench_recorder_" + std::to_string(::getpid()) + "_w.safetensors");
  const std::uint64_t weight_bytes = write_decode_weights(spec.decode, weights);
  if (weight_bytes == 0) return state.SkipWithError("writing the weights failed");
  spec.decode.weights = weights;
  const auto path = temp_trace("cpu");
  // Arg 1: the CLI's options (flush before every submit); 0: that flush off; 2: the flight
  // recorder (16 batches, the CLI's default window; no trigger fires, nothing is written).
  auto options = cli_options(spec);
  options.flush_before_submit = state.range(0) == 1;
  if (state.range(0) == 2) options.mode = vtrace::recorder::CaptureMode::kFlight;
  std::vector<double> raw_steps, recorded_steps, raw_rest, recorded_rest, raw_first, recorded_first,
      paired;
  std::string error;
  std::size_t round = 0;
  for (auto _ : state) {
    StepTimes raw, recorded;
    // The order alternates, so drift in the machine's speed hits both alike.
    for (std::size_t k = 0; k < 2; ++k) {
      const bool record = (round + k) % 2 == 1;
      if (!timed_run(spec, record ? &path : nullptr, options, record ? recorded : raw, error)) {
        return state.SkipWithError(error.c_str());
      }
    }
    ++round;
    raw_steps.insert(raw_steps.end(), raw.steps.begin(), raw.steps.end());
    recorded_steps.insert(recorded_steps.end(), recorded.steps.begin(), recorded.steps.end());
    raw_rest.insert(raw_rest.end(), raw.rest.begin(), raw.rest.end());
    recorded_rest.insert(recorded_rest.end(), recorded.rest.begin(), recorded.rest.end());
    raw_first.push_back(raw.to_first_step);
    recorded_first.push_back(recorded.to_first_step);
    paired.push_back(median(recorded.steps) / median(raw.steps));
    if (std::getenv("VTRACE_BENCH_VERBOSE") != nullptr) {
      std::fprintf(
          stderr, "iteration %zu: step raw %.3f recorded %.3f ms, rest raw %.3f recorded %.3f ms\n",
          round, median(raw.steps) * 1e3, median(recorded.steps) * 1e3, median(raw.rest) * 1e3,
          median(recorded.rest) * 1e3);
    }
  }
  std::filesystem::remove(path);
  std::filesystem::remove(weights);
  const double raw_step = median(raw_steps);
  const double recorded_step = median(recorded_steps);
  state.counters["raw_step_ms"] = raw_step * 1e3;
  state.counters["recorded_step_ms"] = recorded_step * 1e3;
  state.counters["step_overhead"] = recorded_step / raw_step;
  state.counters["step_overhead_paired"] = median(paired);
  // The recorder's own time per step: what a step spends outside the runtime's calls, recorded
  // less raw. Free of the run-to-run spread of the kernels' speed, which on a shared 2-core VM is
  // larger than the effect measured.
  const double recorder_step = median(recorded_rest) - median(raw_rest);
  state.counters["rest_raw_ms"] = median(raw_rest) * 1e3;
  state.counters["rest_recorded_ms"] = median(recorded_rest) * 1e3;
  state.counters["recorder_step_ms"] = recorder_step * 1e3;
  state.counters["step_overhead_recorder"] = (raw_step + recorder_step) / raw_step;
  state.counters["weights_mb"] = static_cast<double>(weight_bytes) / 1e6;
  const double weights_cost = median(recorded_first) - median(raw_first);
  state.counters["weights_recording_mb_per_s"] =
      weights_cost > 0 ? static_cast<double>(weight_bytes) / 1e6 / weights_cost : 0;
}
BENCHMARK(BM_Recorder_CpuSteadyState)
    ->ArgName("mode")
    ->Arg(1)
    ->Arg(0)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(15);

}  // namespace
