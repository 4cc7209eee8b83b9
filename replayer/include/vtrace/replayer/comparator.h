// The comparator: where replay's verdicts come from.
//
// recorded_observation(step, plan) turns what the recording says a step's call answered into an
// Observation (observation.h), the shape the StepExecutor returns for a live runtime. compare()
// then compares any two observations under a CheckMode and returns every Difference, in a fixed
// order, plus what it counted as checked. render() gives a Difference the expected/actual text of
// the replay report (the strings `vtrace replay` prints and docs/CLI.md shows).
//
// Rules, applied to the fields both sides have (a field absent on either side is not compared):
//   - problems: every ExecutionProblem of either side (an object that was never created, ...) is a
//     kNotExecuted difference, first;
//   - supported (optional methods that may answer nullopt): differ -> kSupport, and nothing else
//     of the step is compared;
//   - flag (supports_guarded_submission) -> kFlag;
//   - a SubmitEnd rejected (submit_guarded's Rejected) on either side: differ -> kRejected, and the
//     outcome is not compared otherwise;
//   - outcome: success against failure -> kOutcome; two failures of different ErrorKind ->
//     kErrorKind (messages are for people and never compared);
//   - descriptor (every field) -> kDescriptor; stream state -> kStreamState;
//   - fence answer: not compared when either side is Pending (timing, not contract); otherwise
//     the alternative (Terminal / Indeterminate), an Indeterminate's error kind, a Terminal's
//     success or failure kind -> kFence (timing measurements are not compared);
//   - attribution: presence, row count, every field of every row -> kAttribution (row index and
//     first differing field named);
//   - readback bytes, per CheckMode (readback_check.h) -> kReadback with the element statistics;
//     not compared under none;
//   - describe_error: a report or not, and its retryability -> kDescribeReport;
//   - returned command (Ok(Some) vs Ok(None)) -> kReturnedCommand; coalesce's count ->
//     kCommandCount; preparation receipt, catalog, trim -> kPreparation, kCatalog, kTrim;
//   - counters: all seven -> kCounters (the differing ones named).
// Counting (ReplayChecks): a step that compared any of supported, flag, rejected, outcome,
// descriptor, state, fence, attribution, describe_error counts one call; an outcome whose expected
// side is an error counts one error outcome; a compared fence one fence; attribution adds the
// expected rows; a compared readback one readback and its expected bytes; counters one snapshot.
//
// Thread rules: pure functions (recorded_observation borrows the plan's payloads: the plan must
// outlive the observation). Errors: none.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "vtrace/replayer/difference.h"
#include "vtrace/replayer/observation.h"
#include "vtrace/replayer/readback_check.h"
#include "vtrace/replayer/replay_plan.h"
#include "vtrace/replayer/replay_report.h"

namespace vtrace::replayer {

Observation recorded_observation(const ReplayStep& step, const ReplayPlan& plan);

struct Comparison {
  std::vector<Difference> differences;  // empty: the observations match
  ReplayChecks checked;                 // what this comparison counted
};

Comparison compare(const Observation& expected, const Observation& actual, CheckMode mode);

struct RenderedDifference {
  std::string expected;
  std::string actual;
};
// The report text of `difference`, found comparing `expected` with `actual`.
RenderedDifference render(const Difference& difference, const Observation& expected,
                          const Observation& actual);

}  // namespace vtrace::replayer
