#include "vtrace/runtime/submission.h"

#include <algorithm>
#include <utility>

#include "enum_names.h"

namespace vtrace::runtime {

namespace {

using detail::name_of;
using detail::parse_name;

constexpr std::pair<CommandPhase, std::string_view> kCommandPhaseNames[] = {
    {CommandPhase::kInitialization, "initialization"},
    {CommandPhase::kDynamicBinding, "dynamic_binding"},
    {CommandPhase::kCompute, "compute"},
    {CommandPhase::kResultBinding, "result_binding"},
};
constexpr std::pair<BatchingForm, std::string_view> kBatchingFormNames[] = {
    {BatchingForm::kScalar, "scalar"},
    {BatchingForm::kPacked, "packed"},
    {BatchingForm::kParticipantLoop, "participant_loop"},
};
constexpr std::pair<ExecutionPath, std::string_view> kExecutionPathNames[] = {
    {ExecutionPath::kEager, "eager"},
    {ExecutionPath::kReplayed, "replayed"},
};
constexpr std::pair<TimingMode, std::string_view> kTimingModeNames[] = {
    {TimingMode::kOff, "off"},       {TimingMode::kCompletion, "completion"},
    {TimingMode::kReplay, "replay"}, {TimingMode::kKernel, "kernel"},
    {TimingMode::kVerification, "verification"},
};
constexpr std::pair<ComputePathRequirement, std::string_view> kComputePathNames[] = {
    {ComputePathRequirement::kAdaptive, "adaptive"},
    {ComputePathRequirement::kEagerOnly, "eager_only"},
    {ComputePathRequirement::kReplayedOnly, "replayed_only"},
    {ComputePathRequirement::kReplayedWithDeclaredEagerBoundaries,
     "replayed_with_declared_eager_boundaries"},
};
constexpr std::pair<AttributionRequirement, std::string_view> kAttributionRequirementNames[] = {
    {AttributionRequirement::kNone, "none"},
    {AttributionRequirement::kLogicalExecutionPath, "logical_execution_path"},
};

bool strictly_increasing(const std::vector<std::uint32_t>& values) {
  return std::adjacent_find(values.begin(), values.end(),
                            [](std::uint32_t a, std::uint32_t b) { return a >= b; }) ==
         values.end();
}

}  // namespace

bool completion_enabled(TimingMode mode) { return mode != TimingMode::kOff; }
bool physical_span_attribution_enabled(TimingMode mode) {
  return mode == TimingMode::kReplay || mode == TimingMode::kKernel ||
         mode == TimingMode::kVerification;
}
bool kernel_attribution_enabled(TimingMode mode) {
  return mode == TimingMode::kKernel || mode == TimingMode::kVerification;
}
bool direct_reusable_execution_allowed(TimingMode mode) {
  return mode != TimingMode::kKernel && mode != TimingMode::kVerification;
}

std::string_view command_phase_name(CommandPhase value) { return name_of(kCommandPhaseNames, value); }
std::string_view batching_form_name(BatchingForm value) { return name_of(kBatchingFormNames, value); }
std::string_view execution_path_name(ExecutionPath value) {
  return name_of(kExecutionPathNames, value);
}
std::string_view timing_mode_name(TimingMode value) { return name_of(kTimingModeNames, value); }
std::string_view compute_path_requirement_name(ComputePathRequirement value) {
  return name_of(kComputePathNames, value);
}
std::string_view attribution_requirement_name(AttributionRequirement value) {
  return name_of(kAttributionRequirementNames, value);
}
std::optional<CommandPhase> parse_command_phase(std::string_view name) {
  return parse_name(kCommandPhaseNames, name);
}
std::optional<BatchingForm> parse_batching_form(std::string_view name) {
  return parse_name(kBatchingFormNames, name);
}
std::optional<TimingMode> parse_timing_mode(std::string_view name) {
  return parse_name(kTimingModeNames, name);
}
std::optional<ComputePathRequirement> parse_compute_path_requirement(std::string_view name) {
  return parse_name(kComputePathNames, name);
}

VNextResult<LogicalWork> LogicalWork::create(BatchingForm form, std::uint32_t participant_count,
                                             std::uint64_t token_count) {
  return for_participant_range(form, 0, participant_count, token_count);
}

VNextResult<LogicalWork> LogicalWork::for_participant_range(BatchingForm form,
                                                            std::uint32_t participant_start,
                                                            std::uint32_t participant_count,
                                                            std::uint64_t token_count) {
  std::uint32_t end = 0;
  if (participant_count == 0 || __builtin_add_overflow(participant_start, participant_count, &end)) {
    return std::unexpected(VNextError::invalid_execution_plan(
        "node-scoped device command has an empty or overflowing logical participant range"));
  }
  return LogicalWork(form, participant_start, participant_count, token_count);
}

VNextResult<ReusableExecutionCapture> ReusableExecutionCapture::create(
    ProgramId program_id, std::uint32_t node_count,
    std::vector<std::uint32_t> eager_boundary_node_indices,
    std::vector<std::uint32_t> per_wave_binding_node_indices) {
  const auto below = [node_count](const std::vector<std::uint32_t>& v) {
    return std::all_of(v.begin(), v.end(), [node_count](std::uint32_t i) { return i < node_count; });
  };
  // "sorted and de-duplicated" is the same as strictly increasing.
  if (node_count == 0 || !strictly_increasing(eager_boundary_node_indices) ||
      !below(eager_boundary_node_indices) || !strictly_increasing(per_wave_binding_node_indices) ||
      !below(per_wave_binding_node_indices)) {
    return std::unexpected(VNextError::invalid_execution_plan(
        "reusable execution capture has no nodes or unordered or out-of-range node indices"));
  }
  return ReusableExecutionCapture(std::move(program_id), node_count,
                                  std::move(eager_boundary_node_indices),
                                  std::move(per_wave_binding_node_indices));
}

CommandBatch CommandBatch::singleton(CommandPtr command) {
  CommandBatch batch;
  batch.push_compute(std::move(command));
  return batch;
}

VNextResult<void> CommandBatch::set_declared_eager_compute_node_indices(
    std::vector<std::uint32_t> indices) {
  if (compute_path_requirement_ != ComputePathRequirement::kReplayedWithDeclaredEagerBoundaries) {
    return std::unexpected(VNextError::invalid_execution_plan(
        "declared eager compute nodes require a replayed-with-declared-eager-boundaries path"));
  }
  if (indices.empty() || !strictly_increasing(indices)) {
    return std::unexpected(VNextError::invalid_execution_plan(
        "declared eager compute nodes must be non-empty and strictly increasing"));
  }
  if (!declared_eager_.empty()) {
    return std::unexpected(
        VNextError::invalid_execution_plan("declared eager compute nodes were already set"));
  }
  declared_eager_ = std::move(indices);
  return {};
}

VNextResult<void> CommandBatch::set_reusable_execution_capture(ReusableExecutionCapture capture) {
  if (capture_.has_value()) {
    return std::unexpected(VNextError::invalid_execution_plan(
        "device command batch already carries reusable execution capture metadata"));
  }
  capture_ = std::move(capture);
  return {};
}

void CommandBatch::push_initialization(CommandPtr c) {
  entries_.push_back({CommandPhase::kInitialization, std::nullopt, std::nullopt, std::move(c)});
}
void CommandBatch::push_node_initialization(std::uint32_t node, LogicalWork work, CommandPtr c) {
  entries_.push_back({CommandPhase::kInitialization, node, work, std::move(c)});
}
void CommandBatch::push_dynamic_binding(CommandPtr c) {
  entries_.push_back({CommandPhase::kDynamicBinding, std::nullopt, std::nullopt, std::move(c)});
}
void CommandBatch::push_compute(CommandPtr c) {
  entries_.push_back({CommandPhase::kCompute, std::nullopt, std::nullopt, std::move(c)});
}
void CommandBatch::push_result_binding(CommandPtr c) {
  entries_.push_back({CommandPhase::kResultBinding, std::nullopt, std::nullopt, std::move(c)});
}

void CommandBatch::push_operation(std::uint32_t node, EncodedOperation op) {
  for (auto& c : op.program_bindings) {
    entries_.push_back({CommandPhase::kDynamicBinding, node, std::nullopt, std::move(c)});
  }
  for (auto& c : op.dynamic_bindings) {
    entries_.push_back({CommandPhase::kDynamicBinding, node, std::nullopt, std::move(c)});
  }
  entries_.push_back({CommandPhase::kCompute, node, std::nullopt, std::move(op.compute)});
  for (auto& c : op.result_bindings) {
    entries_.push_back({CommandPhase::kResultBinding, node, std::nullopt, std::move(c)});
  }
}

std::optional<NativeWorkAttribution> NativeWorkAttribution::with_participant_range(
    std::uint32_t command_index, std::optional<std::uint32_t> node_index, CommandPhase phase,
    DeviceNativeOperationId native_op_id, ExecutionPath path, BatchingForm form,
    std::uint32_t participant_start, std::uint32_t participant_count, std::uint64_t token_count,
    std::uint64_t compute_dispatch_count, std::uint64_t transfer_command_count,
    std::optional<std::uint64_t> reusable_graph_node_count) {
  std::uint32_t end = 0;
  if ((compute_dispatch_count == 0 && transfer_command_count == 0) ||
      (node_index.has_value() && participant_count == 0) ||
      __builtin_add_overflow(participant_start, participant_count, &end) ||
      (!node_index.has_value() && participant_start != 0) ||
      (reusable_graph_node_count.has_value() && path != ExecutionPath::kReplayed)) {
    return std::nullopt;
  }
  NativeWorkAttribution row(std::move(native_op_id));
  row.command_index_ = command_index;
  row.node_index_ = node_index;
  row.phase_ = phase;
  row.path_ = path;
  row.form_ = form;
  row.participant_start_ = participant_start;
  row.participant_count_ = participant_count;
  row.token_count_ = token_count;
  row.compute_dispatch_count_ = compute_dispatch_count;
  row.transfer_command_count_ = transfer_command_count;
  row.graph_nodes_ = reusable_graph_node_count;
  return row;
}

std::optional<SubmissionAttribution> SubmissionAttribution::create(
    std::vector<NativeWorkAttribution> rows) {
  const bool ordered =
      std::adjacent_find(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
        return a.command_index() >= b.command_index();
      }) == rows.end();
  if (rows.empty() || !ordered) return std::nullopt;
  return SubmissionAttribution(std::move(rows));
}

}  // namespace vtrace::runtime
