// Sizes and counts read from a file that claim the impossible (2^40 events, a zstd frame of 1 TiB,
// a window of 1 TiB) are refused with kCorrupt or kTooLarge before anything is sized by them. The
// cases shared with the footer's index fixtures (a frame of 2^40 content bytes, a payload of
// 1 TiB, a 1 TiB blob record, a 4 GiB record, a huge trailer or header) are in container_test.cpp.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <iterator>

#include "schema/container_test_support.h"
#include "vtrace/schema/format.h"
#include "vtrace/schema/trace_repair.h"

namespace vs = vtrace::schema;
using vs::testing::Bytes;

namespace {

Bytes trace_of(std::uint32_t events) {
  vs::TraceWriterOptions o;
  o.frame_target_bytes = 600;
  auto state = std::make_shared<vs::testing::MemorySink::State>();
  auto w = vs::TraceWriter::create(std::make_unique<vs::testing::MemorySink>(state), {}, o);
  REQUIRE(w.has_value());
  for (std::uint32_t i = 0; i < events; ++i) {
    REQUIRE((*w)->append_event(vs::testing::synthetic_event(i)).has_value());
  }
  REQUIRE((*w)->close({}).has_value());
  std::lock_guard lk(state->mu);
  return state->bytes;
}

vs::TraceError refused(Bytes bytes) {
  auto r = vs::TraceReader::open(vs::memory_source(std::move(bytes), "bounds.vtrace"),
                                 vs::testing::synthetic_options());
  REQUIRE_FALSE(r.has_value());
  return r.error();
}

void put_le(Bytes& out, std::uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

// A zstd frame made by hand (RFC 8878): content checksum on, frame content size `claimed`
// (8-byte field), window log `window_log`, one raw last block holding `content`.
Bytes hand_frame(const Bytes& content, std::uint64_t claimed, unsigned window_log) {
  Bytes f;
  put_le(f, 0xFD2FB528u, 4);
  f.push_back(0xC4);  // FCS field 8 bytes, not single segment, content checksum
  f.push_back(static_cast<std::uint8_t>((window_log - 10) << 3));
  put_le(f, claimed, 8);
  put_le(f, (content.size() << 3) | 1u, 3);  // last block, raw, its size
  f.insert(f.end(), content.begin(), content.end());
  put_le(f, XXH64(content.data(), content.size(), 0) & 0xFFFFFFFFu, 4);
  return f;
}

// Appends to `records` a blob record of `stored` bytes with `encoding`, whose id is the XXH3-128
// of those bytes; returns the id.
vs::BlobId put_blob_record(Bytes& records, const Bytes& stored, vs::BlobEncoding encoding) {
  const XXH128_hash_t id = XXH3_128bits(stored.data(), stored.size());
  Bytes blob;
  put_le(blob, id.low64, 8);
  put_le(blob, id.high64, 8);
  put_le(blob, stored.size(), 8);
  blob.push_back(static_cast<std::uint8_t>(encoding));
  blob.resize(vs::kBlobRecordHeaderBytes, 0);
  blob.insert(blob.end(), stored.begin(), stored.end());
  put_le(records, blob.size(), 4);
  records.push_back(static_cast<std::uint8_t>(vs::RecordKind::kBlob));
  records.insert(records.end(), blob.begin(), blob.end());
  return vs::BlobId{id.low64, id.high64};
}

}  // namespace

TEST_CASE(
    "a footer frame entry claiming 2^40 events or payloads is refused before anything is sized by "
    "it",
    "[schema][bounds]") {
  const Bytes good = trace_of(30);
  SECTION("a frame entry claiming 2^40 events") {
    const auto e = refused(vs::testing::with_rebuilt_footer(good, [](auto& frames, auto&) {
      const auto& f = frames[0];
      frames[0] = vtrace::container::FrameEntry(
          f.file_offset(), f.compressed_bytes(), f.content_bytes(), f.first_event(), 1ull << 40,
          f.blob_count(), f.content_hash(), f.compressed_hash());
    }));
    CHECK(e.kind == vs::TraceErrorKind::kCorrupt);
    CHECK_THAT(e.message,
               Catch::Contains(fmt::format("the footer's frame 0 claims events from 0 ({} of them)",
                                           1ull << 40)));
  }
  SECTION("a frame entry whose first event is not where the frames before it end") {
    std::uint64_t claimed = 0;
    std::uint64_t expected = 0;
    const auto e = refused(vs::testing::with_rebuilt_footer(good, [&](auto& frames, auto&) {
      const auto& f = frames[1];
      expected = f.first_event();
      claimed = f.first_event() + 1;
      frames[1] = vtrace::container::FrameEntry(f.file_offset(), f.compressed_bytes(),
                                                f.content_bytes(), claimed, f.event_count(),
                                                f.blob_count(), f.content_hash(),
                                                f.compressed_hash());
    }));
    CHECK(e.kind == vs::TraceErrorKind::kCorrupt);
    CHECK_THAT(e.message, Catch::Contains(fmt::format("the footer's frame 1 claims events from {}",
                                                      claimed)) &&
                              Catch::Contains(fmt::format("expected events from {}", expected)));
  }
  SECTION("a frame entry claiming 2^40 payloads") {
    const auto e = refused(vs::testing::with_rebuilt_footer(good, [](auto& frames, auto&) {
      const auto& f = frames[1];
      frames[1] = vtrace::container::FrameEntry(f.file_offset(), f.compressed_bytes(),
                                                f.content_bytes(), f.first_event(), f.event_count(),
                                                1ull << 40, f.content_hash(), f.compressed_hash());
    }));
    CHECK(e.kind == vs::TraceErrorKind::kCorrupt);
    CHECK_THAT(e.message, Catch::Contains("the footer's frame 1 claims"));
  }
}

TEST_CASE(
    "a zstd frame claiming 1 TiB of content or a 1 TiB window is refused without allocating it",
    "[schema][bounds]") {
  const Bytes good = trace_of(3);
  const Bytes header(good.begin(), good.begin() + 8 + vs::testing::read_u32(good, 4));
  Bytes records;
  const Bytes event = vs::testing::synthetic_event(0);
  put_le(records, event.size(), 4);
  records.push_back(static_cast<std::uint8_t>(vs::RecordKind::kEvent));
  records.insert(records.end(), event.begin(), event.end());
  auto file_with = [&](const Bytes& frame) {
    Bytes f = header;
    f.insert(f.end(), frame.begin(), frame.end());
    return f;
  };
  {
    // The frame made by hand is a valid one when it tells the truth.
    auto r = vs::TraceReader::open(
        vs::memory_source(file_with(hand_frame(records, records.size(), 17)), "x"),
        vs::testing::synthetic_options());
    REQUIRE(r.has_value());
    CHECK((*r)->event_count() == 1);
  }
  SECTION("a frame content size of 1 TiB") {
    const auto e = refused(file_with(hand_frame(records, 1ull << 40, 17)));
    CHECK((e.kind == vs::TraceErrorKind::kCorrupt || e.kind == vs::TraceErrorKind::kTooLarge));
    CHECK_THAT(e.message, Catch::Contains(fmt::format("frame 0 at offset {}", header.size())));
  }
  SECTION("a window of 1 TiB") {
    const auto e = refused(file_with(hand_frame(records, records.size(), 40)));
    CHECK(e.kind == vs::TraceErrorKind::kTooLarge);
    CHECK_THAT(e.message, Catch::Contains(fmt::format("frame 0 at offset {}", header.size())));
  }
}

TEST_CASE("a byte-plane payload of an odd byte count is refused as corrupt",
          "[schema][bounds]") {
  // Byte planes split 16-bit elements into their low and high bytes: an odd count has no such
  // split, whatever the record's id says.
  const Bytes good = trace_of(3);
  Bytes file(good.begin(), good.begin() + 8 + vs::testing::read_u32(good, 4));
  Bytes records;
  (void)put_blob_record(records, {0x01, 0x02, 0x03}, vs::BlobEncoding::kBytePlanes16);
  const Bytes frame = hand_frame(records, records.size(), 17);
  file.insert(file.end(), frame.begin(), frame.end());
  const auto e = refused(file);
  CHECK(e.kind == vs::TraceErrorKind::kCorrupt);
  CHECK_THAT(e.message, Catch::Contains("claims 3 decoded bytes but stores 3 with encoding 1"));
}

TEST_CASE("a footer that gives a frame more bytes than its zstd frame has is refused on reading",
          "[schema][bounds]") {
  // 8 bytes (an empty skippable frame) between the last data frame and the footer, and a footer
  // whose last frame entry counts them: its frames still end at the footer, but the zstd frame
  // ends 8 bytes before the indexed end.
  const Bytes good = trace_of(30);
  const std::uint64_t foff = vs::testing::footer_offset(good);
  Bytes spliced(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(foff));
  put_le(spliced, 0x184D2A50u, 4);
  put_le(spliced, 0, 4);
  spliced.insert(spliced.end(), good.begin() + static_cast<std::ptrdiff_t>(foff), good.end());
  const std::uint64_t moved = foff + 8;
  std::memcpy(spliced.data() + spliced.size() - vs::kTrailerBytes, &moved, 8);
  std::uint64_t last_frame = 0;
  std::uint64_t last_first_event = 0;
  const Bytes file = vs::testing::with_rebuilt_footer(spliced, [&](auto& frames, auto&) {
    auto& f = frames.back();
    last_frame = frames.size() - 1;
    last_first_event = f.first_event();
    f = vs::testing::frame_with(f, f.file_offset(), f.compressed_bytes() + 8, f.content_bytes());
  });
  auto r = vs::TraceReader::open(vs::memory_source(file, "longer.vtrace"),
                                 vs::testing::synthetic_options());
  REQUIRE(r.has_value());
  REQUIRE((*r)->complete());
  REQUIRE(last_frame > 0);
  // The frames before it read as they are; the last one is refused.
  CHECK((*r)->visit_events(0, last_first_event, [](auto, auto) { return true; }).has_value());
  const auto read = (*r)->visit_events(0, (*r)->event_count(), [](auto, auto) { return true; });
  REQUIRE_FALSE(read.has_value());
  CHECK(read.error().kind == vs::TraceErrorKind::kCorrupt);
  CHECK_THAT(read.error().message,
             Catch::Contains(fmt::format("frame {} at offset", last_frame)) &&
                 Catch::Contains("the index says"));
}

TEST_CASE("a footer whose frame index stops short of the footer is refused", "[schema][bounds]") {
  // The last frame's entry left out (and the totals made to agree): its events would be silently
  // missing from a trace that otherwise reads as complete.
  const Bytes good = trace_of(30);
  std::uint64_t indexed_end = 0;
  const auto e = refused(vs::testing::with_rebuilt_footer(
      good, [&](auto& frames, auto&, vtrace::container::Totals& totals) {
        REQUIRE(frames.size() > 1);
        const auto last = frames.back();
        frames.pop_back();
        indexed_end = last.file_offset();
        totals = vtrace::container::Totals(
            totals.events() - last.event_count(), totals.blobs(), totals.payload_raw_bytes(),
            totals.payload_stored_bytes(), totals.compressed_bytes(), totals.blob_references());
      }));
  CHECK(e.kind == vs::TraceErrorKind::kCorrupt);
  CHECK_THAT(e.message, Catch::Contains(fmt::format(
                            "the footer's frames end at offset {}, not at the footer ({})",
                            indexed_end, vs::testing::footer_offset(good))));
}

TEST_CASE("a payload stored twice in a recovered file is indexed once, and the others with it",
          "[schema][bounds]") {
  // The writer stores each payload once; a file made otherwise (by hand, or two recordings
  // concatenated) still finds every payload it holds.
  const Bytes good = trace_of(3);
  Bytes file(good.begin(), good.begin() + 8 + vs::testing::read_u32(good, 4));
  Bytes records;
  const Bytes x = {1, 2, 3, 4};
  const Bytes y = {5, 6, 7, 8, 9, 10};
  const vs::BlobId x_id = put_blob_record(records, x, vs::BlobEncoding::kRaw);
  (void)put_blob_record(records, x, vs::BlobEncoding::kRaw);
  const vs::BlobId y_id = put_blob_record(records, y, vs::BlobEncoding::kRaw);
  const Bytes frame = hand_frame(records, records.size(), 17);
  file.insert(file.end(), frame.begin(), frame.end());
  auto r = vs::TraceReader::open(vs::memory_source(file, "twice.vtrace"),
                                 vs::testing::synthetic_options());
  REQUIRE(r.has_value());
  CHECK((*r)->totals().blobs == 2);
  const auto x_back = (*r)->blob(x_id);
  const auto y_back = (*r)->blob(y_id);
  REQUIRE(x_back.has_value());
  REQUIRE(y_back.has_value());
  CHECK(*x_back == x);
  CHECK(*y_back == y);
}

namespace {

Bytes golden_tiny() {
  std::ifstream in(std::filesystem::path(VTRACE_SOURCE_DIR) / "traces" / "tiny.vtrace",
                   std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

}  // namespace

TEST_CASE("a footer whose payload index is out of order or whose totals disagree is refused",
          "[schema][bounds]") {
  const Bytes tiny = golden_tiny();
  auto opened = vs::TraceReader::open(vs::memory_source(tiny, "tiny.vtrace"));
  REQUIRE(opened.has_value());
  REQUIRE((*opened)->totals().blobs >= 2);
  auto refused_real = [](Bytes bytes) {
    auto r = vs::TraceReader::open(vs::memory_source(std::move(bytes), "bounds.vtrace"));
    REQUIRE_FALSE(r.has_value());
    return r.error();
  };
  const auto swapped = refused_real(vs::testing::with_rebuilt_footer(
      tiny, [](auto&, auto& blobs) { std::swap(blobs[0], blobs[1]); }));
  CHECK(swapped.kind == vs::TraceErrorKind::kCorrupt);
  CHECK_THAT(swapped.message, Catch::Contains("lies outside its frame or out of order"));
  const auto counted = refused_real(vs::testing::with_rebuilt_footer(
      tiny, [](auto&, auto&, vtrace::container::Totals& totals) {
        totals = vtrace::container::Totals(totals.events(), totals.blobs() + 1,
                                           totals.payload_raw_bytes(),
                                           totals.payload_stored_bytes(),
                                           totals.compressed_bytes(), totals.blob_references());
      }));
  CHECK(counted.kind == vs::TraceErrorKind::kCorrupt);
  CHECK_THAT(counted.message, Catch::Contains("disagree with its indexes"));
}

TEST_CASE("a header frame that claims more bytes than the file holds is a cut file",
          "[schema][bounds]") {
  const Bytes good = trace_of(3);
  const std::uint32_t hsize = vs::testing::read_u32(good, 4);
  // The file ends 4 bytes into where the header claims to end.
  Bytes cut(good.begin(), good.begin() + 8 + hsize - 4);
  const auto e = refused(cut);
  CHECK(e.kind == vs::TraceErrorKind::kTruncated);
  CHECK_THAT(e.message, Catch::Contains(fmt::format(
                            "the header frame claims {} bytes; the file ends after {}", hsize,
                            hsize - 4)));
}

TEST_CASE("the reader keeps the two frames it used last: reading back and forth between two "
          "decompresses each once",
          "[schema][bounds]") {
  const Bytes good = trace_of(30);
  auto r = vs::TraceReader::open(vs::memory_source(good, "cache.vtrace"),
                                 vs::testing::synthetic_options());
  REQUIRE(r.has_value());
  const auto& frames = (*r)->frames();
  REQUIRE(frames.size() >= 3);
  const std::uint64_t a = frames[0].first_event;
  const std::uint64_t b = frames[1].first_event;
  const std::uint64_t c = frames[2].first_event;
  const auto read = [&](std::uint64_t event) {
    REQUIRE((*r)->visit_events(event, event + 1, [](auto, auto) { return true; }).has_value());
  };
  const std::uint64_t before = (*r)->frames_decompressed();
  for (int i = 0; i < 3; ++i) {
    read(a);
    read(b);
  }
  CHECK((*r)->frames_decompressed() - before == 2);
  // A third frame replaces the one used longest ago (a), not the one just used (b).
  read(c);
  read(b);
  CHECK((*r)->frames_decompressed() - before == 3);
}

TEST_CASE("repair of a file that cannot be read says so, and does not call the frame damaged",
          "[schema][bounds]") {
  // A source whose reads past the header fail (a disk error): salvage stops at damage, not at a
  // read error, which is the file's reader's to report.
  class Failing final : public vs::ByteSource {
   public:
    Failing(Bytes bytes, std::uint64_t from) : bytes_(std::move(bytes)), from_(from) {}
    std::uint64_t size() const override { return bytes_.size(); }
    vs::TraceResult<void> read_at(std::uint64_t offset,
                                  std::span<std::uint8_t> out) const override {
      if (offset + out.size() > from_) {
        return std::unexpected(vs::TraceError{vs::TraceErrorKind::kIo, "input/output error"});
      }
      std::memcpy(out.data(), bytes_.data() + offset, out.size());
      return {};
    }
    std::string describe() const override { return "failing.vtrace"; }

   private:
    Bytes bytes_;
    std::uint64_t from_;
  };
  const Bytes tiny = golden_tiny();
  const std::uint64_t header_end = 8 + vs::testing::read_u32(tiny, 4);
  const Failing source(tiny, header_end + 64);  // inside the first data frame
  int outputs = 0;
  const auto output = [&]() -> vs::TraceResult<std::unique_ptr<vs::ByteSink>> {
    ++outputs;
    return std::make_unique<vs::testing::MemorySink>(
        std::make_shared<vs::testing::MemorySink::State>());
  };
  const auto repaired = vs::repair_trace(source, output);
  REQUIRE_FALSE(repaired.has_value());
  CHECK(repaired.error().kind == vs::TraceErrorKind::kIo);
  CHECK(repaired.error().message == "input/output error");
  CHECK(outputs == 0);
}
