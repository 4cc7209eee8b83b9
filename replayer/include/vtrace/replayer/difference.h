// Difference: what differs between two Observations of one step (comparator.h says when each
// kind is found). Structured, so a report can say more than its rendered text: which field, which
// row, how many readback elements and how far apart.
// Ownership: a value (owns its strings). Thread rules: a plain value. Errors: none.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vtrace/replayer/observation.h"
#include "vtrace/replayer/readback_check.h"

namespace vtrace::replayer {

enum class DifferenceKind : std::uint8_t {
  kNotExecuted,
  kSupport,
  kFlag,
  kRejected,
  kOutcome,
  kErrorKind,
  kDescriptor,
  kStreamState,
  kFence,
  kAttribution,
  kReadback,
  kDescribeReport,
  kReturnedCommand,
  kCommandCount,
  kPreparation,
  kCatalog,
  kTrim,
  kCounters,
};
std::string_view difference_kind_name(DifferenceKind kind);  // "outcome", "error_kind", ...

struct Difference {
  DifferenceKind kind = DifferenceKind::kOutcome;
  // kNotExecuted: the problem, and whether it is the expected side's (else the actual side's).
  std::optional<ExecutionProblem> problem;
  bool problem_on_expected = false;
  // kAttribution: the first differing row (nullopt: presence differs) and field ("rows" when the
  // row counts differ, else "command_index", "node_index", "phase", "native_op_id", "path",
  // "batching_form", "participant_start", "participant_count", "token_count",
  // "compute_dispatch_count", "transfer_command_count", "reusable_graph_node_count").
  std::optional<std::uint64_t> row;
  std::string field;
  // kReadback: the element statistics.
  std::optional<ReadbackDifference> readback;
  // kCounters: the names of the counters that differ, in declaration order.
  std::vector<std::string> counters;
};

}  // namespace vtrace::replayer
