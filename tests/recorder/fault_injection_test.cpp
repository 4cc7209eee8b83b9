// Fault injection at every write of a recording: a sink that fails the Nth write (every N in
// turn), writes short, fails a flush or the commit, or runs out of space (a byte budget); real
// files on /dev/full and with a rename that fails; a runtime whose admission or allocation fails
// on purpose. In every case the product's results are those of an unrecorded run, close()
// reports the cause, and what was written recovers as a prefix of the complete trace.
#include <fmt/format.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "recorder_test_support.h"
#include "support/failing_runtime.h"
#include "support/faulty_sink.h"
#include "support/test_support.h"
#include "vtrace/replayer/replay_engine.h"
#include "vtrace/replayer/replay_plan.h"
#include "vtrace/runtime/registry.h"
#include "vtrace/workloads/workload.h"

using namespace vtrace::recorder::testing;
using vtrace::test::FaultPlan;
using vtrace::test::FaultySink;
namespace schema = vtrace::schema;
namespace wl = vtrace::workloads;
namespace fs = std::filesystem;

namespace {

using Bytes = std::vector<std::uint8_t>;

// The three workloads, small: tiny, a decode of every decode feature, a short contract run
// (every error path once, plus 4 rounds).
std::vector<wl::WorkloadSpec> small_specs() {
  wl::WorkloadSpec tiny;
  wl::WorkloadSpec decode;
  decode.kind = wl::WorkloadKind::kDecode;
  decode.seed = 3;
  decode.decode.hidden = 32;
  decode.decode.ffn = 64;
  decode.decode.layers = 2;
  decode.decode.participants = 3;
  decode.decode.steps = 3;
  wl::WorkloadSpec contract;
  contract.kind = wl::WorkloadKind::kContract;
  contract.contract.rounds = 4;
  return {tiny, decode, contract};
}

// Runs `spec` on `runtime`, with a fresh foreign runtime for the contract workload.
wl::WorkloadReport run(const wl::WorkloadSpec& spec, rt::DeviceRuntime& runtime) {
  auto foreign = make_reference("device.recorder.test.1");
  auto report = wl::run_workload(spec, runtime, foreign.get());
  INFO((report ? std::string() : report.error().message));
  REQUIRE(report.has_value());
  return std::move(*report);
}

void check_same_report(const wl::WorkloadReport& got, const wl::WorkloadReport& want) {
  CHECK(got.submissions == want.submissions);
  CHECK(got.readbacks == want.readbacks);
  CHECK(got.readback_bytes == want.readback_bytes);
  CHECK(got.readback_digest == want.readback_digest);
  CHECK(got.last_readback == want.last_readback);
  CHECK(got.counter_checks == want.counter_checks);
  CHECK(got.expected_errors == want.expected_errors);
  CHECK(got.error_kinds == want.error_kinds);
  CHECK(got.final_counters == want.final_counters);
}

std::vector<Bytes> events_of(schema::TraceReader& reader) {
  std::vector<Bytes> out;
  auto visited = reader.visit_events(0, reader.event_count(),
                                     [&](std::uint64_t, std::span<const std::uint8_t> record) {
                                       out.emplace_back(record.begin(), record.end());
                                       return true;
                                     });
  REQUIRE(visited.has_value());
  return out;
}

// A fresh directory under the system temp dir, removed with its contents at destruction.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& stem)
      : path_(fs::temp_directory_path() / fmt::format("{}_{}", stem, ::getpid())) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// A recording of `spec` through a FaultySink with `plan`.
struct FaultedRun {
  wl::WorkloadReport report;
  vtrace::recorder::RecorderCloseResult closed;
  bool failed = false;
  std::shared_ptr<FaultySink::State> sink;
};

FaultedRun record_with(const wl::WorkloadSpec& spec, const FaultPlan& plan) {
  auto state = std::make_shared<FaultySink::State>();
  auto rec = vtrace::recorder::RecordingRuntime::create(make_reference(), "reference",
                                                        std::make_unique<FaultySink>(state, plan));
  REQUIRE(rec.has_value());
  auto report = run(spec, **rec);
  auto closed = (*rec)->close();
  const bool failed = (*rec)->recording_failed();
  return {std::move(report), std::move(closed), failed, state};
}

// What the fault's error must say (its cause).
std::string cause_of(const FaultPlan& plan) {
  switch (plan.kind) {
    case FaultPlan::Kind::kFailWrite:
      return fmt::format(
          "cannot write memory.vtrace: injected fault at write {}: Input/output "
          "error",
          plan.nth);
    case FaultPlan::Kind::kShortWrite:
      return fmt::format("cannot write memory.vtrace: injected short write at write {}", plan.nth);
    case FaultPlan::Kind::kFailFlush:
      return fmt::format("cannot flush memory.vtrace: injected fault at flush {}", plan.nth);
    case FaultPlan::Kind::kFailCommit:
      return "injected fault at commit: Permission denied";
    case FaultPlan::Kind::kByteBudget:
      return fmt::format(
          "cannot write memory.vtrace: No space left on device (byte budget of {} "
          "bytes)",
          plan.budget);
    case FaultPlan::Kind::kNone:
      break;
  }
  return "?";
}

}  // namespace

TEST_CASE(
    "a recording survives a sink fault at every write, flush, commit and byte budget, and what was "
    "written recovers") {
  std::uint64_t faults = 0;
  for (const auto& spec : small_specs()) {
    INFO(spec.describe());
    auto plain_runtime = make_reference();
    const auto plain = run(spec, *plain_runtime);
    // The complete recording: how many writes and flushes, and its events.
    const auto clean = record_with(spec, {});
    REQUIRE(clean.closed.has_value());
    REQUIRE_FALSE(clean.failed);
    check_same_report(clean.report, plain);
    const Bytes full = clean.sink->copy();
    const auto writes = clean.sink->write_sizes.size();
    const auto flushes = clean.sink->flushes;
    const std::uint64_t header_bytes = clean.sink->write_sizes.at(0);
    REQUIRE(writes >= 3);
    REQUIRE(flushes >= 2);
    auto full_reader = schema::TraceReader::open(schema::memory_source(full, "full.vtrace"));
    REQUIRE(full_reader.has_value());
    const auto full_events = events_of(**full_reader);
    WARN(fmt::format("{}: {} events, {} bytes, {} writes, {} flushes", spec.describe(),
                     full_events.size(), full.size(), writes, flushes));

    std::vector<FaultPlan> plans;
    for (std::uint64_t n = 1; n <= writes; ++n) {
      plans.push_back({FaultPlan::Kind::kFailWrite, n, 0});
      plans.push_back({FaultPlan::Kind::kShortWrite, n, 0});
    }
    for (std::uint64_t n = 1; n <= flushes; ++n)
      plans.push_back({FaultPlan::Kind::kFailFlush, n, 0});
    plans.push_back({FaultPlan::Kind::kFailCommit, 0, 0});
    for (std::uint64_t k = 0; k < 32; ++k) {
      plans.push_back({FaultPlan::Kind::kByteBudget, 0, full.size() * k / 32});
    }
    plans.push_back({FaultPlan::Kind::kByteBudget, 0, full.size() - 1});

    for (const auto& plan : plans) {
      INFO(plan.describe());
      const auto faulted = record_with(spec, plan);
      ++faults;
      check_same_report(faulted.report, plain);
      CHECK(faulted.sink->injected);
      CHECK(faulted.failed);
      REQUIRE_FALSE(faulted.closed.has_value());
      CHECK(faulted.closed.error().kind == schema::TraceErrorKind::kIo);
      CHECK_THAT(faulted.closed.error().message, Catch::Contains(cause_of(plan)));
      const Bytes written = faulted.sink->copy();
      REQUIRE(written.size() <= full.size());
      CHECK(std::equal(written.begin(), written.end(), full.begin()));
      auto reader = schema::TraceReader::open(schema::memory_source(written, "faulted.vtrace"));
      if (!reader) {
        // Only a file cut inside its header does not open.
        CHECK(written.size() < header_bytes);
        continue;
      }
      // Complete only when the footer got out (a failed commit, or the flush after the footer).
      CHECK((*reader)->complete() == (written.size() == full.size()));
      if (plan.kind == FaultPlan::Kind::kFailCommit) CHECK(written.size() == full.size());
      const auto events = events_of(**reader);
      REQUIRE(events.size() <= full_events.size());
      CHECK(std::equal(events.begin(), events.end(), full_events.begin()));
    }
  }
  WARN(fmt::format("{} sink faults injected into recordings of tiny, decode and contract", faults));
  CHECK(faults > 100);
}

TEST_CASE(
    "a trace on /dev/full fails with ENOSPC at close, naming the file, and the workload's results "
    "are unchanged") {
  if (!fs::exists("/dev/full")) VTRACE_SKIP("/dev/full is absent");
  const auto spec = small_specs()[1];
  auto plain_runtime = make_reference();
  const auto plain = run(spec, *plain_runtime);
  auto sink = schema::open_raw_file_sink("/dev/full");
  REQUIRE(sink.has_value());
  auto rec =
      vtrace::recorder::RecordingRuntime::create(make_reference(), "reference", std::move(*sink));
  REQUIRE(rec.has_value());
  check_same_report(run(spec, **rec), plain);
  auto closed = (*rec)->close();
  REQUIRE_FALSE(closed.has_value());
  CHECK((*rec)->recording_failed());
  CHECK(closed.error().message == "cannot write /dev/full: No space left on device");
}

TEST_CASE(
    "a rename that fails at close leaves the complete trace in the .partial and names both paths") {
  const ScratchDir dir("recorder-rename");
  const auto spec = small_specs()[1];
  auto plain_runtime = make_reference();
  const auto plain = run(spec, *plain_runtime);
  const auto clean = record_with(spec, {});
  REQUIRE(clean.closed.has_value());
  const auto path = dir.path() / "t.vtrace";
  auto rec = vtrace::recorder::RecordingRuntime::create(make_reference(), "reference", path);
  REQUIRE(rec.has_value());
  // The final name becomes a non-empty directory while the recording runs.
  fs::create_directories(path / "in-the-way");
  check_same_report(run(spec, **rec), plain);
  auto closed = (*rec)->close();
  REQUIRE_FALSE(closed.has_value());
  CHECK_THAT(closed.error().message, Catch::Contains(fmt::format("cannot rename {}.partial to {}: ",
                                                                 path.string(), path.string())));
  const fs::path partial = path.string() + ".partial";
  REQUIRE(fs::exists(partial));
  auto reader = schema::TraceReader::open(partial);
  REQUIRE(reader.has_value());
  CHECK((*reader)->complete());
  auto full = schema::TraceReader::open(schema::memory_source(clean.sink->copy(), "full.vtrace"));
  REQUIRE(full.has_value());
  CHECK(events_of(**reader) == events_of(**full));
}

// The replayer compares every recorded outcome: an injected failure replays as itself on a
// runtime that fails the same call, and on a healthy runtime (which succeeds there) it is a
// mismatch at exactly the event that recorded it.
TEST_CASE(
    "an admission or allocation that fails on purpose reaches the product as the contract's error, "
    "is recorded, and replays as that error") {
  using vtrace::test::FailingRuntime;
  namespace rp = vtrace::replayer;
  struct Case {
    FailingRuntime::Call call;
    std::uint64_t kth;
    fb::EventBody body;
    std::string kind;
  };
  const auto spec = small_specs()[1];
  for (const auto& c :
       {Case{FailingRuntime::Call::kAdmit, 3, fb::EventBody::Admit, "admission_over_capacity"},
        Case{FailingRuntime::Call::kAllocate, 2, fb::EventBody::Allocate, "allocation_invalid"}}) {
    INFO(c.kind);
    auto sink = std::make_shared<MemorySink::State>();
    auto rec =
        record_to_memory(std::make_unique<FailingRuntime>(make_reference(), c.call, c.kth), sink);
    auto report = wl::run_workload(spec, *rec, nullptr);
    REQUIRE_FALSE(report.has_value());
    CHECK_THAT(report.error().message,
               Catch::Contains(c.kind) && Catch::Contains(fmt::format("injected: ")));
    REQUIRE(rec->close().has_value());
    const auto trace = read_trace(sink->copy());

    // The kth call of that kind is recorded with the error, the ones before without.
    std::optional<std::uint64_t> failed_event;
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < trace.records.size(); ++i) {
      const auto& e = trace.event(i);
      if (e.body_type() != c.body) continue;
      ++seen;
      const fb::Error* error = c.body == fb::EventBody::Admit ? e.body_as_Admit()->error()
                                                              : e.body_as_Allocate()->error();
      if (seen < c.kth) {
        CHECK(error == nullptr);
        continue;
      }
      REQUIRE(error != nullptr);
      REQUIRE(error->kind() != nullptr);
      CHECK(error->kind()->str() == c.kind);
      failed_event = i;
      break;
    }
    REQUIRE(failed_event.has_value());

    auto plan = rp::ReplayPlan::build(*trace.reader);
    REQUIRE(plan.has_value());
    {
      FailingRuntime again(make_reference(), c.call, c.kth);
      auto auxiliary = make_reference("device.recorder.test.1");
      const auto replayed = rp::execute_plan(*plan, again, *auxiliary, {});
      CHECK(replayed.matched());
      CHECK(replayed.checked.error_outcomes >= 1);
    }
    {
      auto healthy = make_reference();
      auto auxiliary = make_reference("device.recorder.test.1");
      const auto replayed = rp::execute_plan(*plan, *healthy, *auxiliary, {});
      CHECK_FALSE(replayed.matched());
      REQUIRE_FALSE(replayed.mismatches.empty());
      CHECK(replayed.mismatches.front().event == *failed_event);
    }
  }
}

// What `vtrace record` does on SIGINT, without the signal: the predicate answers true from its
// (K+1)th question on. The workload ends at that call boundary (decode asks once before its
// weights, once before each of its 2 * layers + 1 weight uploads and once before each step),
// the trace closed with a CloseReason says so in its summary, and it replays with no mismatch.
TEST_CASE(
    "a workload whose StopRequested answers true ends at that call boundary and its trace, marked "
    "interrupted, replays") {
  namespace rp = vtrace::replayer;
  for (const auto& spec : small_specs()) {
    INFO(spec.describe());
    std::uint64_t questions = 0;
    {
      auto plain = make_reference();
      auto foreign = make_reference("device.recorder.test.1");
      REQUIRE(wl::run_workload(spec, *plain, foreign.get(), [&] {
                ++questions;
                return false;
              }).has_value());
    }
    REQUIRE(questions >= 1);
    for (std::uint64_t k = 0; k <= questions; ++k) {
      INFO("stop after " << k << " of " << questions << " questions");
      auto sink = std::make_shared<MemorySink::State>();
      auto rec = record_to_memory(make_reference(), sink);
      auto foreign = make_reference("device.recorder.test.1");
      std::uint64_t asked = 0;
      auto report = wl::run_workload(spec, *rec, foreign.get(), [&] { return ++asked > k; });
      REQUIRE(report.has_value());
      CHECK(report->stopped == (k < questions));
      CHECK(asked == std::min(k + 1, questions));
      if (spec.kind == wl::WorkloadKind::kDecode) {
        const std::uint64_t uploads = 2 * spec.decode.layers + 1;
        const std::uint64_t steps =
            k <= 1 + uploads ? 0 : std::min<std::uint64_t>(k - 1 - uploads, spec.decode.steps);
        CHECK(report->readbacks == steps);
      }
      REQUIRE(rec->close(vtrace::recorder::CloseReason{"SIGINT"}).has_value());
      const auto trace = read_trace(sink->copy());
      REQUIRE(trace.reader->complete());
      const auto* summary = schema::read_trace_summary(trace.reader->summary());
      REQUIRE(summary != nullptr);
      REQUIRE(summary->interrupted_by() != nullptr);
      CHECK(summary->interrupted_by()->str() == "SIGINT");
      auto plan = rp::ReplayPlan::build(*trace.reader);
      REQUIRE(plan.has_value());
      auto runtime = make_reference();
      auto auxiliary = make_reference("device.recorder.test.1");
      CHECK(rp::execute_plan(*plan, *runtime, *auxiliary, {}).matched());
    }
  }
}

TEST_CASE("a trace closed without a reason has no interrupted_by in its summary") {
  auto sink = std::make_shared<MemorySink::State>();
  auto rec = record_to_memory(make_reference(), sink);
  run(small_specs()[0], *rec);
  REQUIRE(rec->close().has_value());
  const auto trace = read_trace(sink->copy());
  const auto* summary = schema::read_trace_summary(trace.reader->summary());
  REQUIRE(summary != nullptr);
  CHECK(summary->interrupted_by() == nullptr);
}
