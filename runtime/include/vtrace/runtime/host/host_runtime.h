// HostRuntime: the synchronous host-memory runtime that reference, cpu and cpu-splitk share.
//
// It is the contract (contract.h) applied to host storage: zero-filled aligned allocations,
// streams and fences of spec 7.1, synchronous execution inside submit(), the counters of spec
// 7.6 and attribution. What differs between the runtimes built on it is their descriptor and
// their DenseLinearKernel; every check, every error kind and every counter trigger is the same.
// Execution happens inside submit(); fences are always terminal.
//
// Ownership: storage is shared between the buffer handle and every command region that refers
//   to it; live_allocations falls when the last holder lets go, and the admitted bytes return to
//   the issuing admission then. The runtime owns its kernel.
// Thread rules: all methods are thread-safe; each storage has its own mutex; commands of
//   concurrent submits execute one submit at a time. One Stream per thread at a time, as the
//   interface says.
// Errors: exactly the precedence of spec 7.3 and 7.4 (through contract.h), each with a stable
//   ErrorKind, messages prefixed with the runtime's label. Points decided differently from
//   upstream (and why) are listed at the top of host_runtime.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "vtrace/runtime/contract.h"
#include "vtrace/runtime/device_runtime.h"

namespace vtrace::runtime::host {

// How a host runtime computes one validated dense-linear launch.
class DenseLinearKernel {
 public:
  virtual ~DenseLinearKernel() = default;
  // output[rows][out] = input[rows][in] x weight[out][in]^T over little-endian f16 bytes with no
  // alignment guarantee. `output` overlaps neither `input` nor `weight` (HostRuntime stages the
  // output when the launch's regions alias). Called with the regions' storages locked, one call
  // at a time per runtime, and only after reserve(shape) returned true in the same submit: run()
  // itself allocates nothing and cannot fail.
  virtual void run(const std::uint8_t* input, const std::uint8_t* weight, std::uint8_t* output,
                   const contract::DenseLinearLaunchShape& shape) = 0;
  // Gets whatever run() will need for `shape` (scratch memory) before any command of the batch
  // executes; false when it cannot be had, and submit() then refuses the batch with nothing run.
  // Never throws. The default needs nothing.
  virtual bool reserve(const contract::DenseLinearLaunchShape& shape) noexcept {
    (void)shape;
    return true;
  }
};

// What distinguishes one host runtime from another.
struct HostRuntimeConfig {
  std::string label;       // message prefix: "reference", "cpu", "cpu-splitk"
  std::string error_code;  // describe_error's code: "reference_runtime", "cpu_runtime", ...
  DeviceClass device_class = DeviceClass::kReference;
  std::set<CapabilityId> capabilities;
  std::unique_ptr<DenseLinearKernel> kernel;
};

class HostRuntime : public DeviceRuntime {
 public:
  ~HostRuntime() override;

  // The seven counters; same as counter_snapshot(), never empty.
  CounterSnapshot snapshot() const;
  // This runtime's process-wide instance number (shared by every host runtime; the first
  // runtime of a process gets 1).
  std::uint64_t instance() const;
  // The host address of logical byte 0 of `buffer`'s storage, for alignment checks and
  // diagnostics; nullopt for a buffer of another runtime or class.
  std::optional<std::uintptr_t> logical_address(const Buffer& buffer) const;

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

 protected:
  struct State;
  // Deletes a State where its type is complete (host_runtime.cpp), so derived runtimes can hold
  // and pass one.
  struct StateDeleter {
    void operator()(State* state) const;
  };
  using StatePtr = std::unique_ptr<State, StateDeleter>;
  // Checks the descriptor against the config's class and capabilities (contract::
  // check_descriptor) and takes a process-wide runtime instance (kIdentityExhausted).
  static Result<StatePtr> make_state(DeviceDescriptor descriptor, HostRuntimeConfig config);
  explicit HostRuntime(StatePtr state);

 private:
  StatePtr state_;
};

}  // namespace vtrace::runtime::host
