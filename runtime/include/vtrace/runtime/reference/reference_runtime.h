// The reference runtime (spec 7, 9, 11): synchronous, in-memory, written to be read. It is the
// numerical oracle every other runtime is compared with; it is never a product fallback.
//
// It is HostRuntime (host/host_runtime.h: the shared contract checks, host storage, synchronous
// execution, counters) with the reference dense-linear kernel of spec 11.1: one f32 accumulator
// per output from +0, k ascending, multiply then add, NaN outputs written as 0x7E00.
//
// Fixed descriptor (reference_descriptor): class Reference, 64 MiB unless a capacity is given,
// exactly the capability capability.operation.dense_linear.f16, profile LinearArena+Contiguous,
// a stable 64-hex fingerprint.
//
// Ownership, thread rules and errors: those of HostRuntime; messages start with "reference", as
// upstream's.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "vtrace/runtime/host/host_runtime.h"

namespace vtrace::runtime::reference {

inline constexpr std::uint64_t kReferenceMemoryBytes = 64ull * 1024 * 1024;

// The fixed descriptor for `device_id` (spec 9), with `total_memory_bytes` of capacity. Fails
// only on an invalid identity or a zero capacity.
VNextResult<DeviceDescriptor> reference_descriptor(
    std::string_view device_id, std::uint64_t total_memory_bytes = kReferenceMemoryBytes);

class ReferenceRuntime final : public host::HostRuntime {
 public:
  // Validates the descriptor (kDescriptorInvalid), its class and exact capability set
  // (kDescriptorOverclaims), and takes a process-wide runtime instance (kIdentityExhausted).
  static Result<std::unique_ptr<ReferenceRuntime>> create(DeviceDescriptor descriptor);

 private:
  explicit ReferenceRuntime(StatePtr state);
};

}  // namespace vtrace::runtime::reference
