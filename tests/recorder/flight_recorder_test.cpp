// The flight recorder (RecorderOptions::mode = kFlight, docs/FLIGHT.md): a window written
// mid-run replays on its own, holds the last N batches, triggers and file naming, bounded memory.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <chrono>
#include <mutex>
#include <condition_variable>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "capture_names.h"
#include "recorder_test_support.h"
#include "support/importing_runtime.h"
#include "support/program_runtime.h"
#include "support/test_support.h"
#include "vtrace/recorder/open.h"
#include "vtrace/recorder/recording_runtime.h"
#include "vtrace/replayer/replay_trace.h"
#include "vtrace/runtime/forwarding_runtime.h"
#include "vtrace/runtime/f16.h"
#include "vtrace/runtime/immediate.h"
#include "vtrace/runtime/registry.h"
#include "vtrace/schema/event_links.h"
#include "vtrace/schema/events.h"
#include "vtrace/schema/trace_reader.h"
#include "vtrace/workloads/workload.h"

using namespace vtrace::recorder::testing;
using vtrace::recorder::CaptureMode;
using vtrace::recorder::FlightTriggerKind;
using vtrace::recorder::RecorderOptions;
using vtrace::recorder::RecordingRuntime;

namespace {

namespace rt = vtrace::runtime;
namespace wl = vtrace::workloads;

std::filesystem::path fresh_dir(const std::string& name) {
  const auto dir =
      std::filesystem::temp_directory_path() / (name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

wl::WorkloadSpec small_decode(std::uint32_t steps) {
  wl::WorkloadSpec spec;
  spec.kind = wl::WorkloadKind::kDecode;
  spec.decode.hidden = 64;
  spec.decode.ffn = 128;
  spec.decode.layers = 2;
  spec.decode.steps = steps;
  return spec;
}

RecorderOptions flight_options(std::uint64_t batches) {
  RecorderOptions o;
  o.mode = CaptureMode::kFlight;
  o.flight.window_batches = batches;
  return o;
}

// The one trace open_runtime wrote into `dir`. Its name is VTRACE_CAPTURE's only for the first
// capture of the process (later ones are numbered siblings, "env.2.vtrace"), so a test that runs
// after other captures in the same process finds it here rather than by name.
std::filesystem::path only_trace_in(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> traces;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".vtrace") traces.push_back(entry.path());
  }
  REQUIRE(traces.size() == 1);
  return traces.front();
}

// The window record of a trace's metadata, as values (CHECKed present).
struct Window {
  std::string trigger;
  std::uint64_t trigger_event = 0;
  std::uint64_t trigger_batch = 0;
  std::uint64_t first_event = 0;
  std::uint64_t batches = 0;
  std::uint64_t prologue_events = 0;
  bool has_baseline = false;
  std::uint32_t number = 0;
  std::uint64_t submits = 0;  // the summary's
  std::string detail;
};

Window window_of(const std::filesystem::path& path) {
  auto reader = vtrace::schema::TraceReader::open(path);
  REQUIRE(reader.has_value());
  const auto* metadata = vtrace::schema::read_trace_metadata((*reader)->header().metadata);
  REQUIRE(metadata != nullptr);
  REQUIRE(metadata->window() != nullptr);
  const auto* w = metadata->window();
  Window out{w->trigger() ? w->trigger()->str() : "",
             w->trigger_event(),
             w->trigger_batch(),
             w->first_event(),
             w->batches(),
             w->prologue_events(),
             w->baseline_event().has_value(),
             w->window_number(),
             0,
             {}};
  const auto* summary = vtrace::schema::read_trace_summary((*reader)->summary());
  REQUIRE(summary != nullptr);
  out.submits = summary->submits();
  out.detail = w->detail() ? w->detail()->str() : "";
  return out;
}

// Replays on the recorded runtime, or on `runtime` when given, opened from `registry`.
vtrace::replayer::ReplayReport replay(
    const std::filesystem::path& path, std::string runtime = {},
    const rt::RuntimeRegistry& registry = rt::default_registry()) {
  vtrace::replayer::ReplayTraceOptions options;
  options.runtime = std::move(runtime);
  auto report = vtrace::replayer::replay_trace(path, options, registry);
  if (!report) FAIL(report.error().message);
  std::string first;
  for (std::size_t i = 0; i < report->mismatches.size() && i < 5; ++i) {
    const auto& m = report->mismatches[i];
    first += "event " + std::to_string(m.event) + " " + m.call + ": expected " + m.expected +
             ", actual " + m.actual + "\n";
  }
  INFO(first);
  CHECK(report->mismatch_count == 0);
  return std::move(*report);
}

std::vector<char> file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("at most 32 flight recordings hold a crash window at once, and one past them says so") {
  const auto dir = fresh_dir("vtrace_flight_crash_slots");
  const auto err_file = dir / "stderr.txt";
  std::vector<std::unique_ptr<RecordingRuntime>> held;
  auto open_one = [&](int n) {
    RecorderOptions options = flight_options(4);
    options.failure_notice = fmt::format("r{}", n);
    auto rec = RecordingRuntime::create(make_reference(), "reference",
                                        dir / fmt::format("w{}.vtrace", n), options);
    REQUIRE(rec.has_value());
    return std::move(*rec);
  };
  std::string said;
  {
    StderrCapture err(err_file);
    for (int n = 0; n < 33; ++n) held.push_back(open_one(n));
    said = err.text();
  }
  for (std::size_t n = 0; n < 32; ++n) CHECK(held[n]->flight_stats()->crash_window_armed);
  CHECK_FALSE(held[32]->flight_stats()->crash_window_armed);
  CHECK(said ==
        "vtrace: r32: no crash window for this recording: at most 32 flight recorders of a "
        "process hold one at once; its other triggers and its journal work\n");
  // A closed recording frees its slot for the next one.
  REQUIRE(held[0]->close().has_value());
  auto next = open_one(33);
  CHECK(next->flight_stats()->crash_window_armed);
  // Without window_on_crash, no slot is taken and none is armed.
  RecorderOptions off = flight_options(4);
  off.flight.window_on_crash = false;
  auto quiet = RecordingRuntime::create(make_reference(), "reference", dir / "off.vtrace", off);
  REQUIRE(quiet.has_value());
  CHECK_FALSE((*quiet)->flight_stats()->crash_window_armed);
  held.clear();
  next.reset();
  quiet->reset();
  std::filesystem::remove_all(dir);
}

TEST_CASE("flight: a window written mid-run holds the last N batches and replays on its own") {
  const auto dir = fresh_dir("vtrace_flight_window_test");
  const auto path = dir / "w.vtrace";
  auto rec = RecordingRuntime::create(make_reference(), "reference", path, flight_options(6));
  REQUIRE(rec.has_value());
  auto report = wl::run_workload(small_decode(30), **rec, nullptr);
  REQUIRE(report.has_value());
  // Nothing is written while no trigger fires.
  CHECK_FALSE(std::filesystem::exists(path));
  CHECK_FALSE(std::filesystem::exists(path.string() + ".partial"));
  auto written = (*rec)->dump_window(FlightTriggerKind::kApi, "test");
  REQUIRE(written.has_value());
  CHECK(*written == path);
  REQUIRE((*rec)->close().has_value());

  const auto w = window_of(path);
  CHECK(w.trigger == "api");
  CHECK(w.batches == 6);
  CHECK(w.submits == 7);  // the six batches and the checkpoint's upload
  CHECK(w.first_event > 0);
  CHECK(w.prologue_events > 0);
  CHECK(w.has_baseline);
  CHECK(w.number == 1);
  const auto replayed = replay(path);
  CHECK(replayed.complete);
  // Every readback of the six steps compared bit for bit, every counter snapshot as a change.
  CHECK(replayed.checked.readbacks == 6);
  CHECK(replayed.checked.counter_snapshots == 1 + 6 * 2);
  std::filesystem::remove_all(dir);
}

TEST_CASE("flight: the product's counters do not see the checkpoints' reads") {
  const auto dir = fresh_dir("vtrace_flight_counters_test");
  auto plain = make_reference();
  auto plain_report = wl::run_workload(small_decode(12), *plain, nullptr);
  REQUIRE(plain_report.has_value());
  auto rec =
      RecordingRuntime::create(make_reference(), "reference", dir / "w.vtrace", flight_options(4));
  REQUIRE(rec.has_value());
  // The decode workload checks the seven counters' deltas around every step itself.
  auto report = wl::run_workload(small_decode(12), **rec, nullptr);
  REQUIRE(report.has_value());
  CHECK(report->counter_checks == 12);
  REQUIRE(report->final_counters.has_value());
  CHECK(*report->final_counters == *plain_report->final_counters);
  const auto stats = (*rec)->flight_stats();
  REQUIRE(stats.has_value());
  CHECK(stats->checkpoints >= 12);
  CHECK(stats->checkpoint_bytes_read > 0);
  REQUIRE((*rec)->close().has_value());
  std::filesystem::remove_all(dir);
}

TEST_CASE("flight: the same run recorded twice gives byte-identical windows") {
  const auto dir = fresh_dir("vtrace_flight_determinism_test");
  for (const char* name : {"a.vtrace", "b.vtrace"}) {
    auto rec =
        RecordingRuntime::create(make_reference(), "reference", dir / name, flight_options(5));
    REQUIRE(rec.has_value());
    REQUIRE(wl::run_workload(small_decode(20), **rec, nullptr).has_value());
    REQUIRE((*rec)->dump_window().has_value());
    REQUIRE((*rec)->close().has_value());
  }
  const auto a = file_bytes(dir / "a.vtrace");
  CHECK(!a.empty());
  CHECK(a == file_bytes(dir / "b.vtrace"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("flight: windows are numbered beside the path, at most max_windows of them") {
  const auto dir = fresh_dir("vtrace_flight_numbering_test");
  auto options = flight_options(3);
  options.flight.max_windows = 2;
  auto rec = RecordingRuntime::create(make_reference(), "reference", dir / "w.vtrace", options);
  REQUIRE(rec.has_value());
  REQUIRE(wl::run_workload(small_decode(8), **rec, nullptr).has_value());
  REQUIRE((*rec)->dump_window().has_value());
  auto second = (*rec)->dump_window();
  REQUIRE(second.has_value());
  CHECK(*second == dir / "w.2.vtrace");
  CHECK_FALSE((*rec)->dump_window().has_value());
  const auto stats = (*rec)->flight_stats();
  REQUIRE(stats.has_value());
  CHECK(stats->windows_written == 2);
  CHECK(stats->windows_not_written == 1);
  CHECK_FALSE(std::filesystem::exists(dir / "w.3.vtrace"));
  REQUIRE((*rec)->close().has_value());
  CHECK(window_of(dir / "w.2.vtrace").number == 2);
  replay(dir / "w.2.vtrace");
  std::filesystem::remove_all(dir);
}

TEST_CASE("flight: memory stays bounded over a long run") {
  const auto dir = fresh_dir("vtrace_flight_memory_test");
  auto rec =
      RecordingRuntime::create(make_reference(), "reference", dir / "w.vtrace", flight_options(4));
  REQUIRE(rec.has_value());
  REQUIRE(wl::run_workload(small_decode(20), **rec, nullptr).has_value());
  const auto after_short = (*rec)->flight_stats();
  REQUIRE(after_short.has_value());
  CHECK(after_short->held_batches == 4);
  REQUIRE((*rec)->close().has_value());

  auto longer =
      RecordingRuntime::create(make_reference(), "reference", dir / "x.vtrace", flight_options(4));
  REQUIRE(longer.has_value());
  REQUIRE(wl::run_workload(small_decode(400), **longer, nullptr).has_value());
  const auto after_long = (*longer)->flight_stats();
  REQUIRE(after_long.has_value());
  CHECK(after_long->held_batches == 4);
  // Twenty times the steps, the same window: what is held does not grow with the run.
  CHECK(after_long->peak_held_bytes <= after_short->peak_held_bytes + 4096);
  REQUIRE((*longer)->close().has_value());
  std::filesystem::remove_all(dir);
}

TEST_CASE("flight: the byte budget bounds the window below window_batches") {
  const auto dir = fresh_dir("vtrace_flight_bytes_test");
  auto options = flight_options(64);
  // The weights of the small decode shape are 2 * 2 * 64 * 128 * 2 + 64 * 64 * 2 = 73728 bytes;
  // a budget a little above them leaves room for only a few batches.
  options.flight.window_bytes = 73728 + 24 * 1024;
  auto rec = RecordingRuntime::create(make_reference(), "reference", dir / "w.vtrace", options);
  REQUIRE(rec.has_value());
  REQUIRE(wl::run_workload(small_decode(40), **rec, nullptr).has_value());
  const auto stats = (*rec)->flight_stats();
  REQUIRE(stats.has_value());
  CHECK(stats->held_batches >= 1);
  CHECK(stats->held_bytes <= options.flight.window_bytes);
  // The same run under the default budget holds more batches: the bytes bounded this one.
  {
    auto unbounded = RecordingRuntime::create(make_reference(), "reference",
                                              dir / "unbounded.vtrace", flight_options(64));
    REQUIRE(unbounded.has_value());
    REQUIRE(wl::run_workload(small_decode(40), **unbounded, nullptr).has_value());
    const auto more = (*unbounded)->flight_stats();
    REQUIRE(more.has_value());
    CHECK(stats->held_batches < more->held_batches);
    CHECK(more->held_bytes > options.flight.window_bytes);
    REQUIRE((*unbounded)->close().has_value());
  }
  REQUIRE((*rec)->dump_window().has_value());
  REQUIRE((*rec)->close().has_value());
  CHECK(window_of(dir / "w.vtrace").batches == stats->held_batches);
  replay(dir / "w.vtrace");
  std::filesystem::remove_all(dir);
}

TEST_CASE("flight: full mode and sinks refuse what flight mode needs") {
  auto full = record_to_memory(make_reference(), std::make_shared<MemorySink::State>());
  CHECK_FALSE(full->dump_window().has_value());
  CHECK_FALSE(full->flight_stats().has_value());
  REQUIRE(full->close().has_value());
  auto inner = make_reference();
  auto refused = RecordingRuntime::wrap(
      inner, "reference", std::make_unique<MemorySink>(std::make_shared<MemorySink::State>()),
      flight_options(4));
  CHECK_FALSE(refused.has_value());
  CHECK(inner != nullptr);
}

namespace {

std::uint64_t summary_events(const std::filesystem::path& path) {
  auto reader = vtrace::schema::TraceReader::open(path);
  REQUIRE(reader.has_value());
  const auto* summary = vtrace::schema::read_trace_summary((*reader)->summary());
  REQUIRE(summary != nullptr);
  return summary->events();
}

}  // namespace

TEST_CASE("flight: an injected NaN writes exactly one window, ending at its batch, that replays") {
  const auto dir = fresh_dir("vtrace_flight_nan_test");
  const auto path = dir / "w.vtrace";
  auto rec = RecordingRuntime::create(make_reference(), "reference", path, flight_options(8));
  REQUIRE(rec.has_value());
  auto spec = small_decode(40);
  spec.decode.nan_at_step = 25;
  auto report = wl::run_workload(spec, **rec, nullptr);
  REQUIRE(report.has_value());
  CHECK(report->readbacks == 40);  // the run went on after the fault
  const auto stats = (*rec)->flight_stats();
  REQUIRE(stats.has_value());
  CHECK(stats->windows_written == 1);
  REQUIRE((*rec)->close().has_value());
  CHECK_FALSE(std::filesystem::exists(dir / "w.2.vtrace"));

  const auto w = window_of(path);
  CHECK(w.trigger == "non_finite_readback");
  CHECK(w.batches == 8);
  // The window ends at the triggering readback and its counter snapshot.
  CHECK(w.trigger_event - w.first_event + w.prologue_events == summary_events(path) - 2);
  const auto replayed = replay(path);
  CHECK(replayed.check == "bits");
  CHECK(replayed.checked.readbacks == 8);
  std::filesystem::remove_all(dir);
}

TEST_CASE("flight: with the non-finite trigger off, an injected NaN writes no window") {
  const auto dir = fresh_dir("vtrace_flight_nan_off_test");
  auto options = flight_options(8);
  options.flight.trigger_on_non_finite_readback = false;
  auto rec = RecordingRuntime::create(make_reference(), "reference", dir / "w.vtrace", options);
  REQUIRE(rec.has_value());
  auto spec = small_decode(12);
  spec.decode.nan_at_step = 5;
  const auto report = wl::run_workload(spec, **rec, nullptr);
  REQUIRE(report.has_value());
  CHECK(report->readbacks == 12);
  CHECK((*rec)->flight_stats()->windows_written == 0);
  CHECK((*rec)->flight_stats()->windows_not_written == 0);
  REQUIRE((*rec)->close().has_value());
  CHECK(std::filesystem::is_empty(dir));
  std::filesystem::remove_all(dir);
}

TEST_CASE("flight: a counter threshold writes one window when it is first reached") {
  const auto dir = fresh_dir("vtrace_flight_threshold_test");
  auto options = flight_options(4);
  options.flight.counter_threshold = vtrace::recorder::CounterThreshold{"submissions", 12};
  auto rec = RecordingRuntime::create(make_reference(), "reference", dir / "w.vtrace", options);
  REQUIRE(rec.has_value());
  REQUIRE(wl::run_workload(small_decode(20), **rec, nullptr).has_value());
  const auto stats = (*rec)->flight_stats();
  REQUIRE(stats.has_value());
  CHECK(stats->windows_written == 1);
  REQUIRE((*rec)->close().has_value());
  const auto w = window_of(dir / "w.vtrace");
  CHECK(w.trigger == "counter_threshold");
  CHECK(w.trigger_batch == 12);
  replay(dir / "w.vtrace");
  std::filesystem::remove_all(dir);
}

TEST_CASE("flight: a call failing with a chosen error kind writes a window") {
  const auto dir = fresh_dir("vtrace_flight_error_test");
  // The kind an out-of-range zero fails with on the reference runtime.
  rt::ErrorKind kind{};
  {
    auto plain = make_reference();
    auto permit = plain->admit(request(64, rt::ElementType::kU8));
    REQUIRE(permit.has_value());
    auto buffer = plain->allocate(std::move(*permit));
    REQUIRE(buffer.has_value());
    auto zero = plain->encode_zero(**buffer, 1024, 64);
    REQUIRE_FALSE(zero.has_value());
    kind = zero.error().kind();
  }
  auto options = flight_options(4);
  options.flight.trigger_on_errors = {kind};
  auto rec = RecordingRuntime::create(make_reference(), "reference", dir / "w.vtrace", options);
  REQUIRE(rec.has_value());
  REQUIRE(wl::run_workload(small_decode(6), **rec, nullptr).has_value());
  {
    auto permit = (*rec)->admit(request(64, rt::ElementType::kU8));
    REQUIRE(permit.has_value());
    auto buffer = (*rec)->allocate(std::move(*permit));
    REQUIRE(buffer.has_value());
    CHECK((*rec)->flight_stats()->windows_written == 0);
    // A call failing with another kind is no trigger.
    auto too_large = (*rec)->admit(request(std::uint64_t{1} << 50, rt::ElementType::kU8));
    REQUIRE_FALSE(too_large.has_value());
    REQUIRE(too_large.error().kind() != kind);
    CHECK((*rec)->flight_stats()->windows_written == 0);
    REQUIRE_FALSE((*rec)->encode_zero(**buffer, 1024, 64).has_value());
  }
  CHECK((*rec)->flight_stats()->windows_written == 1);
  REQUIRE((*rec)->close().has_value());
  CHECK(window_of(dir / "w.vtrace").trigger == "call_error");
  replay(dir / "w.vtrace");
  std::filesystem::remove_all(dir);
}

TEST_CASE("flight: SIGUSR1 writes a window at the next recorded call") {
  const auto dir = fresh_dir("vtrace_flight_signal_test");
  auto options = flight_options(4);
  options.flight.trigger_on_signal = true;
  auto rec = RecordingRuntime::create(make_reference(), "reference", dir / "w.vtrace", options);
  REQUIRE(rec.has_value());
  REQUIRE(wl::run_workload(small_decode(6), **rec, nullptr).has_value());
  REQUIRE(::raise(SIGUSR1) == 0);
  // The handler only counted the signal: nothing is written before the next call.
  CHECK((*rec)->flight_stats()->windows_written == 0);
  auto stream = (*rec)->create_stream();
  REQUIRE(stream.has_value());
  CHECK((*rec)->flight_stats()->windows_written == 1);
  stream->reset();
  REQUIRE((*rec)->close().has_value());
  CHECK(window_of(dir / "w.vtrace").trigger == "signal");
  replay(dir / "w.vtrace");
  std::filesystem::remove_all(dir);
}

namespace {

// Forwards to the reference runtime and raises SIGUSR1 inside the submits numbered in `at`
// (1-based), as a product's operator would from outside.
class SignallingRuntime final : public rt::ForwardingRuntime {
 public:
  explicit SignallingRuntime(std::vector<std::uint64_t> at)
      : ForwardingRuntime(make_reference()), at_(std::move(at)) {}
  std::expected<rt::FencePtr, rt::DefinitelyNotSubmitted> submit(rt::Stream& s,
                                                                 rt::CommandBatch b) override {
    ++submits_;
    for (const auto n : at_) {
      if (n == submits_) REQUIRE(::raise(SIGUSR1) == 0);
    }
    return ForwardingRuntime::submit(s, std::move(b));
  }

 private:
  std::vector<std::uint64_t> at_;
  std::uint64_t submits_ = 0;
};

// The submits a small decode makes before its first step: a full recording's submits less its
// one step's.
std::uint64_t decode_setup_submits() {
  auto sink = std::make_shared<MemorySink::State>();
  auto full = record_to_memory(make_reference(), sink);
  REQUIRE(wl::run_workload(small_decode(1), *full, nullptr).has_value());
  REQUIRE(full->close().has_value());
  return read_trace(sink->copy()).all<fb::SubmitBegin>(fb::EventBody::SubmitBegin).size() - 1;
}

}  // namespace

TEST_CASE("a capture started mid-run replays on its own without the steps before it") {
  const auto dir = fresh_dir("vtrace_capture_range_test");
  const std::uint64_t setup = decode_setup_submits();
  RecorderOptions options;
  options.mode = CaptureMode::kFlight;
  options.flight.start =
      vtrace::recorder::CapturePoint{vtrace::recorder::CapturePoint::Unit::kSubmit, setup + 1000};
  options.flight.stop =
      vtrace::recorder::CapturePoint{vtrace::recorder::CapturePoint::Unit::kSubmit, setup + 1010};
  auto rec = RecordingRuntime::create(make_reference(), "reference", dir / "range.vtrace", options);
  REQUIRE(rec.has_value());
  REQUIRE(wl::run_workload(small_decode(1020), **rec, nullptr).has_value());
  // Written at the stop point, while the run went on.
  CHECK((*rec)->flight_stats()->windows_written == 1);
  REQUIRE((*rec)->close().has_value());
  const auto w = window_of(dir / "range.vtrace");
  CHECK(w.trigger == "capture_range");
  CHECK(w.batches == 10);  // steps 1000 to 1009
  CHECK(w.submits == 11);  // and the checkpoint's upload
  CHECK(w.first_event > 1000);
  const auto replayed = replay(dir / "range.vtrace");
  CHECK(replayed.checked.readbacks == 10);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a capture started and stopped by SIGUSR1 holds the steps between the two signals") {
  const auto dir = fresh_dir("vtrace_capture_signal_test");
  const std::uint64_t setup = decode_setup_submits();
  using Unit = vtrace::recorder::CapturePoint::Unit;
  RecorderOptions options;
  options.mode = CaptureMode::kFlight;
  options.flight.start = vtrace::recorder::CapturePoint{Unit::kSignal, 1};
  options.flight.stop = vtrace::recorder::CapturePoint{Unit::kSignal, 1};
  // A signal inside the submit of step 20 and one inside step 27's: like submit:setup+20 to
  // submit:setup+27, the capture holds steps 20 to 26.
  auto inner = std::make_unique<SignallingRuntime>(std::vector{setup + 20, setup + 27});
  auto rec = RecordingRuntime::create(std::move(inner), "reference", dir / "sig.vtrace", options);
  REQUIRE(rec.has_value());
  REQUIRE(wl::run_workload(small_decode(40), **rec, nullptr).has_value());
  CHECK((*rec)->flight_stats()->windows_written == 1);
  REQUIRE((*rec)->close().has_value());
  const auto w = window_of(dir / "sig.vtrace");
  CHECK(w.trigger == "capture_range");
  CHECK(w.detail == "from SIGUSR1 1 of the run to SIGUSR1 1 of the capture");
  CHECK(w.batches == 7);
  CHECK(w.submits == 8);  // and the checkpoint's upload
  const auto replayed = replay(dir / "sig.vtrace");
  CHECK(replayed.checked.readbacks == 7);
  std::filesystem::remove_all(dir);
}

TEST_CASE("VTRACE_CAPTURE_START=signal:2 starts at the second SIGUSR1 through open_runtime") {
  const auto dir = fresh_dir("vtrace_capture_signal_env_test");
  const std::uint64_t setup = decode_setup_submits();
  rt::RuntimeRegistry registry;
  registry.add(
      "signalling", "reference raising SIGUSR1 in steps 5, 9 and 12",
      [&](const rt::RuntimeOpenOptions&) -> rt::Result<std::unique_ptr<rt::DeviceRuntime>> {
        return std::make_unique<SignallingRuntime>(std::vector{setup + 5, setup + 9, setup + 12});
      });
  const auto path = dir / "env.vtrace";
  ::setenv("VTRACE_CAPTURE", path.c_str(), 1);
  ::setenv("VTRACE_CAPTURE_START", "signal:0", 1);
  auto refused = vtrace::recorder::open_runtime("signalling", {}, registry);
  ::setenv("VTRACE_CAPTURE_START", "signal:2", 1);
  ::setenv("VTRACE_CAPTURE_STOP", "signal", 1);
  auto runtime = vtrace::recorder::open_runtime("signalling", {}, registry);
  ::unsetenv("VTRACE_CAPTURE_START");
  ::unsetenv("VTRACE_CAPTURE_STOP");
  ::unsetenv("VTRACE_CAPTURE");
  REQUIRE(refused.has_value());
  CHECK(dynamic_cast<RecordingRuntime*>(refused->get()) == nullptr);  // unwrapped: not valid
  REQUIRE(runtime.has_value());
  auto* rec = dynamic_cast<RecordingRuntime*>(runtime->get());
  REQUIRE(rec != nullptr);
  REQUIRE(wl::run_workload(small_decode(20), *rec, nullptr).has_value());
  REQUIRE(rec->close().has_value());
  const auto written = only_trace_in(dir);
  const auto w = window_of(written);
  CHECK(w.detail == "from SIGUSR1 2 of the run to SIGUSR1 1 of the capture");
  CHECK(w.batches == 3);  // steps 9 to 11
  replay(written, "reference");
  std::filesystem::remove_all(dir);
}

TEST_CASE("VTRACE_CAPTURE_MODE=flight records a window through open_runtime") {
  const auto dir = fresh_dir("vtrace_flight_env_test");
  const auto path = dir / "env.vtrace";
  ::setenv("VTRACE_CAPTURE", path.c_str(), 1);
  ::setenv("VTRACE_CAPTURE_MODE", "flight", 1);
  ::setenv("VTRACE_CAPTURE_WINDOW_BATCHES", "5", 1);
  auto runtime = vtrace::recorder::open_runtime("reference");
  ::unsetenv("VTRACE_CAPTURE_WINDOW_BATCHES");
  ::setenv("VTRACE_CAPTURE_MODE", "sometimes", 1);
  auto refused = vtrace::recorder::open_runtime("reference");
  ::unsetenv("VTRACE_CAPTURE_MODE");
  ::unsetenv("VTRACE_CAPTURE");
  REQUIRE(refused.has_value());
  CHECK(dynamic_cast<RecordingRuntime*>(refused->get()) == nullptr);
  REQUIRE(runtime.has_value());
  auto* rec = dynamic_cast<RecordingRuntime*>(runtime->get());
  REQUIRE(rec != nullptr);
  auto spec = small_decode(12);
  spec.decode.nan_at_step = 9;
  REQUIRE(wl::run_workload(spec, *rec, nullptr).has_value());
  REQUIRE(rec->close().has_value());
  const auto written = only_trace_in(dir);
  const auto w = window_of(written);
  CHECK(w.trigger == "non_finite_readback");
  CHECK(w.batches == 5);
  replay(written);
  std::filesystem::remove_all(dir);
}

namespace {

// Forwards to the reference runtime; inside its `at`-th submit it copies the flight journals as
// they are on disk into `snapshot`: what a crash there would leave behind.
class CrashingRuntime final : public rt::ForwardingRuntime {
 public:
  CrashingRuntime(std::filesystem::path dir, std::filesystem::path snapshot, int at)
      : ForwardingRuntime(make_reference()),
        dir_(std::move(dir)),
        snapshot_(std::move(snapshot)),
        at_(at) {}
  std::expected<rt::FencePtr, rt::DefinitelyNotSubmitted> submit(rt::Stream& s,
                                                                 rt::CommandBatch b) override {
    if (++submits_ == at_) {
      std::filesystem::create_directories(snapshot_);
      for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
        if (entry.path().filename().string().find(".journal-") == std::string::npos) continue;
        std::filesystem::copy_file(entry.path(), snapshot_ / entry.path().filename());
      }
    }
    return ForwardingRuntime::submit(s, std::move(b));
  }

 private:
  std::filesystem::path dir_, snapshot_;
  int at_;
  int submits_ = 0;
};

}  // namespace

TEST_CASE("flight journal: a crash inside a submit leaves the window and its intent on disk") {
  const auto dir = fresh_dir("vtrace_flight_journal_test");
  const auto snapshot = fresh_dir("vtrace_flight_journal_snapshot");
  auto options = flight_options(4);
  options.flight.journal = true;
  constexpr int kCrashAt = 31;  // a decode step's submit, well past two journal rotations
  auto rec = RecordingRuntime::create(std::make_unique<CrashingRuntime>(dir, snapshot, kCrashAt),
                                      "reference", dir / "w.vtrace", options);
  REQUIRE(rec.has_value());
  REQUIRE(wl::run_workload(small_decode(40), **rec, nullptr).has_value());
  REQUIRE((*rec)->close().has_value());
  // A clean end leaves no journal.
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    CHECK(entry.path().filename().string().find(".journal-") == std::string::npos);
  }
  // What the crash would have left: the journal with more events.
  std::filesystem::path longest;
  std::uint64_t most = 0;
  for (const auto& entry : std::filesystem::directory_iterator(snapshot)) {
    auto reader = vtrace::schema::TraceReader::open(entry.path());
    REQUIRE(reader.has_value());
    if ((*reader)->event_count() > most) {
      most = (*reader)->event_count();
      longest = entry.path();
    }
  }
  REQUIRE(!longest.empty());
  auto source = vtrace::schema::open_file_source(longest);
  REQUIRE(source.has_value());
  const auto trace = read_trace(std::move(*source));
  REQUIRE(!trace.records.empty());
  // The intent of the submit it died in is the last event on disk.
  CHECK(std::string(vtrace::schema::event_kind_name(trace.event(trace.records.size() - 1))) ==
        "SubmitBegin");
  // At least the last window_batches batches before it, and then that one.
  CHECK(trace.all<fb::SubmitBegin>(fb::EventBody::SubmitBegin).size() >= 1 + 4 + 1);
  // It replays on its own, the unfinished submit included.
  const auto replayed = replay(longest);
  CHECK_FALSE(replayed.complete);
  CHECK(replayed.unfinished_submits.size() == 1);
  CHECK(replayed.checked.readbacks >= 4);
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(snapshot);
}

namespace {

// Forwards to the reference runtime; its `at`-th submit dies of `signal` before it runs:
// raise() for SIGSEGV and SIGBUS (a real fault would be undefined behaviour here), abort() for
// SIGABRT, and SIGFPE raised on a worker thread of the runtime while the calling thread waits
// (as a kernel's thread pool would crash).
class DyingRuntime final : public rt::ForwardingRuntime {
 public:
  DyingRuntime(std::uint64_t at, int signal)
      : ForwardingRuntime(make_reference()), at_(at), signal_(signal) {}
  std::expected<rt::FencePtr, rt::DefinitelyNotSubmitted> submit(rt::Stream& s,
                                                                 rt::CommandBatch b) override {
    if (++submits_ == at_) {
      if (signal_ == SIGABRT) std::abort();
      if (signal_ == SIGFPE) {
        std::thread worker([] { ::raise(SIGFPE); });
        worker.join();
      } else {
        ::raise(signal_);
      }
    }
    return ForwardingRuntime::submit(s, std::move(b));
  }

 private:
  std::uint64_t at_;
  int signal_;
  std::uint64_t submits_ = 0;
};

// Forks a product that records `small_decode(20)` through a flight recorder to dir/w.vtrace and
// dies of `signal` inside its `die_at`-th submit; `before` runs in the product right before the
// workload. Returns the product's wait status. The product's output (the default handler's, a
// sanitizer's report of the re-raised signal) is not the test's.
int run_dying_product(const std::filesystem::path& dir, std::uint64_t die_at, int signal,
                      const std::function<void()>& before = {},
                      const RecorderOptions& options = flight_options(4)) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::dup2(null, 2);
    // The workload's model file goes in `dir`, which the test removes: the dying child cannot.
    ::setenv("TMPDIR", dir.c_str(), 1);
    auto rec = RecordingRuntime::create(std::make_unique<DyingRuntime>(die_at, signal),
                                        "reference", dir / "w.vtrace", options);
    if (before) before();
    if (rec) (void)wl::run_workload(small_decode(20), **rec, nullptr);
    ::_exit(0);  // not reached when the crash ends the product
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return status;
}

}  // namespace

TEST_CASE("flight: a process that dies of a fatal signal inside a submit leaves its window") {
#if defined(__SANITIZE_THREAD__)
  // The window is written from a forked child still inside the signal handler, which
  // ThreadSanitizer reports as signal-unsafe by design.
  VTRACE_SKIP("the crash window is not run under ThreadSanitizer");
#endif
  constexpr std::uint64_t kDieAt = 13;  // a decode step's submit
  for (const int signal : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE}) {
    const auto dir = fresh_dir("vtrace_flight_crash_test");
    const int status = run_dying_product(dir, kDieAt, signal);
    INFO("signal " << signal << ", wait status " << status);
    // It died (of the signal, or of a sanitizer's report of it), after the window was written.
    CHECK_FALSE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    REQUIRE(std::filesystem::exists(dir / "w.vtrace"));
    const auto w = window_of(dir / "w.vtrace");
    CHECK(w.trigger == "crash");
    CHECK(w.detail == (signal == SIGSEGV   ? "SIGSEGV"
                       : signal == SIGABRT ? "SIGABRT"
                       : signal == SIGBUS  ? "SIGBUS"
                                           : "SIGFPE"));
    auto source = vtrace::schema::open_file_source(dir / "w.vtrace");
    REQUIRE(source.has_value());
    const auto trace = read_trace(std::move(*source));
    REQUIRE(!trace.records.empty());
    // The intent of the submit it died in is the window's last event.
    CHECK(std::string(vtrace::schema::event_kind_name(trace.event(trace.records.size() - 1))) ==
          "SubmitBegin");
    const auto replayed = replay(dir / "w.vtrace");
    CHECK(replayed.unfinished_submits.size() == 1);
    CHECK(replayed.checked.readbacks >= 3);
    std::filesystem::remove_all(dir);
  }
}

TEST_CASE("flight: a mid-run capture whose start has not come writes no window at a crash") {
#if defined(__SANITIZE_THREAD__)
  VTRACE_SKIP("the crash window is not run under ThreadSanitizer");
#endif
  // Before its start the capture holds nothing to replay (only the live objects), so a crash
  // there leaves no file rather than a window of the run before the capture.
  const auto dir = fresh_dir("vtrace_flight_crash_before_start_test");
  RecorderOptions options = flight_options(4);
  options.flight.start =
      vtrace::recorder::CapturePoint{vtrace::recorder::CapturePoint::Unit::kSubmit, 1000};
  const int status = run_dying_product(dir, 13, SIGSEGV, {}, options);
  INFO("wait status " << status);
  CHECK_FALSE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  std::vector<std::string> left;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".vtrace") left.push_back(entry.path().filename().string());
  }
  CHECK(left.empty());
  // The same product without a start point leaves its window (the test above, in short).
  const int whole = run_dying_product(dir, 13, SIGSEGV);
  CHECK_FALSE((WIFEXITED(whole) && WEXITSTATUS(whole) == 0));
  CHECK(std::filesystem::exists(dir / "w.vtrace"));
  std::filesystem::remove_all(dir);
}

TEST_CASE(
    "flight: the crash window is written when another thread held the capture-name lock at the "
    "crash") {
#if defined(__SANITIZE_THREAD__)
  VTRACE_SKIP("the crash window is not run under ThreadSanitizer");
#endif
  // The lock holder is a thread of the dying process: the forked child has no copy of it, so the
  // lock is never released there. The window must not wait for it (the alarm would kill the
  // child after kCrashWindowSeconds with nothing written); the disk picks the name instead.
  for (const bool leftover : {false, true}) {
    const auto dir = fresh_dir("vtrace_flight_crash_lock_test");
    if (leftover) std::ofstream(dir / "w.vtrace") << "an earlier run's file";
    const int status = run_dying_product(dir, 13, SIGSEGV, [] {
      // A thread that holds the lock for good; the workload starts once it holds it. (Static:
      // the detached thread outlives this function.)
      static std::mutex mu;
      static std::condition_variable cv;
      static bool held = false;
      std::thread([] {
        auto lock = vtrace::recorder::detail::hold_capture_names();
        {
          const std::lock_guard g(mu);
          held = true;
          cv.notify_one();
        }
        for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
      }).detach();
      std::unique_lock g(mu);
      cv.wait(g, [] { return held; });
    });
    INFO("leftover " << leftover << ", wait status " << status);
    CHECK_FALSE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    const auto window = dir / (leftover ? "w.2.vtrace" : "w.vtrace");
    REQUIRE(std::filesystem::exists(window));
    CHECK(window_of(window).trigger == "crash");
    CHECK(replay(window).unfinished_submits.size() == 1);
    if (leftover) {
      std::ifstream in(dir / "w.vtrace");
      CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == "an earlier run's file");
    }
    std::filesystem::remove_all(dir);
  }
}

namespace {

// Sets the variables for its lifetime; unsets them after (none of them is set by the test runner).
class ScopedEnv {
 public:
  explicit ScopedEnv(std::vector<std::pair<std::string, std::string>> variables)
      : variables_(std::move(variables)) {
    for (const auto& [name, value] : variables_) ::setenv(name.c_str(), value.c_str(), 1);
  }
  ~ScopedEnv() {
    for (const auto& [name, value] : variables_) ::unsetenv(name.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::vector<std::pair<std::string, std::string>> variables_;
};

void product_signal_handler(int) {}

void* handler_of(int signal) {
  struct sigaction current {};
  REQUIRE(::sigaction(signal, nullptr, &current) == 0);
  return reinterpret_cast<void*>(current.sa_handler);
}

}  // namespace

TEST_CASE("flight: closing the recorder keeps signal handlers the product installed after it") {
  const auto dir = fresh_dir("vtrace_flight_handlers_test");
  struct sigaction found_segv {};
  struct sigaction found_usr1 {};
  REQUIRE(::sigaction(SIGSEGV, nullptr, &found_segv) == 0);
  REQUIRE(::sigaction(SIGUSR1, nullptr, &found_usr1) == 0);
  auto options = flight_options(4);
  options.flight.trigger_on_signal = true;  // window_on_crash is on by default
  {
    auto rec = RecordingRuntime::create(make_reference(), "reference", dir / "w.vtrace", options);
    REQUIRE(rec.has_value());
    CHECK(handler_of(SIGSEGV) != reinterpret_cast<void*>(found_segv.sa_handler));
    // The product installs its own handlers after opening the runtime, then drops the runtime.
    struct sigaction mine {};
    mine.sa_handler = product_signal_handler;
    sigemptyset(&mine.sa_mask);
    REQUIRE(::sigaction(SIGSEGV, &mine, nullptr) == 0);
    REQUIRE(::sigaction(SIGUSR1, &mine, nullptr) == 0);
  }
  const auto product = reinterpret_cast<void*>(&product_signal_handler);
  CHECK(handler_of(SIGSEGV) == product);
  CHECK(handler_of(SIGUSR1) == product);
  // The handlers found at creation come back when the recorder's are still in place.
  REQUIRE(::sigaction(SIGSEGV, &found_segv, nullptr) == 0);
  REQUIRE(::sigaction(SIGUSR1, &found_usr1, nullptr) == 0);
  {
    auto rec = RecordingRuntime::create(make_reference(), "reference", dir / "x.vtrace", options);
    REQUIRE(rec.has_value());
    CHECK(handler_of(SIGUSR1) != reinterpret_cast<void*>(found_usr1.sa_handler));
  }
  CHECK(handler_of(SIGSEGV) == reinterpret_cast<void*>(found_segv.sa_handler));
  CHECK(handler_of(SIGUSR1) == reinterpret_cast<void*>(found_usr1.sa_handler));
  std::filesystem::remove_all(dir);
}

TEST_CASE("flight: two runtimes opened with VTRACE_CAPTURE never write the same window file") {
  const auto dir = fresh_dir("vtrace_flight_two_runtimes_test");
  ScopedEnv env({{"VTRACE_CAPTURE", (dir / "w.vtrace").string()}, {"VTRACE_CAPTURE_MODE", "flight"}});
  auto a = vtrace::recorder::open_runtime("reference");
  auto b = vtrace::recorder::open_runtime("reference", {"device.vtrace.1"});
  REQUIRE(a.has_value());
  REQUIRE(b.has_value());
  auto* ra = dynamic_cast<RecordingRuntime*>(a->get());
  auto* rb = dynamic_cast<RecordingRuntime*>(b->get());
  REQUIRE(ra != nullptr);
  REQUIRE(rb != nullptr);
  REQUIRE(wl::run_workload(small_decode(4), *ra, nullptr).has_value());
  REQUIRE(wl::run_workload(small_decode(6), *rb, nullptr).has_value());
  // Windows A, B, A: three files, none overwritten.
  const auto a1 = ra->dump_window();
  const auto b1 = rb->dump_window();
  const auto a2 = ra->dump_window();
  REQUIRE(a1.has_value());
  REQUIRE(b1.has_value());
  REQUIRE(a2.has_value());
  CHECK(*a1 == dir / "w.vtrace");
  CHECK(*b1 == dir / "w.2.vtrace");
  CHECK(*a2 == dir / "w.3.vtrace");
  CHECK(window_of(*a1).number == 1);
  CHECK(window_of(*b1).number == 1);
  CHECK(window_of(*a2).number == 2);
  CHECK(window_of(*b1).submits != window_of(*a2).submits);  // B's run, not A's
  // What FlightStats reports: the paths and sizes of the windows.
  const auto stats = ra->flight_stats();
  REQUIRE(stats.has_value());
  REQUIRE(stats->windows.size() == 2);
  CHECK(stats->windows[1].path == *a2);
  CHECK(stats->windows[1].trigger == "api");
  auto reader = vtrace::schema::TraceReader::open(*a2);
  REQUIRE(reader.has_value());
  CHECK(stats->windows[1].events == (*reader)->event_count());
  a->reset();
  b->reset();
  std::filesystem::remove_all(dir);
}

TEST_CASE("flight windows of a relative path go beside it after the product changes directory") {
  const auto dir = fresh_dir("vtrace_flight_cwd_test");
  const auto elsewhere = fresh_dir("vtrace_flight_cwd_elsewhere");
  const auto before = std::filesystem::current_path();
  std::filesystem::current_path(dir);
  auto rec = RecordingRuntime::create(make_reference(), "reference", "rel.vtrace",
                                      flight_options(4));
  std::filesystem::current_path(elsewhere);
  REQUIRE(rec.has_value());
  REQUIRE(wl::run_workload(small_decode(3), **rec, nullptr).has_value());
  const auto window = (*rec)->dump_window();
  std::filesystem::current_path(before);
  REQUIRE(window.has_value());
  CHECK(std::filesystem::exists(dir / window->filename()));
  CHECK(std::filesystem::is_empty(elsewhere));
  rec->reset();
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(elsewhere);
}

TEST_CASE("a full recording's path is never taken by a window, a capture or another recording "
          "while it writes") {
  const auto dir = fresh_dir("vtrace_full_claim_test");
  const auto path = dir / "m.vtrace";
  auto full = RecordingRuntime::create(make_reference(), "reference", path, RecorderOptions{});
  REQUIRE(full.has_value());
  REQUIRE(wl::run_workload(small_decode(3), **full, nullptr).has_value());
  // A second explicit recording to the same path is refused, in one sentence.
  auto again = RecordingRuntime::create(make_reference(), "reference", path, RecorderOptions{});
  REQUIRE_FALSE(again.has_value());
  CHECK_THAT(again.error().message(),
             Catch::Contains(path.string() + " is being written by another recording"));
  // A flight window beside it, and a capture through VTRACE_CAPTURE, take the next names.
  auto flight = RecordingRuntime::create(make_reference(), "reference", path, flight_options(4));
  REQUIRE(flight.has_value());
  REQUIRE(wl::run_workload(small_decode(3), **flight, nullptr).has_value());
  const auto window = (*flight)->dump_window();
  REQUIRE(window.has_value());
  CHECK(window->filename() != "m.vtrace");
  {
    ScopedEnv env({{"VTRACE_CAPTURE", path.string()}});
    auto captured = vtrace::recorder::open_runtime("reference");
    REQUIRE(captured.has_value());
    auto* recording = dynamic_cast<RecordingRuntime*>(captured->get());
    REQUIRE(recording != nullptr);
    REQUIRE(wl::run_workload(small_decode(2), *recording, nullptr).has_value());
    REQUIRE(recording->close().has_value());
  }
  // The full recording still finishes whole, at its own path.
  REQUIRE((*full)->close().has_value());
  auto reader = vtrace::schema::TraceReader::open(path);
  REQUIRE(reader.has_value());
  CHECK((*reader)->complete());
  CHECK((*reader)->verify_all().has_value());
  CHECK(window_of(*window).trigger == "api");
  // Once that recording is closed, its path can be recorded to again (the file is replaced).
  auto later = RecordingRuntime::create(make_reference(), "reference", path, RecorderOptions{});
  REQUIRE(later.has_value());
  later->reset();
  full->reset();
  flight->reset();
  std::filesystem::remove_all(dir);
}

TEST_CASE("flight: two recorders journaling beside one path keep separate journals") {
  const auto dir = fresh_dir("vtrace_flight_two_journals_test");
  auto options = flight_options(2);
  options.flight.journal = true;
  auto a = RecordingRuntime::create(make_reference(), "reference", dir / "w.vtrace", options);
  auto b = RecordingRuntime::create(make_reference("device.recorder.test.1"), "reference",
                                    dir / "w.vtrace", options);
  REQUIRE(a.has_value());
  REQUIRE(b.has_value());
  REQUIRE(wl::run_workload(small_decode(3), **a, nullptr).has_value());
  REQUIRE(wl::run_workload(small_decode(3), **b, nullptr).has_value());
  std::vector<std::string> journals;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    journals.push_back(entry.path().filename().string());
  }
  std::sort(journals.begin(), journals.end());
  // Each has rotated once (2 x window_batches batches): two journals each, four files.
  CHECK(journals ==
        std::vector<std::string>{"w.journal-1.vtrace.partial", "w.journal-2.vtrace.partial",
                                 "w.journal-3.vtrace.partial", "w.journal-4.vtrace.partial"});
  std::filesystem::remove_all(dir);
}

TEST_CASE("VTRACE_CAPTURE in flight mode refuses a path that cannot be written, in one sentence") {
  const auto dir = fresh_dir("vtrace_flight_env_path_test");
  const std::string missing = (dir / "missing" / "d.vtrace").string();
  struct Case {
    std::vector<std::pair<std::string, std::string>> env;
    std::string says;
  };
  const Case cases[] = {
      {{{"VTRACE_CAPTURE", missing},
        {"VTRACE_CAPTURE_MODE", "flight"},
        {"VTRACE_CAPTURE_TRIGGER_COUNTER", "submissions>=3"}},
       fmt::format("cannot create {}.partial", missing)},
      {{{"VTRACE_CAPTURE", dir.string()}, {"VTRACE_CAPTURE_MODE", "flight"}},
       fmt::format("{} exists and is not a regular file", dir.string())},
      {{{"VTRACE_CAPTURE", missing},
        {"VTRACE_CAPTURE_MODE", "flight"},
        {"VTRACE_CAPTURE_JOURNAL", "1"}},
       fmt::format("cannot create {}.partial", missing)},
      {{{"VTRACE_CAPTURE", missing}, {"VTRACE_CAPTURE_START", "submit:2"}},
       fmt::format("cannot create {}.partial", missing)},
      // A stop point before (or at) the start point holds nothing.
      {{{"VTRACE_CAPTURE", (dir / "r.vtrace").string()},
        {"VTRACE_CAPTURE_START", "submit:5"},
        {"VTRACE_CAPTURE_STOP", "submit:2"}},
       "VTRACE_CAPTURE_STOP=`submit:2` is not valid: it must come after "
       "VTRACE_CAPTURE_START=`submit:5`"},
      // A mid-run capture checks the crash switch, and refuses the flight window's variables.
      {{{"VTRACE_CAPTURE", (dir / "r.vtrace").string()},
        {"VTRACE_CAPTURE_START", "submit:2"},
        {"VTRACE_CAPTURE_CRASH", "garbage"}},
       "VTRACE_CAPTURE_CRASH=`garbage` is not valid: expected an integer"},
      {{{"VTRACE_CAPTURE", (dir / "r.vtrace").string()},
        {"VTRACE_CAPTURE_START", "submit:2"},
        {"VTRACE_CAPTURE_JOURNAL", "1"}},
       "VTRACE_CAPTURE_JOURNAL=`1` is not valid: it applies to flight mode "
       "(VTRACE_CAPTURE_MODE=flight), not to a capture started mid-run"},
      // A number past its type is out of range, not "not an integer".
      {{{"VTRACE_CAPTURE", (dir / "r.vtrace").string()},
        {"VTRACE_CAPTURE_MODE", "flight"},
        {"VTRACE_CAPTURE_MAX_WINDOWS", "99999999999999999999999"}},
       "VTRACE_CAPTURE_MAX_WINDOWS=`99999999999999999999999` is not valid: expected a value in "
       "[1, 1000]"},
  };
  for (const auto& c : cases) {
    StderrCapture err(dir.parent_path() / ("vtrace_flight_env_path_err_" +
                                           std::to_string(::getpid())));
    std::optional<ScopedEnv> env(std::in_place, c.env);
    auto runtime = vtrace::recorder::open_runtime("reference");
    env.reset();
    const auto said = err.text();
    INFO(said);
    REQUIRE(runtime.has_value());
    CHECK(dynamic_cast<RecordingRuntime*>(runtime->get()) == nullptr);  // unwrapped
    CHECK(said.find(c.says) != std::string::npos);
    CHECK(said.find("runs without capture") != std::string::npos);
    CHECK(std::count(said.begin(), said.end(), '\n') == 1);
    CHECK(run_small_workload(**runtime).readbacks.size() == 3);
  }
  std::filesystem::remove(dir.parent_path() /
                          ("vtrace_flight_env_path_err_" + std::to_string(::getpid())));
  std::filesystem::remove_all(dir);
}

TEST_CASE("VTRACE_CAPTURE_START=event:N and STOP=event:M capture between those events") {
  const auto dir = fresh_dir("vtrace_capture_event_env_test");
  // The events of a whole run, recorded in full: the capture takes the middle third.
  const auto events_of = [](std::uint32_t steps) -> std::uint64_t {
    auto sink = std::make_shared<MemorySink::State>();
    auto full = record_to_memory(make_reference(), sink);
    REQUIRE(wl::run_workload(small_decode(steps), *full, nullptr).has_value());
    REQUIRE(full->close().has_value());
    return read_trace(sink->copy()).records.size();
  };
  const std::uint64_t events = events_of(30);
  const std::uint64_t per_step = events_of(31) - events;
  const std::uint64_t start = events / 3;
  const std::uint64_t stop = 2 * events / 3;
  const auto path = dir / "event.vtrace";
  std::optional<ScopedEnv> env(std::in_place,
                               std::vector<std::pair<std::string, std::string>>{
                                   {"VTRACE_CAPTURE", path.string()},
                                   {"VTRACE_CAPTURE_START", fmt::format("event:{}", start)},
                                   {"VTRACE_CAPTURE_STOP", fmt::format("event:{}", stop)}});
  auto runtime = vtrace::recorder::open_runtime("reference");
  env.reset();
  REQUIRE(runtime.has_value());
  auto* rec = dynamic_cast<RecordingRuntime*>(runtime->get());
  REQUIRE(rec != nullptr);
  REQUIRE(wl::run_workload(small_decode(30), *rec, nullptr).has_value());
  // Written at the stop point, while the run went on.
  CHECK(rec->flight_stats()->windows_written == 1);
  REQUIRE(rec->close().has_value());
  const auto w = window_of(only_trace_in(dir));
  INFO("events " << events << " (" << per_step << " a step), window from " << w.first_event
                 << ", " << w.batches << " batches");
  CHECK(w.trigger == "capture_range");
  CHECK(w.detail == fmt::format("from event {} to event {}", start, stop));
  // It starts at the first call from the start event on and ends at the first call from the
  // stop event on, each at a quiescent boundary: the steps (one batch each) between the two.
  CHECK(w.first_event >= start);
  CHECK(w.first_event <= start + per_step);
  const std::uint64_t steps = (stop - start) / per_step;
  CHECK(w.batches + 1 >= steps);
  CHECK(w.batches <= steps + 1);
  replay(only_trace_in(dir), "reference");
  std::filesystem::remove_all(dir);
}

TEST_CASE("VTRACE_CAPTURE_CRASH=0 turns the crash window off in a mid-run capture too") {
  const auto dir = fresh_dir("vtrace_capture_crash_off_test");
  void* const found = handler_of(SIGSEGV);
  for (const char* crash : {"0", "1"}) {
    INFO("VTRACE_CAPTURE_CRASH=" << crash);
    std::optional<ScopedEnv> env(std::in_place,
                                 std::vector<std::pair<std::string, std::string>>{
                                     {"VTRACE_CAPTURE", (dir / "m.vtrace").string()},
                                     {"VTRACE_CAPTURE_START", "submit:2"},
                                     {"VTRACE_CAPTURE_CRASH", crash}});
    auto runtime = vtrace::recorder::open_runtime("reference");
    env.reset();
    REQUIRE(runtime.has_value());
    REQUIRE(dynamic_cast<RecordingRuntime*>(runtime->get()) != nullptr);
    // The recorder's crash handler is installed only when the crash window is on.
    CHECK((handler_of(SIGSEGV) == found) == (std::string(crash) == "0"));
    runtime->reset();
    CHECK(handler_of(SIGSEGV) == found);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("VTRACE_CAPTURE in flight mode says on stderr when a window or journal write fails") {
  const auto dir = fresh_dir("vtrace_flight_env_fail_test");
  const auto out = fresh_dir("vtrace_flight_env_fail_out");
  const auto err_file = dir.parent_path() /
                        ("vtrace_flight_env_fail_err_" + std::to_string(::getpid()));
  StderrCapture err(err_file);
  std::optional<ScopedEnv> env(std::in_place,
                               std::vector<std::pair<std::string, std::string>>{
                                   {"VTRACE_CAPTURE", (out / "w.vtrace").string()},
                                   {"VTRACE_CAPTURE_MODE", "flight"},
                                   {"VTRACE_CAPTURE_WINDOW_BATCHES", "2"},
                                   {"VTRACE_CAPTURE_JOURNAL", "1"}});
  auto runtime = vtrace::recorder::open_runtime("reference");
  env.reset();
  REQUIRE(runtime.has_value());
  auto* rec = dynamic_cast<RecordingRuntime*>(runtime->get());
  REQUIRE(rec != nullptr);
  CHECK(err.text().empty());
  // The folder goes away while the product runs: the next journal and every window fail.
  std::filesystem::remove_all(out);
  REQUIRE(wl::run_workload(small_decode(12), *rec, nullptr).has_value());
  CHECK_FALSE(rec->dump_window().has_value());
  CHECK_FALSE(rec->dump_window().has_value());
  runtime->reset();
  const auto said = err.text();
  INFO(said);
  const auto capture = fmt::format("vtrace: VTRACE_CAPTURE={}: ", (out / "w.vtrace").string());
  CHECK(said.find(capture + "the journal ") != std::string::npos);
  CHECK(said.find(capture + "the flight window of trigger `api` could not be written: ") !=
        std::string::npos);
  CHECK(std::count(said.begin(), said.end(), '\n') == 2);  // one sentence each, not per failure
  std::filesystem::remove(err_file);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a capture whose start never comes says so at close, in one sentence") {
  const auto dir = fresh_dir("vtrace_capture_never_started_test");
  const auto path = dir / "r.vtrace";
  StderrCapture err(dir.parent_path() /
                    ("vtrace_capture_never_started_err_" + std::to_string(::getpid())));
  std::optional<ScopedEnv> env(std::in_place,
                               std::vector<std::pair<std::string, std::string>>{
                                   {"VTRACE_CAPTURE", path.string()},
                                   {"VTRACE_CAPTURE_START", "submit:1000"}});
  auto runtime = vtrace::recorder::open_runtime("reference");
  env.reset();
  REQUIRE(runtime.has_value());
  auto* rec = dynamic_cast<RecordingRuntime*>(runtime->get());
  REQUIRE(rec != nullptr);
  const auto seen = run_small_workload(*rec);
  CHECK(seen.readbacks.size() == 3);
  REQUIRE(rec->close().has_value());
  const auto said = err.text();
  INFO(said);
  CHECK(said.find(fmt::format("vtrace: VTRACE_CAPTURE={}: the capture from submit 1000 to close "
                              "never started: the run ended after ",
                              path.string())) != std::string::npos);
  CHECK(said.find("so nothing was written") != std::string::npos);
  CHECK(std::count(said.begin(), said.end(), '\n') == 1);
  CHECK(std::filesystem::is_empty(dir));  // no trace, no .partial
  std::filesystem::remove_all(dir);
}

TEST_CASE("flight: an import session dropped without seal does not stop later checkpoints") {
  // initialize_static_buffer drops its session unsealed when an import fails: the format has no
  // release event, and a flight recorder that still counted it open took no checkpoint again
  // (its window then grew without bound).
  const auto dir = fresh_dir("vtrace_flight_dropped_session_test");
  auto rec = RecordingRuntime::create(std::make_unique<vtrace::test::ImportingRuntime>(
                                          make_reference()),
                                      "importing", dir / "w.vtrace", flight_options(4));
  REQUIRE(rec.has_value());
  {
    auto weight = vtrace::runtime::immediate::allocate_buffer(
        **rec, "resource.weight", rt::ElementType::kU8, 8, rt::BufferUsage::kWeights, 16);
    REQUIRE(weight.has_value());
    auto session = (*rec)->begin_static_weight_import();
    REQUIRE(session.has_value());
    REQUIRE(session->has_value());
    const std::vector<std::uint8_t> component(8, 0x5A);
    REQUIRE((**session)->import_component(component, **weight, 0).has_value());
    // dropped here, unsealed
  }
  REQUIRE(wl::run_workload(small_decode(12), **rec, nullptr).has_value());
  const auto stats = (*rec)->flight_stats();
  REQUIRE(stats.has_value());
  CHECK(stats->checkpoints >= 12);
  auto written = (*rec)->dump_window(FlightTriggerKind::kApi, "test");
  REQUIRE(written.has_value());
  REQUIRE((*rec)->close().has_value());
  const auto w = window_of(*written);
  CHECK(w.batches == 4);  // bounded by the window, not everything since the session
  replay(*written, "reference");
  std::filesystem::remove_all(dir);
}

namespace {

std::uint64_t checkpoints_of(RecordingRuntime& rec) {
  const auto stats = rec.flight_stats();
  REQUIRE(stats.has_value());
  return stats->checkpoints;
}

// `count` batches of one upload each into `buffer` (u8), each a different pattern.
void upload_batches(rt::DeviceRuntime& r, rt::Stream& stream, const rt::Buffer& buffer,
                    std::uint64_t size, int count) {
  for (int i = 0; i < count; ++i) {
    std::vector<std::uint8_t> bytes(size, static_cast<std::uint8_t>(0x10 + i));
    REQUIRE(rt::immediate::upload(r, stream, buffer, bytes).has_value());
  }
}

// Replays a window on the runtime `open` makes, registered alone under the name the window was
// recorded with.
void replay_on(const std::filesystem::path& path, const std::string& name,
               std::function<std::unique_ptr<rt::DeviceRuntime>()> open) {
  rt::RuntimeRegistry registry;
  registry.add(name, "test runtime",
               [open](const rt::RuntimeOpenOptions&) -> rt::Result<std::unique_ptr<rt::DeviceRuntime>> {
                 return open();
               });
  replay(path, {}, registry);
}

}  // namespace

TEST_CASE("flight: a failed seal keeps its session open and checkpoints off until it is sealed") {
  // A window that starts inside an import session would lack the session its later calls use.
  const auto dir = fresh_dir("vtrace_flight_failed_seal_test");
  const auto open_importing = [] {
    return std::make_unique<vtrace::test::ImportingRuntime>(make_reference(), 1);
  };
  auto rec = RecordingRuntime::create(open_importing(), "importing", dir / "w.vtrace",
                                      flight_options(2));
  REQUIRE(rec.has_value());
  rt::DeviceRuntime& r = **rec;
  auto stream = r.create_stream();
  REQUIRE(stream.has_value());
  auto weight = allocate(r, 8, rt::ElementType::kU8, "resource.weight");
  auto scratch = allocate(r, 16, rt::ElementType::kU8, "resource.scratch");
  upload_batches(r, **stream, *scratch, 16, 1);
  // A checkpoint is taken at the start of the first call after a batch: here, the begin.
  auto session = r.begin_static_weight_import();
  REQUIRE(session.has_value());
  REQUIRE(session->has_value());
  const auto before = checkpoints_of(**rec);
  CHECK(before == 1);
  const std::vector<std::uint8_t> component(8, 0x5A);
  REQUIRE((**session)->import_component(component, *weight, 0).has_value());
  REQUIRE_FALSE((**session)->seal().has_value());  // the injected failure: still open
  upload_batches(r, **stream, *scratch, 16, 4);
  CHECK(checkpoints_of(**rec) == before);
  const std::uint64_t last_event = (*rec)->events_recorded() - 1;
  auto inside = (*rec)->dump_window(FlightTriggerKind::kApi, "inside");
  REQUIRE(inside.has_value());
  CHECK(window_of(*inside).batches == 4);  // back to the checkpoint before the session began
  CHECK(window_of(*inside).trigger_event == last_event);  // an API dump: the last event recorded
  REQUIRE((**session)->seal().has_value());
  upload_batches(r, **stream, *scratch, 16, 4);
  CHECK(checkpoints_of(**rec) >= before + 4);
  auto after = (*rec)->dump_window(FlightTriggerKind::kApi, "after");
  REQUIRE(after.has_value());
  CHECK(window_of(*after).batches == 2);
  session->value().reset();
  weight.reset();
  scratch.reset();
  REQUIRE((*rec)->close().has_value());
  replay_on(*inside, "importing", open_importing);
  replay_on(*after, "importing", open_importing);
  std::filesystem::remove_all(dir);
}

TEST_CASE("flight: a coalesced command keeps checkpoints off until it is submitted, and only "
          "until then") {
  // The format cannot recreate what coalesce_program_bindings returned, so no window may start
  // while such a command lives: a window cut after the coalesce would submit a command it cannot
  // create.
  const auto dir = fresh_dir("vtrace_flight_coalesce_test");
  auto rec = RecordingRuntime::create(make_reference(), "reference", dir / "w.vtrace",
                                      flight_options(2));
  REQUIRE(rec.has_value());
  rt::DeviceRuntime& r = **rec;
  auto stream = r.create_stream();
  REQUIRE(stream.has_value());
  auto target = allocate(r, 16, rt::ElementType::kU8, "resource.target");
  auto scratch = allocate(r, 16, rt::ElementType::kU8, "resource.scratch");
  upload_batches(r, **stream, *scratch, 16, 1);
  std::vector<rt::CommandPtr> commands;
  const std::vector<std::uint8_t> pattern(16, 0xC3);
  auto upload = r.encode_upload(pattern, layout(rt::ElementType::kU8, 16), *target, 0);
  REQUIRE(upload.has_value());
  commands.push_back(std::move(*upload));
  auto coalesced = r.coalesce_program_bindings(std::move(commands));
  REQUIRE(coalesced.has_value());
  REQUIRE(coalesced->size() == 1);
  const auto before = checkpoints_of(**rec);
  CHECK(before == 1);  // taken at the start of the encode, the first call after the batch
  upload_batches(r, **stream, *scratch, 16, 4);
  CHECK(checkpoints_of(**rec) == before);
  REQUIRE(rt::immediate::submit_and_wait(r, **stream,
                                         rt::CommandBatch::singleton(std::move(coalesced->front())))
              .has_value());
  REQUIRE(rt::immediate::readback(r, **stream, *target) == pattern);
  auto inside = (*rec)->dump_window(FlightTriggerKind::kApi, "inside");
  REQUIRE(inside.has_value());
  CHECK(window_of(*inside).batches == 5);  // back to the checkpoint before the coalesce
  upload_batches(r, **stream, *scratch, 16, 4);
  CHECK(checkpoints_of(**rec) >= before + 4);
  auto after = (*rec)->dump_window(FlightTriggerKind::kApi, "after");
  REQUIRE(after.has_value());
  CHECK(window_of(*after).batches == 2);
  target.reset();
  scratch.reset();
  REQUIRE((*rec)->close().has_value());
  replay(*inside);
  replay(*after);
  std::filesystem::remove_all(dir);
}

TEST_CASE("flight: a reusable execution, whose writes no event names, makes the next checkpoint "
          "read every buffer") {
  const auto dir = fresh_dir("vtrace_flight_reusable_test");
  auto rec = RecordingRuntime::create(
      std::make_unique<vtrace::test::ProgramRuntime>(make_reference()), "programs",
      dir / "w.vtrace", flight_options(1));
  REQUIRE(rec.has_value());
  rt::DeviceRuntime& r = **rec;
  auto stream = r.create_stream();
  REQUIRE(stream.has_value());
  auto target = allocate(r, 16, rt::ElementType::kU8,
                         std::string(vtrace::test::ProgramRuntime::kProgramTarget));
  auto scratch = allocate(r, 16, rt::ElementType::kU8, "resource.scratch");
  upload_batches(r, **stream, *target, 16, 1);  // the target holds 0x10...
  auto program = r.encode_reusable_execution({"program.test", 1});
  REQUIRE(program.has_value());
  REQUIRE(program->has_value());
  REQUIRE(rt::immediate::submit_and_wait(r, **stream,
                                         rt::CommandBatch::singleton(std::move(**program)))
              .has_value());
  upload_batches(r, **stream, *scratch, 16, 1);  // the window: this batch only
  REQUIRE(rt::immediate::readback(r, **stream, *target) == std::vector<std::uint8_t>(16, 0));
  REQUIRE((*rec)->dump_window().has_value());
  target.reset();
  scratch.reset();
  REQUIRE((*rec)->close().has_value());
  CHECK(window_of(dir / "w.vtrace").batches == 1);
  // The window starts after the program ran: its prologue must restore the zeroed target.
  replay(dir / "w.vtrace", "reference");
  std::filesystem::remove_all(dir);
}

TEST_CASE("flight: a window starts from the state its first batch saw, whatever earlier batches "
          "left") {
  // State carried between batches: x ping-pongs through a dense linear every step, so a window
  // that starts mid-run needs x as the last checkpoint saw it, not as an earlier one did. Also a
  // buffer whose size is not whole f16 elements, and a permit admitted before the window whose
  // allocation falls inside it.
  const auto dir = fresh_dir("vtrace_flight_state_test");
  auto rec = RecordingRuntime::create(make_reference(), "reference", dir / "w.vtrace",
                                      flight_options(2));
  REQUIRE(rec.has_value());
  rt::DeviceRuntime& r = **rec;
  namespace im = rt::immediate;
  auto stream = r.create_stream();
  REQUIRE(stream.has_value());
  const std::uint64_t n = 64;
  const auto f16 = rt::ElementType::kF16;
  auto x = allocate(r, 2 * n, f16, "resource.test.x");
  auto y = allocate(r, 2 * n, f16, "resource.test.y");
  auto w = allocate(r, 2 * n * n, f16, "weight.test.w");
  auto odd = allocate(r, 2 * n + 1, f16, "resource.test.odd");
  auto tiny = allocate(r, 1, f16, "resource.test.tiny");  // not one element: nothing to read
  auto late_permit = r.admit(request(2 * n, f16, "resource.test.late"));
  REQUIRE(late_permit.has_value());
  std::vector<float> values(n * n);
  for (std::size_t i = 0; i < values.size(); ++i) {
    values[i] = static_cast<float>(static_cast<int>(i % 7) - 3) / 64.0f;
  }
  REQUIRE(im::upload(r, **stream, *w, rt::to_f16_bytes(values)).has_value());
  values.resize(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = static_cast<float>(i % 5) / 4.0f;
  REQUIRE(im::upload(r, **stream, *x, rt::to_f16_bytes(values)).has_value());
  // The odd buffer: written once, read at the end.
  std::vector<std::uint8_t> odd_bytes(2 * n + 1);
  for (std::size_t i = 0; i < odd_bytes.size(); ++i) odd_bytes[i] = static_cast<std::uint8_t>(i);
  {
    auto layout = rt::HostTransferLayout::create(rt::ElementType::kU8, odd_bytes.size());
    REQUIRE(layout.has_value());
    auto copy_in = r.encode_upload(odd_bytes, *layout, *odd, 0);
    // An f16 buffer takes only f16 uploads; the odd byte stays zero.
    if (!copy_in) {
      odd_bytes.back() = 0;
      REQUIRE(im::upload(r, **stream, *odd,
                         std::span(odd_bytes.data(), odd_bytes.size() - 1))
                  .has_value());
    } else {
      auto fence = r.submit(**stream, rt::CommandBatch::singleton(std::move(*copy_in)));
      REQUIRE(fence.has_value());
      REQUIRE(r.wait_fence(**fence).has_value());
    }
  }
  rt::BufferPtr late;
  for (int step = 0; step < 8; ++step) {
    REQUIRE(im::dense_linear(r, **stream, *x, *w, *y, {1, n, n}).has_value());
    REQUIRE(im::dense_linear(r, **stream, *y, *w, *x, {1, n, n}).has_value());
    REQUIRE(im::readback(r, **stream, *x).has_value());
    if (step == 7) {  // inside the window: its last two batches are the dense and this upload
      auto allocated = r.allocate(std::move(*late_permit));
      REQUIRE(allocated.has_value());
      late = std::move(*allocated);
      REQUIRE(im::upload(r, **stream, *late, rt::to_f16_bytes(values)).has_value());
    }
  }
  {
    // Its whole elements (immediate::readback refuses a buffer that is not whole elements).
    auto layout = rt::HostTransferLayout::create(rt::ElementType::kF16, n);
    auto region = rt::CopyRegion::create(0, 0, 2 * n);
    REQUIRE((layout && region));
    REQUIRE(r.readback(**stream, *odd, *region, *layout).has_value());
  }
  REQUIRE(im::readback(r, **stream, *late).has_value());
  const auto stats = (*rec)->flight_stats();
  REQUIRE(stats.has_value());
  INFO(stats->last_error);
  REQUIRE(stats->checkpoints > 2);
  // Checkpoints read what changed since the last one: the weights once, not at every one.
  CHECK(stats->checkpoint_bytes_read < stats->checkpoints * (2 * n * n));
  REQUIRE((*rec)->dump_window().has_value());
  late.reset();
  x.reset();
  y.reset();
  w.reset();
  odd.reset();
  tiny.reset();
  REQUIRE((*rec)->close().has_value());
  CHECK(window_of(dir / "w.vtrace").batches == 2);
  replay(dir / "w.vtrace");
  // Every payload, the checkpoint's contents included, is f16 data stored as byte planes.
  auto reader = vtrace::schema::TraceReader::open(dir / "w.vtrace");
  REQUIRE(reader.has_value());
  std::uint64_t payloads = 0;
  REQUIRE((*reader)
              ->visit_events(0, (*reader)->event_count(),
                             [&](std::uint64_t, std::span<const std::uint8_t> e) {
                               for (const auto& id :
                                    vtrace::schema::event_links(*vtrace::schema::event_of(e))
                                        .payloads) {
                                 ++payloads;
                                 CHECK((*reader)->blob_encoding(id) ==
                                       vtrace::schema::BlobEncoding::kBytePlanes16);
                               }
                               return true;
                             })
              .has_value());
  CHECK(payloads > 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("flight: a window that starts with the run is the run's events as recorded") {
  // No batch was evicted: the window needs no prologue (no synthesized creation, contents or
  // counter baseline), and its first event is the recording's own RuntimeOpened.
  const auto dir = fresh_dir("vtrace_flight_whole_test");
  auto rec = RecordingRuntime::create(make_reference(), "reference", dir / "w.vtrace",
                                      flight_options(64));
  REQUIRE(rec.has_value());
  REQUIRE(wl::run_workload(small_decode(2), **rec, nullptr).has_value());
  const std::uint64_t recorded = (*rec)->events_recorded();
  REQUIRE((*rec)->dump_window().has_value());
  REQUIRE((*rec)->close().has_value());
  auto reader = vtrace::schema::TraceReader::open(dir / "w.vtrace");
  REQUIRE(reader.has_value());
  CHECK((*reader)->event_count() == recorded);
  std::string first;
  REQUIRE((*reader)
              ->visit_events(0, 1,
                             [&](std::uint64_t, std::span<const std::uint8_t> e) {
                               first = vtrace::schema::event_kind_name(
                                   *vtrace::schema::event_of(e));
                               return true;
                             })
              .has_value());
  CHECK(first == "RuntimeOpened");
  replay(dir / "w.vtrace");
  std::filesystem::remove_all(dir);
}
