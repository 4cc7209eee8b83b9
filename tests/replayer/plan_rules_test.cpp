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
