#include "vtrace/runtime/forwarding_runtime.h"

namespace vtrace::runtime {

const DeviceDescriptor& ForwardingRuntime::descriptor() const { return inner_->descriptor(); }
AttentionExecutionPolicy ForwardingRuntime::attention_execution_policy() const {
  return inner_->attention_execution_policy();
}
Result<AllocationPermit> ForwardingRuntime::admit(const BufferRequest& request) {
  return inner_->admit(request);
}
Result<BufferPtr> ForwardingRuntime::allocate(AllocationPermit permit) {
  return inner_->allocate(std::move(permit));
}
BufferDescriptor ForwardingRuntime::buffer_descriptor(const Buffer& buffer) const {
  return inner_->buffer_descriptor(buffer);
}
Result<StreamPtr> ForwardingRuntime::create_stream() { return inner_->create_stream(); }
StreamState ForwardingRuntime::stream_state(const Stream& stream) const {
  return inner_->stream_state(stream);
}
Result<CommandPtr> ForwardingRuntime::encode_copy(const Buffer& source, const Buffer& destination,
                                                  const CopyRegion& region) {
  return inner_->encode_copy(source, destination, region);
}
Result<CommandPtr> ForwardingRuntime::encode_upload(std::span<const std::uint8_t> source,
                                                    const HostTransferLayout& layout,
                                                    const Buffer& destination,
                                                    std::uint64_t destination_offset_bytes) {
  return inner_->encode_upload(source, layout, destination, destination_offset_bytes);
}
Result<CommandPtr> ForwardingRuntime::encode_zero(const Buffer& destination,
                                                  std::uint64_t destination_offset_bytes,
                                                  std::uint64_t length_bytes) {
  return inner_->encode_zero(destination, destination_offset_bytes, length_bytes);
}
Result<CommandPtr> ForwardingRuntime::encode_dense_linear(const DenseLinearRequest& request) {
  return inner_->encode_dense_linear(request);
}
std::expected<FencePtr, DefinitelyNotSubmitted> ForwardingRuntime::submit(Stream& stream,
                                                                          CommandBatch batch) {
  return inner_->submit(stream, std::move(batch));
}
FenceQuery ForwardingRuntime::query_fence(const Fence& fence) const {
  return inner_->query_fence(fence);
}
std::expected<TerminalReceipt, FenceIndeterminate> ForwardingRuntime::wait_fence(
    const Fence& fence) {
  return inner_->wait_fence(fence);
}
Result<void> ForwardingRuntime::synchronize(Stream& stream) { return inner_->synchronize(stream); }
Result<std::vector<std::uint8_t>> ForwardingRuntime::readback(
    Stream& stream, const Buffer& source, const CopyRegion& region,
    const HostTransferLayout& output_layout) {
  return inner_->readback(stream, source, region, output_layout);
}
VNextResult<DeviceErrorReport> ForwardingRuntime::describe_error(const RuntimeError& error) const {
  return inner_->describe_error(error);
}
std::optional<CounterSnapshot> ForwardingRuntime::counter_snapshot() const {
  return inner_->counter_snapshot();
}
std::optional<Result<std::unique_ptr<StaticWeightImportSession>>>
ForwardingRuntime::begin_static_weight_import() {
  return inner_->begin_static_weight_import();
}
std::optional<Result<CommandPtr>> ForwardingRuntime::encode_static_weight_transform(
    const StaticWeightTransformRequest& request) {
  return inner_->encode_static_weight_transform(request);
}
Result<ReusableExecutionPreparation> ForwardingRuntime::configure_reusable_executables(
    Stream& stream, const ReusableExecutionPlan& plan) {
  return inner_->configure_reusable_executables(stream, plan);
}
Result<ReusableExecutionPreparation> ForwardingRuntime::seal_reusable_executables(Stream& stream) {
  return inner_->seal_reusable_executables(stream);
}
Result<ReusableExecutionPreparation> ForwardingRuntime::reusable_executable_preparation(
    const Stream& stream) const {
  return inner_->reusable_executable_preparation(stream);
}
Result<std::vector<ReusableExecutionProgram>> ForwardingRuntime::reusable_execution_catalog(
    const Stream& stream) const {
  return inner_->reusable_execution_catalog(stream);
}
Result<std::optional<CommandPtr>> ForwardingRuntime::encode_reusable_execution(
    const ReusableExecutionInvocation& invocation) {
  return inner_->encode_reusable_execution(invocation);
}
Result<ReusableExecutionTrim> ForwardingRuntime::trim_reusable_executables(Stream& stream) {
  return inner_->trim_reusable_executables(stream);
}
Result<std::vector<CommandPtr>> ForwardingRuntime::coalesce_program_bindings(
    std::vector<CommandPtr> commands) {
  return inner_->coalesce_program_bindings(std::move(commands));
}
bool ForwardingRuntime::supports_guarded_submission() const {
  return inner_->supports_guarded_submission();
}
std::expected<FencePtr, GuardedSubmissionError> ForwardingRuntime::submit_guarded(
    Stream& stream, CommandBatch batch, const SubmissionGuard& guard) {
  return inner_->submit_guarded(stream, std::move(batch), guard);
}
std::optional<SubmissionAttribution> ForwardingRuntime::submission_attribution(
    const Fence& fence) const {
  return inner_->submission_attribution(fence);
}

}  // namespace vtrace::runtime
