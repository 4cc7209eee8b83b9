// The DeviceRuntime interface: the C++ form of upstream's `DeviceRuntime` trait (spec 5).
//
// One abstract class. Required methods are pure virtual; optional methods are virtual with
// exactly the defaults of spec 5.2, so a runtime overrides only what it supports. Because every
// method is virtual and every handle is opaque, a decorator can wrap any runtime and implement
// this same interface (the recorder does); callers change nothing but construction.
//
// Ownership: handles are returned as unique_ptr and owned by the caller (see handles.h).
//   A runtime must outlive every handle it returned.
// Thread rules: every method may be called concurrently from several threads, except that one
//   Stream is used by one thread at a time. Results are deterministic for a given call order.
// Omitted from upstream's newest trait (spec 5.2 and 15.4 allow it): the cost_* hooks,
//   prepare_submission_readback and submit_with_timing (a Rust generic over a timing sink whose
//   default only calls submit). Added: encode_dense_linear (the provider, spec 8, as a runtime
//   method so decorators see it) and counter_snapshot (spec 7.6 counters for replay checks).
// Errors: methods return std::expected; nothing throws or aborts on bad input. submit() fails
//   only with DefinitelyNotSubmitted (nothing ran, no counter moved); wait_fence() fails only
//   with FenceIndeterminate.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "vtrace/runtime/admission.h"
#include "vtrace/runtime/error.h"
#include "vtrace/runtime/handles.h"
#include "vtrace/runtime/submission.h"
#include "vtrace/runtime/types.h"

namespace vtrace::runtime {

// --- Dense linear (spec 8, simplified: explicit launches instead of core invocations) ---------

// A byte range [offset_bytes, offset_bytes + length_bytes) of a buffer. Non-owning: the buffer
// must be alive during the encode call; the encoded command then retains the storage itself.
struct BufferRegionRef {
  const Buffer* buffer = nullptr;
  std::uint64_t offset_bytes = 0;
  std::uint64_t length_bytes = 0;
};

// One kernel launch: out[rows][out] = in[rows][in] x weight[out][in]^T, all dense row-major
// little-endian F16 (spec 8.5 layout).
struct DenseLinearLaunch {
  BufferRegionRef input;
  BufferRegionRef weight;
  BufferRegionRef output;
  std::uint64_t rows = 0;
  std::uint64_t in_features = 0;
  std::uint64_t out_features = 0;
};

// launches.size() is 1 (one packed launch for all participants) or participant_count (one launch
// per participant, in participant order). All launches must name one physical weight region.
// Batching form: participant_count == 1 -> Scalar; one launch -> Packed; else ParticipantLoop.
struct DenseLinearRequest {
  std::span<const DenseLinearLaunch> launches;
  std::uint32_t participant_count = 0;
  std::uint64_t token_count = 0;
};

// The seven counters of spec 7.6. Every runtime that wants its counters checked by replay keeps
// them with exactly the reference runtime's triggers.
struct CounterSnapshot {
  std::uint64_t allocations = 0;
  std::uint64_t live_allocations = 0;
  std::uint64_t submissions = 0;
  std::uint64_t commands = 0;
  std::uint64_t uploaded_bytes = 0;
  std::uint64_t dense_linear_launches = 0;
  std::uint64_t readback_bytes = 0;
  friend bool operator==(const CounterSnapshot&, const CounterSnapshot&) = default;
};

// --- Types used by the optional methods (spec 5.3) --------------------------------------------

enum class ReusableExecutionCatalogLifetime : std::uint8_t { kStartupSealed, kOnDemandBounded };

class ReusableExecutionPlan {
 public:
  // "reusable execution plan requires non-zero capacity" when maximum_executables is 0.
  static VNextResult<ReusableExecutionPlan> create(std::uint64_t maximum_executables,
                                                   ReusableExecutionCatalogLifetime lifetime =
                                                       ReusableExecutionCatalogLifetime::kStartupSealed);
  std::uint64_t maximum_executables() const { return maximum_executables_; }
  ReusableExecutionCatalogLifetime catalog_lifetime() const { return lifetime_; }
  friend bool operator==(const ReusableExecutionPlan&, const ReusableExecutionPlan&) = default;

 private:
  ReusableExecutionPlan(std::uint64_t max, ReusableExecutionCatalogLifetime lifetime)
      : maximum_executables_(max), lifetime_(lifetime) {}
  std::uint64_t maximum_executables_;
  ReusableExecutionCatalogLifetime lifetime_;
};

enum class ReusableExecutionState : std::uint8_t { kUnsupported, kPreparing, kReady };

struct ReusableExecutionPreparation {
  ReusableExecutionState state = ReusableExecutionState::kUnsupported;
  ReusableExecutionCatalogLifetime catalog_lifetime =
      ReusableExecutionCatalogLifetime::kStartupSealed;
  std::uint64_t maximum_executables = 0;
  std::uint64_t resident_executables = 0;
  std::uint64_t rejected_executables = 0;
  std::uint64_t captured_executables = 0;
  std::uint64_t uploaded_executables = 0;
  std::uint64_t capacity_deferred_executables = 0;
  static ReusableExecutionPreparation unsupported() { return {}; }
  friend bool operator==(const ReusableExecutionPreparation&,
                         const ReusableExecutionPreparation&) = default;
};

struct ReusableExecutionTrim {
  std::uint64_t released_executables = 0;
  std::uint64_t released_rejections = 0;
  friend bool operator==(const ReusableExecutionTrim&, const ReusableExecutionTrim&) = default;
};

// One entry of a runtime's reusable-execution catalog.
struct ReusableExecutionProgram {
  std::string program_id;
  std::uint32_t node_count = 0;
  friend bool operator==(const ReusableExecutionProgram&, const ReusableExecutionProgram&) = default;
};

// A request to run a catalogued program instead of the provider's own encoding.
struct ReusableExecutionInvocation {
  std::string program_id;
  std::uint32_t node_index = 0;
};

// All-or-nothing static weight import (spec 5.3): nothing is visible until seal().
class StaticWeightImportSession {
 public:
  virtual ~StaticWeightImportSession() = default;
  virtual Result<void> import_component(std::span<const std::uint8_t> payload,
                                        const Buffer& destination,
                                        std::uint64_t destination_offset_bytes) = 0;
  virtual Result<void> seal() = 0;
};

struct StaticWeightTransformRequest {
  const Buffer* source = nullptr;
  const Buffer* destination = nullptr;
  std::string transform_id;
};

enum class GuardedNotSubmittedReason : std::uint8_t { kAttributionUnavailable };

// Limits a guarded submission must honour (upstream's guard; the port carries the command bound).
struct SubmissionGuard {
  std::uint64_t maximum_commands = 0;
};

// Err of submit_guarded: Rejected(reason) (nothing executed) or NotSubmitted(DNS).
struct GuardedSubmissionError {
  std::optional<GuardedNotSubmittedReason> rejected;
  std::optional<DefinitelyNotSubmitted> not_submitted;
};

// --- The interface -----------------------------------------------------------------------------

class DeviceRuntime {
 public:
  virtual ~DeviceRuntime() = default;
  DeviceRuntime(const DeviceRuntime&) = delete;
  DeviceRuntime& operator=(const DeviceRuntime&) = delete;

  // ---- required (spec 5.1) ----
  virtual const DeviceDescriptor& descriptor() const = 0;
  // Never kAuto after composition.
  virtual AttentionExecutionPolicy attention_execution_policy() const = 0;

  // Admission: checks `request` against this device's remaining capacity and returns a one-shot
  // permit (admission.h). The default keeps one ResourceTransaction per runtime, sized from
  // descriptor().total_memory_bytes; decorators forward to the runtime they wrap.
  virtual Result<AllocationPermit> admit(const BufferRequest& request);
  // Allocates zero-filled storage for exactly the permit's request. Consumes the permit, which
  // must come from this runtime's admit() (kAdmissionForeignPermit otherwise).
  virtual Result<BufferPtr> allocate(AllocationPermit permit) = 0;
  // The descriptor of `buffer`, which may belong to another runtime of the same kind.
  virtual BufferDescriptor buffer_descriptor(const Buffer& buffer) const = 0;

  virtual Result<StreamPtr> create_stream() = 0;
  // Failed for a stream of another runtime.
  virtual StreamState stream_state(const Stream& stream) const = 0;

  virtual Result<CommandPtr> encode_copy(const Buffer& source, const Buffer& destination,
                                         const CopyRegion& region) = 0;
  // The host bytes are copied at encode time; `source` need not outlive the call.
  virtual Result<CommandPtr> encode_upload(std::span<const std::uint8_t> source,
                                           const HostTransferLayout& layout,
                                           const Buffer& destination,
                                           std::uint64_t destination_offset_bytes) = 0;
  virtual Result<CommandPtr> encode_zero(const Buffer& destination,
                                         std::uint64_t destination_offset_bytes,
                                         std::uint64_t length_bytes) = 0;
  // The dense-linear provider (spec 8). A runtime without the capability fails with
  // kUnsupportedOperation.
  virtual Result<CommandPtr> encode_dense_linear(const DenseLinearRequest& request) = 0;

  // Submits one ordered batch with one fence; keeps command order; no intermediate host-visible
  // completion points.
  virtual std::expected<FencePtr, DefinitelyNotSubmitted> submit(Stream& stream,
                                                                 CommandBatch batch) = 0;
  // Non-blocking.
  virtual FenceQuery query_fence(const Fence& fence) const = 0;
  virtual std::expected<TerminalReceipt, FenceIndeterminate> wait_fence(const Fence& fence) = 0;
  virtual Result<void> synchronize(Stream& stream) = 0;
  virtual Result<std::vector<std::uint8_t>> readback(Stream& stream, const Buffer& source,
                                                     const CopyRegion& region,
                                                     const HostTransferLayout& output_layout) = 0;
  virtual VNextResult<DeviceErrorReport> describe_error(const RuntimeError& error) const = 0;

  // ---- vtrace extension: the seven counters of spec 7.6, or nullopt for a runtime without them.
  virtual std::optional<CounterSnapshot> counter_snapshot() const { return std::nullopt; }

  // ---- optional (spec 5.2), with upstream's defaults ----
  // nullopt selects the portable zero-then-upload path for static weights (spec 10).
  virtual std::optional<Result<std::unique_ptr<StaticWeightImportSession>>>
  begin_static_weight_import() {
    return std::nullopt;
  }
  virtual std::optional<Result<CommandPtr>> encode_static_weight_transform(
      const StaticWeightTransformRequest& /*request*/) {
    return std::nullopt;
  }
  virtual Result<ReusableExecutionPreparation> configure_reusable_executables(
      Stream& /*stream*/, const ReusableExecutionPlan& /*plan*/) {
    return ReusableExecutionPreparation::unsupported();
  }
  virtual Result<ReusableExecutionPreparation> seal_reusable_executables(Stream& /*stream*/) {
    return ReusableExecutionPreparation::unsupported();
  }
  virtual Result<ReusableExecutionPreparation> reusable_executable_preparation(
      const Stream& /*stream*/) const {
    return ReusableExecutionPreparation::unsupported();
  }
  virtual Result<std::vector<ReusableExecutionProgram>> reusable_execution_catalog(
      const Stream& /*stream*/) const {
    return std::vector<ReusableExecutionProgram>{};
  }
  // Ok(nullopt): use the provider's normal encoding.
  virtual Result<std::optional<CommandPtr>> encode_reusable_execution(
      const ReusableExecutionInvocation& /*invocation*/) {
    return std::optional<CommandPtr>{};
  }
  virtual Result<ReusableExecutionTrim> trim_reusable_executables(Stream& /*stream*/) {
    return ReusableExecutionTrim{};
  }
  // One command per provider, order preserved.
  virtual Result<std::vector<CommandPtr>> coalesce_program_bindings(
      std::vector<CommandPtr> commands) {
    return commands;
  }
  virtual bool supports_guarded_submission() const { return false; }
  // Executes nothing: Rejected(AttributionUnavailable).
  virtual std::expected<FencePtr, GuardedSubmissionError> submit_guarded(
      Stream& /*stream*/, CommandBatch /*batch*/, const SubmissionGuard& /*guard*/) {
    return std::unexpected(
        GuardedSubmissionError{GuardedNotSubmittedReason::kAttributionUnavailable, std::nullopt});
  }
  // Backend-observed native work of a submitted fence; nullopt unless overridden.
  virtual std::optional<SubmissionAttribution> submission_attribution(const Fence& /*fence*/) const {
    return std::nullopt;
  }

 protected:
  DeviceRuntime() = default;

  // For allocate(): consumes `permit` if this runtime's default admission issued it. Fails with
  // kAdmissionInvalidRequest for a consumed permit and kAdmissionForeignPermit for a permit of
  // another runtime (whose bytes go back to that runtime when the permit dies). A runtime that
  // overrides admit() with an admission of its own checks its permits itself.
  Result<std::pair<BufferRequest, ReservationToken>> redeem(AllocationPermit& permit);

 private:
  ResourceTransaction& admission();
  // Lazily created by the default admit().
  std::once_flag admission_once_;
  std::unique_ptr<ResourceTransaction> admission_;
};

}  // namespace vtrace::runtime
