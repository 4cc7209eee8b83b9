// Integrity of the whole file (format 1.1): the header frame's hash, the footer's copy of it and
// the trailer's footer checksum, so that a flipped bit anywhere in a trace (header, data frames,
// footer, trailer) is detected; and the 1.0 layout without them stays readable.
#include <container_generated.h>
#include <fmt/format.h>
#include <xxhash.h>
#include <zstd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <string>

#include "schema/container_test_support.h"
#include "support/test_support.h"
#include "vtrace/schema/format.h"

namespace vs = vtrace::schema;
using vs::testing::MemorySink;
using vs::testing::normal_f16;
using vs::testing::synthetic_event;
using vs::testing::synthetic_options;

namespace {

using Bytes = std::vector<std::uint8_t>;

// A small multi-frame trace of synthetic events with a f16 payload every 10 events, written for
// the given format minor (0 = the 1.0 layout).
Bytes small_trace(std::uint16_t minor = vs::kFormatMinor, std::uint32_t events = 40) {
  vs::TraceHeaderInfo h;
  h.format_minor = minor;
  h.producer = "integrity_test";
  h.producer_version = "1.1.0";
  h.metadata = {1, 2, 3, 4, 5, 6, 7, 8};
  vs::TraceWriterOptions o;
  o.frame_target_bytes = 1200;
  auto state = std::make_shared<MemorySink::State>();
  auto writer = vs::TraceWriter::create(std::make_unique<MemorySink>(state), h, o);
  REQUIRE(writer.has_value());
  for (std::uint32_t i = 0; i < events; ++i) {
    if (i % 10 == 0) REQUIRE((*writer)->put_blob(normal_f16(48, i), 2).has_value());
    REQUIRE((*writer)->append_event(synthetic_event(i)).has_value());
  }
  REQUIRE((*writer)->close(Bytes{9, 8, 7, 6}).has_value());
  std::lock_guard lk(state->mu);
  return state->bytes;
}

vs::TraceResult<std::unique_ptr<vs::TraceReader>> open_bytes(Bytes bytes) {
  return vs::TraceReader::open(vs::memory_source(std::move(bytes), "test.vtrace"), synthetic_options());
}

std::uint64_t le64(const Bytes& b, std::size_t at) {
  std::uint64_t v = 0;
  std::memcpy(&v, b.data() + at, 8);
  return v;
}

std::uint64_t header_end(const Bytes& b) { return 8 + vs::testing::read_u32(b, 4); }
std::uint64_t footer_offset(const Bytes& b) { return le64(b, b.size() - vs::kTrailerBytes); }

// The footer table (between the footer frame's 8-byte prefix and the trailer), copied aligned.
Bytes footer_table(const Bytes& b) {
  const std::uint64_t foff = footer_offset(b);
  return Bytes(b.begin() + static_cast<std::ptrdiff_t>(foff + 8),
               b.end() - static_cast<std::ptrdiff_t>(vs::kTrailerBytes));
}

bool header_ends_with_its_hash(const Bytes& b) {
  const std::uint64_t end = header_end(b);
  if (end < 8 + 8 + vs::kHeaderHashBytes) return false;
  const std::uint64_t body = end - vs::kHeaderHashBytes;
  const XXH128_hash_t h = XXH3_128bits(b.data() + 8, body - 8);
  return le64(b, body) == h.low64 && le64(b, body + 8) == h.high64;
}

std::uint64_t events_read(vs::TraceReader& r) {
  std::uint64_t n = 0;
  auto ok = r.visit_events(0, r.event_count(), [&](std::uint64_t i, std::span<const std::uint8_t> e) {
    CHECK(std::vector<std::uint8_t>(e.begin(), e.end()) == synthetic_event(static_cast<std::uint32_t>(i)));
    ++n;
    return true;
  });
  if (!ok) FAIL("visit_events failed: " << ok.error().message);
  return n;
}

}  // namespace

TEST_CASE("a 1.1 trace ends its header with the header hash and checksums its footer", "[schema]") {
  const Bytes b = small_trace(1);
  CHECK(header_ends_with_its_hash(b));
  const Bytes table = footer_table(b);
  const std::uint64_t checksum = le64(b, b.size() - vs::kTrailerBytes + 16);
  CHECK(checksum != 0);
  CHECK(checksum == XXH3_64bits(table.data(), table.size()));
  const auto* f = flatbuffers::GetRoot<vtrace::container::Footer>(table.data());
  REQUIRE(f->header_hash() != nullptr);
  const std::uint64_t body = header_end(b) - vs::kHeaderHashBytes;
  CHECK(f->header_hash()->low() == le64(b, body));
  CHECK(f->header_hash()->high() == le64(b, body + 8));

  auto r = open_bytes(b);
  REQUIRE(r.has_value());
  CHECK((*r)->header().format_major == 1);
  CHECK((*r)->header().format_minor == 1);
  CHECK((*r)->header().producer == "integrity_test");
  CHECK((*r)->complete());
  CHECK((*r)->verify_all().has_value());
}

TEST_CASE("a 1.1 trace reads the way a 1.0 reader reads it, which ignores the added bytes", "[schema]") {
  // What a 1.0 reader does: verify the whole header content after the magic as a Header table
  // (the hash behind the table included), read the trailer's offset and size only, and verify the
  // footer table with the 1.0 fields. The generated code of 1.1 differs from 1.0's only by the
  // footer's appended header_hash, which a 1.0 verifier does not look at.
  const Bytes b = small_trace(1);
  Bytes header_table(b.begin() + 16, b.begin() + static_cast<std::ptrdiff_t>(header_end(b)));
  flatbuffers::Verifier hv(header_table.data(), header_table.size(), vs::kMaxFlatbufferDepth,
                           vs::kMaxFlatbufferTables);
  REQUIRE(hv.VerifyBuffer<vtrace::container::Header>(nullptr));
  const auto* h = flatbuffers::GetRoot<vtrace::container::Header>(header_table.data());
  CHECK(h->format_major() == 1);
  CHECK(h->format_minor() == 1);
  REQUIRE(h->producer() != nullptr);
  CHECK(h->producer()->str() == "integrity_test");
  REQUIRE(h->metadata() != nullptr);
  CHECK(h->metadata()->size() == 8);

  Bytes table = footer_table(b);
  flatbuffers::Verifier fv(table.data(), table.size(), vs::kMaxFlatbufferDepth, vs::kMaxFlatbufferTables);
  REQUIRE(fv.VerifyBuffer<vtrace::container::Footer>(nullptr));
  const auto* f = flatbuffers::GetRoot<vtrace::container::Footer>(table.data());
  REQUIRE(f->frames() != nullptr);
  REQUIRE(f->frames()->size() > 0);
  CHECK(f->frames()->Get(0)->file_offset() == header_end(b));
  CHECK(le64(b, b.size() - vs::kTrailerBytes + 8) == b.size() - footer_offset(b));
}

TEST_CASE("a 1.2 trace has the 1.1 layout: only the header's minor differs", "[schema]") {
  // 1.2 changed events (one kind per optional method), not the container.
  const Bytes b12 = small_trace();
  const Bytes b11 = small_trace(1);
  auto r12 = open_bytes(b12);
  auto r11 = open_bytes(b11);
  REQUIRE(r12.has_value());
  REQUIRE(r11.has_value());
  CHECK((*r12)->header().format_minor == 2);
  CHECK((*r11)->header().format_minor == 1);
  CHECK(header_ends_with_its_hash(b12));
  CHECK((*r12)->verify_all().has_value());
  REQUIRE((*r12)->frames().size() == (*r11)->frames().size());
  for (std::size_t i = 0; i < (*r12)->frames().size(); ++i) {
    CHECK((*r12)->frames()[i].content_hash == (*r11)->frames()[i].content_hash);
  }
}

TEST_CASE("a 1.0-layout trace without header hash or footer checksum is read completely", "[schema]") {
  const Bytes b = small_trace(0);
  CHECK_FALSE(header_ends_with_its_hash(b));
  CHECK(le64(b, b.size() - vs::kTrailerBytes + 16) == 0);  // the 1.0 reserved field
  const Bytes table = footer_table(b);
  CHECK(flatbuffers::GetRoot<vtrace::container::Footer>(table.data())->header_hash() == nullptr);
  auto r = open_bytes(b);
  REQUIRE(r.has_value());
  CHECK((*r)->header().format_minor == 0);
  CHECK((*r)->header().producer == "integrity_test");
  CHECK((*r)->header().metadata == Bytes{1, 2, 3, 4, 5, 6, 7, 8});
  CHECK((*r)->complete());
  CHECK(events_read(**r) == 40);
  CHECK((*r)->verify_all().has_value());
  // The same calls give the same data frames in both layouts: only header and footer differ.
  const Bytes b11 = small_trace();
  auto r11 = open_bytes(b11);
  REQUIRE(r11.has_value());
  REQUIRE((*r11)->frames().size() == (*r)->frames().size());
  for (std::size_t i = 0; i < (*r)->frames().size(); ++i) {
    CHECK((*r11)->frames()[i].content_hash == (*r)->frames()[i].content_hash);
    CHECK((*r11)->frames()[i].compressed_bytes == (*r)->frames()[i].compressed_bytes);
  }
}

TEST_CASE("the golden trace tiny.vtrace written by format 1.0 still opens and verifies", "[schema]") {
  const auto path = std::filesystem::path(VTRACE_SOURCE_DIR) / "traces" / "tiny.vtrace";
  REQUIRE(std::filesystem::exists(path));
  auto r = vs::TraceReader::open(path);
  REQUIRE(r.has_value());
  CHECK((*r)->header().format_major == 1);
  CHECK((*r)->header().format_minor == 0);
  CHECK((*r)->complete());
  CHECK((*r)->event_count() == 30);
  auto v = (*r)->verify_all();
  if (!v) FAIL("verify_all failed: " << v.error().message);
}

TEST_CASE("a header frame that does not match its hash is refused by open", "[schema]") {
  Bytes b = small_trace();
  const std::uint64_t body = header_end(b) - vs::kHeaderHashBytes;
  SECTION("a flip in the producer string") {
    const auto it = std::search(b.begin(), b.end(), std::begin("integrity_test"), std::end("integrity_test") - 1);
    REQUIRE(it != b.end());
    *it = static_cast<std::uint8_t>(*it ^ 0x01);
  }
  SECTION("a flip in the hash itself") { b[body + 3] ^= 0x40; }
  SECTION("a flip in the metadata bytes") {
    const Bytes meta{1, 2, 3, 4, 5, 6, 7, 8};
    const auto it = std::search(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(body), meta.begin(), meta.end());
    REQUIRE(it != b.begin() + static_cast<std::ptrdiff_t>(body));
    it[4] ^= 0x10;
  }
  auto r = open_bytes(b);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().kind == vs::TraceErrorKind::kChecksumMismatch);
  CHECK_THAT(r.error().message, Catch::Contains("the header frame at offset 0 does not match its checksum"));
}

TEST_CASE("a header whose minor was lowered to 0 is caught by the footer's copy of its hash", "[schema]") {
  Bytes b = small_trace(1);
  Bytes table(b.begin() + 16, b.begin() + static_cast<std::ptrdiff_t>(header_end(b) - vs::kHeaderHashBytes));
  const auto* h = flatbuffers::GetRoot<vtrace::container::Header>(table.data());
  // The generated table derives privately from flatbuffers::Table, which knows field addresses.
  const std::uint8_t* minor = reinterpret_cast<const flatbuffers::Table*>(h)->GetAddressOf(
      vtrace::container::Header::VT_FORMAT_MINOR);
  REQUIRE(minor != nullptr);
  const std::size_t at = 16 + static_cast<std::size_t>(minor - table.data());
  REQUIRE(b[at] == 1);
  b[at] = 0;  // one bit: minor 1 -> 0, so the header no longer claims its own hash
  auto r = open_bytes(b);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().kind == vs::TraceErrorKind::kChecksumMismatch);
  CHECK_THAT(r.error().message, Catch::Contains("the header frame at offset 0 does not match its checksum"));
}

TEST_CASE("a damaged footer is reported by verify_all while open recovers the data frames by scanning", "[schema]") {
  Bytes b = small_trace();
  const std::uint64_t foff = footer_offset(b);
  const std::uint64_t file_bytes = b.size();
  SECTION("a flip in the footer table") { b[foff + 8 + (b.size() - foff - 8 - vs::kTrailerBytes) / 2] ^= 0x04; }
  SECTION("a flip in the trailer's footer checksum") { b[b.size() - vs::kTrailerBytes + 16 + 5] ^= 0x80; }
  auto r = open_bytes(b);
  REQUIRE(r.has_value());
  CHECK_FALSE((*r)->complete());
  CHECK_FALSE((*r)->recovery().footer_present);
  CHECK((*r)->recovery().cut_offset == foff);
  CHECK((*r)->recovery().file_bytes == file_bytes);
  CHECK_THAT((*r)->recovery().note, Catch::Contains("damaged") && Catch::Contains(fmt::format("offset {}", foff)));
  CHECK((*r)->event_count() == 40);
  CHECK(events_read(**r) == 40);
  CHECK((*r)->blob(vs::blob_id_of(normal_f16(48, 30).data(), 96)).value() == normal_f16(48, 30));
  auto v = (*r)->verify_all();
  REQUIRE_FALSE(v.has_value());
  CHECK(v.error().kind == vs::TraceErrorKind::kChecksumMismatch);
  CHECK_THAT(v.error().message,
             Catch::Contains(fmt::format("the footer frame at offset {} does not match its checksum", foff)));
}

TEST_CASE("a single flipped bit anywhere in a trace is detected by open or verify_all", "[schema]") {
  VTRACE_SKIP_UNDER_TSAN("its loop flips and reads traces on one thread: nothing for TSan");
  const Bytes good = small_trace();
  {
    auto r = open_bytes(good);
    REQUIRE(r.has_value());
    REQUIRE((*r)->frames().size() >= 3);
    REQUIRE((*r)->verify_all().has_value());
  }
  const std::uint64_t data_begin = header_end(good);
  const std::uint64_t foff = footer_offset(good);
  // Every bit of every byte. A flip that left a valid trace (say inside padding that zstd ignores)
  // would be counted here; there is none: the footer's XXH3-128 of each compressed frame covers
  // every data byte, the header and footer checksums cover the rest, and the trailer's fields are
  // checked against the file.
  std::uint64_t undetected = 0;
  std::uint64_t header_flips = 0, data_flips = 0, footer_flips = 0, trailer_flips = 0;
  std::uint64_t refused_at_open = 0;
  for (std::size_t at = 0; at < good.size(); ++at) {
    for (int bit = 0; bit < 8; ++bit) {
      Bytes bad = good;
      bad[at] = static_cast<std::uint8_t>(bad[at] ^ (1u << bit));
      auto r = open_bytes(std::move(bad));
      bool detected = !r.has_value();
      if (detected) ++refused_at_open;
      if (!detected) detected = !(*r)->verify_all().has_value();
      if (at < data_begin) {
        ++header_flips;
        // A damaged header is never used: open() refuses it.
        INFO("bit " << bit << " of header byte " << at);
        CHECK_FALSE(r.has_value());
      } else if (at < foff) {
        ++data_flips;
      } else if (at < good.size() - vs::kTrailerBytes) {
        ++footer_flips;
      } else {
        ++trailer_flips;
      }
      if (!detected) {
        ++undetected;
        UNSCOPED_INFO("undetected: bit " << bit << " of byte " << at);
      }
    }
  }
  CHECK(header_flips == 8 * data_begin);
  CHECK(data_flips > 0);
  CHECK(footer_flips > 0);
  CHECK(trailer_flips == 8 * vs::kTrailerBytes);
  CHECK(refused_at_open >= header_flips);
  CHECK(undetected == 0);
}

// The integrity checks of docs/FORMAT.md's table that the flip of one bit cannot isolate (zstd's
// content checksum and the footer's hashes overlap): each case below defeats every check but one.
namespace {

// The first blob record of a decompressed frame: its offset, or content.size() when none.
std::size_t first_blob_record(const Bytes& content) {
  std::size_t at = 0;
  while (at + vs::kRecordPrefixBytes <= content.size()) {
    const std::uint32_t len = vs::testing::read_u32(content, at);
    if (content[at + 4] == static_cast<std::uint8_t>(vs::RecordKind::kBlob)) return at;
    at += vs::kRecordPrefixBytes + len;
  }
  return content.size();
}

// The offset of a filler byte of the frame's first synthetic event (no check but the frame's
// hashes covers it).
std::size_t event_filler_byte(const Bytes& content) {
  std::size_t at = 0;
  while (at + vs::kRecordPrefixBytes <= content.size()) {
    const std::uint32_t len = vs::testing::read_u32(content, at);
    if (content[at + 4] == static_cast<std::uint8_t>(vs::RecordKind::kEvent) && len > 8) {
      return at + vs::kRecordPrefixBytes + 8;
    }
    at += vs::kRecordPrefixBytes + len;
  }
  FAIL("no event with filler in the frame");
  return 0;
}

// The first data frame of `b` (a small_trace) that holds a payload.
std::size_t frame_with_blob(const Bytes& b) {
  auto r = open_bytes(b);
  REQUIRE(r.has_value());
  for (std::size_t i = 0; i < (*r)->frames().size(); ++i) {
    if ((*r)->frames()[i].blob_count > 0) return i;
  }
  FAIL("no frame holds a payload");
  return 0;
}

}  // namespace

TEST_CASE(
    "a payload changed behind valid frame checksums is refused by verify_all and blob naming it",
    "[schema][integrity]") {
  const Bytes good = small_trace();
  const std::size_t frame = frame_with_blob(good);
  vs::BlobId id;
  Bytes changed = vs::testing::with_frame_content_changed(good, frame, [&](Bytes& content) {
    const std::size_t at = first_blob_record(content);
    REQUIRE(at < content.size());
    id = vs::BlobId{le64(content, at + 5), le64(content, at + 13)};
    content[at + vs::kRecordPrefixBytes + vs::kBlobRecordHeaderBytes + 7] ^= 0x20;
  });
  SECTION("the footer rebuilt to match the changed frame (every other check passes)") {}
  SECTION("the footer removed: read as a recovered recording") {
    changed.resize(static_cast<std::size_t>(footer_offset(changed)));
  }
  const std::string sentence =
      fmt::format("payload {} decodes to bytes whose XXH3-128 is", id.hex());
  auto r = open_bytes(changed);
  REQUIRE(r.has_value());
  CHECK(events_read(**r) == 40);  // the events are intact
  auto blob = (*r)->blob(id);
  REQUIRE_FALSE(blob.has_value());
  CHECK(blob.error().kind == vs::TraceErrorKind::kChecksumMismatch);
  CHECK_THAT(blob.error().message, Catch::Contains(sentence));
  auto v = (*r)->verify_all();
  REQUIRE_FALSE(v.has_value());
  CHECK(v.error().kind == vs::TraceErrorKind::kChecksumMismatch);
  CHECK_THAT(v.error().message,
             Catch::Contains(sentence) && Catch::Contains(fmt::format("frame {}", frame)));
}

TEST_CASE(
    "a frame whose content changed behind a valid zstd checksum is refused by the footer's content "
    "hash",
    "[schema][integrity]") {
  const Bytes good = small_trace();
  // One filler byte of the frame's first event (not a payload: only the content hash covers it).
  const Bytes changed = vs::testing::with_frame_content_changed(
      good, 1, [](Bytes& content) { content[event_filler_byte(content)] ^= 0x01; }, true);
  auto r = open_bytes(changed);
  REQUIRE(r.has_value());
  const auto& f = (*r)->frames()[1];
  const auto visited =
      (*r)->visit_events(f.first_event, f.first_event + 1,
                         [](std::uint64_t, std::span<const std::uint8_t>) { return true; });
  REQUIRE_FALSE(visited.has_value());
  CHECK(visited.error().kind == vs::TraceErrorKind::kChecksumMismatch);
  CHECK(
      visited.error().message ==
      fmt::format(
          "test.vtrace: frame 1 at offset {}: the decompressed content does not match its XXH3-128",
          f.file_offset));
  auto v = (*r)->verify_all();
  REQUIRE_FALSE(v.has_value());
  CHECK(v.error().kind == vs::TraceErrorKind::kChecksumMismatch);
  CHECK(v.error().message ==
        fmt::format(
            "test.vtrace: frame 1 at offset {}: the frame's XXH3-128 does not match the footer's",
            f.file_offset));
}

TEST_CASE(
    "a frame's compressed bytes changed where zstd does not look are refused by the footer's "
    "compressed hash",
    "[schema][integrity]") {
  Bytes b = small_trace();
  std::uint64_t offset = 0;
  {
    auto r = open_bytes(b);
    REQUIRE(r.has_value());
    offset = (*r)->frames()[1].file_offset;
  }
  // RFC 8878: bit 4 of the frame header descriptor is unused; a decoder must not interpret it.
  b[offset + 4] ^= 0x10;
  auto r = open_bytes(b);
  REQUIRE(r.has_value());
  const auto& f = (*r)->frames()[1];
  const auto visited =
      (*r)->visit_events(f.first_event, f.first_event + 1,
                         [](std::uint64_t, std::span<const std::uint8_t>) { return true; });
  REQUIRE_FALSE(visited.has_value());
  CHECK(visited.error().message == fmt::format("test.vtrace: frame 1 at offset {}: the compressed "
                                               "bytes do not match the footer's XXH3-128",
                                               offset));
  auto v = (*r)->verify_all();
  REQUIRE_FALSE(v.has_value());
  CHECK(v.error().message ==
        fmt::format(
            "test.vtrace: frame 1 at offset {}: the frame's XXH3-128 does not match the footer's",
            offset));
  // zstd itself decodes the frame as before: only the footer's hash tells.
  b.resize(static_cast<std::size_t>(footer_offset(b)));
  auto recovered = open_bytes(b);
  REQUIRE(recovered.has_value());
  CHECK(events_read(**recovered) == 40);
}

TEST_CASE("a recovered frame whose content does not match its zstd checksum is refused by the scan",
          "[schema][integrity]") {
  // Without a footer, zstd's content checksum is the only check of a frame's content.
  const Bytes good = small_trace();
  auto r = open_bytes(good);
  REQUIRE(r.has_value());
  const auto& f = (*r)->frames()[1];
  Bytes content(static_cast<std::size_t>(f.content_bytes));
  REQUIRE(ZSTD_decompress(content.data(), content.size(), good.data() + f.file_offset,
                          static_cast<std::size_t>(f.compressed_bytes)) == content.size());
  content[event_filler_byte(content)] ^= 0x01;
  Bytes frame = vs::testing::zstd_frame(content);
  // The original frame's checksum (its last 4 bytes) on the changed content.
  std::memcpy(frame.data() + frame.size() - 4, good.data() + f.file_offset + f.compressed_bytes - 4,
              4);
  Bytes cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(f.file_offset));
  cut.insert(cut.end(), frame.begin(), frame.end());
  auto bad = open_bytes(cut);
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().kind == vs::TraceErrorKind::kChecksumMismatch);
  CHECK(bad.error().message ==
        fmt::format("test.vtrace: frame 1 at offset {}: the zstd content checksum does not match",
                    f.file_offset));
}

TEST_CASE(
    "a trailer that does not describe the footer frame is refused, one without its magic reads as "
    "unfinished",
    "[schema][integrity]") {
  const Bytes good = small_trace();
  const std::uint64_t foff = footer_offset(good);
  const std::size_t trailer = good.size() - vs::kTrailerBytes;
  auto refused = [](const Bytes& b) {
    auto r = open_bytes(b);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().kind == vs::TraceErrorKind::kCorrupt);
    return r.error().message;
  };
  SECTION("footer_offset moved") {
    Bytes b = good;
    const std::uint64_t moved = foff + 8;
    std::memcpy(b.data() + trailer, &moved, 8);
    CHECK_THAT(refused(b),
               Catch::Contains(fmt::format("the trailer's footer (offset {}, ", moved)) &&
                   Catch::Contains(fmt::format("does not end the {}-byte file", good.size())));
  }
  SECTION("footer_size changed") {
    Bytes b = good;
    const std::uint64_t size = good.size() - foff - 8;
    std::memcpy(b.data() + trailer + 8, &size, 8);
    CHECK_THAT(refused(b), Catch::Contains(fmt::format("{} bytes) does not end the", size)));
  }
  SECTION("the footer frame's magic changed") {
    Bytes b = good;
    b[foff] ^= 0x01;
    CHECK_THAT(refused(b), Catch::Contains(fmt::format("no footer frame of {} bytes at offset {}",
                                                       good.size() - foff, foff)));
  }
  SECTION("the footer frame's size changed") {
    Bytes b = good;
    b[foff + 4] ^= 0x01;
    CHECK_THAT(refused(b), Catch::Contains(fmt::format("no footer frame of {} bytes at offset {}",
                                                       good.size() - foff, foff)));
  }
  SECTION("the trailer magic gone: an unfinished recording") {
    Bytes b = good;
    b[b.size() - 1] ^= 0x01;
    auto r = open_bytes(b);
    REQUIRE(r.has_value());
    CHECK_FALSE((*r)->complete());
    CHECK((*r)->event_count() == 40);
    auto v = (*r)->verify_all();
    REQUIRE_FALSE(v.has_value());
    CHECK(v.error().kind == vs::TraceErrorKind::kTruncated);
  }
}

TEST_CASE("a header frame prefix that is not vtrace's is refused as not a trace",
          "[schema][integrity]") {
  Bytes b = small_trace();
  auto r = [&] { return open_bytes(b); };
  SECTION("another skippable frame magic") {
    b[0] ^= 0x01;  // 0x184D2A5A -> 0x184D2A5B: still a zstd skippable frame, not our header
    REQUIRE_FALSE(r().has_value());
    CHECK(r().error().kind == vs::TraceErrorKind::kNotATrace);
    CHECK(r().error().message == "test.vtrace does not start with a vtrace header frame");
  }
  SECTION("the content magic changed") {
    b[8 + 2] ^= 0x01;
    REQUIRE_FALSE(r().has_value());
    CHECK(r().error().kind == vs::TraceErrorKind::kNotATrace);
    CHECK(r().error().message == "test.vtrace: the header frame lacks the vtrace magic");
  }
  SECTION("the header frame's size changed: its hash is no longer where the size says") {
    // Without the footer, whose copy of the header hash would catch it too.
    b.resize(static_cast<std::size_t>(footer_offset(b)));
    b[4] ^= 0x01;
    REQUIRE_FALSE(r().has_value());
    CHECK(r().error().kind == vs::TraceErrorKind::kChecksumMismatch);
    CHECK_THAT(r().error().message,
               Catch::Contains("the header frame at offset 0 does not match its checksum"));
  }
}

TEST_CASE("a recovered trace whose header does not match its hash is refused by open",
          "[schema][integrity]") {
  // No footer: the header's own hash is the only check (the footer's copy is gone with it).
  Bytes b = small_trace();
  b.resize(static_cast<std::size_t>(footer_offset(b)));
  const auto it =
      std::search(b.begin(), b.end(), std::begin("integrity_test"), std::end("integrity_test") - 1);
  REQUIRE(it != b.end());
  *it = static_cast<std::uint8_t>(*it ^ 0x01);
  auto r = open_bytes(b);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().kind == vs::TraceErrorKind::kChecksumMismatch);
  CHECK(r.error().message ==
        "test.vtrace: the header frame at offset 0 does not match its checksum");
}
