// ForwardingRuntime: a DeviceRuntime that forwards every method, required and optional, to the
// runtime it wraps. It is the starting point of a decorator that changes only a few calls (a test
// runtime that misbehaves on purpose, fault injection): derive from it and override those.
//
// Ownership: owns the wrapped runtime; handles pass through unchanged, so they are the wrapped
//   runtime's own.
// Thread rules: those of the wrapped runtime.
// Errors: the wrapped runtime's, unchanged.
#pragma once

#include <memory>

#include "vtrace/runtime/device_runtime.h"

namespace vtrace::runtime {

class ForwardingRuntime : public DeviceRuntime {
 public:
  explicit ForwardingRuntime(std::unique_ptr<DeviceRuntime> inner) : inner_(std::move(inner)) {}

  DeviceRuntime& inner() { return *inner_; }
  const DeviceRuntime& inner() const { return *inner_; }

  const DeviceDescriptor& descriptor() const override;
  AttentionExecutionPolicy attention_execution_policy() const override;
  Result<AllocationPermit> admit(const BufferRequest& request) override;
  Result<BufferPtr> allocate(AllocationPermit permit) override;
  BufferDescriptor buffer_descriptor(const Buffer& buffer) const override;
  Result<StreamPtr> create_stream() override;
  StreamState stream_state(const Stream& stream) const override;
  Result<CommandPtr> encode_copy(const Buffer& source, const Buffer& destination,
                                 const CopyRegion& region) override;
  Result<CommandPtr> encode_upload(std::span<const std::uint8_t> source,
                                   const HostTransferLayout& layout, const Buffer& destination,
                                   std::uint64_t destination_offset_bytes) override;
  Result<CommandPtr> encode_zero(const Buffer& destination, std::uint64_t destination_offset_bytes,
                                 std::uint64_t length_bytes) override;
  Result<CommandPtr> encode_dense_linear(const DenseLinearRequest& request) override;
  std::expected<FencePtr, DefinitelyNotSubmitted> submit(Stream& stream,
                                                         CommandBatch batch) override;
  FenceQuery query_fence(const Fence& fence) const override;
  std::expected<TerminalReceipt, FenceIndeterminate> wait_fence(const Fence& fence) override;
  Result<void> synchronize(Stream& stream) override;
  Result<std::vector<std::uint8_t>> readback(Stream& stream, const Buffer& source,
                                             const CopyRegion& region,
                                             const HostTransferLayout& output_layout) override;
  VNextResult<DeviceErrorReport> describe_error(const RuntimeError& error) const override;
  std::optional<CounterSnapshot> counter_snapshot() const override;

  std::optional<Result<std::unique_ptr<StaticWeightImportSession>>> begin_static_weight_import()
      override;
  std::optional<Result<CommandPtr>> encode_static_weight_transform(
      const StaticWeightTransformRequest& request) override;
  Result<ReusableExecutionPreparation> configure_reusable_executables(
      Stream& stream, const ReusableExecutionPlan& plan) override;
  Result<ReusableExecutionPreparation> seal_reusable_executables(Stream& stream) override;
  Result<ReusableExecutionPreparation> reusable_executable_preparation(
      const Stream& stream) const override;
  Result<std::vector<ReusableExecutionProgram>> reusable_execution_catalog(
      const Stream& stream) const override;
  Result<std::optional<CommandPtr>> encode_reusable_execution(
      const ReusableExecutionInvocation& invocation) override;
  Result<ReusableExecutionTrim> trim_reusable_executables(Stream& stream) override;
  Result<std::vector<CommandPtr>> coalesce_program_bindings(
      std::vector<CommandPtr> commands) override;
  bool supports_guarded_submission() const override;
  std::expected<FencePtr, GuardedSubmissionError> submit_guarded(
      Stream& stream, CommandBatch batch, const SubmissionGuard& guard) override;
  std::optional<SubmissionAttribution> submission_attribution(const Fence& fence) const override;

 private:
  std::unique_ptr<DeviceRuntime> inner_;
};

}  // namespace vtrace::runtime
