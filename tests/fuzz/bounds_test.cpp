// The bounds of the issue, one hand-written file each: a footer claiming 2^40 events (and one
// claiming as many as its frame could hold), a blob index entry claiming a 1 TiB payload, a frame
// claiming a huge content size (in the footer's index and in the zstd frame header), a
// safetensors header claiming a huge length. Each is refused with its error kind and sentence,
// and the largest single allocation the refusal makes stays far below the claim.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "fuzz/allocation_probe.h"
#include "fuzz_bodies.h"
#include "schema/container_test_support.h"
#include "vtrace/schema/format.h"
#include "vtrace/schema/trace_reader.h"

namespace vs = vtrace::schema;
namespace vf = vtrace::fuzz;
using vs::testing::blob_with;
using vs::testing::frame_with;
using vs::testing::with_rebuilt_footer;
using vtrace::testing::AllocationProbe;

namespace {

using Bytes = std::vector<std::uint8_t>;

// Far below every claim below (the smallest is 512 MiB), above what reading a small trace takes.
constexpr std::size_t kSmallAllocation = 16u << 20;
constexpr std::uint64_t kTiB = 1ull << 40;

Bytes golden(const std::string& name) {
  const auto path = std::filesystem::path(VTRACE_SOURCE_DIR) / "traces" / name;
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

vs::TraceResult<std::unique_ptr<vs::TraceReader>> open_bytes(Bytes bytes) {
  return vs::TraceReader::open(vs::memory_source(std::move(bytes), "bound.vtrace"));
}

vtrace::container::Totals totals_with_events(const vtrace::container::Totals& t,
                                             std::uint64_t events) {
  return {events,
          t.blobs(),
          t.payload_raw_bytes(),
          t.payload_stored_bytes(),
          t.compressed_bytes(),
          t.blob_references()};
}

vtrace::container::FrameEntry frame_with_events(const vtrace::container::FrameEntry& e,
                                                std::uint64_t content, std::uint64_t events) {
  return {e.file_offset(), e.compressed_bytes(), content,          e.first_event(),
          events,          e.blob_count(),       e.content_hash(), e.compressed_hash()};
}

// The header frame of a golden trace followed by one hand-made zstd frame (RFC 8878) whose frame
// header declares `content_size` (8-byte Frame_Content_Size) and whose one raw block holds 16
// bytes. `single_segment`: the window is the content size itself.
Bytes header_and_frame_claiming(std::uint64_t content_size, bool single_segment) {
  const Bytes good = golden("tiny-v1.2.vtrace");
  const std::uint64_t header_end = 8 + vs::testing::read_u32(good, 4);
  Bytes b(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(header_end));
  for (int v : {0x28, 0xB5, 0x2F, 0xFD}) b.push_back(static_cast<std::uint8_t>(v));
  // Frame_Header_Descriptor: FCS field 8 bytes (11), Single_Segment, no checksum, no dictionary.
  b.push_back(single_segment ? 0xE0 : 0xC0);
  if (!single_segment) b.push_back(0x00);  // Window_Descriptor: 1 KiB
  vs::testing::put_le64(b, content_size);
  const std::uint32_t block = 1u | (16u << 3);  // Last_Block, Raw_Block, 16 bytes
  for (int i = 0; i < 3; ++i) b.push_back(static_cast<std::uint8_t>(block >> (8 * i)));
  for (int i = 0; i < 16; ++i) b.push_back(static_cast<std::uint8_t>(i));
  return b;
}

}  // namespace

TEST_CASE("fuzz bounds: a footer claiming 2^40 events is refused before any allocation", "[fuzz]") {
  const Bytes claim =
      with_rebuilt_footer(golden("tiny.vtrace"), [](auto& frames, auto&, auto& totals) {
        const std::uint64_t others = totals.events() - frames.back().event_count();
        frames.back() = frame_with_events(frames.back(), frames.back().content_bytes(), kTiB);
        totals = totals_with_events(totals, others + kTiB);
      });
  AllocationProbe probe;
  auto r = open_bytes(claim);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().kind == vs::TraceErrorKind::kCorrupt);
  CHECK_THAT(r.error().message,
             Catch::Contains("the footer's frame") && Catch::Contains("(1099511627776 of them)"));
  CHECK(probe.largest() < kSmallAllocation);
  const vf::BodyOutcome plan = vf::replay_plan_body(claim);
  CHECK(plan.refused_at == "open");
}

TEST_CASE(
    "fuzz bounds: a footer claiming as many events as its frame could hold is refused without "
    "reserving for them",
    "[fuzz]") {
  // Within every limit of format.h (512 MiB of content, one event per 5 bytes), so open() takes
  // the claim; the frame itself then shows it false, and neither the reader nor the plan may size
  // anything by it before that.
  const std::uint64_t events = vs::kMaxFrameContentBytes / vs::kRecordPrefixBytes;
  const Bytes claim =
      with_rebuilt_footer(golden("tiny.vtrace"), [&](auto& frames, auto&, auto& totals) {
        const std::uint64_t others = totals.events() - frames.back().event_count();
        frames.back() = frame_with_events(frames.back(), vs::kMaxFrameContentBytes, events);
        totals = totals_with_events(totals, others + events);
      });
  {
    auto r = open_bytes(claim);
    REQUIRE(r.has_value());
    CHECK((*r)->event_count() >= events);
  }
  AllocationProbe probe;
  const vf::BodyOutcome plan = vf::replay_plan_body(claim);
  CHECK(probe.largest() < kSmallAllocation);
  CHECK(plan.refused_at == "build");
  CHECK(plan.kind == vs::TraceErrorKind::kCorrupt);
  CHECK_THAT(plan.message, Catch::Contains("the index says") && Catch::Contains("536870912"));
  AllocationProbe read_probe;
  const vf::BodyOutcome read = vf::trace_file_body(claim);
  CHECK(read_probe.largest() < kSmallAllocation);
  CHECK(read.refused_at == "visit_events");
  CHECK(read.kind == vs::TraceErrorKind::kCorrupt);
}

TEST_CASE(
    "fuzz bounds: a blob index entry claiming a 1 TiB payload is refused before any allocation",
    "[fuzz]") {
  const Bytes claim = with_rebuilt_footer(golden("tiny.vtrace"), [](auto&, auto& blobs) {
    REQUIRE_FALSE(blobs.empty());
    blobs[0] = blob_with(blobs[0], blobs[0].frame_index(), kTiB);
  });
  AllocationProbe probe;
  auto r = open_bytes(claim);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().kind == vs::TraceErrorKind::kTooLarge);
  CHECK_THAT(r.error().message, Catch::Contains("the footer's payload") &&
                                    Catch::Contains("claims 1099511627776 bytes"));
  CHECK(probe.largest() < kSmallAllocation);
}

TEST_CASE("fuzz bounds: a frame claiming a huge content size is refused before any allocation",
          "[fuzz]") {
  SECTION("in the footer's index") {
    const Bytes claim = with_rebuilt_footer(golden("tiny.vtrace"), [](auto& frames, auto&) {
      frames[0] =
          frame_with(frames[0], frames[0].file_offset(), frames[0].compressed_bytes(), kTiB);
    });
    AllocationProbe probe;
    auto r = open_bytes(claim);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().kind == vs::TraceErrorKind::kTooLarge);
    CHECK_THAT(r.error().message,
               Catch::Contains("the footer's frame 0 claims 1099511627776 content bytes"));
    CHECK(probe.largest() < kSmallAllocation);
  }
  SECTION("in the zstd frame header, as the window of a single-segment frame") {
    AllocationProbe probe;
    auto r = open_bytes(header_and_frame_claiming(kTiB, true));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().kind == vs::TraceErrorKind::kTooLarge);
    CHECK_THAT(r.error().message, Catch::Contains("frame 0 at offset"));
    CHECK(probe.largest() < kSmallAllocation);
  }
  SECTION("in the zstd frame header, beside a 1 KiB window") {
    AllocationProbe probe;
    auto r = open_bytes(header_and_frame_claiming(kTiB, false));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().kind == vs::TraceErrorKind::kCorrupt);
    CHECK_THAT(r.error().message, Catch::Contains("frame 0 at offset"));
    CHECK(probe.largest() < kSmallAllocation);
  }
}

TEST_CASE(
    "fuzz bounds: a safetensors header claiming a huge length is refused before any allocation",
    "[fuzz]") {
  for (const std::uint64_t claim : {std::uint64_t{1} << 63, kTiB, (std::uint64_t{100} << 20) + 1}) {
    Bytes b;
    vs::testing::put_le64(b, claim);
    const std::string text = R"({"w":{"dtype":"F16","shape":[1],"data_offsets":[0,2]}})";
    b.insert(b.end(), text.begin(), text.end());
    AllocationProbe probe;
    const vf::BodyOutcome outcome = vf::safetensors_body(b);
    CHECK(probe.largest() < kSmallAllocation);
    CHECK(outcome.refused_at == "parse");
    CHECK_THAT(outcome.message,
               Catch::Contains("header length " + std::to_string(claim) + " exceeds"));
  }
}
