// FailingRuntime: a ForwardingRuntime whose Kth admit() or Kth allocate() fails on purpose, as
// the contract says an exhausted device fails: admission with kAdmissionOverCapacity (admission.h:
// "... needs N bytes but M of T remain"), a host allocation with kAllocationInvalid ("allocation
// failed", as the host runtimes report a failed allocation). Every other call, and the other
// admits and allocates, are forwarded unchanged. Calls are counted per instance, so a fresh
// FailingRuntime with the same plan fails the same call of a replay. Header-only.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <memory>

#include "vtrace/runtime/forwarding_runtime.h"

namespace vtrace::test {

class FailingRuntime final : public runtime::ForwardingRuntime {
 public:
  enum class Call { kAdmit, kAllocate };
  FailingRuntime(std::unique_ptr<runtime::DeviceRuntime> inner, Call call, std::uint64_t kth)
      : ForwardingRuntime(std::move(inner)), call_(call), kth_(kth) {}

  runtime::Result<runtime::AllocationPermit> admit(const runtime::BufferRequest& request) override {
    if (call_ == Call::kAdmit && ++count_ == kth_) {
      return std::unexpected(runtime::RuntimeError(
          runtime::ErrorKind::kAdmissionOverCapacity,
          fmt::format("{} needs {} bytes but 0 of {} remain (injected: admission {} refused)",
                      request.resource_id().str(), request.size_bytes(),
                      descriptor().total_memory_bytes, count_)));
    }
    return ForwardingRuntime::admit(request);
  }
  runtime::Result<runtime::BufferPtr> allocate(runtime::AllocationPermit permit) override {
    if (call_ == Call::kAllocate && ++count_ == kth_) {
      return std::unexpected(runtime::RuntimeError(
          runtime::ErrorKind::kAllocationInvalid,
          fmt::format("allocation failed (injected: allocation {} refused)", count_)));
    }
    return ForwardingRuntime::allocate(std::move(permit));
  }

 private:
  Call call_;
  std::uint64_t kth_;
  std::uint64_t count_ = 0;
};

}  // namespace vtrace::test
