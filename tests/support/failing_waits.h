// FailingWaits: a runtime whose batches, once `fail_waits` is set, run and then fail at their
// fence (a terminal failure, what a device fault reports; the host runtimes never do). A
// ForwardingRuntime: the work itself is done by the inner runtime. Header-only.
#pragma once

#include <expected>
#include <memory>

#include "vtrace/runtime/forwarding_runtime.h"

namespace vtrace::test {

class FailingWaits final : public runtime::ForwardingRuntime {
 public:
  using ForwardingRuntime::ForwardingRuntime;
  std::expected<runtime::TerminalReceipt, runtime::FenceIndeterminate> wait_fence(
      const runtime::Fence& fence) override {
    auto receipt = ForwardingRuntime::wait_fence(fence);
    if (receipt && fail_waits) {
      receipt->terminal.failure = runtime::RuntimeError(
          runtime::ErrorKind::kInternal, "injected: the batch failed on the device");
    }
    return receipt;
  }
  bool fail_waits = false;
};

}  // namespace vtrace::test
