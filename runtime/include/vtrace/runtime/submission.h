// Submission data types (spec 3) and completion / failure wrappers (spec 4).
//
// CommandBatch owns its commands (move-only). Upstream only core may construct a batch; this
// port has no core, so construction is public and every rule of spec 3.9 is enforced by the
// mutators instead. Thread rules: plain values, except that a batch is moved, not shared.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "vtrace/runtime/error.h"
#include "vtrace/runtime/handles.h"
#include "vtrace/runtime/identity.h"

namespace vtrace::runtime {

// spec 3.1
enum class CommandPhase : std::uint8_t { kInitialization, kDynamicBinding, kCompute, kResultBinding };
// spec 3.2
enum class BatchingForm : std::uint8_t { kScalar, kPacked, kParticipantLoop };
// spec 3.3
enum class ExecutionPath : std::uint8_t { kEager, kReplayed };
// spec 3.4 (numeric values are upstream's repr(u8))
enum class TimingMode : std::uint8_t {
  kOff = 0,
  kCompletion = 1,
  kReplay = 2,
  kKernel = 3,
  kVerification = 4,
};
bool completion_enabled(TimingMode mode);                  // every mode but Off
bool physical_span_attribution_enabled(TimingMode mode);   // Replay, Kernel, Verification
bool kernel_attribution_enabled(TimingMode mode);          // Kernel, Verification
bool direct_reusable_execution_allowed(TimingMode mode);   // every mode but Kernel, Verification
// spec 3.5
enum class ComputePathRequirement : std::uint8_t {
  kAdaptive,
  kEagerOnly,
  kReplayedOnly,
  kReplayedWithDeclaredEagerBoundaries,
};
// spec 3.6
enum class AttributionRequirement : std::uint8_t { kNone, kLogicalExecutionPath };

// snake_case names, as upstream serde, and their parsers (nullopt on an unknown name).
std::string_view command_phase_name(CommandPhase value);
std::string_view batching_form_name(BatchingForm value);
std::string_view execution_path_name(ExecutionPath value);
std::string_view timing_mode_name(TimingMode value);
std::string_view compute_path_requirement_name(ComputePathRequirement value);
std::string_view attribution_requirement_name(AttributionRequirement value);
std::optional<CommandPhase> parse_command_phase(std::string_view name);
std::optional<BatchingForm> parse_batching_form(std::string_view name);
std::optional<TimingMode> parse_timing_mode(std::string_view name);
std::optional<ComputePathRequirement> parse_compute_path_requirement(std::string_view name);

// spec 3.7
class LogicalWork {
 public:
  // for_participant_range(form, 0, count, tokens).
  static VNextResult<LogicalWork> create(BatchingForm form, std::uint32_t participant_count,
                                         std::uint64_t token_count);
  // Fails with "node-scoped device command has an empty or overflowing logical participant
  // range" when count is 0 or start+count overflows u32. token_count may be 0.
  static VNextResult<LogicalWork> for_participant_range(BatchingForm form,
                                                        std::uint32_t participant_start,
                                                        std::uint32_t participant_count,
                                                        std::uint64_t token_count);
  BatchingForm batching_form() const { return batching_form_; }
  std::uint32_t participant_start() const { return participant_start_; }
  std::uint32_t participant_count() const { return participant_count_; }
  std::uint64_t token_count() const { return token_count_; }
  std::uint32_t participant_end() const { return participant_start_ + participant_count_; }
  friend bool operator==(const LogicalWork&, const LogicalWork&) = default;

 private:
  LogicalWork(BatchingForm form, std::uint32_t start, std::uint32_t count, std::uint64_t tokens)
      : batching_form_(form),
        participant_start_(start),
        participant_count_(count),
        token_count_(tokens) {}
  BatchingForm batching_form_;
  std::uint32_t participant_start_;
  std::uint32_t participant_count_;
  std::uint64_t token_count_;
};

// spec 3.11
class ReusableExecutionCapture {
 public:
  // node_count > 0; eager indices strictly increasing and < node_count; binding indices sorted,
  // de-duplicated and < node_count.
  static VNextResult<ReusableExecutionCapture> create(
      ProgramId program_id, std::uint32_t node_count,
      std::vector<std::uint32_t> eager_boundary_node_indices,
      std::vector<std::uint32_t> per_wave_binding_node_indices);
  const ProgramId& program_id() const { return program_id_; }
  std::uint32_t node_count() const { return node_count_; }
  const std::vector<std::uint32_t>& eager_boundary_node_indices() const { return eager_; }
  const std::vector<std::uint32_t>& per_wave_binding_node_indices() const { return binding_; }
  friend bool operator==(const ReusableExecutionCapture&, const ReusableExecutionCapture&) = default;

 private:
  ReusableExecutionCapture(ProgramId id, std::uint32_t nodes, std::vector<std::uint32_t> eager,
                           std::vector<std::uint32_t> binding)
      : program_id_(std::move(id)),
        node_count_(nodes),
        eager_(std::move(eager)),
        binding_(std::move(binding)) {}
  ProgramId program_id_;
  std::uint32_t node_count_;
  std::vector<std::uint32_t> eager_;
  std::vector<std::uint32_t> binding_;
};

// spec 3.8
struct CommandEntry {
  CommandPhase phase = CommandPhase::kCompute;
  std::optional<std::uint32_t> node_index;
  std::optional<LogicalWork> logical_work;
  CommandPtr command;
};

// spec 3.10: what an operation provider encodes (one compute command and its bindings).
struct EncodedOperation {
  std::vector<CommandPtr> program_bindings;
  std::vector<CommandPtr> dynamic_bindings;
  CommandPtr compute;
  std::vector<CommandPtr> result_bindings;
};

// spec 3.9
class CommandBatch {
 public:
  // Empty batch: timing Off, path Adaptive, attribution None, no capture.
  CommandBatch() = default;
  explicit CommandBatch(TimingMode timing,
                        ComputePathRequirement path = ComputePathRequirement::kAdaptive)
      : timing_mode_(timing), compute_path_requirement_(path) {}
  // One Compute entry with no node index and no logical work.
  static CommandBatch singleton(CommandPtr command);

  CommandBatch(CommandBatch&&) = default;
  CommandBatch& operator=(CommandBatch&&) = default;

  // Requires path ReplayedWithDeclaredEagerBoundaries, a non-empty strictly increasing list, and
  // no earlier call; otherwise InvalidExecutionPlan and nothing changes.
  VNextResult<void> set_declared_eager_compute_node_indices(std::vector<std::uint32_t> indices);
  void require_logical_execution_path_attribution() {
    attribution_requirement_ = AttributionRequirement::kLogicalExecutionPath;
  }
  // Fails if a capture is already present.
  VNextResult<void> set_reusable_execution_capture(ReusableExecutionCapture capture);

  void push_initialization(CommandPtr c);  // (Initialization, None, None)
  // (Initialization, node, work): the only way logical work is attached.
  void push_node_initialization(std::uint32_t node, LogicalWork work, CommandPtr c);
  void push_dynamic_binding(CommandPtr c);  // (DynamicBinding, None, None)
  void push_compute(CommandPtr c);          // (Compute, None, None)
  void push(CommandPtr c) { push_compute(std::move(c)); }
  void push_result_binding(CommandPtr c);  // (ResultBinding, None, None)
  // Program bindings, dynamic bindings (DynamicBinding, node), compute (Compute, node), result
  // bindings (ResultBinding, node); none carries logical work.
  void push_operation(std::uint32_t node, EncodedOperation op);
  // Appends an entry as given. For decorators and replay, which rebuild a batch entry by entry.
  // It can build what the typed pushes cannot (a null command, logical work on an entry that is
  // not a node's initialization); submit() refuses those (kForeignCommand, kLogicalWorkConflict).
  void push_entry(CommandEntry entry) { entries_.push_back(std::move(entry)); }

  std::size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  TimingMode timing_mode() const { return timing_mode_; }
  ComputePathRequirement compute_path_requirement() const { return compute_path_requirement_; }
  const std::vector<std::uint32_t>& declared_eager_compute_node_indices() const {
    return declared_eager_;
  }
  AttributionRequirement attribution_requirement() const { return attribution_requirement_; }
  const std::optional<ReusableExecutionCapture>& reusable_execution_capture() const {
    return capture_;
  }
  const std::vector<CommandEntry>& entries() const { return entries_; }
  std::vector<CommandEntry> into_entries() && { return std::move(entries_); }

 private:
  std::vector<CommandEntry> entries_;
  TimingMode timing_mode_ = TimingMode::kOff;
  ComputePathRequirement compute_path_requirement_ = ComputePathRequirement::kAdaptive;
  std::vector<std::uint32_t> declared_eager_;
  AttributionRequirement attribution_requirement_ = AttributionRequirement::kNone;
  std::optional<ReusableExecutionCapture> capture_;
};

// spec 3.12: one row per submitted command entry.
class NativeWorkAttribution {
 public:
  // nullopt when: both dispatch counts are 0; a node-scoped row has 0 participants;
  // start+count overflows u32; a node-less row has a non-zero start; a graph node count is given
  // on a path other than Replayed.
  static std::optional<NativeWorkAttribution> with_participant_range(
      std::uint32_t command_index, std::optional<std::uint32_t> node_index, CommandPhase phase,
      DeviceNativeOperationId native_op_id, ExecutionPath path, BatchingForm form,
      std::uint32_t participant_start, std::uint32_t participant_count, std::uint64_t token_count,
      std::uint64_t compute_dispatch_count, std::uint64_t transfer_command_count,
      std::optional<std::uint64_t> reusable_graph_node_count);

  std::uint32_t command_index() const { return command_index_; }
  std::optional<std::uint32_t> node_index() const { return node_index_; }
  CommandPhase command_phase() const { return phase_; }
  const std::string& native_op_id() const { return native_op_id_.str(); }
  ExecutionPath execution_path() const { return path_; }
  BatchingForm batching_form() const { return form_; }
  std::uint32_t participant_start() const { return participant_start_; }
  std::uint32_t participant_count() const { return participant_count_; }
  std::uint32_t participant_end() const { return participant_start_ + participant_count_; }
  std::uint64_t token_count() const { return token_count_; }
  std::uint64_t compute_dispatch_count() const { return compute_dispatch_count_; }
  std::uint64_t transfer_command_count() const { return transfer_command_count_; }
  std::optional<std::uint64_t> reusable_graph_node_count() const { return graph_nodes_; }
  friend bool operator==(const NativeWorkAttribution&, const NativeWorkAttribution&) = default;

 private:
  NativeWorkAttribution(DeviceNativeOperationId id) : native_op_id_(std::move(id)) {}
  std::uint32_t command_index_ = 0;
  std::optional<std::uint32_t> node_index_;
  CommandPhase phase_ = CommandPhase::kCompute;
  DeviceNativeOperationId native_op_id_;
  ExecutionPath path_ = ExecutionPath::kEager;
  BatchingForm form_ = BatchingForm::kScalar;
  std::uint32_t participant_start_ = 0;
  std::uint32_t participant_count_ = 0;
  std::uint64_t token_count_ = 0;
  std::uint64_t compute_dispatch_count_ = 0;
  std::uint64_t transfer_command_count_ = 0;
  std::optional<std::uint64_t> graph_nodes_;
};

// spec 3.13 (replayed segments are never produced by this port's runtimes and are not modelled).
class SubmissionAttribution {
 public:
  // nullopt when rows are empty or command_index values are not strictly increasing.
  static std::optional<SubmissionAttribution> create(std::vector<NativeWorkAttribution> rows);
  const std::vector<NativeWorkAttribution>& commands() const { return rows_; }
  friend bool operator==(const SubmissionAttribution&, const SubmissionAttribution&) = default;

 private:
  explicit SubmissionAttribution(std::vector<NativeWorkAttribution> rows)
      : rows_(std::move(rows)) {}
  std::vector<NativeWorkAttribution> rows_;
};

// --- spec 4 ------------------------------------------------------------------------------------

// DeviceTerminal<E>: Succeeded, or FailedButQuiescent(error). Both prove quiescence.
struct DeviceTerminal {
  std::optional<RuntimeError> failure;  // nullopt = Succeeded
  bool is_succeeded() const { return !failure.has_value(); }
  friend bool operator==(const DeviceTerminal&, const DeviceTerminal&) = default;
};

enum class TimingUnavailableReason : std::uint8_t {
  kBackendUnsupported,
  kBackendMeasurementFailed,
  kDurationOverflow,
};

// DeviceTimingMeasurement<T> with T = elapsed nanoseconds.
struct TimingMeasurement {
  enum class Status : std::uint8_t { kNotRequested, kMeasured, kUnavailable };
  Status status = Status::kNotRequested;
  std::uint64_t elapsed_ns = 0;                        // when Measured
  TimingUnavailableReason reason = TimingUnavailableReason::kBackendUnsupported;  // Unavailable
  std::optional<std::uint64_t> measured() const {
    return status == Status::kMeasured ? std::optional(elapsed_ns) : std::nullopt;
  }
  friend bool operator==(const TimingMeasurement&, const TimingMeasurement&) = default;
};

struct TerminalReceipt {
  DeviceTerminal terminal;
  TimingMeasurement execution_timing;
  TimingMeasurement submission_timing;
  static TerminalReceipt unprofiled(DeviceTerminal terminal) { return {std::move(terminal), {}, {}}; }
  friend bool operator==(const TerminalReceipt&, const TerminalReceipt&) = default;
};

// FenceQuery<E>: Pending, Terminal(receipt) or Indeterminate(error). Indeterminate is not
// terminal: resources stay retained.
struct FenceQueryPending {
  friend bool operator==(const FenceQueryPending&, const FenceQueryPending&) = default;
};
using FenceQuery = std::variant<FenceQueryPending, TerminalReceipt, RuntimeError>;
inline bool is_pending(const FenceQuery& q) { return std::holds_alternative<FenceQueryPending>(q); }

// What a blocking wait returns when it cannot prove quiescence. Distinct from
// DefinitelyNotSubmitted on purpose: the two promise opposite things.
class FenceIndeterminate {
 public:
  explicit FenceIndeterminate(RuntimeError error) : error_(std::move(error)) {}
  const RuntimeError& error() const { return error_; }
  RuntimeError into_error() && { return std::move(error_); }
  friend bool operator==(const FenceIndeterminate&, const FenceIndeterminate&) = default;

 private:
  RuntimeError error_;
};

// The only submit failure: nothing device-visible was enqueued, no counter moved.
class DefinitelyNotSubmitted {
 public:
  explicit DefinitelyNotSubmitted(RuntimeError error) : error_(std::move(error)) {}
  const RuntimeError& error() const { return error_; }
  RuntimeError into_error() && { return std::move(error_); }
  friend bool operator==(const DefinitelyNotSubmitted&, const DefinitelyNotSubmitted&) = default;

 private:
  RuntimeError error_;
};

}  // namespace vtrace::runtime
