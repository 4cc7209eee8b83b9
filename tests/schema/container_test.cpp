// The .vtrace container: round trips, determinism, seeking, recovery of cut files, corruption
// detection, the zstd command-line tool's view, sink failure, and hostile inputs.
//
// Over ~600 lines on purpose: the container's properties share the writers and byte fixtures at
// the top of this file; container_integrity_test.cpp and container_recovery_test.cpp hold the
// checksum and recovery cases.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <thread>

#include <container_generated.h>
#include <fmt/format.h>
#include <zstd.h>

#include "schema/container_test_support.h"
#include "support/test_support.h"
#include "vtrace/schema/format.h"

namespace vs = vtrace::schema;
using vs::testing::blob_with;
using vs::testing::footer_offset;
using vs::testing::frame_with;
using vs::testing::MemorySink;
using vs::testing::normal_f16;
using vs::testing::put_le64;
using vs::testing::synthetic_event;
using vs::testing::synthetic_options;
using vs::testing::with_rebuilt_footer;
using vs::testing::zstd_frame;

namespace {

using Bytes = std::vector<std::uint8_t>;

struct Written {
  Bytes bytes;
  vs::TraceWriteStats stats;
};

vs::TraceHeaderInfo test_header() {
  vs::TraceHeaderInfo h;
  h.producer = "container_test";
  h.producer_version = "1.2.3";
  h.metadata = {1, 2, 3, 4, 5};
  return h;
}

// Runs `calls` against a writer over a memory sink and closes it with `summary`.
template <typename Calls>
Written write_trace(vs::TraceWriterOptions options, Calls&& calls, Bytes summary = {9, 8, 7},
                    vs::TraceHeaderInfo header = test_header()) {
  auto state = std::make_shared<MemorySink::State>();
  auto writer = vs::TraceWriter::create(std::make_unique<MemorySink>(state), header, options);
  REQUIRE(writer.has_value());
  calls(**writer, *state);
  auto stats = (*writer)->close(summary);
  REQUIRE(stats.has_value());
  std::lock_guard lk(state->mu);
  return Written{state->bytes, *stats};
}

// A multi-frame trace of synthetic events with a f16 payload every 25 events.
Written standard_trace(std::uint64_t frame_target, std::uint32_t events, bool flush_each = false) {
  vs::TraceWriterOptions o;
  o.frame_target_bytes = frame_target;
  return write_trace(o, [&](vs::TraceWriter& w, MemorySink::State&) {
    for (std::uint32_t i = 0; i < events; ++i) {
      if (i % 25 == 0) REQUIRE(w.put_blob(normal_f16(64, i), 2).has_value());
      REQUIRE(w.append_event(synthetic_event(i)).value() == i);
      if (flush_each) REQUIRE(w.flush().has_value());
    }
  });
}

std::unique_ptr<vs::TraceReader> open_ok(Bytes bytes) {
  auto r = vs::TraceReader::open(vs::memory_source(std::move(bytes), "test.vtrace"), synthetic_options());
  if (!r) FAIL("open failed: " << r.error().message);
  return std::move(*r);
}

vs::TraceResult<std::unique_ptr<vs::TraceReader>> open_bytes(Bytes bytes) {
  return vs::TraceReader::open(vs::memory_source(std::move(bytes), "test.vtrace"), synthetic_options());
}

std::vector<Bytes> all_events(vs::TraceReader& r) {
  std::vector<Bytes> out;
  auto ok = r.visit_events(0, r.event_count(), [&](std::uint64_t n, std::span<const std::uint8_t> e) {
    CHECK(n == out.size());
    out.emplace_back(e.begin(), e.end());
    return true;
  });
  if (!ok) FAIL("visit_events failed: " << ok.error().message);
  return out;
}

std::uint64_t header_end(const Bytes& b) { return 8 + vs::testing::read_u32(b, 4); }

void append_record(Bytes& out, std::uint32_t len, std::uint8_t kind, const Bytes& payload) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(len >> (8 * i)));
  out.push_back(kind);
  out.insert(out.end(), payload.begin(), payload.end());
}

std::filesystem::path temp_dir() {
  return std::filesystem::temp_directory_path() / fmt::format("vtrace-schema-test-{}", ::getpid());
}

// The folder temp_path() fills goes with the process (a failed REQUIRE leaves no litter either).
struct TempDirRemover {
  ~TempDirRemover() {
    std::error_code ec;
    std::filesystem::remove_all(temp_dir(), ec);
  }
} const temp_dir_remover;

std::filesystem::path temp_path(const std::string& name) {
  const auto dir = temp_dir();
  std::filesystem::create_directories(dir);
  return dir / name;
}

}  // namespace

TEST_CASE("events and payloads read back exactly as written, with the header and summary", "[schema]") {
  std::vector<Bytes> payloads;
  for (std::uint32_t i = 0; i < 20; ++i) payloads.push_back(normal_f16(100 + i * 50, i));
  Bytes odd = {1, 2, 3};  // odd length: stored raw even when tagged as 16-bit
  std::vector<vs::BlobId> ids;
  vs::TraceWriterOptions o;
  o.frame_target_bytes = 4096;
  auto w = write_trace(o, [&](vs::TraceWriter& wr, MemorySink::State&) {
    for (std::uint32_t i = 0; i < 300; ++i) {
      REQUIRE(wr.append_event(synthetic_event(i)).has_value());
      if (i % 15 == 0) ids.push_back(wr.put_blob(payloads[i / 15], i % 2 == 0 ? 2 : 1).value());
    }
    ids.push_back(wr.put_blob(odd, 2).value());
  });
  auto r = open_ok(w.bytes);
  CHECK(r->complete());
  CHECK(r->header().producer == "container_test");
  CHECK(r->header().producer_version == "1.2.3");
  CHECK(r->header().metadata == Bytes{1, 2, 3, 4, 5});
  CHECK(Bytes(r->summary().begin(), r->summary().end()) == Bytes{9, 8, 7});
  CHECK(r->event_count() == 300);
  CHECK(r->frames().size() > 3);
  CHECK(r->frames().size() == w.stats.frames);
  auto events = all_events(*r);
  REQUIRE(events.size() == 300);
  for (std::uint32_t i = 0; i < 300; ++i) CHECK(events[i] == synthetic_event(i));
  for (std::size_t i = 0; i < payloads.size(); ++i) CHECK((r->blob(ids[i]).value() == payloads[i]));
  CHECK(r->blob(ids.back()).value() == odd);
  CHECK(r->totals().blobs == 21);
  CHECK(r->totals().file_bytes == w.bytes.size());
  CHECK(w.stats.file_bytes == w.bytes.size());
  CHECK(r->verify_all().has_value());
}

TEST_CASE("a payload put 1000 times is stored once", "[schema]") {
  const Bytes payload = normal_f16(4096, 7);
  vs::BlobId first;
  auto w = write_trace({}, [&](vs::TraceWriter& wr, MemorySink::State&) {
    for (int i = 0; i < 1000; ++i) {
      auto id = wr.put_blob(payload, 2);
      REQUIRE(id.has_value());
      if (i == 0) first = *id;
      CHECK(*id == first);
    }
  });
  CHECK(w.stats.blobs == 1);
  CHECK(w.stats.blob_references == 1000);
  CHECK(w.stats.payload_raw_bytes == payload.size());
  CHECK(w.stats.payload_referenced_bytes == 1000 * payload.size());
  CHECK(w.bytes.size() < 2 * payload.size());  // one copy at most, whatever it compresses to
  auto r = open_ok(w.bytes);
  CHECK(r->totals().blobs == 1);
  CHECK((r->blob(first).value() == payload));
  CHECK(first == vs::blob_id_of(payload.data(), payload.size()));
}

TEST_CASE("the same calls give byte-identical files", "[schema]") {
  auto once = [] { return standard_trace(3000, 500, false).bytes; };
  auto flushed = [] { return standard_trace(3000, 200, true).bytes; };
  const Bytes a = once();
  CHECK(a == once());
  CHECK(flushed() == flushed());
}

TEST_CASE("byte planes round-trip 16-bit payloads and compress N(0,1) f16 data smaller", "[schema]") {
  const Bytes payload = normal_f16(1 << 19, 3);  // 1 MiB: the planes span whole zstd blocks
  auto write_with = [&](bool planes) {
    vs::TraceWriterOptions o;
    o.byte_planes_for_16bit = planes;
    vs::BlobId id;
    auto w = write_trace(o, [&](vs::TraceWriter& wr, MemorySink::State&) { id = wr.put_blob(payload, 2).value(); });
    auto r = open_ok(w.bytes);
    CHECK((r->blob(id).value() == payload));  // parenthesized: no 1 MiB dump on failure
    return w.bytes.size();
  };
  const auto planes = write_with(true);
  const auto plain = write_with(false);
  CHECK(planes < plain);
}

TEST_CASE("seeking to event N decompresses only the frame that holds it", "[schema]") {
  const auto w = standard_trace(2048, 1500);
  auto log = std::make_shared<std::vector<std::pair<std::uint64_t, std::uint64_t>>>();
  auto opened = vs::TraceReader::open(std::make_unique<vs::testing::RecordingSource>(w.bytes, log),
                                      synthetic_options());
  REQUIRE(opened.has_value());
  auto& r = **opened;
  const std::uint64_t data_begin = header_end(w.bytes);
  const std::uint64_t data_end = footer_offset(w.bytes);
  for (const auto& [off, len] : *log) {
    const bool outside_data = off + len <= data_begin || off >= data_end;
    CHECK(outside_data);
  }
  CHECK(r.frames_decompressed() == 0);
  REQUIRE(r.frames().size() > 20);

  const auto& target = r.frames()[r.frames().size() - 3];
  const std::uint64_t n = target.first_event + target.event_count / 2;
  log->clear();
  Bytes seen;
  REQUIRE(r.visit_events(n, n + 1, [&](std::uint64_t ordinal, std::span<const std::uint8_t> e) {
    CHECK(ordinal == n);
    seen.assign(e.begin(), e.end());
    return true;
  }).has_value());
  CHECK(seen == synthetic_event(static_cast<std::uint32_t>(n)));
  CHECK(r.frames_decompressed() == 1);
  for (const auto& [off, len] : *log) {
    CHECK(off >= target.file_offset);
    CHECK(off + len <= target.file_offset + target.compressed_bytes);
  }
  // The frame is cached: its neighbour event costs no further decompression.
  REQUIRE(r.visit_events(n + 1, n + 2, [](std::uint64_t, std::span<const std::uint8_t>) { return true; }).has_value());
  CHECK(r.frames_decompressed() == 1);
}

TEST_CASE("visit_events honours its range, stops when asked, and verifies each event", "[schema]") {
  const auto w = standard_trace(2048, 400);
  auto r = open_ok(w.bytes);
  std::vector<std::uint64_t> got;
  REQUIRE(r->visit_events(100, 110, [&](std::uint64_t n, std::span<const std::uint8_t>) {
    got.push_back(n);
    return n < 104;
  }).has_value());
  CHECK(got == std::vector<std::uint64_t>{100, 101, 102, 103, 104});

  vs::TraceReaderOptions picky;
  picky.verify_event = [](std::span<const std::uint8_t> e) {
    return e.size() >= 8 && !(e[4] == 5 && e[5] == 0 && e[6] == 0 && e[7] == 0);
  };
  auto strict = vs::TraceReader::open(vs::memory_source(w.bytes, "picky.vtrace"), picky).value();
  auto bad = strict->visit_events(0, 10, [](std::uint64_t, std::span<const std::uint8_t>) { return true; });
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().kind == vs::TraceErrorKind::kVerifyFailed);
  CHECK_THAT(bad.error().message, Catch::Contains("event 5"));
  CHECK(strict->verify_all().error().kind == vs::TraceErrorKind::kVerifyFailed);
}

TEST_CASE("a visitor may fetch payloads while events are visited", "[schema]") {
  std::vector<vs::BlobId> ids;
  vs::TraceWriterOptions o;
  o.frame_target_bytes = 1024;
  auto w = write_trace(o, [&](vs::TraceWriter& wr, MemorySink::State&) {
    for (std::uint32_t i = 0; i < 200; ++i) {
      ids.push_back(wr.put_blob(normal_f16(32, i), 2).value());
      REQUIRE(wr.append_event(synthetic_event(i)).has_value());
    }
  });
  auto r = open_ok(w.bytes);
  std::uint64_t visited = 0;
  REQUIRE(r->visit_events(0, 200, [&](std::uint64_t n, std::span<const std::uint8_t> e) {
    // Fetch a payload from a far frame, which evicts cache entries under the visit.
    CHECK(r->blob(ids[199 - n]).value() == normal_f16(32, static_cast<std::uint32_t>(199 - n)));
    CHECK(Bytes(e.begin(), e.end()) == synthetic_event(static_cast<std::uint32_t>(n)));
    ++visited;
    return true;
  }).has_value());
  CHECK(visited == 200);
  auto missing = r->blob(vs::BlobId{1, 2});
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error().kind == vs::TraceErrorKind::kMissingBlob);
}

TEST_CASE("flushed records are recoverable from a file that was never closed", "[schema]") {
  auto state = std::make_shared<MemorySink::State>();
  vs::TraceWriterOptions o;
  o.frame_target_bytes = 1 << 20;  // one frame, never ended before close
  auto w = vs::TraceWriter::create(std::make_unique<MemorySink>(state), test_header(), o).value();
  for (std::uint32_t i = 0; i < 50; ++i) REQUIRE(w->append_event(synthetic_event(i)).has_value());
  REQUIRE(w->flush().has_value());
  Bytes snapshot;
  {
    std::lock_guard lk(state->mu);
    snapshot = state->bytes;
  }
  auto r = open_ok(snapshot);
  CHECK_FALSE(r->complete());
  CHECK_FALSE(r->recovery().footer_present);
  CHECK(r->recovery().events_recovered == 50);
  CHECK(r->recovery().cut_offset == header_end(snapshot));
  CHECK_FALSE(r->recovery().note.empty());
  CHECK(all_events(*r).size() == 50);
  auto v = r->verify_all();
  REQUIRE_FALSE(v.has_value());
  CHECK(v.error().kind == vs::TraceErrorKind::kTruncated);
  REQUIRE(w->close({}).has_value());
}

TEST_CASE("a cut trace recovers exactly the complete frames and the decodable prefix records", "[schema]") {
  // Flush after every event, noting where the sink stood: an event is decodable from a cut file
  // once the cut lies past its flush point (or, for the event that ends a frame, past everything
  // but the frame's 4-byte checksum).
  vs::TraceWriterOptions o;
  o.frame_target_bytes = 6000;
  std::vector<std::uint64_t> flushed_at;
  auto w = write_trace(o, [&](vs::TraceWriter& wr, MemorySink::State& state) {
    for (std::uint32_t i = 0; i < 1200; ++i) {
      if (i % 40 == 0) REQUIRE(wr.put_blob(normal_f16(48, i), 2).has_value());
      REQUIRE(wr.append_event(synthetic_event(i)).has_value());
      REQUIRE(wr.flush().has_value());
      std::lock_guard lk(state.mu);
      flushed_at.push_back(state.bytes.size());
    }
  });
  const Bytes& full = w.bytes;
  auto whole = open_ok(full);
  const auto frames = whole->frames();
  REQUIRE(frames.size() > 10);
  std::vector<std::uint64_t> decodable_at = flushed_at;
  for (const auto& f : frames) {
    const std::uint64_t end = f.file_offset + f.compressed_bytes;
    for (std::uint64_t i = f.first_event; i < f.first_event + f.event_count; ++i) {
      if (flushed_at[i] == end) decodable_at[i] = end - 4;
    }
  }
  const std::uint64_t data_begin = header_end(full);
  const std::uint64_t foff = footer_offset(full);

  std::set<std::uint64_t> cuts;
  for (std::uint64_t c = 0; c < full.size(); c += 997) cuts.insert(c);
  for (std::uint64_t c = full.size() - 64; c < full.size(); ++c) cuts.insert(c);
  std::uint64_t prefix_cases = 0;
  for (const std::uint64_t cut : cuts) {
    INFO("cut at " << cut << " of " << full.size());
    auto opened = open_bytes(Bytes(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(cut)));
    if (cut < data_begin) {
      REQUIRE_FALSE(opened.has_value());
      const auto k = opened.error().kind;
      CHECK((k == vs::TraceErrorKind::kNotATrace || k == vs::TraceErrorKind::kTruncated));
      continue;
    }
    REQUIRE(opened.has_value());
    auto& r = **opened;
    CHECK_FALSE(r.complete());
    const auto expected = static_cast<std::uint64_t>(
        std::count_if(decodable_at.begin(), decodable_at.end(), [&](std::uint64_t at) { return at <= cut; }));
    std::uint64_t expected_cut = foff;
    for (const auto& f : frames) {
      if (f.file_offset + f.compressed_bytes > cut) {
        expected_cut = f.file_offset;
        break;
      }
    }
    CHECK(r.recovery().events_recovered == expected);
    CHECK(r.event_count() == expected);
    CHECK(r.recovery().cut_offset == expected_cut);
    CHECK(r.recovery().file_bytes == cut);
    if (expected_cut < foff && !r.frames().empty() && !r.frames().back().complete &&
        r.frames().back().event_count > 0) {
      ++prefix_cases;
    }
    const auto events = all_events(r);
    REQUIRE(events.size() == expected);
    for (std::uint32_t i = 0; i < expected; ++i) CHECK(events[i] == synthetic_event(i));
  }
  CHECK(prefix_cases > 0);  // some cuts did land inside a frame with decodable records
}

TEST_CASE("a single flipped bit in any data frame is detected and names the frame", "[schema]") {
  VTRACE_SKIP_UNDER_TSAN("its loop flips and reads traces on one thread: nothing for TSan");
  const auto w = standard_trace(1500, 150);
  const Bytes& good = w.bytes;
  auto reference = open_ok(good);
  const auto frames = reference->frames();
  REQUIRE(frames.size() >= 4);
  for (std::size_t fi = 0; fi < frames.size(); ++fi) {
    const auto& f = frames[fi];
    const std::string name = fmt::format("frame {} at offset {}", fi, f.file_offset);
    for (std::uint64_t at = f.file_offset; at < f.file_offset + f.compressed_bytes; ++at) {
      Bytes bad = good;
      bad[at] = static_cast<std::uint8_t>(bad[at] ^ (1u << (at % 8)));
      INFO("bit " << at % 8 << " of byte " << at << " in " << name);
      auto r = open_ok(bad);
      auto v = r->visit_events(0, r->event_count(), [](std::uint64_t, std::span<const std::uint8_t>) { return true; });
      REQUIRE_FALSE(v.has_value());
      const auto k = v.error().kind;
      CHECK((k == vs::TraceErrorKind::kChecksumMismatch || k == vs::TraceErrorKind::kCorrupt ||
             k == vs::TraceErrorKind::kTooLarge));
      CHECK_THAT(v.error().message, Catch::Contains(name));
      CHECK_FALSE(r->verify_all().has_value());
    }
  }
}

TEST_CASE("the zstd command-line tool tests the file and decompresses it to the record stream", "[schema]") {
  if (std::system("zstd --version > /dev/null 2>&1") != 0) {
    VTRACE_SKIP("the zstd command-line tool is not installed");
  }
  const auto path = temp_path("cli.vtrace");
  vs::TraceWriterOptions o;
  o.frame_target_bytes = 8192;
  {
    auto w = vs::TraceWriter::create(vs::open_file_sink(path).value(), test_header(), o).value();
    for (std::uint32_t i = 0; i < 800; ++i) {
      REQUIRE(w->append_event(synthetic_event(i)).has_value());
      if (i % 50 == 0) REQUIRE(w->put_blob(normal_f16(500, i), 2).has_value());
    }
    CHECK(std::filesystem::exists(path.string() + ".partial"));
    CHECK_FALSE(std::filesystem::exists(path));
    REQUIRE(w->close(Bytes{1, 2}).has_value());
  }
  CHECK(std::filesystem::exists(path));
  CHECK_FALSE(std::filesystem::exists(path.string() + ".partial"));
  auto r = vs::TraceReader::open(path, synthetic_options()).value();
  std::uint64_t record_bytes = 0;
  for (const auto& f : r->frames()) record_bytes += f.content_bytes;
  REQUIRE(r->frames().size() > 2);

  CHECK(std::system(fmt::format("zstd -q -t '{}'", path.string()).c_str()) == 0);
  FILE* p = ::popen(fmt::format("zstd -q -dc '{}' | wc -c", path.string()).c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[64] = {};
  const bool got = std::fgets(buf, sizeof buf, p) != nullptr;
  ::pclose(p);
  REQUIRE(got);
  CHECK(std::stoull(buf) == record_bytes);
  std::filesystem::remove_all(path.parent_path());
}

TEST_CASE("writing to a full disk fails through close() without hanging", "[schema]") {
  if (!std::filesystem::exists("/dev/full")) {
    VTRACE_SKIP("/dev/full does not exist on this machine");
  }
  auto sink = vs::open_raw_file_sink("/dev/full");
  REQUIRE(sink.has_value());
  vs::TraceWriterOptions o;
  o.frame_target_bytes = 4096;
  auto w = vs::TraceWriter::create(std::move(*sink), test_header(), o).value();
  bool saw_failure = false;
  for (std::uint32_t i = 0; i < 2000; ++i) {
    auto e = w->append_event(synthetic_event(i));
    if (!e) {
      CHECK(e.error().kind == vs::TraceErrorKind::kWriterFailed);
      saw_failure = true;
    }
  }
  auto f = w->flush();
  REQUIRE_FALSE(f.has_value());
  CHECK(f.error().kind == vs::TraceErrorKind::kWriterFailed);
  CHECK(saw_failure);
  CHECK(w->failed());
  auto later = w->put_blob(normal_f16(8, 1), 2);
  REQUIRE_FALSE(later.has_value());
  CHECK(later.error().kind == vs::TraceErrorKind::kWriterFailed);
  auto c = w->close({});
  REQUIRE_FALSE(c.has_value());
  CHECK(c.error().kind == vs::TraceErrorKind::kIo);
  CHECK_THAT(c.error().message, Catch::Contains("/dev/full"));
}

TEST_CASE("the timer flush pushes records to the sink without an explicit flush", "[schema]") {
  auto state = std::make_shared<MemorySink::State>();
  vs::TraceWriterOptions o;
  o.flush_interval_ms = 5;
  auto w = vs::TraceWriter::create(std::make_unique<MemorySink>(state), test_header(), o).value();
  for (std::uint32_t i = 0; i < 20; ++i) REQUIRE(w->append_event(synthetic_event(i)).has_value());
  std::uint64_t recovered = 0;
  for (int tries = 0; tries < 2000 && recovered < 20; ++tries) {  // a generous bound, not a timing check
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    Bytes snapshot;
    {
      std::lock_guard lk(state->mu);
      snapshot = state->bytes;
    }
    auto r = open_bytes(snapshot);
    if (r) recovered = (*r)->event_count();
  }
  CHECK(recovered == 20);
  REQUIRE(w->close({}).has_value());
}

TEST_CASE("calls after close report that the writer stopped", "[schema]") {
  auto state = std::make_shared<MemorySink::State>();
  auto w = vs::TraceWriter::create(std::make_unique<MemorySink>(state), test_header()).value();
  REQUIRE(w->append_event(synthetic_event(0)).has_value());
  REQUIRE(w->close({}).has_value());
  CHECK(state->committed);
  CHECK(w->append_event(synthetic_event(1)).error().kind == vs::TraceErrorKind::kWriterFailed);
  CHECK(w->flush().error().kind == vs::TraceErrorKind::kWriterFailed);
  CHECK_FALSE(w->close({}).has_value());
}

TEST_CASE("a trace from a newer format major is refused naming both versions", "[schema]") {
  auto h = test_header();
  h.format_major = 2;
  h.format_minor = 0;
  auto w = write_trace({}, [](vs::TraceWriter& wr, MemorySink::State&) {
    REQUIRE(wr.append_event(synthetic_event(0)).has_value());
  }, {}, h);
  auto r = open_bytes(w.bytes);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().kind == vs::TraceErrorKind::kUnsupportedVersion);
  CHECK_THAT(r.error().message, Catch::Contains("2.0") && Catch::Contains("1.x"));
}

TEST_CASE("random garbage is refused cleanly", "[schema]") {
  std::mt19937 rng(1234);
  const auto good = standard_trace(2048, 100).bytes;
  const Bytes header(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(header_end(good)));
  for (int round = 0; round < 300; ++round) {
    Bytes junk(rng() % 4096);
    for (auto& b : junk) b = static_cast<std::uint8_t>(rng());
    auto plain = open_bytes(junk);
    CHECK_FALSE(plain.has_value());
    // Behind a valid header the junk is scanned as frames; it must still fail or read cleanly.
    Bytes behind = header;
    if (round % 2 == 0) {
      for (int b : {0x28, 0xB5, 0x2F, 0xFD}) behind.push_back(static_cast<std::uint8_t>(b));  // a zstd magic
    }
    behind.insert(behind.end(), junk.begin(), junk.end());
    auto r = open_bytes(behind);
    if (r) {
      (void)(*r)->visit_events(0, (*r)->event_count(), [](std::uint64_t, std::span<const std::uint8_t>) { return true; });
      CHECK_FALSE((*r)->verify_all().has_value());
    }
  }
}

TEST_CASE("a header frame claiming a huge size is refused before allocating", "[schema]") {
  Bytes b;
  for (std::uint32_t v : {vs::kHeaderSkippableMagic, 0xFFFFFFF0u}) {
    for (int i = 0; i < 4; ++i) b.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  }
  b.resize(64, 0);
  auto r = open_bytes(b);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().kind == vs::TraceErrorKind::kTooLarge);
}

TEST_CASE("a footer whose index points outside the file is refused", "[schema]") {
  const auto good = standard_trace(2048, 200).bytes;
  REQUIRE(open_bytes(good).has_value());
  // The rebuild itself is faithful.
  auto same = open_bytes(with_rebuilt_footer(good, [](auto&, auto&) {}));
  REQUIRE(same.has_value());
  CHECK((*same)->verify_all().has_value());

  auto outside = open_bytes(with_rebuilt_footer(good, [](auto& frames, auto&) {
    frames[1] = frame_with(frames[1], 1ull << 40, frames[1].compressed_bytes(), frames[1].content_bytes());
  }));
  REQUIRE_FALSE(outside.has_value());
  CHECK(outside.error().kind == vs::TraceErrorKind::kCorrupt);
  CHECK_THAT(outside.error().message, Catch::Contains("frame 1"));

  auto too_long = open_bytes(with_rebuilt_footer(good, [](auto& frames, auto&) {
    frames.back() = frame_with(frames.back(), frames.back().file_offset(), 1ull << 40, frames.back().content_bytes());
  }));
  REQUIRE_FALSE(too_long.has_value());
  CHECK(too_long.error().kind == vs::TraceErrorKind::kCorrupt);

  auto huge_frame = open_bytes(with_rebuilt_footer(good, [](auto& frames, auto&) {
    frames[0] = frame_with(frames[0], frames[0].file_offset(), frames[0].compressed_bytes(), 1ull << 40);
  }));
  REQUIRE_FALSE(huge_frame.has_value());
  CHECK(huge_frame.error().kind == vs::TraceErrorKind::kTooLarge);

  auto blob_elsewhere = open_bytes(with_rebuilt_footer(good, [](auto&, auto& blobs) {
    blobs[0] = blob_with(blobs[0], 999, blobs[0].raw_bytes());
  }));
  REQUIRE_FALSE(blob_elsewhere.has_value());
  CHECK(blob_elsewhere.error().kind == vs::TraceErrorKind::kCorrupt);

  auto huge_blob = open_bytes(with_rebuilt_footer(good, [](auto&, auto& blobs) {
    blobs[0] = blob_with(blobs[0], blobs[0].frame_index(), 1ull << 40);
  }));
  REQUIRE_FALSE(huge_blob.has_value());
  CHECK(huge_blob.error().kind == vs::TraceErrorKind::kTooLarge);

  Bytes huge_trailer = good;
  const std::uint64_t claim = 1ull << 40;
  std::memcpy(huge_trailer.data() + huge_trailer.size() - vs::kTrailerBytes + 8, &claim, 8);
  auto t = open_bytes(huge_trailer);
  REQUIRE_FALSE(t.has_value());
  CHECK(t.error().kind == vs::TraceErrorKind::kTooLarge);
}

TEST_CASE("hand-made data frames with hostile records fail cleanly", "[schema]") {
  const auto good = standard_trace(2048, 10).bytes;
  const Bytes header(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(header_end(good)));
  auto file_with = [&](const Bytes& records) {
    Bytes f = header;
    const Bytes frame = zstd_frame(records);
    f.insert(f.end(), frame.begin(), frame.end());
    return f;
  };

  SECTION("a blob record claiming 1 TiB") {
    Bytes payload;
    put_le64(payload, 1);
    put_le64(payload, 2);
    put_le64(payload, 1ull << 40);
    payload.resize(vs::kBlobRecordHeaderBytes + 16, 0);
    Bytes records;
    append_record(records, static_cast<std::uint32_t>(payload.size()), 2, payload);
    auto r = open_bytes(file_with(records));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().kind == vs::TraceErrorKind::kTooLarge);
    CHECK_THAT(r.error().message, Catch::Contains("frame 0"));
  }
  SECTION("a record length of 4 GiB") {
    Bytes records;
    append_record(records, 0xFFFFFFFFu, 1, Bytes(16, 0));
    auto r = open_bytes(file_with(records));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().kind == vs::TraceErrorKind::kTooLarge);
  }
  SECTION("an unknown record kind") {
    Bytes records;
    append_record(records, 8, 1, synthetic_event(0));
    append_record(records, 4, 7, Bytes{1, 2, 3, 4});
    auto r = open_bytes(file_with(records));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().kind == vs::TraceErrorKind::kCorrupt);
    CHECK_THAT(r.error().message, Catch::Contains("frame 0") && Catch::Contains("unknown kind 7"));
  }
  SECTION("a well-formed hand-made frame is read") {
    Bytes records;
    const Bytes e = synthetic_event(0);
    append_record(records, static_cast<std::uint32_t>(e.size()), 1, e);
    auto r = open_bytes(file_with(records));
    REQUIRE(r.has_value());
    CHECK((*r)->event_count() == 1);
    CHECK(all_events(**r) == std::vector<Bytes>{e});
  }
}

TEST_CASE("byte planes round-trip 16-bit payloads of every length from 0 to 80 elements", "[schema]") {
  // Covers the vector loop of the plane encoding (16 elements a step) and every scalar tail.
  std::vector<Bytes> payloads;
  for (std::uint32_t n = 0; n <= 80; ++n) payloads.push_back(normal_f16(n, 1000 + n));
  std::vector<vs::BlobId> ids;
  auto w = write_trace({}, [&](vs::TraceWriter& wr, MemorySink::State&) {
    for (const auto& p : payloads) ids.push_back(wr.put_blob(p, 2).value());
  });
  auto r = open_ok(w.bytes);
  for (std::size_t i = 0; i < payloads.size(); ++i) {
    INFO("payload of " << payloads[i].size() / 2 << " elements");
    CHECK(r->blob(ids[i]).value() == payloads[i]);
  }
  CHECK(r->verify_all().has_value());
}

TEST_CASE("a file sink refuses to rename a trace over a FIFO or a directory", "[schema]") {
  // In a scratch folder, never on /dev/null or /tmp themselves: CI runs as root, and a
  // regression here would rename a file over them.
  const auto fifo = temp_path("special-fifo");
  const auto folder = temp_path("special-folder");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::filesystem::create_directory(folder);
  for (const auto& path : {fifo, folder}) {
    auto sink = vs::open_file_sink(path);
    REQUIRE_FALSE(sink.has_value());
    CHECK(sink.error().kind == vs::TraceErrorKind::kIo);
    CHECK_THAT(sink.error().message, Catch::Contains(path.string()));
    CHECK_FALSE(std::filesystem::exists(path.string() + ".partial"));
  }
  CHECK(std::filesystem::is_fifo(fifo));
  CHECK(std::filesystem::is_directory(folder));
  std::filesystem::remove(fifo);
  std::filesystem::remove(folder);
}

TEST_CASE("a file sink never writes its .partial through a link, a FIFO or a directory",
          "[schema]") {
  const auto target = temp_path("link-target.bin");
  const auto path = temp_path("linked.vtrace");
  std::filesystem::path partial = path;
  partial += ".partial";
  std::filesystem::remove_all(partial);
  { std::ofstream(target) << "precious"; }
  std::filesystem::create_symlink(target, partial);
  auto linked = vs::open_file_sink(path);
  REQUIRE_FALSE(linked.has_value());
  CHECK(linked.error().kind == vs::TraceErrorKind::kIo);
  CHECK_THAT(linked.error().message, Catch::Contains(partial.string()) &&
                                         Catch::Contains("symbolic link"));
  CHECK(std::filesystem::file_size(target) == 8);  // not truncated
  std::filesystem::remove(partial);

  REQUIRE(::mkfifo(partial.c_str(), 0600) == 0);
  auto fifo = vs::open_file_sink(path);  // returns at once: no reader is waited for
  REQUIRE_FALSE(fifo.has_value());
  CHECK_THAT(fifo.error().message, Catch::Contains("not a regular file"));
  std::filesystem::remove(partial);

  std::filesystem::create_directory(partial);
  auto dir = vs::open_file_sink(path);
  REQUIRE_FALSE(dir.has_value());
  CHECK_THAT(dir.error().message, Catch::Contains("not a regular file"));
  std::filesystem::remove(partial);

  // A leftover regular .partial is truncated and reused, as before.
  { std::ofstream(partial) << "old bytes"; }
  auto sink = vs::open_file_sink(path);
  REQUIRE(sink.has_value());
  CHECK(std::filesystem::file_size(partial) == 0);
  const std::uint8_t byte = 7;
  REQUIRE((*sink)->write({&byte, 1}).has_value());
  REQUIRE((*sink)->commit().has_value());
  CHECK(std::filesystem::file_size(path) == 1);
  CHECK_FALSE(std::filesystem::exists(partial));
  std::filesystem::remove(path);
  std::filesystem::remove(target);
}

TEST_CASE("a file sink that wrote nothing removes its own empty .partial and no other file",
          "[schema]") {
  const auto path = temp_path("empty-sink.vtrace");
  const std::filesystem::path partial = path.string() + ".partial";
  // Dropped before its first byte: nothing to recover, nothing left.
  { REQUIRE(vs::open_file_sink(path).has_value()); }
  CHECK_FALSE(std::filesystem::exists(partial));
  // A writer refused at create (its header is over the limit) leaves no empty .partial.
  {
    auto sink = vs::open_file_sink(path);
    REQUIRE(sink.has_value());
    vs::TraceHeaderInfo header;
    header.metadata.assign(vs::kMaxHeaderBytes + 1, 0x5a);
    auto writer = vs::TraceWriter::create(std::move(*sink), header);
    REQUIRE_FALSE(writer.has_value());
    CHECK(writer.error().kind == vs::TraceErrorKind::kTooLarge);
  }
  CHECK_FALSE(std::filesystem::exists(partial));
  // One byte written: the .partial is what was recorded, and it stays.
  {
    auto sink = vs::open_file_sink(path);
    REQUIRE(sink.has_value());
    const std::uint8_t byte = 7;
    REQUIRE((*sink)->write({&byte, 1}).has_value());
  }
  CHECK(std::filesystem::file_size(partial) == 1);
  // The name now holds another file (the sink's was renamed away): that one is not removed.
  {
    auto sink = vs::open_file_sink(path);
    REQUIRE(sink.has_value());
    std::filesystem::rename(partial, path.string() + ".moved");
    { std::ofstream(partial) << ""; }
  }
  CHECK(std::filesystem::exists(partial));
  CHECK(std::filesystem::exists(path.string() + ".moved"));
  std::filesystem::remove(partial);
  // The sink's own file, which another writer filled (this sink wrote nothing): those bytes stay.
  {
    auto sink = vs::open_file_sink(path);
    REQUIRE(sink.has_value());
    std::ofstream(partial, std::ios::app) << "bytes of another writer";
  }
  CHECK(std::filesystem::file_size(partial) == 23);
  std::filesystem::remove(partial);
  std::filesystem::remove(path.string() + ".moved");
  CHECK_FALSE(std::filesystem::exists(path));
}

TEST_CASE("a raw file sink writes a regular file from its start", "[schema]") {
  const auto path = temp_path("raw-sink.bin");
  { std::ofstream(path) << "ten bytes!"; }
  auto sink = vs::open_raw_file_sink(path);
  REQUIRE(sink.has_value());
  const std::uint8_t byte = 7;
  REQUIRE((*sink)->write({&byte, 1}).has_value());
  REQUIRE((*sink)->commit().has_value());
  CHECK(std::filesystem::file_size(path) == 1);
  std::filesystem::remove(path);
}

TEST_CASE("a file sink opened by a relative name commits beside it after a change of directory",
          "[schema]") {
  const auto home = temp_path("cwd-home");
  const auto elsewhere = temp_path("cwd-elsewhere");
  std::filesystem::create_directories(home);
  std::filesystem::create_directories(elsewhere);
  const auto before = std::filesystem::current_path();
  std::filesystem::current_path(home);
  auto sink = vs::open_file_sink("rel.vtrace");
  REQUIRE(sink.has_value());
  const std::uint8_t byte = 9;
  REQUIRE((*sink)->write({&byte, 1}).has_value());
  std::filesystem::current_path(elsewhere);  // the product moves on
  const auto committed = (*sink)->commit();
  std::filesystem::current_path(before);
  INFO((committed ? std::string() : committed.error().message));
  CHECK(committed.has_value());
  CHECK(std::filesystem::file_size(home / "rel.vtrace") == 1);
  CHECK_FALSE(std::filesystem::exists(home / "rel.vtrace.partial"));
  CHECK_FALSE(std::filesystem::exists(elsewhere / "rel.vtrace"));
  std::filesystem::remove_all(home);
  std::filesystem::remove_all(elsewhere);
}

TEST_CASE("about_file names the file once, and a name inside another word is no naming",
          "[schema]") {
  using vtrace::schema::about_file;
  // Already named, as the trace layer's sentences do.
  CHECK(about_file("t.vtrace", "t.vtrace: the footer is damaged") ==
        "t.vtrace: the footer is damaged");
  CHECK(about_file("/d/t.vtrace", "cannot open /d/t.vtrace: No such file or directory") ==
        "cannot open /d/t.vtrace: No such file or directory");
  CHECK(about_file("t.vtrace", "t.vtrace has no footer and is cut inside frame 0") ==
        "t.vtrace has no footer and is cut inside frame 0");
  CHECK(about_file("t.vtrace", "cannot write t.vtrace.partial: No space left on device") ==
        "cannot write t.vtrace.partial: No space left on device");
  // Not named: a trace called `e` occurs in "cannot be opened", `t.vtrace` in "at.vtraces".
  CHECK(about_file("e", "runtime `cuda` cannot be opened: no device") ==
        "e: runtime `cuda` cannot be opened: no device");
  CHECK(about_file("t.vtrace", "see at.vtraces: nothing") == "t.vtrace: see at.vtraces: nothing");
  CHECK(about_file("", "a message") == "a message");
}
