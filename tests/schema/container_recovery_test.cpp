// Recovery of cut traces whose frames hold large payloads: every payload whose record lies wholly
// inside the recovered data is found with its bytes, the rest are kMissingBlob, and the totals of a
// recovered file count only what was recovered.
#include <fmt/format.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <set>
#include <vector>

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

// One record as the test wrote it, and where the full trace's frames put it.
struct Written {
  bool blob = false;
  std::uint64_t record_bytes = 0;  // prefix included
  std::size_t payload = 0;         // index into the payloads (blob records)
  std::uint64_t frame = 0;
  std::uint64_t end = 0;           // end of the record inside its frame's content
};

struct CutTrace {
  Bytes bytes;
  std::vector<Bytes> payloads;
  std::vector<vs::BlobId> ids;
  std::vector<Written> records;
};

// Frames of 128 KiB with payloads of 80 to 112 KiB (bigger than half a frame, the shape of the
// recorder's weight uploads against its 2 MiB frames), both f16 (compressed zstd blocks) and
// random bytes (raw zstd blocks), between runs of events, with a flush every 7 events so that cut
// frames have decodable prefixes.
CutTrace large_payload_trace() {
  CutTrace t;
  std::mt19937 rng(5);
  vs::TraceWriterOptions o;
  o.frame_target_bytes = 128u << 10;
  auto state = std::make_shared<MemorySink::State>();
  auto writer = vs::TraceWriter::create(std::make_unique<MemorySink>(state), vs::TraceHeaderInfo{}, o);
  REQUIRE(writer.has_value());
  vs::TraceWriter& w = **writer;
  std::uint32_t ordinal = 0;
  for (std::uint32_t i = 0; i < 24; ++i) {
    const std::size_t bytes = (80u << 10) + (rng() % 17u) * 2048u;
    Bytes payload;
    std::uint32_t element_bytes = 2;
    if (i % 3 == 2) {
      payload.resize(bytes);
      for (auto& b : payload) b = static_cast<std::uint8_t>(rng());
      element_bytes = 1;
    } else {
      payload = normal_f16(bytes / 2, i);
    }
    t.ids.push_back(w.put_blob(payload, element_bytes).value());
    t.records.push_back({true, vs::kRecordPrefixBytes + vs::kBlobRecordHeaderBytes + payload.size(),
                         t.payloads.size(), 0, 0});
    t.payloads.push_back(std::move(payload));
    const auto events = static_cast<std::uint32_t>(3 + rng() % 20u);
    for (std::uint32_t k = 0; k < events; ++k, ++ordinal) {
      const Bytes e = synthetic_event(ordinal);
      REQUIRE(w.append_event(e).value() == ordinal);
      t.records.push_back({false, vs::kRecordPrefixBytes + e.size(), 0, 0, 0});
      if (ordinal % 7 == 0) REQUIRE(w.flush().has_value());
    }
  }
  REQUIRE(w.close({}).has_value());
  {
    std::lock_guard lk(state->mu);
    t.bytes = state->bytes;
  }
  // Place every record in the frames of the full trace.
  auto full = vs::TraceReader::open(vs::memory_source(t.bytes, "full.vtrace"), synthetic_options());
  REQUIRE(full.has_value());
  const auto& frames = (*full)->frames();
  std::size_t fi = 0;
  std::uint64_t at = 0;
  for (auto& r : t.records) {
    if (at == frames[fi].content_bytes) {
      ++fi;
      at = 0;
    }
    REQUIRE(fi < frames.size());
    at += r.record_bytes;
    r.frame = fi;
    r.end = at;
  }
  REQUIRE(at == frames.back().content_bytes);
  REQUIRE(fi + 1 == frames.size());
  return t;
}

vs::TraceResult<std::unique_ptr<vs::TraceReader>> open_prefix(const Bytes& full, std::uint64_t cut) {
  return vs::TraceReader::open(
      vs::memory_source(Bytes(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(cut)), "cut.vtrace"),
      synthetic_options());
}

void put_le(Bytes& out, std::uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

// The header frame of an empty trace: a file that holds only it, to which a test appends data
// frames made by hand.
Bytes header_only() {
  auto state = std::make_shared<MemorySink::State>();
  auto writer = vs::TraceWriter::create(std::make_unique<MemorySink>(state), {}, {});
  REQUIRE(writer.has_value());
  REQUIRE((*writer)->close({}).has_value());
  std::lock_guard lk(state->mu);
  Bytes header = state->bytes;
  header.resize(8 + vs::testing::read_u32(header, 4));
  return header;
}

// The records of synthetic events [from, to).
Bytes event_records(std::uint32_t from, std::uint32_t to) {
  Bytes out;
  for (std::uint32_t ordinal = from; ordinal < to; ++ordinal) {
    const Bytes e = synthetic_event(ordinal);
    put_le(out, e.size(), 4);
    out.push_back(static_cast<std::uint8_t>(vs::RecordKind::kEvent));
    out.insert(out.end(), e.begin(), e.end());
  }
  return out;
}

// The start of a zstd frame made by hand: no content size, not single segment, content checksum,
// window 2^17. Blocks follow.
void put_frame_header(Bytes& file) {
  put_le(file, 0xFD2FB528u, 4);
  file.push_back(0x04);
  file.push_back(7u << 3);
}

}  // namespace

TEST_CASE("a cut trace with payloads larger than half a frame finds every payload it recovered", "[schema]") {
  VTRACE_SKIP_UNDER_TSAN("its loop cuts and reads traces on one thread: nothing for TSan");
  const CutTrace t = large_payload_trace();
  const Bytes& full = t.bytes;
  auto whole = vs::TraceReader::open(vs::memory_source(full, "full.vtrace"), synthetic_options());
  REQUIRE(whole.has_value());
  const auto frames = (*whole)->frames();
  REQUIRE(frames.size() >= 8);
  const std::uint64_t data_begin = frames.front().file_offset;
  const std::uint64_t data_end = frames.back().file_offset + frames.back().compressed_bytes;

  std::set<std::uint64_t> cuts;
  for (std::uint64_t c = data_begin; c <= data_end; c += 3989) cuts.insert(c);
  for (const auto& f : frames) {
    for (std::uint64_t d = 0; d < 6; ++d) {
      cuts.insert(f.file_offset + f.compressed_bytes - d);
      cuts.insert(f.file_offset + d);
    }
  }
  std::uint64_t found_in_cut_frames = 0;
  std::uint64_t missing = 0;
  for (const std::uint64_t cut : cuts) {
    INFO("cut at " << cut << " of " << full.size());
    auto opened = open_prefix(full, cut);
    REQUIRE(opened.has_value());
    vs::TraceReader& r = **opened;
    REQUIRE_FALSE(r.complete());
    const auto& got = r.frames();
    std::uint64_t complete_frames = 0;
    for (const auto& f : got) complete_frames += f.complete ? 1 : 0;
    const bool has_cut_frame = !got.empty() && !got.back().complete;
    const std::uint64_t cut_frame_content = has_cut_frame ? got.back().content_bytes : 0;
    for (const auto& rec : t.records) {
      if (!rec.blob) continue;
      const bool inside = rec.frame < complete_frames ||
                          (has_cut_frame && rec.frame == complete_frames && rec.end <= cut_frame_content);
      const vs::BlobId id = t.ids[rec.payload];
      INFO("payload " << rec.payload << " in frame " << rec.frame << ", record ends at " << rec.end);
      auto b = r.blob(id);
      if (inside) {
        REQUIRE(b.has_value());
        CHECK((*b == t.payloads[rec.payload]));  // parenthesized: no 100 KiB dump on failure
        if (rec.frame == complete_frames) ++found_in_cut_frames;
      } else {
        REQUIRE_FALSE(b.has_value());
        CHECK(b.error().kind == vs::TraceErrorKind::kMissingBlob);
        ++missing;
      }
    }
  }
  CHECK(found_in_cut_frames > 0);  // some payloads came from a cut frame's decodable prefix
  CHECK(missing > 0);
}

TEST_CASE("the totals of a cut trace count only the recovered frames and prefix", "[schema]") {
  VTRACE_SKIP_UNDER_TSAN("its loop cuts and reads traces on one thread: nothing for TSan");
  const CutTrace t = large_payload_trace();
  const Bytes& full = t.bytes;
  auto whole = vs::TraceReader::open(vs::memory_source(full, "full.vtrace"), synthetic_options());
  REQUIRE(whole.has_value());
  const auto frames = (*whole)->frames();
  const std::uint64_t data_begin = frames.front().file_offset;
  const std::uint64_t data_end = frames.back().file_offset + frames.back().compressed_bytes;

  std::uint64_t prefixes_checked = 0;
  for (std::uint64_t cut = data_begin + 1; cut < data_end; cut += 7919) {
    INFO("cut at " << cut << " of " << full.size());
    auto opened = open_prefix(full, cut);
    REQUIRE(opened.has_value());
    vs::TraceReader& r = **opened;
    const auto& got = r.frames();
    const vs::TraceTotals totals = r.totals();
    std::uint64_t compressed = 0;
    for (const auto& f : got) compressed += f.compressed_bytes;
    CHECK(totals.compressed_bytes == compressed);
    CHECK(totals.file_bytes == cut);
    CHECK(totals.compressed_bytes <= cut - data_begin);
    // Complete frames count whole, as the full trace indexes them.
    for (const auto& f : got) {
      if (!f.complete) continue;
      const auto same = std::find_if(frames.begin(), frames.end(),
                                     [&](const vs::FrameInfo& g) { return g.file_offset == f.file_offset; });
      REQUIRE(same != frames.end());
      CHECK(f.compressed_bytes == same->compressed_bytes);
      CHECK(f.content_bytes == same->content_bytes);
    }
    // The payload totals are those of the payloads the reader holds.
    std::uint64_t raw = 0;
    std::uint64_t blobs = 0;
    for (std::size_t i = 0; i < t.ids.size(); ++i) {
      auto b = r.blob(t.ids[i]);
      if (!b) continue;
      ++blobs;
      raw += b->size();
    }
    CHECK(totals.blobs == blobs);
    CHECK(totals.payload_raw_bytes == raw);
    if (got.empty() || got.back().complete) continue;
    // The cut frame counts the compressed bytes of its recovered prefix: exactly those bytes
    // recover the same content, one byte fewer recovers less.
    const vs::FrameInfo& last = got.back();
    CHECK(last.file_offset == r.recovery().cut_offset);
    CHECK(last.file_offset + last.compressed_bytes <= cut);
    CHECK((last.compressed_bytes == 0) == (last.content_bytes == 0));
    if (last.content_bytes == 0) continue;
    auto exact = open_prefix(full, last.file_offset + last.compressed_bytes);
    REQUIRE(exact.has_value());
    REQUIRE_FALSE((*exact)->frames().empty());
    CHECK((*exact)->frames().back().content_bytes == last.content_bytes);
    CHECK((*exact)->frames().back().compressed_bytes == last.compressed_bytes);
    auto shorter = open_prefix(full, last.file_offset + last.compressed_bytes - 1);
    REQUIRE(shorter.has_value());
    REQUIRE_FALSE((*shorter)->frames().empty());
    CHECK((*shorter)->frames().back().content_bytes < last.content_bytes);
    ++prefixes_checked;
  }
  CHECK(prefixes_checked > 0);
}

TEST_CASE("a cut frame whose decodable prefix ends inside a record's 5-byte prefix recovers the "
          "records before it",
          "[schema]") {
  // zstd decodes a cut frame up to its last complete block, and a block may end anywhere: here
  // 1 to 4 bytes into the third record's length-and-kind prefix (a frame made by hand: one raw
  // block that is not the last, and the file ends there).
  const Bytes header = header_only();
  const Bytes records = event_records(0, 3);
  const std::size_t third =
      2 * vs::kRecordPrefixBytes + synthetic_event(0).size() + synthetic_event(1).size();
  for (std::size_t stray = 1; stray < vs::kRecordPrefixBytes; ++stray) {
    INFO(stray << " bytes of the third record's prefix");
    const Bytes block(records.begin(), records.begin() + static_cast<std::ptrdiff_t>(third + stray));
    Bytes file = header;
    put_frame_header(file);
    put_le(file, block.size() << 3, 3);  // a raw block, not the last
    file.insert(file.end(), block.begin(), block.end());
    auto r = vs::TraceReader::open(vs::memory_source(file, "cut.vtrace"), synthetic_options());
    REQUIRE(r.has_value());
    CHECK((*r)->event_count() == 2);
    REQUIRE((*r)->frames().size() == 1);
    CHECK_FALSE((*r)->frames().front().complete);
    CHECK((*r)->frames().front().content_bytes == third);
    CHECK_THAT((*r)->recovery().note, Catch::Contains("is cut inside frame 0"));
  }
}

TEST_CASE("a cut frame that decodes to less than the scan recovered is refused, not padded",
          "[schema]") {
  // The file changed between the scan and a read (a recording still being written over, a copy
  // in progress): its second block now needs more bytes than the file holds, so the frame
  // decodes to its first block only.
  Bytes file = header_only();
  const Bytes first = event_records(0, 2);
  const Bytes second = event_records(2, 4);
  put_frame_header(file);
  put_le(file, first.size() << 3, 3);  // raw blocks, neither the last: the frame is cut
  file.insert(file.end(), first.begin(), first.end());
  const std::size_t second_header = file.size();
  put_le(file, second.size() << 3, 3);
  file.insert(file.end(), second.begin(), second.end());

  // A source whose bytes the test changes after the reader opened it.
  class Changing final : public vs::ByteSource {
   public:
    explicit Changing(std::shared_ptr<Bytes> bytes) : bytes_(std::move(bytes)) {}
    std::uint64_t size() const override { return bytes_->size(); }
    vs::TraceResult<void> read_at(std::uint64_t offset,
                                  std::span<std::uint8_t> out) const override {
      if (offset > bytes_->size() || out.size() > bytes_->size() - offset) {
        return std::unexpected(vs::TraceError{vs::TraceErrorKind::kTruncated, "short"});
      }
      std::memcpy(out.data(), bytes_->data() + offset, out.size());
      return {};
    }
    std::string describe() const override { return "changing.vtrace"; }

   private:
    std::shared_ptr<Bytes> bytes_;
  };
  auto bytes = std::make_shared<Bytes>(file);
  auto r = vs::TraceReader::open(std::make_unique<Changing>(bytes), synthetic_options());
  REQUIRE(r.has_value());
  REQUIRE((*r)->event_count() == 4);
  // The second block is now a compressed one that claims 64 bytes more than the file has left:
  // zstd waits for a compressed block whole (a raw one it passes on as it arrives).
  const std::uint64_t claimed = ((second.size() + 64) << 3) | (2u << 1);
  for (std::size_t i = 0; i < 3; ++i) {
    (*bytes)[second_header + i] = static_cast<std::uint8_t>(claimed >> (8 * i));
  }
  const auto read = (*r)->visit_events(0, 4, [](auto, auto) { return true; });
  REQUIRE_FALSE(read.has_value());
  CHECK(read.error().kind == vs::TraceErrorKind::kCorrupt);
  CHECK_THAT(read.error().message,
             Catch::Contains(fmt::format("the cut frame now decodes to {} bytes, fewer than the {} "
                                         "recovered",
                                         first.size(), first.size() + second.size())));
}
