// A trace as a timeline: Chrome trace-event JSON (the "JSON Object Format" that chrome://tracing
// and the Perfetto UI open), written as it goes.
//
// Layout, one process ("vtrace <trace>"):
//   - a track per own stream ("stream#N") and one "host" track for calls on no stream;
//   - a slice per submitted batch on its stream's track, from its SubmitBegin to its SubmitEnd,
//     with one child slice per command entry (args: kind, shapes, node_index, participants,
//     bytes written, command ordinal, encode event), and a slice per readback on its stream's
//     track (args: bytes, element type);
//   - a slice per other call on the host track (args: the call as replay describes it);
//   - flows (ph "s"/"f") from each batch to the wait_fence and query_fence calls on its fence and
//     to every readback on its stream until the next batch on that stream;
//   - a counter track per counter of the CounterSnapshot events ("counter.submissions", ...).
// Traces carry no wall-clock time: without `measured`, step k occupies [k, k+1) microseconds
// (event order); with it (`vtrace replay --profile`), every step's slice is where and as long as
// it took in that replay (ns from the replay's start), laid out the same way.
//
// Ownership: writes to `out`; holds one event's JSON at a time. Thread rules: one thread.
// Errors: a stream that went bad (std::ostream::fail) is reported as the string "writing the
// timeline failed"; the plan itself is never refused.
#pragma once

#include <cstdint>
#include <expected>
#include <ostream>
#include <string>
#include <vector>

#include "vtrace/replayer/replay_plan.h"

namespace vtrace::report {

// When and for how long one step ran in a measured replay (steady clock, from its start).
struct StepTime {
  std::uint64_t start_ns = 0;
  std::uint64_t duration_ns = 0;
};

struct TimelineOptions {
  std::string trace_label;  // the process name: "vtrace <trace_label>"
  // One entry per plan step (index = step ordinal), or empty for the event-order layout. Steps
  // past its end (a replay cut short) are left out.
  std::vector<StepTime> measured;
};

struct TimelineStats {
  std::uint64_t tracks = 0;
  std::uint64_t slices = 0;  // complete ("X") events, batches and commands included
  std::uint64_t batches = 0;
  std::uint64_t commands = 0;
  std::uint64_t flows = 0;     // start/finish pairs
  std::uint64_t counters = 0;  // counter ("C") events
};

std::expected<TimelineStats, std::string> write_timeline(const replayer::ReplayPlan& plan,
                                                         std::ostream& out,
                                                         const TimelineOptions& options);

}  // namespace vtrace::report
