#include "vtrace/runtime/device_runtime.h"

namespace vtrace::runtime {

VNextResult<ReusableExecutionPlan> ReusableExecutionPlan::create(
    std::uint64_t maximum_executables, ReusableExecutionCatalogLifetime lifetime) {
  if (maximum_executables == 0) {
    return std::unexpected(
        VNextError::invalid_execution_plan("reusable execution plan requires non-zero capacity"));
  }
  return ReusableExecutionPlan(maximum_executables, lifetime);
}

ResourceTransaction& DeviceRuntime::admission() {
  // Created on first use because descriptor() is virtual and not callable from the constructor.
  std::call_once(admission_once_, [this] {
    admission_ = std::make_unique<ResourceTransaction>(descriptor().total_memory_bytes);
  });
  return *admission_;
}

Result<AllocationPermit> DeviceRuntime::admit(const BufferRequest& request) {
  return admission().admit(request);
}

Result<std::pair<BufferRequest, ReservationToken>> DeviceRuntime::redeem(
    AllocationPermit& permit) {
  if (!permit.consumed() && !admission().issued(permit)) {
    return std::unexpected(RuntimeError(ErrorKind::kAdmissionForeignPermit,
                                        "allocation permit was issued by another runtime's "
                                        "admission"));
  }
  return permit.into_parts();
}

}  // namespace vtrace::runtime
