// SummaryTally (trace_summary.h): the one rule by which the recorder, flight windows and repair
// write a trace's summary. Every golden trace's summary, written by the recorder when it was
// recorded, must be what the tally makes of the trace's events (final_counters aside: a full
// recording stores the live runtime's, which the events need not show).
#include "vtrace/schema/trace_summary.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "vtrace/schema/events.h"
#include "vtrace/schema/trace_reader.h"

namespace vs = vtrace::schema;
namespace fb = vtrace::fb;

TEST_CASE("the summary tally reproduces every golden trace's summary from its events") {
  const auto traces = std::filesystem::path(VTRACE_SOURCE_DIR) / "traces";
  int checked = 0;
  std::uint64_t refused_uploads = 0;
  for (const auto& entry : std::filesystem::directory_iterator(traces)) {
    if (entry.path().extension() != ".vtrace") continue;
    INFO(entry.path().filename().string());
    auto reader = vs::TraceReader::open(entry.path());
    REQUIRE(reader.has_value());
    const auto* recorded = vs::read_trace_summary((*reader)->summary());
    REQUIRE(recorded != nullptr);
    vs::SummaryTally tally;
    REQUIRE((*reader)
                ->visit_events(0, (*reader)->event_count(),
                               [&](std::uint64_t, std::span<const std::uint8_t> e) {
                                 const fb::Event& event = *vs::event_of(e);
                                 tally.add(event);
                                 if (const auto* u = event.body_as_EncodeUpload();
                                     u != nullptr && u->error() != nullptr) {
                                   ++refused_uploads;
                                 }
                                 return true;
                               })
                .has_value());
    vs::TraceWriteStats stats;
    stats.blobs = recorded->blobs();
    stats.blob_references = recorded->blob_references();
    stats.payload_raw_bytes = recorded->payload_raw_bytes();
    stats.payload_referenced_bytes = recorded->payload_referenced_bytes();
    std::optional<fb::Counters> counters;
    if (recorded->final_counters() != nullptr) counters = *recorded->final_counters();
    const auto bytes = tally.finish(stats, counters);
    const auto* rebuilt = vs::read_trace_summary(bytes);
    REQUIRE(rebuilt != nullptr);
    CHECK(rebuilt->events() == recorded->events());
    CHECK(rebuilt->submits() == recorded->submits());
    CHECK(rebuilt->upload_bytes() == recorded->upload_bytes());
    CHECK(rebuilt->readback_bytes() == recorded->readback_bytes());
    REQUIRE(rebuilt->event_counts() != nullptr);
    REQUIRE(recorded->event_counts() != nullptr);
    REQUIRE(rebuilt->event_counts()->size() == recorded->event_counts()->size());
    for (flatbuffers::uoffset_t i = 0; i < rebuilt->event_counts()->size(); ++i) {
      CHECK(rebuilt->event_counts()->Get(i)->kind()->str() ==
            recorded->event_counts()->Get(i)->kind()->str());
      CHECK(rebuilt->event_counts()->Get(i)->count() == recorded->event_counts()->Get(i)->count());
    }
    // The recorder wrote its summary with a builder of its own: the rebuilt bytes are the same.
    CHECK(std::vector<std::uint8_t>((*reader)->summary().begin(), (*reader)->summary().end()) ==
          bytes);
    ++checked;
  }
  CHECK(checked >= 9);
  // The contract traces refuse uploads on purpose: the rule for their bytes is exercised.
  CHECK(refused_uploads > 0);
}
