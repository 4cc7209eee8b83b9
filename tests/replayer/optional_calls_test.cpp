// Replay of the optional methods (spec 5.2) the recorder records, and the compatibility rule for
// event kinds this build does not know.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "trace_fixtures.h"
#include "vtrace/recorder/recording_runtime.h"
#include "vtrace/replayer/replay_trace.h"
#include "vtrace/runtime/forwarding_runtime.h"
#include "vtrace/runtime/registry.h"
#include "vtrace/schema/events.h"
#include "vtrace/schema/trace_reader.h"
#include "vtrace/schema/trace_writer.h"

namespace rp = vtrace::replayer;
namespace rt = vtrace::runtime;
namespace fb = vtrace::fb;
namespace schema = vtrace::schema;
using vtrace::test::ScratchDir;
using vtrace::test::finish_event;
using vtrace::test::kUnknownBody;
using vtrace::test::write_tiny_with_unknown_event;

namespace {

rt::BufferPtr make_buffer(rt::DeviceRuntime& runtime, const char* id, std::uint64_t bytes) {
  auto request = rt::BufferRequest::create(*rt::ResourceId::create(id), bytes, 16,
                                           rt::BufferUsage::kScratch, rt::ElementType::kU8);
  REQUIRE(request.has_value());
  auto permit = runtime.admit(*request);
  REQUIRE(permit.has_value());
  auto buffer = runtime.allocate(std::move(*permit));
  REQUIRE(buffer.has_value());
  return std::move(*buffer);
}

// Records, on the reference runtime, a session calling every optional method; the commands
// coalesce_program_bindings returns are submitted and their effect read back.
void record_optional_session(const std::filesystem::path& path) {
  auto inner = rt::default_registry().open("reference", {.device_id = "device.vtrace.0"});
  REQUIRE(inner.has_value());
  auto recording = vtrace::recorder::RecordingRuntime::create(std::move(*inner), "reference", path,
                                                              {});
  REQUIRE(recording.has_value());
  rt::DeviceRuntime& r = **recording;
  {
    auto stream = r.create_stream();
    REQUIRE(stream.has_value());
    auto source = make_buffer(r, "resource.test.source", 64);
    auto target = make_buffer(r, "resource.test.target", 64);

    CHECK_FALSE(r.supports_guarded_submission());
    CHECK_FALSE(r.begin_static_weight_import().has_value());
    CHECK_FALSE(r.encode_static_weight_transform({source.get(), target.get(), "transpose"})
                    .has_value());
    auto plan = rt::ReusableExecutionPlan::create(4);
    REQUIRE(plan.has_value());
    CHECK(r.configure_reusable_executables(**stream, *plan).has_value());
    CHECK(r.seal_reusable_executables(**stream).has_value());
    CHECK(r.reusable_executable_preparation(**stream).has_value());
    auto catalog = r.reusable_execution_catalog(**stream);
    REQUIRE(catalog.has_value());
    CHECK(catalog->empty());
    auto reusable = r.encode_reusable_execution({"program.test", 2});
    REQUIRE(reusable.has_value());
    CHECK_FALSE(reusable->has_value());
    CHECK(r.trim_reusable_executables(**stream).has_value());

    std::vector<std::uint8_t> bytes(32);
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::uint8_t>(i * 7 + 1);
    auto layout = rt::HostTransferLayout::create(rt::ElementType::kU8, bytes.size());
    REQUIRE(layout.has_value());
    std::vector<rt::CommandPtr> commands;
    auto upload = r.encode_upload(bytes, *layout, *target, 8);
    REQUIRE(upload.has_value());
    commands.push_back(std::move(*upload));
    auto zero = r.encode_zero(*target, 0, 8);
    REQUIRE(zero.has_value());
    commands.push_back(std::move(*zero));
    auto coalesced = r.coalesce_program_bindings(std::move(commands));
    REQUIRE(coalesced.has_value());
    REQUIRE(coalesced->size() == 2);
    rt::CommandBatch batch;
    for (auto& c : *coalesced) batch.push(std::move(c));
    auto fence = r.submit(**stream, std::move(batch));
    REQUIRE(fence.has_value());
    REQUIRE(r.wait_fence(**fence).has_value());
    auto region = rt::CopyRegion::create(0, 0, 40);
    auto out_layout = rt::HostTransferLayout::create(rt::ElementType::kU8, 40);
    REQUIRE(region.has_value());
    REQUIRE(out_layout.has_value());
    auto read = r.readback(**stream, *target, *region, *out_layout);
    REQUIRE(read.has_value());
    CHECK((*read)[8] == 1);
  }
  REQUIRE((*recording)->close().has_value());
}

std::vector<std::string> optional_methods(const std::filesystem::path& trace) {
  auto reader = schema::TraceReader::open(trace);
  REQUIRE(reader.has_value());
  std::vector<std::string> methods;
  REQUIRE((*reader)
              ->visit_events(0, (*reader)->event_count(),
                             [&](std::uint64_t, std::span<const std::uint8_t> bytes) {
                               if (const auto* o = schema::event_of(bytes)->body_as_OptionalCall()) {
                                 methods.push_back(o->method()->str());
                               }
                               return true;
                             })
              .has_value());
  return methods;
}


}  // namespace

TEST_CASE("a recorded session calling every optional method replays to a match", "[replayer]") {
  ScratchDir dir("replayer-optional");
  const auto path = dir / "optional.vtrace";
  record_optional_session(path);
  const auto methods = optional_methods(path);
  for (const char* method :
       {"supports_guarded_submission", "begin_static_weight_import",
        "encode_static_weight_transform", "configure_reusable_executables",
        "seal_reusable_executables", "reusable_executable_preparation",
        "reusable_execution_catalog", "encode_reusable_execution", "trim_reusable_executables",
        "coalesce_program_bindings"}) {
    INFO(method);
    CHECK(std::find(methods.begin(), methods.end(), method) != methods.end());
  }

  auto reader = schema::TraceReader::open(path);
  REQUIRE(reader.has_value());
  auto plan = rp::ReplayPlan::build(**reader);
  INFO((plan ? std::string() : plan.error().message));
  REQUIRE(plan.has_value());
  std::uint64_t optional_steps = 0;
  for (const auto& s : plan->steps()) {
    CHECK_FALSE(std::holds_alternative<rp::step::Skipped>(s.body));
    if (const auto* call = std::get_if<rp::step::OptionalCall>(&s.body)) {
      ++optional_steps;
      if (call->method == "coalesce_program_bindings") {
        CHECK(call->commands_in.size() == 2);
        CHECK(call->commands_out.size() == 2);
      }
      if (call->method == "encode_static_weight_transform") CHECK_FALSE(call->supported);
      if (call->method == "encode_reusable_execution") {
        CHECK_FALSE(call->command.has_value());
        CHECK(call->text == "program.test");
        CHECK(call->node_index == 2);
      }
      if (call->method == "reusable_execution_catalog") {
        REQUIRE(call->catalog.has_value());
        CHECK(call->catalog->empty());
      }
    }
  }
  CHECK(optional_steps == methods.size());

  auto primary = rt::default_registry().open("reference", {.device_id = "device.vtrace.0"});
  auto auxiliary = rt::default_registry().open("reference", {.device_id = "device.vtrace.1"});
  REQUIRE(primary.has_value());
  REQUIRE(auxiliary.has_value());
  const auto report = rp::execute_plan(*plan, **primary, **auxiliary, {});
  for (const auto& m : report.mismatches) {
    UNSCOPED_INFO(fmt::format("event {} {}: expected {}, got {}", m.event, m.call, m.expected,
                              m.actual));
  }
  CHECK(report.matched());
  CHECK(report.checked.readbacks == 1);
  CHECK(report.checked.calls >= methods.size());
  CHECK(report.events == report.executed);
}

TEST_CASE("a replay whose runtime answers an optional method differently reports the mismatch",
          "[replayer]") {
  // A runtime that coalesces into one command where the recording got two: the later submit
  // cannot find the second command and the coalesce itself is reported.
  class OneCommand final : public rt::ForwardingRuntime {
   public:
    using ForwardingRuntime::ForwardingRuntime;
    rt::Result<std::vector<rt::CommandPtr>> coalesce_program_bindings(
        std::vector<rt::CommandPtr> commands) override {
      commands.resize(1);
      return commands;
    }
  };

  ScratchDir dir("replayer-optional-mismatch");
  const auto path = dir / "optional.vtrace";
  record_optional_session(path);
  auto reader = schema::TraceReader::open(path);
  REQUIRE(reader.has_value());
  auto plan = rp::ReplayPlan::build(**reader);
  REQUIRE(plan.has_value());
  auto inner = rt::default_registry().open("reference", {.device_id = "device.vtrace.0"});
  auto auxiliary = rt::default_registry().open("reference", {.device_id = "device.vtrace.1"});
  REQUIRE(inner.has_value());
  REQUIRE(auxiliary.has_value());
  OneCommand live(std::move(*inner));
  const auto report = rp::execute_plan(*plan, live, **auxiliary, {});
  REQUIRE_FALSE(report.matched());
  const auto& first = report.mismatches.front();
  CHECK(first.call == "coalesce_program_bindings(2 commands)");
  CHECK(first.expected == "2 commands");
  CHECK(first.actual == "1 commands");
}

TEST_CASE("an event of an unknown required kind fails the plan naming its ordinal",
          "[replayer]") {
  ScratchDir dir("replayer-unknown-required");
  const auto path = dir / "unknown.vtrace";
  const auto unknown = write_tiny_with_unknown_event(path, true);
  auto reader = schema::TraceReader::open(path);
  REQUIRE(reader.has_value());
  auto plan = rp::ReplayPlan::build(**reader);
  REQUIRE_FALSE(plan.has_value());
  CHECK(plan.error().kind == schema::TraceErrorKind::kUnknownRequiredEvent);
  CHECK(plan.error().message.find(fmt::format("event {}", unknown)) != std::string::npos);
  CHECK(plan.error().message.find(fmt::format(
            "unknown required event kind {}", static_cast<unsigned>(kUnknownBody))) !=
        std::string::npos);

  auto replayed = rp::replay_trace(path, {}, rt::default_registry());
  REQUIRE_FALSE(replayed.has_value());
  CHECK(replayed.error().kind == rp::ReplayFailure::Kind::kTrace);
}

TEST_CASE("an event of an unknown optional kind is skipped and the rest of the trace matches",
          "[replayer]") {
  ScratchDir dir("replayer-unknown-optional");
  const auto path = dir / "unknown.vtrace";
  const auto unknown = write_tiny_with_unknown_event(path, false);
  auto reader = schema::TraceReader::open(path);
  REQUIRE(reader.has_value());
  auto plan = rp::ReplayPlan::build(**reader);
  INFO((plan ? std::string() : plan.error().message));
  REQUIRE(plan.has_value());
  REQUIRE(plan->steps().size() == unknown + 2);
  CHECK(std::holds_alternative<rp::step::Skipped>(plan->steps()[unknown].body));
  CHECK(std::holds_alternative<rp::step::OptionalCall>(plan->steps()[unknown + 1].body));

  auto report = rp::replay_trace(path, {}, rt::default_registry());
  INFO((report ? std::string() : report.error().message));
  REQUIRE(report.has_value());
  CHECK(report->matched());
  CHECK(report->executed == unknown + 2);
  CHECK(report->checked.readbacks > 0);
}

TEST_CASE("an optional call of an unknown method is refused when required and skipped when not",
          "[replayer]") {
  ScratchDir dir("replayer-unknown-method");
  for (const bool required : {true, false}) {
    INFO(required);
    const auto path = dir / fmt::format("method-{}.vtrace", required);
    {
      auto sink = schema::open_file_sink(path);
      REQUIRE(sink.has_value());
      auto writer = schema::TraceWriter::create(std::move(*sink), {});
      REQUIRE(writer.has_value());
      flatbuffers::FlatBufferBuilder b;
      const auto method = b.CreateString("a_method_from_the_future");
      fb::OptionalCallBuilder call(b);
      call.add_method(method);
      const auto body = call.Finish().Union();
      REQUIRE((*writer)
                  ->append_event(finish_event(b, 0, fb::EventBody::OptionalCall, body, required))
                  .has_value());
      REQUIRE((*writer)->close({}).has_value());
    }
    auto reader = schema::TraceReader::open(path);
    REQUIRE(reader.has_value());
    auto plan = rp::ReplayPlan::build(**reader);
    if (required) {
      REQUIRE_FALSE(plan.has_value());
      CHECK(plan.error().kind == schema::TraceErrorKind::kUnknownRequiredEvent);
      CHECK(plan.error().message.find("event 0 (OptionalCall)") != std::string::npos);
      CHECK(plan.error().message.find("a_method_from_the_future") != std::string::npos);
    } else {
      REQUIRE(plan.has_value());
      REQUIRE(plan->steps().size() == 1);
      CHECK(std::holds_alternative<rp::step::Skipped>(plan->steps()[0].body));
    }
  }
}
