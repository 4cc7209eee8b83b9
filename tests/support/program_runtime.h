// ProgramRuntime: a runtime with reusable executions (spec 5.2) whose programs write memory no
// event names, which none of the host runtimes has: a ForwardingRuntime whose
// encode_reusable_execution returns a command zeroing the whole of the last buffer allocated
// under the resource id kProgramTarget (or, with none allocated, its normal encoding: nullopt).
// The recorder sees only a command of unknown writes. For tests of the flight recorder;
// header-only.
// Lifetime: the target buffer must outlive every command encoded for it.
#pragma once

#include <optional>
#include <string_view>
#include <utility>

#include "vtrace/runtime/forwarding_runtime.h"

namespace vtrace::test {

class ProgramRuntime final : public runtime::ForwardingRuntime {
 public:
  static constexpr std::string_view kProgramTarget = "resource.program.target";
  using ForwardingRuntime::ForwardingRuntime;

  runtime::Result<runtime::BufferPtr> allocate(runtime::AllocationPermit permit) override {
    auto buffer = inner().allocate(std::move(permit));
    if (buffer && inner().buffer_descriptor(**buffer).resource_id.str() == kProgramTarget) {
      target_ = buffer->get();
    }
    return buffer;
  }
  runtime::Result<std::optional<runtime::CommandPtr>> encode_reusable_execution(
      const runtime::ReusableExecutionInvocation& invocation) override {
    if (target_ == nullptr) return inner().encode_reusable_execution(invocation);
    auto zero = inner().encode_zero(*target_, 0, inner().buffer_descriptor(*target_).size_bytes);
    if (!zero) return std::unexpected(zero.error());
    return std::optional<runtime::CommandPtr>(std::move(*zero));
  }

 private:
  const runtime::Buffer* target_ = nullptr;
};

}  // namespace vtrace::test
