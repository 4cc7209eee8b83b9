// The reference runtime (spec 7, 9, 11): synchronous, in-memory, written to be read. It is the
// numerical oracle every other runtime is compared with; it is never a product fallback.
//
// Fixed descriptor (reference_descriptor): class Reference, 64 MiB, exactly the capability
// capability.operation.dense_linear.f16, profile LinearArena+Contiguous, a stable 64-hex
// fingerprint. Execution happens inside submit(); fences are always terminal.
//
// Ownership: storage is shared between the buffer handle and every command region that refers to
//   it; live_allocations falls when the last holder lets go.
// Thread rules: all methods are thread-safe; each storage has its own mutex. One Stream per
//   thread at a time, as the interface says.
// Errors: exactly the precedence of spec 7.3 and 7.4, each with a stable ErrorKind. One point
//   differs from upstream: fence identity exhaustion fails submit with DefinitelyNotSubmitted
//   (kIdentityExhausted) before anything runs, instead of panicking. Dense-linear outputs whose
//   f32 accumulator is NaN are written as 0x7E00 (open question 15.3).
#pragma once

#include <atomic>
#include <memory>
#include <string_view>

#include "vtrace/runtime/device_runtime.h"

namespace vtrace::runtime::reference {

inline constexpr std::uint64_t kReferenceMemoryBytes = 64ull * 1024 * 1024;

// The fixed descriptor for `device_id` (spec 9). Fails only on an invalid identity.
VNextResult<DeviceDescriptor> reference_descriptor(std::string_view device_id);

class ReferenceRuntime final : public DeviceRuntime {
 public:
  // Validates the descriptor (kDescriptorInvalid), its class and exact capability set
  // (kDescriptorOverclaims), and takes a process-wide runtime instance (kIdentityExhausted).
  static Result<std::unique_ptr<ReferenceRuntime>> create(DeviceDescriptor descriptor);
  ~ReferenceRuntime() override;

  // Same as counter_snapshot(), never empty.
  CounterSnapshot snapshot() const;

  const DeviceDescriptor& descriptor() const override;
  AttentionExecutionPolicy attention_execution_policy() const override;
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
  std::optional<CounterSnapshot> counter_snapshot() const override { return snapshot(); }
  std::optional<SubmissionAttribution> submission_attribution(const Fence& fence) const override;

  // This runtime's process-wide instance number (the first runtime of a process gets 1).
  std::uint64_t instance() const;
  // The host address of logical byte 0 of `buffer`'s storage, for alignment checks and
  // diagnostics; nullopt for a buffer of another runtime or class.
  std::optional<std::uintptr_t> logical_address(const Buffer& buffer) const;

 private:
  struct State;
  explicit ReferenceRuntime(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace vtrace::runtime::reference
