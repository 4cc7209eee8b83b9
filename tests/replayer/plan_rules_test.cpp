// The replay plan's one rule for results and errors: every event kind whose call returns a result
// on success and an error on failure (admit, allocate, create_stream, the four encoders, readback)
// must hold exactly one of the two; a trace that breaks it is refused naming the event and field.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <functional>

#include "trace_fixtures.h"
#include "vtrace/replayer/replay_plan.h"
#include "vtrace/runtime/immediate.h"
#include "vtrace/runtime/registry.h"
#include "vtrace/runtime/error.h"
#include "vtrace/schema/events.h"
#include "vtrace/schema/trace_reader.h"

namespace fb = vtrace::fb;
namespace rp = vtrace::replayer;
namespace rt = vtrace::runtime;
namespace vs = vtrace::schema;

namespace {

enum class Shape { kNeither, kBoth };

// One encode event of `body` kind on tiny's buffer 0, with neither or both of command and error.
flatbuffers::Offset<void> encode_body(flatbuffers::FlatBufferBuilder& b, fb::EventBody body,
                                      Shape shape) {
  const fb::ObjectRef buffer(0, fb::RefSpace::Own);
  flatbuffers::Offset<fb::Error> error;
  if (shape == Shape::kBoth) {
    error = vs::build_error(b, rt::RuntimeError(rt::ErrorKind::kRegionOutOfBounds, "made up"));
  }
  const auto finish = [&](auto& builder) {
    if (shape == Shape::kBoth) {
      builder.add_command(7);
      builder.add_error(error);
    }
    return builder.Finish().Union();
  };
  switch (body) {
    case fb::EventBody::EncodeCopy: {
      const fb::CopyRegion region(0, 0, 2);
      fb::EncodeCopyBuilder e(b);
      e.add_source(&buffer);
      e.add_destination(&buffer);
      e.add_region(&region);
      return finish(e);
    }
    case fb::EventBody::EncodeUpload: {
      const fb::BlobRef payload(1, 2);
      const fb::HostTransferLayout layout(fb::ElementType::F16, 1);
      fb::EncodeUploadBuilder e(b);
      e.add_payload(&payload);
      e.add_payload_bytes(2);
      e.add_layout(&layout);
      e.add_destination(&buffer);
      return finish(e);
    }
    case fb::EventBody::EncodeZero: {
      fb::EncodeZeroBuilder e(b);
      e.add_destination(&buffer);
      e.add_length_bytes(2);
      return finish(e);
    }
    default: {
      fb::EncodeDenseLinearBuilder e(b);
      e.add_participant_count(1);
      e.add_token_count(1);
      return finish(e);
    }
  }
}

// The plan's error for tiny.vtrace followed by one event `append` builds at ordinal `first`
// (REQUIREs that the plan is refused); `ordinal` receives that event's ordinal.
vs::TraceError plan_error_with(
    const std::filesystem::path& path, std::uint64_t& ordinal,
    const std::function<std::vector<std::uint8_t>(std::uint64_t)>& append) {
  vtrace::test::write_tiny_plus(path, [&](vs::TraceWriter& writer, std::uint64_t first) {
    ordinal = first;
    REQUIRE(writer.append_event(append(first)).has_value());
  });
  auto reader = vs::TraceReader::open(path);
  REQUIRE(reader.has_value());
  auto plan = rp::ReplayPlan::build(**reader);
  REQUIRE_FALSE(plan.has_value());
  return plan.error();
}

}  // namespace

TEST_CASE("an encode event with neither or both of command and error is refused by the plan",
          "[replayer][plan]") {
  vtrace::test::ScratchDir dir("plan-rules");
  for (const auto body : {fb::EventBody::EncodeCopy, fb::EventBody::EncodeUpload,
                          fb::EventBody::EncodeZero, fb::EventBody::EncodeDenseLinear}) {
    for (const auto shape : {Shape::kNeither, Shape::kBoth}) {
      const std::string kind = fb::EnumNameEventBody(body);
      INFO(kind << (shape == Shape::kNeither ? " with neither" : " with both"));
      const auto path = dir / fmt::format("{}-{}.vtrace", kind, static_cast<int>(shape));
      std::uint64_t ordinal = 0;
      const auto error = plan_error_with(path, ordinal, [&](std::uint64_t first) {
        flatbuffers::FlatBufferBuilder b;
        const auto made = encode_body(b, body, shape);
        return vtrace::test::finish_event(b, first, body, made, true);
      });
      CHECK(error.kind == vs::TraceErrorKind::kCorrupt);
      CHECK(
          error.message ==
          fmt::format("event {} ({}): needs exactly one of `command` and `error`", ordinal, kind));
    }
  }
}

TEST_CASE("the plan refuses an event naming an object after the event that released it",
          "[replayer][plan]") {
  // tiny.vtrace ends with every handle released; one more event naming its buffer#0 comes after
  // that buffer's BufferReleased.
  vtrace::test::ScratchDir dir("plan-released");
  const auto path = dir / "released.vtrace";
  std::uint64_t ordinal = 0;
  const auto error = plan_error_with(path, ordinal, [](std::uint64_t first) {
    flatbuffers::FlatBufferBuilder b;
    const fb::ObjectRef buffer(0, fb::RefSpace::Own);
    const auto body = fb::CreateEncodeZero(b, &buffer, 0, 2, 7).Union();
    return vtrace::test::finish_event(b, first, fb::EventBody::EncodeZero, body, true);
  });
  CHECK(error.kind == vs::TraceErrorKind::kCorrupt);
  CHECK(error.message ==
        fmt::format("event {} (EncodeZero): names buffer#0 after the event that released it",
                    ordinal));
}

TEST_CASE("the plan holds each distinct payload once and counts its bytes once", "[replayer]") {
  vtrace::test::ScratchDir dir("replayer-plan-payloads");
  const auto path = dir / "payloads.vtrace";
  // A: 64 bytes uploaded twice; B: 32 other bytes uploaded once and read back (the readback's
  // payload is B again). Four events name a payload; two payloads are distinct.
  const std::vector<std::uint8_t> a(64, 0x3C);
  std::vector<std::uint8_t> b(32);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::uint8_t>(i);
  vtrace::test::record_calls(rt::default_registry(), "reference", path, [&](rt::DeviceRuntime& r) {
    auto stream = r.create_stream();
    REQUIRE(stream.has_value());
    auto first = vtrace::test::f16_buffer(r, "resource.a", a.size());
    auto second = vtrace::test::f16_buffer(r, "resource.b", b.size());
    REQUIRE(rt::immediate::upload(r, **stream, *first, a).has_value());
    REQUIRE(rt::immediate::upload(r, **stream, *first, a).has_value());
    REQUIRE(rt::immediate::upload(r, **stream, *second, b).has_value());
    const auto back = rt::immediate::readback(r, **stream, *second);
    REQUIRE(back.has_value());
    REQUIRE(*back == b);
  });
  auto reader = vs::TraceReader::open(path);
  REQUIRE(reader.has_value());
  auto plan = rp::ReplayPlan::build(**reader);
  REQUIRE(plan.has_value());
  CHECK(plan->payload_bytes() == a.size() + b.size());
  const auto* held = plan->payload(vs::blob_id_of(b.data(), b.size()));
  REQUIRE(held != nullptr);
  CHECK(*held == b);
}

namespace {

// The step decoded from one event `body` of `type` built by `build` (seq 5, required).
vs::TraceResult<rp::ReplayStep> decoded(
    fb::EventBody type,
    const std::function<flatbuffers::Offset<void>(flatbuffers::FlatBufferBuilder&)>& build) {
  flatbuffers::FlatBufferBuilder b;
  const auto body = build(b);
  const auto bytes = vtrace::test::finish_event(b, 5, type, body, true);
  return rp::decode_step(5, *vs::event_of(bytes));
}

flatbuffers::Offset<fb::Error> some_error(flatbuffers::FlatBufferBuilder& b) {
  return vs::build_error(b, rt::RuntimeError(rt::ErrorKind::kRegionOutOfBounds, "made up"));
}

}  // namespace

TEST_CASE("each event kind's answer has the one shape its call can give, or the event is refused",
          "[replayer][plan]") {
  const fb::ObjectRef ref(0, fb::RefSpace::Own);
  const auto refused = [](const vs::TraceResult<rp::ReplayStep>& step, const std::string& says) {
    REQUIRE_FALSE(step.has_value());
    CHECK(step.error().kind == vs::TraceErrorKind::kCorrupt);
    CHECK_THAT(step.error().message, Catch::StartsWith("event 5 (") && Catch::EndsWith(says));
  };
  // A submit ends with exactly one of a fence, a refusal (not submitted) and a guard's rejection.
  const std::string one_end = "needs exactly one of `fence`, `not_submitted`, `rejected`";
  refused(decoded(fb::EventBody::SubmitEnd,
                  [](auto& b) {
                    fb::SubmitEndBuilder e(b);
                    e.add_begin_seq(1);
                    return e.Finish().Union();
                  }),
          one_end);
  refused(decoded(fb::EventBody::SubmitEnd,
                  [](auto& b) {
                    fb::SubmitEndBuilder e(b);
                    e.add_begin_seq(1);
                    e.add_fence(0);
                    e.add_rejected(fb::GuardedRejection::AttributionUnavailable);
                    return e.Finish().Union();
                  }),
          one_end);
  // An optional method that said "not supported" did nothing else.
  refused(decoded(fb::EventBody::BeginStaticWeightImport,
                  [](auto& b) {
                    const auto error = some_error(b);
                    fb::BeginStaticWeightImportBuilder e(b);
                    e.add_supported(false);
                    e.add_error(error);
                    return e.Finish().Union();
                  }),
          "is not supported and names an error");
  // A call that failed returned nothing.
  refused(decoded(fb::EventBody::EncodeReusableExecution,
                  [](auto& b) {
                    const auto error = some_error(b);
                    fb::EncodeReusableExecutionBuilder e(b);
                    e.add_command(3);
                    e.add_error(error);
                    return e.Finish().Union();
                  }),
          "names a returned command and an error");
  refused(decoded(fb::EventBody::OptionalCall,
                  [](auto& b) {
                    const auto error = some_error(b);
                    const auto method = b.CreateString("encode_reusable_execution");
                    fb::OptionalCallBuilder e(b);
                    e.add_method(method);
                    e.add_command(3);
                    e.add_error(error);
                    return e.Finish().Union();
                  }),
          "names a returned command and an error");
  // A trim that succeeded says both counts.
  refused(decoded(fb::EventBody::TrimReusableExecutables,
                  [&](auto& b) {
                    fb::TrimReusableExecutablesBuilder e(b);
                    e.add_stream(&ref);
                    e.add_released_executables(2);
                    return e.Finish().Union();
                  }),
          "needs exactly one of `released_executables` and `error`");
  // An import names where it wrote.
  refused(decoded(fb::EventBody::ImportComponent,
                  [](auto& b) {
                    const fb::BlobRef payload(1, 2);
                    fb::ImportComponentBuilder e(b);
                    e.add_session(1);
                    e.add_payload(&payload);
                    e.add_payload_bytes(2);
                    return e.Finish().Union();
                  }),
          "lacks `destination`");
  // A readback returned its bytes or failed.
  refused(decoded(fb::EventBody::Readback,
                  [&](auto& b) {
                    const fb::CopyRegion region(0, 0, 2);
                    const fb::HostTransferLayout layout(fb::ElementType::F16, 1);
                    fb::ReadbackBuilder e(b);
                    e.add_stream(&ref);
                    e.add_source(&ref);
                    e.add_region(&region);
                    e.add_layout(&layout);
                    return e.Finish().Union();
                  }),
          "needs exactly one of `payload` and `error`");
}

TEST_CASE("a submit's guard and declared eager nodes, and a 1.1 trim's counts, are decoded",
          "[replayer][plan]") {
  const fb::ObjectRef stream(0, fb::RefSpace::Own);
  const auto begin = decoded(fb::EventBody::SubmitBegin, [&](auto& b) {
    const std::vector<std::uint32_t> eager = {1, 4};
    const auto indices = b.CreateVector(eager);
    fb::SubmitBeginBuilder e(b);
    e.add_stream(&stream);
    e.add_declared_eager_indices(indices);
    e.add_guarded(true);
    e.add_guard_maximum_commands(3);
    return e.Finish().Union();
  });
  REQUIRE(begin.has_value());
  const auto* s = std::get_if<rp::step::SubmitBegin>(&begin->body);
  REQUIRE(s != nullptr);
  CHECK(s->guarded);
  CHECK(s->guard_maximum_commands == 3);
  CHECK(s->declared_eager == std::vector<std::uint32_t>{1, 4});

  const auto trim = [&](bool failed) {
    return decoded(fb::EventBody::OptionalCall, [&](auto& b) {
      const auto error = some_error(b);
      const auto method = b.CreateString("trim_reusable_executables");
      fb::OptionalCallBuilder e(b);
      e.add_method(method);
      e.add_stream(&stream);
      e.add_released_executables(2);
      e.add_released_rejections(1);
      if (failed) e.add_error(error);
      return e.Finish().Union();
    });
  };
  const auto ok = trim(false);
  REQUIRE(ok.has_value());
  const auto* t = std::get_if<rp::step::TrimReusableExecutables>(&ok->body);
  REQUIRE(t != nullptr);
  REQUIRE(t->trim.has_value());
  CHECK(t->trim->released_executables == 2);
  CHECK(t->trim->released_rejections == 1);
  const auto failed = trim(true);
  REQUIRE(failed.has_value());
  const auto* f = std::get_if<rp::step::TrimReusableExecutables>(&failed->body);
  REQUIRE(f != nullptr);
  CHECK_FALSE(f->trim.has_value());
  CHECK(f->outcome.has_value());
}
