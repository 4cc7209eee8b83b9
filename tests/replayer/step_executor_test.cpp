// The step executor on its own: execute and compare step by step, and the private stream
// (read_buffer / write_buffer) kept out of the counters comparison.
#include <fmt/format.h>

#include <catch2/catch.hpp>

#include <map>

#include "support/failing_waits.h"
#include "trace_fixtures.h"
#include "vtrace/recorder/recording_runtime.h"
#include "vtrace/replayer/comparator.h"
#include "vtrace/replayer/step_executor.h"
#include "vtrace/replayer/object_table.h"
#include "vtrace/replayer/replay_engine.h"
#include "vtrace/runtime/forwarding_runtime.h"
#include "vtrace/runtime/immediate.h"
#include "vtrace/runtime/registry.h"
#include "vtrace/schema/trace_reader.h"

namespace rp = vtrace::replayer;
namespace rt = vtrace::runtime;
using vtrace::test::ScratchDir;

namespace {

rp::ReplayPlan decode_plan(const ScratchDir& dir) {
  const auto path = dir / "decode.vtrace";
  vtrace::test::record_workload(vtrace::test::small_decode_spec(), path);
  auto reader = vtrace::schema::TraceReader::open(path);
  REQUIRE(reader.has_value());
  auto plan = rp::ReplayPlan::build(**reader);
  REQUIRE(plan.has_value());
  return std::move(*plan);
}

struct Runtimes {
  std::unique_ptr<rt::DeviceRuntime> primary;
  std::unique_ptr<rt::DeviceRuntime> auxiliary;
};

Runtimes open_reference() {
  auto primary = rt::default_registry().open("reference", {.device_id = "device.vtrace.0"});
  auto auxiliary = rt::default_registry().open("reference", {.device_id = "device.vtrace.1"});
  REQUIRE(primary.has_value());
  REQUIRE(auxiliary.has_value());
  return {std::move(*primary), std::move(*auxiliary)};
}

using vtrace::test::FailingWaits;

// Executes `plan` up to and including its first allocation of an f16 buffer; that buffer's
// ordinal, or nullopt when there is none.
std::optional<std::uint64_t> run_to_first_f16_buffer(rp::StepExecutor& executor,
                                                     const rp::ReplayPlan& plan) {
  for (const auto& s : plan.steps()) {
    (void)executor.execute(s);
    if (const auto* a = std::get_if<rp::step::Allocate>(&s.body);
        a && a->buffer && a->descriptor && a->descriptor->element_type == rt::ElementType::kF16) {
      return *a->buffer;
    }
  }
  return std::nullopt;
}

// The error kind of a refused access (REQUIREs the refusal).
template <typename T>
rp::BufferAccessError::Kind refusal(const std::expected<T, rp::BufferAccessError>& result) {
  REQUIRE_FALSE(result.has_value());
  return result.error().kind;
}

}  // namespace

TEST_CASE("private reads and writes between steps leave the counters comparison unchanged",
          "[replayer][executor]") {
  ScratchDir dir("replayer-executor-private");
  const rp::ReplayPlan plan = decode_plan(dir);
  auto runtimes = open_reference();
  rp::StepExecutor executor(plan, *runtimes.primary, *runtimes.auxiliary);

  std::map<std::uint64_t, std::uint64_t> live_buffers;  // ordinal -> size
  std::uint64_t snapshots = 0;
  std::uint64_t private_reads = 0;
  for (const auto& s : plan.steps()) {
    if (std::holds_alternative<rp::step::CounterSnapshot>(s.body) ||
        std::holds_alternative<rp::step::Readback>(s.body)) {
      // Read every live buffer and write the same bytes back, on the executor's own stream.
      for (const auto& [ordinal, size] : live_buffers) {
        auto bytes = executor.read_buffer(ordinal, {0, size});
        REQUIRE(bytes.has_value());
        CHECK(bytes->size() == size);
        REQUIRE(executor.write_buffer(ordinal, 0, *bytes).has_value());
        ++private_reads;
      }
    }
    const rp::Observation live = executor.execute(s);
    const rp::Observation recorded = rp::recorded_observation(s, plan);
    const auto comparison = rp::compare(recorded, live, rp::CheckMode::bits());
    INFO("event " << s.ordinal << " " << s.kind);
    CHECK(comparison.differences.empty());
    snapshots += comparison.checked.counter_snapshots;
    if (const auto* a = std::get_if<rp::step::Allocate>(&s.body); a && a->buffer && a->descriptor) {
      live_buffers[*a->buffer] = a->descriptor->size_bytes;
    } else if (const auto* r = std::get_if<rp::step::BufferReleased>(&s.body)) {
      live_buffers.erase(r->ordinal);
    }
  }
  CHECK(snapshots > 0);
  CHECK(private_reads > 0);
  // The private traffic was real: the runtime counted it, the executor subtracted it.
  const auto& traffic = executor.private_traffic();
  CHECK(traffic.readback_bytes > 0);
  CHECK(traffic.uploaded_bytes == traffic.readback_bytes);
  CHECK(traffic.submissions == private_reads);
  CHECK(traffic.commands == private_reads);
  CHECK(traffic.allocations == 0);
}

TEST_CASE("read_buffer and write_buffer refuse what they cannot do", "[replayer][executor]") {
  ScratchDir dir("replayer-executor-refusals");
  const rp::ReplayPlan plan = decode_plan(dir);
  auto runtimes = open_reference();
  rp::StepExecutor executor(plan, *runtimes.primary, *runtimes.auxiliary);
  const std::optional<std::uint64_t> f16_buffer = run_to_first_f16_buffer(executor, plan);
  REQUIRE(f16_buffer.has_value());
  CHECK(refusal(executor.read_buffer(9999, {0, 2})) ==
        rp::BufferAccessError::Kind::kNoSuchBuffer);
  CHECK(refusal(executor.read_buffer(*f16_buffer, {0, 3})) ==
        rp::BufferAccessError::Kind::kInvalidRange);
  const std::vector<std::uint8_t> three(3, 0);
  CHECK(refusal(executor.write_buffer(*f16_buffer, 0, three)) ==
        rp::BufferAccessError::Kind::kInvalidRange);
  const std::vector<std::uint8_t> two = {0x00, 0x3C};
  REQUIRE(executor.write_buffer(*f16_buffer, 0, two).has_value());
  const auto back = executor.read_buffer(*f16_buffer, {0, 2});
  REQUIRE(back.has_value());
  CHECK(*back == two);
  CHECK(refusal(executor.read_buffer(*f16_buffer, {1u << 30, 2})) ==
        rp::BufferAccessError::Kind::kRuntime);
}

TEST_CASE("a private write whose batch ran and failed is an error, not a success",
          "[replayer][executor]") {
  ScratchDir dir("replayer-executor-terminal");
  const rp::ReplayPlan plan = decode_plan(dir);
  auto runtimes = open_reference();
  FailingWaits failing(std::move(runtimes.primary));
  rp::StepExecutor executor(plan, failing, *runtimes.auxiliary);
  const std::optional<std::uint64_t> f16_buffer = run_to_first_f16_buffer(executor, plan);
  REQUIRE(f16_buffer.has_value());
  const std::vector<std::uint8_t> two = {0x00, 0x3C};
  REQUIRE(executor.write_buffer(*f16_buffer, 0, two).has_value());
  failing.fail_waits = true;
  const auto written = executor.write_buffer(*f16_buffer, 0, two);
  CHECK(refusal(written) == rp::BufferAccessError::Kind::kRuntime);
  if (!written) CHECK_THAT(written.error().message, Catch::Contains("injected"));
}

TEST_CASE("a batch recorded as failed at its fence replays as a failure, and a success there is "
          "a mismatch",
          "[replayer][executor]") {
  ScratchDir dir("replayer-failed-terminal");
  const auto path = dir / "failed.vtrace";
  {
    auto inner = rt::default_registry().open("reference", {.device_id = "device.vtrace.0"});
    REQUIRE(inner.has_value());
    auto failing = std::make_unique<FailingWaits>(std::move(*inner));
    failing->fail_waits = true;
    auto recording =
        vtrace::recorder::RecordingRuntime::create(std::move(failing), "failing", path, {});
    REQUIRE(recording.has_value());
    rt::DeviceRuntime& r = **recording;
    auto stream = r.create_stream();
    REQUIRE(stream.has_value());
    const rt::BufferPtr buffer = vtrace::test::f16_buffer(r, "resource.failed", 8);
    auto zero = r.encode_zero(*buffer, 0, 8);
    REQUIRE(zero.has_value());
    auto fence = r.submit(**stream, rt::CommandBatch::singleton(std::move(*zero)));
    REQUIRE(fence.has_value());
    const auto receipt = r.wait_fence(**fence);
    REQUIRE(receipt.has_value());
    REQUIRE_FALSE(receipt->terminal.is_succeeded());
    REQUIRE((*recording)->close().has_value());
  }
  auto reader = vtrace::schema::TraceReader::open(path);
  REQUIRE(reader.has_value());
  auto plan = rp::ReplayPlan::build(**reader);
  REQUIRE(plan.has_value());

  // Where the batch fails again, as recorded: a match.
  auto runtimes = open_reference();
  FailingWaits failing(std::move(runtimes.primary));
  failing.fail_waits = true;
  const auto again = rp::execute_plan(*plan, failing, *runtimes.auxiliary, {});
  INFO(fmt::format("{}", again.mismatches.empty() ? "" : again.mismatches.front().call));
  CHECK(again.matched());
  CHECK(again.checked.fences == 1);

  // Where it succeeds: the recorded failure (its kind: messages are the runtime's own) is the
  // expected answer, and it differs.
  auto reference = open_reference();
  const auto succeeded = rp::execute_plan(*plan, *reference.primary, *reference.auxiliary, {});
  REQUIRE_FALSE(succeeded.matched());
  const auto& first = succeeded.mismatches.front();
  INFO(first.call << ": expected " << first.expected << ", actual " << first.actual);
  CHECK_THAT(first.call, Catch::StartsWith("wait_fence"));
  CHECK(first.expected == "terminal failed internal");
  CHECK(first.actual == "terminal succeeded");
}

TEST_CASE("the object table forgets what the recording released or consumed",
          "[replayer][executor]") {
  auto runtimes = open_reference();
  rt::DeviceRuntime& r = *runtimes.primary;
  rp::ObjectTable table(*runtimes.auxiliary);
  auto stream = r.create_stream();
  REQUIRE(stream.has_value());
  rt::BufferPtr buffer = vtrace::test::f16_buffer(r, "resource.table", 64);
  auto submitted = r.encode_zero(*buffer, 0, 2);
  auto kept = r.encode_zero(*buffer, 2, 2);
  REQUIRE(submitted.has_value());
  REQUIRE(kept.has_value());
  auto fence = rt::immediate::submit_and_wait(
      r, **stream, rt::CommandBatch::singleton(std::move(*submitted)));
  REQUIRE(fence.has_value());
  const auto own = [](std::uint64_t ordinal) {
    return rp::ObjectRef{ordinal, rp::ObjectRef::Space::kOwn};
  };
  table.keep_stream(1, std::move(*stream));
  table.keep_buffer(2, std::move(buffer));
  table.keep_command(3, std::move(*kept));
  table.keep_fence(4, std::move(*fence));
  CHECK(table.stream(own(1)) != nullptr);
  CHECK(table.buffer(own(2)) != nullptr);
  CHECK(table.fence(own(4)) != nullptr);
  CHECK(table.stream(own(2)) == nullptr);  // each kind has its own ordinals
  // A command is taken once: a submit consumes it.
  auto taken = table.take_command(own(3), true);
  REQUIRE(taken.has_value());
  CHECK(*taken != nullptr);
  taken->reset();
  CHECK_FALSE(table.take_command(own(3), true).has_value());
  CHECK_FALSE(table.take_command(own(3), false).has_value());
  table.release(rp::ObjectKind::kFence, 4);
  CHECK(table.fence(own(4)) == nullptr);
  table.release(rp::ObjectKind::kBuffer, 2);
  CHECK(table.buffer(own(2)) == nullptr);
  table.release(rp::ObjectKind::kStream, 1);
  CHECK(table.stream(own(1)) == nullptr);
  // What the runtime saw: the buffer was freed when the table released it.
  const auto counters = r.counter_snapshot();
  REQUIRE(counters.has_value());
  CHECK(counters->live_allocations == 0);
}
