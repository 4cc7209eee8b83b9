// The comparator (comparator.h): the recording as an Observation, the rules that compare two
// observations, and the report text of each Difference.
#include "vtrace/replayer/comparator.h"

#include <fmt/format.h>

#include "vtrace/replayer/step_text.h"

namespace vtrace::replayer {

namespace rt = vtrace::runtime;

// ---- the recording as an observation -------------------------------------------------------

namespace {

class Recorded {
 public:
  Recorded(const ReplayPlan& plan, Observation& out) : plan_(plan), out_(out) {}

  // Steps whose call has an outcome and nothing else.
  template <typename S>
    requires requires(const S& x) { x.outcome; }
  void operator()(const S& s) {
    out_.outcome = s.outcome;
  }
  void operator()(const step::Allocate& s) {
    out_.outcome = s.outcome;
    if (!s.outcome && s.buffer && s.descriptor) out_.descriptor = s.descriptor;
  }
  void operator()(const step::BufferDescriptorQueried& s) { out_.descriptor = s.descriptor; }
  void operator()(const step::StreamStateQueried& s) { out_.stream_state = s.state; }
  void operator()(const step::SubmitEnd& s) {
    out_.outcome = s.not_submitted;
    out_.rejected = s.rejected;
  }
  void operator()(const step::SubmissionAttribution& s) {
    out_.attribution = AttributionAnswer{s.rows};
  }
  void operator()(const step::QueryFence& s) { out_.fence = s.result; }
  void operator()(const step::WaitFence& s) { out_.fence = s.result; }
  void operator()(const step::Readback& s) {
    out_.outcome = s.outcome;
    if (!s.outcome && s.payload) {
      out_.readback = ReadbackAnswer{s.layout.element_type(), {}, plan_.payload(*s.payload)};
    }
  }
  void operator()(const step::DescribeError& s) {
    out_.described = DescribeAnswer{
        s.report ? std::optional<bool>(s.report->retryable()) : std::nullopt, {}};
  }
  void operator()(const step::CounterSnapshot& s) { out_.counters = s.counters; }
  void operator()(const step::GuardedSubmissionQueried& s) { out_.flag = s.supported; }
  void operator()(const step::BeginStaticWeightImport& s) {
    out_.supported = s.supported;
    if (s.supported) out_.outcome = s.outcome;
  }
  void operator()(const step::EncodeStaticWeightTransform& s) {
    out_.supported = s.supported;
    if (!s.supported) return;
    out_.outcome = s.outcome;
    if (!s.outcome) out_.returned_command = s.command.has_value();
  }
  void operator()(const step::EncodeReusableExecution& s) {
    out_.outcome = s.outcome;
    if (!s.outcome) out_.returned_command = s.command.has_value();
  }
  void operator()(const step::CoalesceProgramBindings& s) {
    out_.outcome = s.outcome;
    if (!s.outcome) out_.returned_commands = s.commands_out.size();
  }
  void operator()(const step::TrimReusableExecutables& s) {
    out_.outcome = s.outcome;
    out_.trim = s.trim;
  }
  void operator()(const step::ReusableCatalogQueried& s) {
    out_.outcome = s.outcome;
    out_.catalog = s.catalog;
  }
  void operator()(const step::ConfigureReusableExecutables& s) { preparation(s); }
  void operator()(const step::SealReusableExecutables& s) { preparation(s); }
  void operator()(const step::ReusablePreparationQueried& s) { preparation(s); }
  // Everything else answers nothing (RuntimeOpened, ForeignObjectSeen, Released, SubmitBegin,
  // Skipped).
  void operator()(const auto&) {}

 private:
  void preparation(const step::PreparationAnswer& s) {
    out_.outcome = s.outcome;
    out_.preparation = s.preparation;
  }

  const ReplayPlan& plan_;
  Observation& out_;
};

}  // namespace

Observation recorded_observation(const ReplayStep& step, const ReplayPlan& plan) {
  Observation out;
  std::visit(Recorded(plan, out), step.body);
  return out;
}

// ---- rules ---------------------------------------------------------------------------------

std::string_view difference_kind_name(DifferenceKind kind) {
  switch (kind) {
    case DifferenceKind::kNotExecuted: return "not_executed";
    case DifferenceKind::kSupport: return "support";
    case DifferenceKind::kFlag: return "flag";
    case DifferenceKind::kRejected: return "rejected";
    case DifferenceKind::kOutcome: return "outcome";
    case DifferenceKind::kErrorKind: return "error_kind";
    case DifferenceKind::kDescriptor: return "descriptor";
    case DifferenceKind::kStreamState: return "stream_state";
    case DifferenceKind::kFence: return "fence";
    case DifferenceKind::kAttribution: return "attribution";
    case DifferenceKind::kReadback: return "readback";
    case DifferenceKind::kDescribeReport: return "describe_report";
    case DifferenceKind::kReturnedCommand: return "returned_command";
    case DifferenceKind::kCommandCount: return "command_count";
    case DifferenceKind::kPreparation: return "preparation";
    case DifferenceKind::kCatalog: return "catalog";
    case DifferenceKind::kTrim: return "trim";
    case DifferenceKind::kCounters: return "counters";
  }
  return "unknown";
}

namespace {

Difference of(DifferenceKind kind) {
  Difference d;
  d.kind = kind;
  return d;
}

bool same_fence_answer(const rt::FenceQuery& a, const rt::FenceQuery& b) {
  if (a.index() != b.index()) return false;
  if (const auto* e = std::get_if<rt::RuntimeError>(&a)) {
    return e->kind() == std::get<rt::RuntimeError>(b).kind();
  }
  if (const auto* r = std::get_if<rt::TerminalReceipt>(&a)) {
    const auto& other = std::get<rt::TerminalReceipt>(b);
    // Timing measurements are host- and run-dependent; the terminal is the contract.
    if (r->terminal.is_succeeded() != other.terminal.is_succeeded()) return false;
    return r->terminal.is_succeeded() ||
           r->terminal.failure->kind() == other.terminal.failure->kind();
  }
  return true;
}

// The first field in which two attribution rows differ; empty when they are equal.
std::string first_differing_field(const rt::NativeWorkAttribution& a,
                                  const rt::NativeWorkAttribution& b) {
  if (a.command_index() != b.command_index()) return "command_index";
  if (a.node_index() != b.node_index()) return "node_index";
  if (a.command_phase() != b.command_phase()) return "phase";
  if (a.native_op_id() != b.native_op_id()) return "native_op_id";
  if (a.execution_path() != b.execution_path()) return "path";
  if (a.batching_form() != b.batching_form()) return "batching_form";
  if (a.participant_start() != b.participant_start()) return "participant_start";
  if (a.participant_count() != b.participant_count()) return "participant_count";
  if (a.token_count() != b.token_count()) return "token_count";
  if (a.compute_dispatch_count() != b.compute_dispatch_count()) return "compute_dispatch_count";
  if (a.transfer_command_count() != b.transfer_command_count()) return "transfer_command_count";
  if (a.reusable_graph_node_count() != b.reusable_graph_node_count()) {
    return "reusable_graph_node_count";
  }
  return a == b ? "" : "row";
}

std::optional<Difference> compare_attribution(const AttributionAnswer& e,
                                              const AttributionAnswer& a) {
  if (e.rows.has_value() != a.rows.has_value()) return of(DifferenceKind::kAttribution);
  if (!e.rows) return std::nullopt;
  const auto& want = e.rows->commands();
  const auto& got = a.rows->commands();
  for (std::size_t i = 0; i < std::max(want.size(), got.size()); ++i) {
    if (i < want.size() && i < got.size() && want[i] == got[i]) continue;
    Difference d = of(DifferenceKind::kAttribution);
    d.row = i;
    d.field = i < want.size() && i < got.size() ? first_differing_field(want[i], got[i]) : "rows";
    return d;
  }
  return std::nullopt;
}

std::vector<std::string> differing_counters(const rt::CounterSnapshot& e,
                                            const rt::CounterSnapshot& a) {
  std::vector<std::string> names;
  const auto check = [&](std::uint64_t x, std::uint64_t y, const char* name) {
    if (x != y) names.emplace_back(name);
  };
  check(e.allocations, a.allocations, "allocations");
  check(e.live_allocations, a.live_allocations, "live_allocations");
  check(e.submissions, a.submissions, "submissions");
  check(e.commands, a.commands, "commands");
  check(e.uploaded_bytes, a.uploaded_bytes, "uploaded_bytes");
  check(e.dense_linear_launches, a.dense_linear_launches, "dense_linear_launches");
  check(e.readback_bytes, a.readback_bytes, "readback_bytes");
  return names;
}

}  // namespace

Comparison compare(const Observation& e, const Observation& a, CheckMode mode) {
  Comparison c;
  auto& out = c.differences;
  bool call = false;
  const auto finish = [&]() -> Comparison {
    if (call) ++c.checked.calls;
    return std::move(c);
  };

  for (const auto* side : {&e, &a}) {
    for (const auto& problem : side->problems) {
      Difference d = of(DifferenceKind::kNotExecuted);
      d.problem = problem;
      d.problem_on_expected = side == &e;
      out.push_back(std::move(d));
    }
  }
  if (e.supported && a.supported) {
    call = true;
    if (*e.supported != *a.supported) {
      out.push_back(of(DifferenceKind::kSupport));
      return finish();
    }
  }
  if (e.flag && a.flag) {
    call = true;
    if (*e.flag != *a.flag) out.push_back(of(DifferenceKind::kFlag));
  }
  if (e.outcome && a.outcome) {
    call = true;
    if (e.rejected || a.rejected) {
      if (e.rejected != a.rejected) out.push_back(of(DifferenceKind::kRejected));
      return finish();
    }
    const Outcome& want = *e.outcome;
    const Outcome& got = *a.outcome;
    if (want) ++c.checked.error_outcomes;
    if (want.has_value() != got.has_value()) {
      out.push_back(of(DifferenceKind::kOutcome));
    } else if (want && want->kind() != got->kind()) {
      out.push_back(of(DifferenceKind::kErrorKind));
    }
  }
  if (e.descriptor && a.descriptor) {
    call = true;
    if (*e.descriptor != *a.descriptor) out.push_back(of(DifferenceKind::kDescriptor));
  }
  if (e.stream_state && a.stream_state) {
    call = true;
    if (*e.stream_state != *a.stream_state) out.push_back(of(DifferenceKind::kStreamState));
  }
  // Pending depends on timing, not on the contract: not compared.
  if (e.fence && a.fence && !rt::is_pending(*e.fence) && !rt::is_pending(*a.fence)) {
    call = true;
    ++c.checked.fences;
    if (!same_fence_answer(*e.fence, *a.fence)) out.push_back(of(DifferenceKind::kFence));
  }
  if (e.attribution && a.attribution) {
    call = true;
    c.checked.attribution_rows += e.attribution->rows ? e.attribution->rows->commands().size() : 0;
    if (auto d = compare_attribution(*e.attribution, *a.attribution)) out.push_back(std::move(*d));
  }
  if (e.readback && a.readback && mode.kind != CheckMode::Kind::kNone) {
    const auto want = e.readback->bytes();
    ++c.checked.readbacks;
    c.checked.readback_bytes += want.size();
    if (auto r = compare_readback(want, a.readback->bytes(), e.readback->element_type, mode)) {
      Difference d = of(DifferenceKind::kReadback);
      d.readback = std::move(*r);
      out.push_back(std::move(d));
    }
  }
  if (e.described && a.described) {
    call = true;
    // The code names the runtime; success and retryability are the contract.
    if (e.described->retryable != a.described->retryable) {
      out.push_back(of(DifferenceKind::kDescribeReport));
    }
  }
  if (e.returned_command && a.returned_command && *e.returned_command != *a.returned_command) {
    out.push_back(of(DifferenceKind::kReturnedCommand));
  }
  if (e.returned_commands && a.returned_commands &&
      *e.returned_commands != *a.returned_commands) {
    out.push_back(of(DifferenceKind::kCommandCount));
  }
  if (e.preparation && a.preparation && !(*e.preparation == *a.preparation)) {
    out.push_back(of(DifferenceKind::kPreparation));
  }
  if (e.catalog && a.catalog && *e.catalog != *a.catalog) {
    out.push_back(of(DifferenceKind::kCatalog));
  }
  if (e.trim && a.trim && !(*e.trim == *a.trim)) out.push_back(of(DifferenceKind::kTrim));
  if (e.counters && a.counters) {
    ++c.checked.counter_snapshots;
    if (*e.counters != *a.counters) {
      Difference d = of(DifferenceKind::kCounters);
      d.counters = differing_counters(*e.counters, *a.counters);
      out.push_back(std::move(d));
    }
  }
  return finish();
}

// ---- text ----------------------------------------------------------------------------------

namespace {

RenderedDifference problem_text(const ExecutionProblem& p) {
  using K = ExecutionProblem::Kind;
  const std::string never = "it was never created in this replay (see the earlier mismatch)";
  switch (p.kind) {
    case K::kMissingObject:
      return {fmt::format("{} to exist", p.object.to_string(p.object_kind)), never};
    case K::kMissingPermit:
      return {fmt::format("permit {} to exist", p.number),
              "its admit did not succeed in this replay"};
    case K::kMissingSession:
      return {fmt::format("import session#{} to exist", p.number), never};
    case K::kSubmitNotRun:
      return {"the submit to run", "its SubmitBegin could not be re-executed"};
    case K::kInvalidArgument:
      return {"a valid reusable execution plan", p.detail};
  }
  return {"the step to run", p.detail};
}

std::string rows_text(const AttributionAnswer& answer, const Difference& d) {
  if (!d.row) {
    return answer.rows ? fmt::format("{} attribution rows", answer.rows->commands().size())
                       : "no attribution";
  }
  const auto& rows = answer.rows->commands();
  return *d.row < rows.size() ? fmt::format("row {} {}", *d.row, attribution_row_text(rows[*d.row]))
                              : fmt::format("{} rows", rows.size());
}

std::string describe_text(const DescribeAnswer& answer) {
  return answer.retryable ? fmt::format("a report (retryable {})", *answer.retryable)
                          : "describe_error failed: " + answer.failure;
}

std::string trim_text(const rt::ReusableExecutionTrim& t) {
  return fmt::format("released {} executables, {} rejections", t.released_executables,
                     t.released_rejections);
}

}  // namespace

RenderedDifference render(const Difference& d, const Observation& e, const Observation& a) {
  using K = DifferenceKind;
  const auto supported = [](bool s) -> std::string {
    return s ? "supported" : "not supported (nullopt)";
  };
  const auto command = [](bool c) -> std::string { return c ? "a command" : "Ok(None)"; };
  const std::string rejected = "rejected (attribution unavailable)";
  switch (d.kind) {
    case K::kNotExecuted:
      return problem_text(*d.problem);
    case K::kSupport:
      return {supported(*e.supported), supported(*a.supported)};
    case K::kFlag:
      return {fmt::format("{}", *e.flag), fmt::format("{}", *a.flag)};
    case K::kRejected:
      return {e.rejected ? rejected : "submitted",
              a.rejected ? rejected : outcome_text(*a.outcome)};
    case K::kOutcome:
    case K::kErrorKind:
      return {outcome_text(*e.outcome), outcome_text(*a.outcome)};
    case K::kDescriptor:
      return {descriptor_text(*e.descriptor), descriptor_text(*a.descriptor)};
    case K::kStreamState:
      return {stream_state_text(*e.stream_state), stream_state_text(*a.stream_state)};
    case K::kFence:
      return {fence_text(*e.fence), fence_text(*a.fence)};
    case K::kAttribution:
      return {rows_text(*e.attribution, d), rows_text(*a.attribution, d)};
    case K::kReadback:
      return {fmt::format("{} bytes as recorded", e.readback->bytes().size()),
              d.readback->summary()};
    case K::kDescribeReport:
      return {e.described->retryable
                  ? fmt::format("a report (retryable {})", *e.described->retryable)
                  : "describe_error to fail",
              describe_text(*a.described)};
    case K::kReturnedCommand:
      return {command(*e.returned_command), command(*a.returned_command)};
    case K::kCommandCount:
      return {fmt::format("{} commands", *e.returned_commands),
              fmt::format("{} commands", *a.returned_commands)};
    case K::kPreparation:
      return {preparation_text(*e.preparation), preparation_text(*a.preparation)};
    case K::kCatalog:
      return {catalog_text(*e.catalog), catalog_text(*a.catalog)};
    case K::kTrim:
      return {trim_text(*e.trim), trim_text(*a.trim)};
    case K::kCounters:
      return {counters_text(*e.counters), counters_text(*a.counters)};
  }
  return {};
}

}  // namespace vtrace::replayer
