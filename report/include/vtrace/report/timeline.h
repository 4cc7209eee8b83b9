// A trace as a timeline: Chrome trace-event JSON (the "JSON Object Format" that chrome://tracing
// and the Perfetto UI open), written as it goes.
//
// Layout, one process ("vtrace <trace>"):
//   - a track per own stream ("stream#N", thread id N + 2) and one "host" track (thread id 1) for
//     calls on no stream; thread ids start at 1, as Perfetto UI versions before mid-2025 merged a
//     thread 0 into thread 1;
//   - a slice per batch on its stream's track, from its SubmitBegin to its SubmitEnd, with one
//     child slice per command entry (args: kind, shapes, node_index, participants, bytes
//     written, command ordinal, encode event), and a slice per readback on its stream's track
//     (args: bytes, element type);
//   - a slice per other call on the host track (args: the call as replay describes it);
//   - flows (ph "s"/"f") from each batch to the wait_fence and query_fence calls on its fence and
//     to every readback on its stream until the next batch on that stream;
//   - a counter track per counter of the CounterSnapshot events ("counter.submissions", ...).
// Traces carry no wall-clock time: without `measured`, step k occupies [k, k+1) microseconds
// (event order); with it (`vtrace replay --profile`), every step's slice is where and as long as
// it took in that replay (ns from the replay's start), laid out the same way.
//
// Times are whole nanoseconds, written as microseconds ("ts", "dur") with at most three decimals,
// so a reader that converts them to integer nanoseconds (Perfetto) gets them exactly. A batch of
// length L ns with n commands gives command i the span [b_i, b_(i+1)) with b_i = start + L*i/n
// (integer division): the commands tile their batch, none ends after the next one starts and
// none leaves its batch.
//
// A batch whose SubmitEnd is not laid out (the trace ends inside its submit, or a measured replay
// stopped before the SubmitEnd: `replay --profile --events A:B`) is "unfinished": `completed`
// false, whatever the recording answered later.
//
// Ownership: writes to `out`; holds one event's JSON at a time. Thread rules: one thread.
// Errors: a stream that went bad (std::ostream::fail) is reported as the string "writing the
// timeline failed"; the plan itself is never refused.
#pragma once

#include <cstdint>
#include <expected>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "vtrace/replayer/replay_plan.h"
#include "vtrace/schema/trace_reader.h"

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

// The timeline of a plan that is already in memory (with its payloads, which it does not use).
std::expected<TimelineStats, std::string> write_timeline(const replayer::ReplayPlan& plan,
                                                         std::ostream& out,
                                                         const TimelineOptions& options);

// The same timeline read straight from a trace file, without a ReplayPlan: what `vtrace export`
// and `vtrace replay --profile` write. prepare() reads every event once (each decoded as the
// plan decodes it, replayer::decode_step, and dropped before the next) and keeps what the
// layout needs ahead: each command's kind, shapes and written regions, each batch's SubmitEnd,
// each fence's batch. write() reads the events a second time and writes them. No payload is
// read, so memory grows with the number of commands, batches and fences, never with payload
// bytes. Unlike ReplayPlan::build, neither pass checks references or payloads (the timeline
// uses neither): a recovered trace is laid out up to its last recovered event.
//
// Ownership: the reader is borrowed from prepare() to the last write(); it must outlive the
//   TraceTimeline and not be used by anyone else meanwhile. write() may be called again (each
//   call reads the events again). Thread rules: one thread (the reader's own rule).
// Errors: prepare(): the reader's (a frame that does not decompress or verify) or an event that
//   does not decode or whose sequence number is not its ordinal ("event N (Kind): ..."), before
//   anything is written; write(): the reader's, and "writing the timeline failed" for a stream
//   that went bad.
class TraceTimeline {
 public:
  static std::expected<TraceTimeline, std::string> prepare(schema::TraceReader& reader,
                                                           TimelineOptions options);
  TraceTimeline(TraceTimeline&&) noexcept;
  TraceTimeline& operator=(TraceTimeline&&) noexcept;
  ~TraceTimeline();

  // The events the timeline lays out: every event the reader has (recovered ones for a cut
  // trace), or with `measured` those it measured.
  std::uint64_t events() const;
  std::expected<TimelineStats, std::string> write(std::ostream& out);

 private:
  struct State;
  explicit TraceTimeline(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace vtrace::report
