// repair_trace (schema/trace_repair.h): a cut, crashed or damaged trace becomes a valid one that
// holds the longest valid prefix of its events; the report says what was dropped and why; an
// intact trace is copied byte for byte.
#include "vtrace/schema/trace_repair.h"

#include <container_generated.h>

#include <fmt/format.h>

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>

#include "schema/container_test_support.h"
#include "vtrace/schema/event_links.h"
#include "vtrace/schema/events.h"

namespace vs = vtrace::schema;
using vs::testing::Bytes;
using vs::testing::MemorySink;

namespace {

Bytes golden_bytes(const char* name) {
  const auto path = std::filesystem::path(VTRACE_SOURCE_DIR) / "traces" / name;
  std::ifstream in(path, std::ios::binary);
  if (!in) FAIL("cannot read " << path);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::unique_ptr<vs::TraceReader> open_ok(Bytes bytes) {
  auto r = vs::TraceReader::open(vs::memory_source(std::move(bytes), "in.vtrace"));
  if (!r) FAIL("open failed: " << r.error().message);
  return std::move(*r);
}

std::vector<Bytes> events_of(vs::TraceReader& r, std::uint64_t count) {
  std::vector<Bytes> out;
  auto ok = r.visit_events(0, count, [&](std::uint64_t, std::span<const std::uint8_t> e) {
    out.emplace_back(e.begin(), e.end());
    return true;
  });
  if (!ok) FAIL("visit_events failed: " << ok.error().message);
  return out;
}

// The golden decode trace (events with upload and readback payloads) re-written in small frames
// with a flush every 7 events, so that cuts land in many frames and inside flushed blocks.
Bytes multi_frame(const char* golden = "decode-short-v1.2.vtrace") {
  auto in = open_ok(golden_bytes(golden));
  vs::TraceWriterOptions o;
  o.frame_target_bytes = 6000;
  auto state = std::make_shared<MemorySink::State>();
  auto w = vs::TraceWriter::create(std::make_unique<MemorySink>(state), in->header(), o);
  REQUIRE(w.has_value());
  const auto events = events_of(*in, in->event_count());
  for (std::size_t n = 0; n < events.size(); ++n) {
    for (const auto& id : vs::event_links(*vs::event_of(events[n])).payloads) {
      auto bytes = in->blob(id);
      REQUIRE(bytes.has_value());
      REQUIRE((*w)->put_blob(*bytes, 2).has_value());
    }
    REQUIRE((*w)->append_event(events[n]).has_value());
    if (n % 7 == 6) REQUIRE((*w)->flush().has_value());
  }
  REQUIRE((*w)->close(in->summary()).has_value());
  std::lock_guard lk(state->mu);
  return state->bytes;
}

struct Repaired {
  vs::TraceResult<vs::RepairReport> report;
  Bytes bytes;
  int outputs_opened = 0;
};

Repaired repair(const Bytes& input) {
  Repaired r{std::unexpected(vs::TraceError{}), {}, 0};
  auto source = vs::memory_source(input, "in.vtrace");
  auto state = std::make_shared<MemorySink::State>();
  r.report = vs::repair_trace(*source, [&]() -> vs::TraceResult<std::unique_ptr<vs::ByteSink>> {
    ++r.outputs_opened;
    return std::make_unique<MemorySink>(state);
  });
  std::lock_guard lk(state->mu);
  r.bytes = state->bytes;
  if (r.report) CHECK(state->committed);
  return r;
}

// What replay of `input` gets: the events the reader recovers, up to the first that names a
// payload it does not hold.
std::uint64_t replayable_events(const Bytes& input) {
  auto r = vs::TraceReader::open(vs::memory_source(input, "in.vtrace"));
  if (!r) return 0;
  std::uint64_t n = 0;
  auto ok = (*r)->visit_events(0, (*r)->event_count(),
                               [&](std::uint64_t, std::span<const std::uint8_t> e) {
                                 for (const auto& id : vs::event_links(*vs::event_of(e)).payloads) {
                                   auto blob = (*r)->blob(id);
                                   if (!blob) return false;
                                 }
                                 ++n;
                                 return true;
                               });
  REQUIRE(ok.has_value());
  return n;
}

// The repaired bytes verify, hold `events` events equal to the input's first ones, and a summary
// rebuilt from them.
// Checks `r` against `original`'s first `events` events (a valid, complete trace holding them
// and their payloads, each stored in the encoding the original used); returns how many of those
// payloads were stored as byte planes.
std::uint64_t check_repaired(const Bytes& original, const Repaired& r, std::uint64_t events) {
  INFO((r.report ? std::string() : r.report.error().message));
  REQUIRE(r.report.has_value());
  CHECK(r.report->events_kept == events);
  auto out = open_ok(r.bytes);
  CHECK(out->complete());
  auto verified = out->verify_all();
  INFO((verified ? std::string() : verified.error().message));
  CHECK(verified.has_value());
  REQUIRE(out->event_count() == events);
  auto in = open_ok(original);
  CHECK(events_of(*out, events) == events_of(*in, events));
  CHECK(out->header().format_minor == in->header().format_minor);
  CHECK(out->header().metadata == in->header().metadata);
  CHECK(out->header().producer == in->header().producer);
  const auto* summary = vs::read_trace_summary(out->summary());
  REQUIRE(summary != nullptr);
  CHECK(summary->events() == events);
  CHECK(summary->blobs() == out->totals().blobs);
  CHECK(r.report->payloads_kept == out->totals().blobs);
  CHECK(r.report->output_bytes == r.bytes.size());
  std::uint64_t counted = 0;
  for (const auto* c : *summary->event_counts()) counted += c->count();
  CHECK(counted == events);
  // The marker says what was kept and each part dropped, in the report's order.
  std::string marker = fmt::format("vtrace repair kept events 0 to {}", events - 1);
  for (std::size_t i = 0; i < r.report->drops.size(); ++i) {
    marker += (i == 0 ? "; dropped " : "; ") + vs::repair_drop_where(r.report->drops[i]);
  }
  REQUIRE(summary->repaired() != nullptr);
  CHECK(summary->repaired()->str() == marker);
  CHECK(summary->interrupted_by() == nullptr);
  // Every payload an event names is there, with the original's bytes and encoding.
  CHECK(replayable_events(r.bytes) == events);
  std::set<vs::BlobId> payloads;
  for (const Bytes& e : events_of(*in, events)) {
    for (const vs::BlobId& id : vs::event_links(*vs::event_of(e)).payloads) payloads.insert(id);
  }
  std::uint64_t planes = 0;
  for (const vs::BlobId& id : payloads) {
    INFO("payload " << id.hex());
    CHECK(out->blob_encoding(id) == in->blob_encoding(id));
    const auto kept = out->blob(id);
    const auto had = in->blob(id);
    REQUIRE((kept.has_value() && had.has_value()));
    CHECK(*kept == *had);
    if (in->blob_encoding(id) == vs::BlobEncoding::kBytePlanes16) ++planes;
  }
  return planes;
}

}  // namespace

TEST_CASE("repair of an intact trace copies it byte for byte and says nothing to repair",
          "[schema][repair]") {
  for (const Bytes& input :
       {golden_bytes("tiny.vtrace"), golden_bytes("decode-short-v1.2.vtrace"), multi_frame()}) {
    const Repaired r = repair(input);
    REQUIRE(r.report.has_value());
    CHECK(r.report->nothing_to_repair);
    CHECK(r.report->drops.empty());
    CHECK(r.bytes == input);
    CHECK(r.report->events_kept == open_ok(input)->event_count());
    const auto repaired_reader = open_ok(r.bytes);  // owns the summary's bytes
    const auto* summary = vs::read_trace_summary(repaired_reader->summary());
    REQUIRE(summary != nullptr);
    CHECK(summary->repaired() == nullptr);  // nothing was repaired
  }
}

TEST_CASE("repair of a trace cut at any offset keeps every replayable event and verifies",
          "[schema][repair]") {
  const Bytes full = multi_frame();
  auto reader = open_ok(full);
  REQUIRE(reader->frames().size() >= 6);
  const std::uint64_t header_end = 8 + vs::testing::read_u32(full, 4);
  std::uint64_t repaired = 0, refused = 0, planes = 0;
  for (std::uint64_t cut = header_end; cut < full.size(); cut += 97) {
    INFO("cut at " << cut << " of " << full.size());
    const Bytes input(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(cut));
    const std::uint64_t expected = replayable_events(input);
    const Repaired r = repair(input);
    if (expected == 0) {
      REQUIRE_FALSE(r.report.has_value());
      CHECK(r.report.error().kind == vs::TraceErrorKind::kTruncated);
      CHECK(r.report.error().message.find("nothing is recoverable") != std::string::npos);
      CHECK(r.outputs_opened == 0);
      ++refused;
      continue;
    }
    planes += check_repaired(full, r, expected);
    CHECK_FALSE(r.report->nothing_to_repair);
    CHECK_FALSE(r.report->events_in_input.has_value());
    // What the cut lost is named: the cut frame's tail, or the events after a lost payload.
    if (r.report->events_kept < reader->event_count()) {
      REQUIRE_FALSE(r.report->drops.empty());
      for (const auto& d : r.report->drops) {
        CHECK(d.first_event <= reader->event_count());
        CHECK(d.file_offset + d.bytes <= cut);
        CHECK_FALSE(d.reason.empty());
      }
    }
    ++repaired;
  }
  CHECK(repaired > 100);
  CHECK(refused >= 1);  // a cut inside the first frame before its first flush keeps nothing
  CHECK(planes > 0);    // f16 payloads in byte planes were among those compared
}

TEST_CASE("repair of a cut frame names the frame, the offset of its lost tail and the bytes",
          "[schema][repair]") {
  const Bytes full = multi_frame();
  auto reader = open_ok(full);
  const vs::FrameInfo& f = reader->frames()[3];
  const std::uint64_t cut = f.file_offset + f.compressed_bytes - 10;
  const Bytes input(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(cut));
  auto cut_reader = open_ok(input);
  const Repaired r = repair(input);
  (void)check_repaired(full, r, replayable_events(input));
  REQUIRE(r.report->drops.size() >= 1);
  const auto& d = r.report->drops.front();
  CHECK(d.part == vs::RepairDrop::Part::kCutFrame);
  REQUIRE(d.frame_index.has_value());
  CHECK(*d.frame_index == 3);
  const auto& recovered = cut_reader->frames().back();
  CHECK(d.file_offset == recovered.file_offset + recovered.compressed_bytes);
  CHECK(d.bytes == cut - d.file_offset);
  CHECK(d.first_event == cut_reader->event_count());
  CHECK_FALSE(d.events_lost.has_value());  // no footer: unknown after the last event recovered
  CHECK(d.reason.find("frame 3") != std::string::npos);
}

TEST_CASE(
    "repair of a damaged middle frame keeps the frames before it and counts the loss from the "
    "footer",
    "[schema][repair]") {
  const Bytes full = multi_frame();
  auto reader = open_ok(full);
  const auto frames = reader->frames();
  REQUIRE(frames.size() >= 6);
  Bytes damaged = full;
  damaged[frames[2].file_offset + frames[2].compressed_bytes / 2] ^= 0x10;

  SECTION("with the footer: the frame index says what each lost frame held") {
    const Repaired r = repair(damaged);
    (void)check_repaired(full, r, frames[2].first_event);
    REQUIRE(r.report->events_in_input.has_value());
    CHECK(*r.report->events_in_input == reader->event_count());
    REQUIRE(r.report->drops.size() == 2);
    const auto& d = r.report->drops[0];
    CHECK(d.part == vs::RepairDrop::Part::kDamagedFrame);
    CHECK(d.frame_index == std::optional<std::uint64_t>(2));
    CHECK(d.file_offset == frames[2].file_offset);
    CHECK(d.bytes == frames[2].compressed_bytes);
    CHECK(d.first_event == frames[2].first_event);
    CHECK(d.events_lost == std::optional<std::uint64_t>(frames[2].event_count));
    CHECK(d.reason.find(fmt::format("frame 2 at offset {}", frames[2].file_offset)) !=
          std::string::npos);
    const auto& later = r.report->drops[1];
    CHECK(later.part == vs::RepairDrop::Part::kLaterFrames);
    CHECK(later.frame_index == std::optional<std::uint64_t>(3));
    CHECK(later.file_offset == frames[3].file_offset);
    CHECK(later.bytes == vs::testing::footer_offset(full) - frames[3].file_offset);
    CHECK(later.first_event == frames[3].first_event);
    CHECK(later.events_lost ==
          std::optional<std::uint64_t>(reader->event_count() - frames[3].first_event));
    // The marker in the repaired trace's summary, spelled out once.
    const auto repaired_reader = open_ok(r.bytes);  // owns the summary's bytes
    const auto* summary = vs::read_trace_summary(repaired_reader->summary());
    REQUIRE(summary != nullptr);
    REQUIRE(summary->repaired() != nullptr);
    CHECK(summary->repaired()->str() ==
          fmt::format("vtrace repair kept events 0 to {}; dropped damaged frame 2 at offset {} ({} "
                      "bytes): {} events lost (events {} to {}); later frames 3 at offset {} ({} "
                      "bytes): {} events lost (events {} to {})",
                      frames[2].first_event - 1, frames[2].file_offset, frames[2].compressed_bytes,
                      frames[2].event_count, frames[2].first_event, frames[3].first_event - 1,
                      frames[3].file_offset, later.bytes,
                      reader->event_count() - frames[3].first_event, frames[3].first_event,
                      reader->event_count() - 1));
  }
  SECTION("without the footer: the loss is unknown after the last event kept") {
    const Bytes input(damaged.begin(), damaged.begin() + static_cast<std::ptrdiff_t>(
                                                             vs::testing::footer_offset(full)));
    // The reader alone cannot open it: its recovery scan meets the damaged frame.
    CHECK_FALSE(vs::TraceReader::open(vs::memory_source(input, "in.vtrace")).has_value());
    const Repaired r = repair(input);
    (void)check_repaired(full, r, frames[2].first_event);
    CHECK_FALSE(r.report->events_in_input.has_value());
    REQUIRE(r.report->drops.size() == 1);
    const auto& d = r.report->drops[0];
    CHECK(d.part == vs::RepairDrop::Part::kDamagedFrame);
    CHECK(d.frame_index == std::optional<std::uint64_t>(2));
    CHECK(d.file_offset == frames[2].file_offset);
    CHECK(d.bytes == input.size() - frames[2].file_offset);
    CHECK(d.first_event == frames[2].first_event);
    CHECK_FALSE(d.events_lost.has_value());
    CHECK_THAT(d.reason, Catch::EndsWith("; everything after it is dropped with it"));
    // What the input was: the salvage scan's note, with what it recovered before the damage.
    CHECK_THAT(r.report->input_state,
               Catch::Contains(fmt::format("frame 2 at offset {}", frames[2].file_offset)) &&
                   Catch::EndsWith(fmt::format("(recovered {} events from the 2 complete frames "
                                               "before it)",
                                               frames[2].first_event)));
  }
}

TEST_CASE("repair of a trace whose footer is damaged keeps every event and replaces the footer",
          "[schema][repair]") {
  const Bytes full = multi_frame();
  auto reader = open_ok(full);
  const std::uint64_t foff = vs::testing::footer_offset(full);
  Bytes damaged = full;
  damaged[foff + 20] ^= 0x01;  // inside the footer table: its checksum no longer matches
  const Repaired r = repair(damaged);
  (void)check_repaired(full, r, reader->event_count());
  CHECK(r.report->input_state.find(fmt::format("footer at offset {} is damaged", foff)) !=
        std::string::npos);
  REQUIRE(r.report->drops.size() == 1);
  const auto& d = r.report->drops[0];
  CHECK(d.part == vs::RepairDrop::Part::kFooter);
  CHECK(d.file_offset == foff);
  CHECK(d.bytes == full.size() - foff);
  CHECK(d.first_event == reader->event_count());
}

TEST_CASE("repair of a trace that lost a payload keeps the events before the one naming it",
          "[schema][repair]") {
  // A recording cut right after an event whose payload's frame the cut lost cannot happen (a
  // payload is written before its event); a payload record damaged behind valid checksums is
  // the way to lose one: its frame, and everything after, is dropped.
  const Bytes full = multi_frame();
  auto reader = open_ok(full);
  // The first frame after frame 0 that holds a payload.
  std::size_t frame = 0;
  for (std::size_t i = 1; i < reader->frames().size(); ++i) {
    if (reader->frames()[i].blob_count > 0) {
      frame = i;
      break;
    }
  }
  REQUIRE(frame > 0);
  const Bytes changed = vs::testing::with_frame_content_changed(full, frame, [&](Bytes& content) {
    // The first record of the frame that is a blob: change one byte of its payload.
    std::size_t at = 0;
    while (at + 5 <= content.size()) {
      const std::uint32_t len = vs::testing::read_u32(content, at);
      if (content[at + 4] == 2 && len > vs::kBlobRecordHeaderBytes) {
        content[at + 5 + vs::kBlobRecordHeaderBytes] ^= 0x01;
        return;
      }
      at += 5 + len;
    }
    FAIL("no blob record in the frame");
  });
  const Repaired r = repair(changed);
  (void)check_repaired(full, r, reader->frames()[frame].first_event);
  REQUIRE_FALSE(r.report->drops.empty());
  CHECK(r.report->drops[0].part == vs::RepairDrop::Part::kDamagedFrame);
  CHECK(r.report->drops[0].frame_index == std::optional<std::uint64_t>(frame));
  CHECK(r.report->drops[0].reason.find("decodes to bytes whose XXH3-128 is") != std::string::npos);
}

TEST_CASE("repair of a 1.0 trace keeps the 1.0 layout", "[schema][repair]") {
  const Bytes full = golden_bytes("decode-short.vtrace");
  auto reader = open_ok(full);
  REQUIRE(reader->header().format_minor == 0);
  const Bytes input(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(full.size() - 100));
  const Repaired r = repair(input);
  (void)check_repaired(full, r, replayable_events(input));
  CHECK(open_ok(r.bytes)->header().format_minor == 0);
}

TEST_CASE("repair refuses a trace whose header is damaged and writes nothing", "[schema][repair]") {
  Bytes damaged = golden_bytes("tiny-v1.2.vtrace");
  damaged[20] ^= 0x04;  // inside the header table
  const Repaired r = repair(damaged);
  REQUIRE_FALSE(r.report.has_value());
  const auto kind = r.report.error().kind;
  CHECK(
      (kind == vs::TraceErrorKind::kChecksumMismatch || kind == vs::TraceErrorKind::kVerifyFailed));
  CHECK(r.outputs_opened == 0);
}

TEST_CASE(
    "repair refuses a header whose minor was lowered to 0, which only the footer's copy of its "
    "hash catches",
    "[schema][repair]") {
  // Salvage mode reads no footer; the header, at minor 0, claims no hash of its own. Repairing it
  // anyway would write a "1.0" trace of the 1.2 events, and verify would pass the result.
  Bytes damaged = golden_bytes("tiny-v1.2.vtrace");
  const std::size_t table_at = 16;  // skippable prefix, then "VTRACE\0\1"
  const std::size_t table_end = 8 + vs::testing::read_u32(damaged, 4) - vs::kHeaderHashBytes;
  Bytes table(damaged.begin() + static_cast<std::ptrdiff_t>(table_at),
              damaged.begin() + static_cast<std::ptrdiff_t>(table_end));
  const auto* h = flatbuffers::GetRoot<vtrace::container::Header>(table.data());
  const std::uint8_t* minor = reinterpret_cast<const flatbuffers::Table*>(h)->GetAddressOf(
      vtrace::container::Header::VT_FORMAT_MINOR);
  REQUIRE(minor != nullptr);
  const std::size_t at = table_at + static_cast<std::size_t>(minor - table.data());
  REQUIRE(damaged[at] == 2);
  damaged[at] = 0;
  const Repaired r = repair(damaged);
  REQUIRE_FALSE(r.report.has_value());
  CHECK(r.report.error().kind == vs::TraceErrorKind::kChecksumMismatch);
  CHECK_THAT(r.report.error().message,
             Catch::Contains("the header frame at offset 0 does not match its checksum"));
  CHECK(r.outputs_opened == 0);
}

TEST_CASE(
    "repair of a recovered trace whose event names a payload it lacks keeps the events before it",
    "[schema][repair]") {
  // What a recording that lost a payload leaves (the cut copies of tests/replayer do the same):
  // the payload of the first EncodeUpload after event 20 that no earlier event named was never
  // written, and there is no footer.
  auto in = open_ok(golden_bytes("decode-short-v1.2.vtrace"));
  const auto events = events_of(*in, in->event_count());
  std::optional<std::uint64_t> lost;
  vs::BlobId lost_id;
  std::set<vs::BlobId> named;
  auto state = std::make_shared<MemorySink::State>();
  auto w = vs::TraceWriter::create(std::make_unique<MemorySink>(state), in->header());
  REQUIRE(w.has_value());
  for (std::uint64_t n = 0; n < events.size(); ++n) {
    const auto* event = vs::event_of(events[n]);
    const auto payloads = vs::event_links(*event).payloads;
    if (!lost && n > 20 && event->body_as_EncodeUpload() != nullptr && !payloads.empty() &&
        !named.contains(payloads[0])) {
      lost = n;
      lost_id = payloads[0];
    }
    for (const auto& id : payloads) {
      named.insert(id);
      if (lost && id == lost_id) continue;
      REQUIRE((*w)->put_blob(in->blob(id).value(), 2).has_value());
    }
    REQUIRE((*w)->append_event(events[n]).has_value());
  }
  REQUIRE(lost.has_value());
  REQUIRE((*w)->flush().has_value());
  Bytes written;
  {
    std::lock_guard lk(state->mu);
    written = state->bytes;  // no footer: the writer is not closed yet
  }
  REQUIRE((*w)->close({}).has_value());

  const Repaired r = repair(written);
  (void)check_repaired(written, r, *lost);
  // The flushed but unfinished last frame, then the events cut off at the lost payload.
  REQUIRE(r.report->drops.size() == 2);
  CHECK(r.report->drops[0].part == vs::RepairDrop::Part::kCutFrame);
  CHECK(r.report->drops[0].bytes == 0);
  CHECK_THAT(r.report->drops[0].reason, Catch::Contains("ends without its zstd end"));
  const auto& d = r.report->drops[1];
  CHECK(d.part == vs::RepairDrop::Part::kEvents);
  CHECK(d.first_event == *lost);
  CHECK(d.events_lost == std::optional<std::uint64_t>(events.size() - *lost));
  CHECK(d.payloads_missing == std::vector<vs::BlobId>{lost_id});
  CHECK(d.reason ==
        fmt::format("event {} (EncodeUpload) names payload {}, which the file does not hold", *lost,
                    lost_id.hex()));
}

TEST_CASE("repair_output_for names the trace, or a sibling when something else took its name",
          "[schema]") {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("vtrace-repair-output-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  CHECK(vs::repair_output_for(dir / "new.vtrace") == dir / "new.vtrace");  // nothing there
  { std::ofstream(dir / "file.vtrace") << "old"; }
  CHECK(vs::repair_output_for(dir / "file.vtrace") == dir / "file.vtrace");  // replaced
  std::filesystem::create_directory(dir / "taken.vtrace");
  CHECK(vs::repair_output_for(dir / "taken.vtrace") == dir / "taken.repaired.vtrace");
  std::filesystem::remove_all(dir);
}

TEST_CASE("recoverable_partial names a .partial that holds bytes, and nothing else", "[schema]") {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("vtrace-recoverable-partial-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto trace = dir / "run.vtrace";
  CHECK_FALSE(vs::recoverable_partial(trace).has_value());  // none
  { std::ofstream(dir / "run.vtrace.partial"); }
  CHECK_FALSE(vs::recoverable_partial(trace).has_value());  // empty: nothing to recover
  { std::ofstream(dir / "run.vtrace.partial") << "bytes"; }
  CHECK(vs::recoverable_partial(trace) == std::optional(dir / "run.vtrace.partial"));
  std::filesystem::create_directory(dir / "dir.vtrace.partial");
  CHECK_FALSE(vs::recoverable_partial(dir / "dir.vtrace").has_value());  // not a regular file
  std::filesystem::remove_all(dir);
}

TEST_CASE("repair of a trace whose footer indexes a frame wrongly keeps every event and says the "
          "footer lost none",
          "[schema][repair]") {
  // A footer whose checksum holds but whose frame 0 hash is wrong: the trace opens complete,
  // verify_all fails, and the frames themselves are sound.
  const Bytes full = multi_frame();
  auto reader = open_ok(full);
  const Bytes input = vs::testing::with_rebuilt_footer(
      full,
      [](auto& frames, auto&) {
        const auto& f = frames[0];
        frames[0] = vtrace::container::FrameEntry(
            f.file_offset(), f.compressed_bytes(), f.content_bytes(), f.first_event(),
            f.event_count(), f.blob_count(), vtrace::container::Hash128(1, 2),
            f.compressed_hash());
      },
      true);
  const Repaired r = repair(input);
  REQUIRE(r.report.has_value());
  CHECK_FALSE(r.report->nothing_to_repair);
  CHECK(r.report->events_kept == reader->event_count());
  REQUIRE(r.report->drops.size() == 1);
  const auto& d = r.report->drops[0];
  CHECK(d.part == vs::RepairDrop::Part::kFooter);
  CHECK(d.events_lost == std::optional<std::uint64_t>(0));
  CHECK_THAT(vs::repair_drop_where(d), Catch::EndsWith(": no events lost"));
}
