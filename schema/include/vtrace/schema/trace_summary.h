// The footer summary of a trace (fb::TraceSummary, docs/FORMAT.md "Summary"), tallied from the
// trace's events as they are written.
//
// One rule for every writer of a trace (the recorder, a flight window, repair), so `vtrace info`
// means the same thing whoever wrote the file:
//   events          the events written
//   event_counts    per kind name, sorted by name, kinds with a count > 0
//   submits         SubmitBegin events (refused submits included)
//   upload_bytes    payload_bytes of every EncodeUpload (the bytes the product handed over,
//                   accepted or refused)
//   readback_bytes  payload_bytes of every Readback that returned data (one with a payload)
//   final_counters  the caller's (the live runtime's, at close) or else the last
//                   CounterSnapshot's; absent when neither exists
//   blobs, blob_references, payload_raw_bytes, payload_referenced_bytes: the writer's statistics
//   interrupted_by  the caller's, when not empty
//   repaired        the caller's, when not empty (only repair sets it)
//
// Ownership: a value type; add() reads the event and keeps nothing of it.
// Thread rules: none; one tally per trace, used by one writer at a time.
// Errors: none; add() expects an event that passed verify_event_record.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "vtrace/schema/trace_writer.h"
#include "vtrace_generated.h"

namespace vtrace::schema {

class SummaryTally {
 public:
  void add(const fb::Event& event);
  std::uint64_t events() const { return events_; }

  // The summary's bytes, for TraceWriter::close.
  std::vector<std::uint8_t> finish(const TraceWriteStats& stats,
                                   const std::optional<fb::Counters>& final_counters = std::nullopt,
                                   std::string_view interrupted_by = {},
                                   std::string_view repaired = {}) const;

 private:
  static constexpr std::size_t kKinds = static_cast<std::size_t>(fb::EventBody::MAX) + 1;
  std::array<std::uint64_t, kKinds> counts_{};
  std::uint64_t unknown_kinds_ = 0;  // body types this build does not know ("Unknown")
  std::uint64_t events_ = 0, submits_ = 0, upload_bytes_ = 0, readback_bytes_ = 0;
  std::optional<fb::Counters> last_counters_;
};

}  // namespace vtrace::schema
