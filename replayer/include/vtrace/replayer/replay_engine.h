// The replay engine: executes a ReplayPlan on a runtime and checks every outcome.
//
// Each step re-executes its recorded call on `runtime` with the recorded arguments, mapping
// recorded ordinals to the live objects replay created (own objects from `runtime`, foreign ones
// from `auxiliary`: a second runtime of the same kind, where foreign buffers are allocated with
// the recorded descriptor, foreign fences come from a trivial submit and foreign commands from a
// trivial encode). Then it compares: the success or error kind of every call, every descriptor and
// stream state answered, every attribution row, every fence answer, every readback's bytes (per
// CheckMode), every counter snapshot. Error messages are not compared (they are for people; the
// kind is the contract).
//
// Range: steps before `first_event` are executed (they rebuild the state) but not checked; steps
// from `end_event` on are not executed. A step whose object could not be created because of an
// earlier mismatch is reported as a mismatch of its own.
//
// Fences: a recorded or live Pending query answer is not compared (asynchronous runtimes may
// still be running); a wait is always compared. Counter snapshots are not compared when the live
// runtime has no counters (they are not counted as checked either).
//
// Design for more runtimes (roadmap 1): the engine holds no global state; ReplayObserver sees
// every step and every mismatch, so a lockstep comparer can drive several engines.
//
// Ownership: borrows the plan and runtimes for the call; every live object it created is released
//   before run() returns.
// Thread rules: one thread; nobody else may use the runtimes during run().
// Errors: none; everything that differs is a Mismatch in the report.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "vtrace/replayer/readback_check.h"
#include "vtrace/replayer/replay_plan.h"
#include "vtrace/replayer/replay_report.h"

namespace vtrace::replayer {

struct ReplayOptions {
  CheckMode check;
  std::uint64_t first_event = 0;
  std::uint64_t end_event = std::numeric_limits<std::uint64_t>::max();  // exclusive
  std::size_t max_mismatches = 1000;  // details kept; all are counted
  // For the report and the reproduce lines.
  std::string trace_label;
  std::string runtime_name;
};

// Sees replay as it goes. Default methods do nothing.
class ReplayObserver {
 public:
  virtual ~ReplayObserver() = default;
  // Before step `index` of `total` steps to execute.
  virtual void on_step(const ReplayStep& /*step*/, std::uint64_t /*index*/,
                       std::uint64_t /*total*/) {}
  virtual void on_mismatch(const Mismatch& /*mismatch*/) {}
};

ReplayReport replay_plan(const ReplayPlan& plan, runtime::DeviceRuntime& runtime,
                         runtime::DeviceRuntime& auxiliary, const ReplayOptions& options,
                         ReplayObserver* observer = nullptr);

}  // namespace vtrace::replayer
