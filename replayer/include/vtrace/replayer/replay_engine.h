// The replay loop: runs a ReplayPlan on a runtime and checks every outcome.
//
// execute_plan() is execute, compare, report, step by step: a StepExecutor (step_executor.h)
// re-executes each step on `runtime` (foreign objects on `auxiliary`: a second runtime of the same
// kind) and returns what it observed; the comparator (comparator.h) turns the recording into the
// same Observation shape and compares the two under options.check; every Difference becomes a
// Mismatch in the report, its text from comparator.h's render() and step_text.h's describe_step().
// What is compared, and what is not (Pending fence answers, error messages, timing), is the
// comparator's rules.
//
// Range: steps before `first_event` are executed (they rebuild the state) but not checked; steps
// from `end_event` on are not executed. A step whose object could not be created because of an
// earlier mismatch is reported as a mismatch of its own.
//
// Design for more runtimes: the loop holds no global state, and its three parts are public, so a
// lockstep comparer can drive one StepExecutor per runtime and compare their observations.
//
// Ownership: borrows the plan and runtimes for the call; every live object it created is released
//   before execute_plan() returns.
// Thread rules: one thread; nobody else may use the runtimes during execute_plan().
// Errors: none; everything that differs is a Mismatch in the report.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "vtrace/replayer/readback_check.h"
#include "vtrace/replayer/replay_plan.h"
#include "vtrace/replayer/replay_report.h"
#include "vtrace/runtime/registry.h"

namespace vtrace::replayer {

struct ReplayOptions {
  CheckMode check;
  std::uint64_t first_event = 0;
  std::uint64_t end_event = std::numeric_limits<std::uint64_t>::max();  // exclusive
  std::size_t max_mismatches = 1000;  // details kept; all are counted
  // For the report and the reproduce lines.
  std::string trace_label;
  std::string runtime_name;
  // How the runtime was opened, appended to each reproduce line (open_option_words,
  // shell_words.h): a line without --threads or --device-memory could replay differently.
  runtime::RuntimeOpenOptions runtime_open{};
};

// Sees replay as it goes. Default methods do nothing.
class ReplayObserver {
 public:
  virtual ~ReplayObserver() = default;
  // Before step `index` of `total` steps to execute.
  virtual void on_step(const ReplayStep& /*step*/, std::uint64_t /*index*/,
                       std::uint64_t /*total*/) {}
  // Right after step `index` was executed on the runtime (before it is compared): on_step to
  // on_step_done is the step's own time (`vtrace replay --profile`).
  virtual void on_step_done(const ReplayStep& /*step*/, std::uint64_t /*index*/) {}
  virtual void on_mismatch(const Mismatch& /*mismatch*/) {}
};

ReplayReport execute_plan(const ReplayPlan& plan, runtime::DeviceRuntime& runtime,
                        runtime::DeviceRuntime& auxiliary, const ReplayOptions& options,
                        ReplayObserver* observer = nullptr);

}  // namespace vtrace::replayer
