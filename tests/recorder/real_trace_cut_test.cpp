// A REAL recorded trace (the decode workload through RecordingRuntime on the reference runtime)
// cut at many offsets: what a crash at any point of a recording leaves behind is readable, and
// every frame that was complete before the cut comes back.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "recorder_test_support.h"
#include "support/test_support.h"
#include "vtrace/workloads/workload.h"

using namespace vtrace::recorder::testing;
using vtrace::recorder::RecorderOptions;
namespace schema = vtrace::schema;
namespace wl = vtrace::workloads;

namespace {

using Bytes = std::vector<std::uint8_t>;

// A scaled-down decode workload (every decode feature: packed and per-participant launches,
// logical work, attribution, counter checks) recorded with 64 KiB frames, so the trace has many
// frames and many flush points inside them.
Bytes record_decode_trace() {
  wl::WorkloadSpec spec;
  spec.kind = wl::WorkloadKind::kDecode;
  spec.decode.hidden = 128;
  spec.decode.ffn = 256;
  spec.decode.layers = 6;
  spec.decode.steps = 8;
  RecorderOptions options;
  options.writer.frame_target_bytes = 64u << 10;
  options.workload_description = spec.describe();
  auto sink = std::make_shared<MemorySink::State>();
  auto rec = record_to_memory(make_reference(), sink, options);
  auto report = wl::run_workload(spec, *rec, nullptr);
  INFO((report ? std::string() : report.error().message));
  REQUIRE(report.has_value());
  REQUIRE(rec->close().has_value());
  return sink->copy();
}

// Every event of `reader`, in order, each checked by the event verifier and numbered by its seq.
std::vector<Bytes> events_of(schema::TraceReader& reader) {
  std::vector<Bytes> out;
  auto visited = reader.visit_events(
      0, reader.event_count(), [&](std::uint64_t ordinal, std::span<const std::uint8_t> record) {
        REQUIRE(schema::verify_event_record(record));
        REQUIRE(schema::event_of(record)->seq() == ordinal);
        REQUIRE(ordinal == out.size());
        out.emplace_back(record.begin(), record.end());
        return true;
      });
  REQUIRE(visited.has_value());
  return out;
}

}  // namespace

TEST_CASE("a real trace cut at every 997th byte and at each of its last 64 bytes keeps every complete frame") {
  VTRACE_SKIP_UNDER_TSAN("its loop cuts and reads traces on one thread: nothing for TSan");
  const Bytes full = record_decode_trace();
  auto whole_opened = schema::TraceReader::open(schema::memory_source(full, "full.vtrace"));
  REQUIRE(whole_opened.has_value());
  auto& whole = **whole_opened;
  REQUIRE(whole.complete());
  CHECK(whole.recovery().footer_present);
  const auto frames = whole.frames();
  INFO(full.size() << " bytes, " << frames.size() << " frames, " << frames.front().content_bytes << " bytes in the first");
  REQUIRE(frames.size() >= 8);
  const std::vector<Bytes> all = events_of(whole);
  REQUIRE(all.size() == whole.event_count());
  const std::uint64_t data_begin = frames.front().file_offset;

  std::set<std::uint64_t> cuts;
  for (std::uint64_t c = 0; c < full.size(); c += 997) cuts.insert(c);
  for (std::uint64_t c = full.size() - 64; c < full.size(); ++c) cuts.insert(c);
  std::uint64_t cuts_inside_frames = 0;
  std::uint64_t cuts_recovering_more_than_whole_frames = 0;
  for (const std::uint64_t cut : cuts) {
    INFO("cut at " << cut << " of " << full.size());
    auto opened = schema::TraceReader::open(schema::memory_source(
        Bytes(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(cut)), "cut.vtrace"));
    if (cut < data_begin) {
      // Inside the header frame: not a readable trace yet, and said so.
      REQUIRE_FALSE(opened.has_value());
      const auto kind = opened.error().kind;
      CHECK((kind == schema::TraceErrorKind::kNotATrace ||
             kind == schema::TraceErrorKind::kTruncated));
      continue;
    }
    REQUIRE(opened.has_value());
    auto& reader = **opened;
    CHECK_FALSE(reader.complete());
    CHECK_FALSE(reader.recovery().footer_present);
    CHECK(reader.recovery().file_bytes == cut);
    // The events of every frame that ends at or before the cut.
    std::uint64_t in_complete_frames = 0;
    bool inside_a_frame = false;
    for (const auto& f : frames) {
      if (f.file_offset + f.compressed_bytes <= cut) {
        in_complete_frames += f.event_count;
      } else if (f.file_offset < cut) {
        inside_a_frame = true;
      }
    }
    const std::uint64_t recovered = reader.recovery().events_recovered;
    CHECK(recovered >= in_complete_frames);
    CHECK(recovered <= all.size());
    CHECK(reader.event_count() == recovered);
    if (inside_a_frame) ++cuts_inside_frames;
    if (recovered > in_complete_frames) ++cuts_recovering_more_than_whole_frames;
    // Every recovered event verifies, carries its ordinal as seq, and is the recorded one.
    const auto events = events_of(reader);
    REQUIRE(events.size() == recovered);
    for (std::size_t i = 0; i < events.size(); ++i) {
      INFO("event " << i);
      REQUIRE(events[i] == all[i]);
    }
  }
  CHECK(cuts_inside_frames > 0);
  // The recorder flushes at every submit and fence wait, so cuts inside a frame recover the
  // flushed prefix of that frame too.
  CHECK(cuts_recovering_more_than_whole_frames > 0);
}
