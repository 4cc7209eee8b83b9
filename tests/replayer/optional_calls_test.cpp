// Replay of the optional methods (spec 5.2) the recorder records, and the compatibility rule for
// event kinds this build does not know.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <catch2/catch.hpp>

#include "support/importing_runtime.h"
#include "trace_fixtures.h"
#include "vtrace/recorder/recording_runtime.h"
#include "vtrace/replayer/replay_trace.h"
#include "vtrace/replayer/step_text.h"
#include "vtrace/runtime/forwarding_runtime.h"
#include "vtrace/runtime/registry.h"
#include "vtrace/schema/event_links.h"
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

// The event kind names of a trace, in order.
std::vector<std::string> event_kinds(const std::filesystem::path& trace) {
  auto reader = schema::TraceReader::open(trace);
  REQUIRE(reader.has_value());
  std::vector<std::string> kinds;
  REQUIRE((*reader)
              ->visit_events(0, (*reader)->event_count(),
                             [&](std::uint64_t, std::span<const std::uint8_t> bytes) {
                               kinds.emplace_back(
                                   schema::event_kind_name(*schema::event_of(bytes)));
                               return true;
                             })
              .has_value());
  return kinds;
}

rp::ReplayPlan plan_of(const std::filesystem::path& trace) {
  auto reader = schema::TraceReader::open(trace);
  REQUIRE(reader.has_value());
  auto plan = rp::ReplayPlan::build(**reader);
  INFO((plan ? std::string() : plan.error().message));
  REQUIRE(plan.has_value());
  return std::move(*plan);
}

rp::ReplayReport replay_on_reference(const rp::ReplayPlan& plan,
                                     rt::DeviceRuntime* live = nullptr) {
  auto primary = rt::default_registry().open("reference", {.device_id = "device.vtrace.0"});
  auto auxiliary = rt::default_registry().open("reference", {.device_id = "device.vtrace.1"});
  REQUIRE(primary.has_value());
  REQUIRE(auxiliary.has_value());
  auto report = rp::execute_plan(plan, live ? *live : **primary, **auxiliary, {});
  for (const auto& m : report.mismatches) {
    UNSCOPED_INFO(fmt::format("event {} {}: expected {}, got {}", m.event, m.call, m.expected,
                              m.actual));
  }
  return report;
}

// Records, on an importing reference runtime, a session that imports two components, seals,
// tries a third component and a second seal (both refused), and reads the buffer back.
void record_import_session(const std::filesystem::path& path) {
  auto inner = rt::default_registry().open("reference", {.device_id = "device.vtrace.0"});
  REQUIRE(inner.has_value());
  auto recording = vtrace::recorder::RecordingRuntime::create(
      std::make_unique<vtrace::test::ImportingRuntime>(std::move(*inner)), "reference", path, {});
  REQUIRE(recording.has_value());
  rt::DeviceRuntime& r = **recording;
  {
    auto stream = r.create_stream();
    REQUIRE(stream.has_value());
    auto weights = make_buffer(r, "weight.test.imported", 32);
    auto session = r.begin_static_weight_import();
    REQUIRE(session.has_value());
    REQUIRE(session->has_value());
    auto& s = **session;
    const std::vector<std::uint8_t> first(16, 0x11), second(16, 0x22);
    REQUIRE(s->import_component(first, *weights, 0).has_value());
    REQUIRE(s->import_component(second, *weights, 16).has_value());
    REQUIRE(s->seal().has_value());
    CHECK_FALSE(s->import_component(first, *weights, 0).has_value());
    CHECK_FALSE(s->seal().has_value());
    auto region = rt::CopyRegion::create(0, 0, 32);
    auto layout = rt::HostTransferLayout::create(rt::ElementType::kU8, 32);
    auto read = r.readback(**stream, *weights, *region, *layout);
    REQUIRE(read.has_value());
    CHECK((*read)[0] == 0x11);
    CHECK((*read)[31] == 0x22);
  }
  REQUIRE((*recording)->close().has_value());
}

std::string golden(const char* name) {
  return (std::filesystem::path(VTRACE_SOURCE_DIR) / "traces" / name).string();
}

}  // namespace

TEST_CASE("each optional method is recorded as its own event kind and replays to a match",
          "[replayer]") {
  ScratchDir dir("replayer-optional");
  const auto path = dir / "optional.vtrace";
  record_optional_session(path);
  const auto kinds = event_kinds(path);
  const std::vector<std::string> typed = {
      "GuardedSubmissionQueried",     "BeginStaticWeightImport", "EncodeStaticWeightTransform",
      "ConfigureReusableExecutables", "SealReusableExecutables", "ReusablePreparationQueried",
      "ReusableCatalogQueried",       "EncodeReusableExecution", "TrimReusableExecutables",
      "CoalesceProgramBindings"};
  for (const auto& kind : typed) {
    INFO(kind);
    CHECK(std::count(kinds.begin(), kinds.end(), kind) == 1);
  }
  CHECK(std::find(kinds.begin(), kinds.end(), "OptionalCall") == kinds.end());

  const auto plan = plan_of(path);
  std::uint64_t typed_steps = 0;
  for (const auto& s : plan.steps()) {
    CHECK_FALSE(std::holds_alternative<rp::step::Skipped>(s.body));
    if (std::find(typed.begin(), typed.end(), s.kind) != typed.end()) ++typed_steps;
    if (const auto* c = std::get_if<rp::step::CoalesceProgramBindings>(&s.body)) {
      CHECK(c->commands_in.size() == 2);
      CHECK(c->commands_out.size() == 2);
    }
    if (const auto* t = std::get_if<rp::step::EncodeStaticWeightTransform>(&s.body)) {
      CHECK_FALSE(t->supported);
      CHECK(t->transform_id == "transpose");
    }
    if (const auto* e = std::get_if<rp::step::EncodeReusableExecution>(&s.body)) {
      CHECK_FALSE(e->command.has_value());
      CHECK(e->program_id == "program.test");
      CHECK(e->node_index == 2);
    }
    if (const auto* c = std::get_if<rp::step::ReusableCatalogQueried>(&s.body)) {
      REQUIRE(c->catalog.has_value());
      CHECK(c->catalog->empty());
    }
    if (const auto* c = std::get_if<rp::step::ConfigureReusableExecutables>(&s.body)) {
      CHECK(c->maximum_executables == 4);
      CHECK(c->preparation.has_value());
    }
    if (const auto* t = std::get_if<rp::step::TrimReusableExecutables>(&s.body)) {
      CHECK(t->trim.has_value());
    }
  }
  CHECK(typed_steps == typed.size());

  const auto report = replay_on_reference(plan);
  CHECK(report.matched());
  CHECK(report.checked.readbacks == 1);
  CHECK(report.checked.calls >= typed.size());
  CHECK(report.events == report.executed);
}

TEST_CASE("a static weight import session is recorded, replayed, and its refusals reproduced",
          "[replayer]") {
  ScratchDir dir("replayer-import");
  const auto path = dir / "import.vtrace";
  record_import_session(path);
  const auto kinds = event_kinds(path);
  CHECK(std::count(kinds.begin(), kinds.end(), "BeginStaticWeightImport") == 1);
  CHECK(std::count(kinds.begin(), kinds.end(), "ImportComponent") == 3);
  CHECK(std::count(kinds.begin(), kinds.end(), "SealStaticWeightImport") == 2);

  const auto plan = plan_of(path);
  std::vector<const rp::step::ImportComponent*> components;
  for (const auto& s : plan.steps()) {
    if (const auto* c = std::get_if<rp::step::ImportComponent>(&s.body)) components.push_back(c);
  }
  REQUIRE(components.size() == 3);
  CHECK(components[1]->offset_bytes == 16);
  CHECK(components[1]->payload_bytes == 16);
  CHECK_FALSE(components[1]->outcome.has_value());
  CHECK(components[2]->outcome.has_value());  // after the seal

  // Replayed on an importing runtime: every answer and the readback match.
  auto inner = rt::default_registry().open("reference", {.device_id = "device.vtrace.0"});
  REQUIRE(inner.has_value());
  vtrace::test::ImportingRuntime importing(std::move(*inner));
  const auto report = replay_on_reference(plan, &importing);
  CHECK(report.matched());
  CHECK(report.checked.readbacks == 1);
  CHECK(report.events == report.executed);

  // Replayed on the plain reference runtime, which has no import session: the difference is
  // reported at the BeginStaticWeightImport event, first.
  const auto plain = replay_on_reference(plan);
  REQUIRE_FALSE(plain.matched());
  CHECK(plain.mismatches.front().call == "begin_static_weight_import");
}

TEST_CASE("1.1 OptionalCall events plan as the same steps as their 1.2 event kinds", "[replayer]") {
  // Both goldens are the contract workload, seed 1, recorded from the same source except the
  // format: the 1.1 file writes every optional method as an OptionalCall, the 1.2 file as its own
  // kind. Their plans must describe every step alike and hold the same step types.
  const auto old_plan = plan_of(golden("contract-optional-v1.1.vtrace"));
  const auto new_plan = plan_of(golden("contract-v1.2.vtrace"));
  REQUIRE(old_plan.steps().size() == new_plan.steps().size());
  std::uint64_t optional_calls = 0;
  for (std::size_t i = 0; i < old_plan.steps().size(); ++i) {
    const auto& a = old_plan.steps()[i];
    const auto& b = new_plan.steps()[i];
    INFO(fmt::format("event {}: {} / {}", i, a.kind, b.kind));
    CHECK(a.body.index() == b.body.index());
    CHECK(rp::describe_step(a) == rp::describe_step(b));
    if (a.kind == "OptionalCall") {
      ++optional_calls;
      CHECK(b.kind != "OptionalCall");
    } else {
      CHECK(a.kind == b.kind);
    }
  }
  CHECK(optional_calls == 40);
}

TEST_CASE("a 1.1 OptionalCall of an import session method decodes into its typed step",
          "[replayer]") {
  auto decode = [](const char* method, bool with_session, bool with_payload) {
    flatbuffers::FlatBufferBuilder b;
    const auto name = b.CreateString(method);
    const fb::ObjectRef buffer(3, fb::RefSpace::Own);
    const fb::BlobRef blob(7, 9);
    fb::OptionalCallBuilder call(b);
    call.add_method(name);
    if (with_session) call.add_session(5);
    call.add_buffer(&buffer);
    call.add_offset_bytes(48);
    if (with_payload) call.add_payload(&blob);
    call.add_payload_bytes(16);
    const auto body = call.Finish().Union();
    const auto bytes = finish_event(b, 0, fb::EventBody::OptionalCall, body, true);
    return rp::decode_step(0, *schema::event_of(bytes));
  };
  auto component = decode("static_weight_import.import_component", true, true);
  REQUIRE(component.has_value());
  const auto* c = std::get_if<rp::step::ImportComponent>(&component->body);
  REQUIRE(c != nullptr);
  CHECK(c->session == 5);
  CHECK(c->destination == rp::ObjectRef{3, rp::ObjectRef::Space::kOwn});
  CHECK(c->offset_bytes == 48);
  CHECK(c->payload_bytes == 16);
  CHECK(rp::describe_step(*component) ==
        "import_component(session 5, 16 bytes, buffer#3, offset 48)");

  auto seal = decode("static_weight_import.seal", true, false);
  REQUIRE(seal.has_value());
  REQUIRE(std::holds_alternative<rp::step::SealStaticWeightImport>(seal->body));
  CHECK(std::get<rp::step::SealStaticWeightImport>(seal->body).session == 5);

  auto no_session = decode("static_weight_import.seal", false, false);
  REQUIRE_FALSE(no_session.has_value());
  CHECK(no_session.error().message.find("lacks `session`") != std::string::npos);
  auto no_payload = decode("static_weight_import.import_component", true, false);
  REQUIRE_FALSE(no_payload.has_value());
  CHECK(no_payload.error().message.find("lacks `payload`") != std::string::npos);
}

TEST_CASE("a 1.1 OptionalCall begin_static_weight_import creates the session its calls then use",
          "[replayer]") {
  const auto links = [](const char* method) {
    flatbuffers::FlatBufferBuilder b;
    const auto name = b.CreateString(method);
    fb::OptionalCallBuilder call(b);
    call.add_method(name);
    call.add_supported(true);
    call.add_session(5);
    const auto body = call.Finish().Union();
    const auto bytes = finish_event(b, 0, fb::EventBody::OptionalCall, body, true);
    return schema::event_links(*schema::event_of(bytes));
  };
  const schema::ObjectLink session{schema::ObjectKind::kImportSession,
                                   {5, schema::ObjectRef::Space::kOwn}};
  const auto begin = links("begin_static_weight_import");
  CHECK(begin.creates == std::vector{session});
  CHECK(begin.uses.empty());
  const auto seal = links("static_weight_import.seal");
  CHECK(seal.uses == std::vector{session});
  CHECK(seal.creates.empty());
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
  CHECK(
      std::holds_alternative<rp::step::GuardedSubmissionQueried>(plan->steps()[unknown + 1].body));

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

TEST_CASE("guarded submits replay with their guard: what it admitted runs, what it rejected does "
          "not",
          "[replayer]") {
  // The reference runtime, honouring a guard: a batch of more commands than it allows is
  // rejected; a batch within it runs.
  class Guarding final : public rt::ForwardingRuntime {
   public:
    using ForwardingRuntime::ForwardingRuntime;
    bool supports_guarded_submission() const override { return true; }
    std::expected<rt::FencePtr, rt::GuardedSubmissionError> submit_guarded(
        rt::Stream& stream, rt::CommandBatch batch, const rt::SubmissionGuard& guard) override {
      if (batch.size() > guard.maximum_commands) {
        return std::unexpected(rt::GuardedSubmissionError{
            rt::GuardedNotSubmittedReason::kAttributionUnavailable, std::nullopt});
      }
      auto fence = submit(stream, std::move(batch));
      if (!fence) return std::unexpected(rt::GuardedSubmissionError{std::nullopt, fence.error()});
      return std::move(*fence);
    }
  };
  const auto open_guarding = [](const char* id) {
    auto inner = rt::default_registry().open("reference", {.device_id = id});
    REQUIRE(inner.has_value());
    return std::make_unique<Guarding>(std::move(*inner));
  };
  ScratchDir dir("replayer-guarded");
  const auto path = dir / "guarded.vtrace";
  {
    auto recording = vtrace::recorder::RecordingRuntime::create(open_guarding("device.vtrace.0"),
                                                                "guarding", path);
    REQUIRE(recording.has_value());
    rt::DeviceRuntime& r = **recording;
    auto stream = r.create_stream();
    REQUIRE(stream.has_value());
    auto buffer = make_buffer(r, "resource.test.guarded", 16);
    const auto zeros = [&](int count) {
      rt::CommandBatch batch;
      for (int i = 0; i < count; ++i) {
        auto zero = r.encode_zero(*buffer, static_cast<std::uint64_t>(4 * i), 4);
        REQUIRE(zero.has_value());
        batch.push(std::move(*zero));
      }
      return batch;
    };
    auto admitted = r.submit_guarded(**stream, zeros(1), {1});
    REQUIRE(admitted.has_value());
    REQUIRE(r.wait_fence(**admitted).has_value());
    auto rejected = r.submit_guarded(**stream, zeros(2), {1});
    REQUIRE_FALSE(rejected.has_value());
    REQUIRE(rejected.error().rejected.has_value());
    admitted->reset();
    REQUIRE((*recording)->close().has_value());
  }
  auto reader = schema::TraceReader::open(path);
  REQUIRE(reader.has_value());
  auto plan = rp::ReplayPlan::build(**reader);
  REQUIRE(plan.has_value());
  auto live = open_guarding("device.vtrace.0");
  auto auxiliary = rt::default_registry().open("reference", {.device_id = "device.vtrace.1"});
  REQUIRE(auxiliary.has_value());
  const auto report = rp::execute_plan(*plan, *live, **auxiliary, {});
  INFO((report.mismatches.empty() ? std::string() : report.mismatches.front().expected + " / " +
                                                        report.mismatches.front().actual));
  CHECK(report.matched());
  const auto counters = live->counter_snapshot();
  REQUIRE(counters.has_value());
  CHECK(counters->submissions == 1);  // the rejected batch ran nothing
}

namespace {

// Everything a batch says besides its commands, and each entry's phase, node and logical work.
std::string describe_batch(const rt::CommandBatch& batch) {
  const auto list = [](const std::vector<std::uint32_t>& v) {
    return fmt::format("[{}]", fmt::join(v, ","));
  };
  std::string out = fmt::format(
      "timing {} path {} eager {} attribution {}", rt::timing_mode_name(batch.timing_mode()),
      rt::compute_path_requirement_name(batch.compute_path_requirement()),
      list(batch.declared_eager_compute_node_indices()),
      rt::attribution_requirement_name(batch.attribution_requirement()));
  if (const auto& c = batch.reusable_execution_capture()) {
    out += fmt::format(" capture {} nodes {} eager {} binding {}", c->program_id().str(),
                       c->node_count(), list(c->eager_boundary_node_indices()),
                       list(c->per_wave_binding_node_indices()));
  }
  for (const auto& e : batch.entries()) {
    out += fmt::format(" | {} node {}", rt::command_phase_name(e.phase),
                       e.node_index ? std::to_string(*e.node_index) : "-");
    if (const auto& w = e.logical_work) {
      out += fmt::format(" work {} {}+{} tokens {}", rt::batching_form_name(w->batching_form()),
                         w->participant_start(), w->participant_count(), w->token_count());
    }
  }
  return out;
}

// The reference runtime, noting each batch it is given (accepted or refused).
class BatchNoting final : public rt::ForwardingRuntime {
 public:
  using ForwardingRuntime::ForwardingRuntime;
  std::expected<rt::FencePtr, rt::DefinitelyNotSubmitted> submit(
      rt::Stream& stream, rt::CommandBatch batch) override {
    batches.push_back(describe_batch(batch));
    return ForwardingRuntime::submit(stream, std::move(batch));
  }
  std::vector<std::string> batches;
};

}  // namespace

TEST_CASE("a replayed batch says what the recorded one said: timing, path, declared eager "
          "nodes, attribution, capture, entries",
          "[replayer]") {
  const auto open_noting = [](const char* id) {
    auto inner = rt::default_registry().open("reference", {.device_id = id});
    REQUIRE(inner.has_value());
    return std::make_unique<BatchNoting>(std::move(*inner));
  };
  ScratchDir dir("replayer-batch-metadata");
  const auto path = dir / "batches.vtrace";
  std::vector<std::string> recorded;
  {
    auto noting = open_noting("device.vtrace.0");
    BatchNoting& seen = *noting;
    auto recording =
        vtrace::recorder::RecordingRuntime::create(std::move(noting), "noting", path);
    REQUIRE(recording.has_value());
    rt::DeviceRuntime& r = **recording;
    auto stream = r.create_stream();
    REQUIRE(stream.has_value());
    auto buffer = make_buffer(r, "resource.test.batches", 16);
    const auto zero = [&](std::uint64_t at) {
      auto c = r.encode_zero(*buffer, at, 4);
      REQUIRE(c.has_value());
      return std::move(*c);
    };
    const auto submit = [&](rt::CommandBatch batch) {
      auto fence = r.submit(**stream, std::move(batch));
      if (fence) REQUIRE(r.wait_fence(**fence).has_value());
    };
    {  // declared eager boundaries (the reference refuses replay-required paths)
      rt::CommandBatch batch(rt::TimingMode::kOff,
                             rt::ComputePathRequirement::kReplayedWithDeclaredEagerBoundaries);
      REQUIRE(batch.set_declared_eager_compute_node_indices({0, 2}).has_value());
      auto work = rt::LogicalWork::create(rt::BatchingForm::kPacked, 3, 7);
      REQUIRE(work.has_value());
      batch.push_node_initialization(0, *work, zero(0));
      batch.push_operation(2, {{}, {}, zero(4), {}});
      submit(std::move(batch));
    }
    {  // timing and attribution, on a batch the reference runs
      rt::CommandBatch batch(rt::TimingMode::kCompletion);
      batch.require_logical_execution_path_attribution();
      batch.push_operation(1, {{}, {}, zero(8), {}});
      submit(std::move(batch));
    }
    {  // a reusable execution capture (the reference refuses to consume it)
      rt::CommandBatch batch;
      auto program = rt::ProgramId::create("program.test.batches");
      REQUIRE(program.has_value());
      auto capture = rt::ReusableExecutionCapture::create(*program, 4, {1}, {0, 3});
      REQUIRE(capture.has_value());
      REQUIRE(batch.set_reusable_execution_capture(*capture).has_value());
      batch.push(zero(12));
      submit(std::move(batch));
    }
    recorded = seen.batches;
    buffer.reset();
    REQUIRE((*recording)->close().has_value());
  }
  REQUIRE(recorded.size() == 3);
  CHECK(recorded[0].find("eager [0,2]") != std::string::npos);
  CHECK(recorded[1].find("attribution logical_execution_path") != std::string::npos);
  CHECK(recorded[2].find("capture program.test.batches nodes 4 eager [1] binding [0,3]") !=
        std::string::npos);

  auto reader = schema::TraceReader::open(path);
  REQUIRE(reader.has_value());
  auto plan = rp::ReplayPlan::build(**reader);
  REQUIRE(plan.has_value());
  auto live = open_noting("device.vtrace.0");
  auto auxiliary = rt::default_registry().open("reference", {.device_id = "device.vtrace.1"});
  REQUIRE(auxiliary.has_value());
  const auto report = rp::execute_plan(*plan, *live, **auxiliary, {});
  CHECK(report.matched());
  CHECK(live->batches == recorded);
}
