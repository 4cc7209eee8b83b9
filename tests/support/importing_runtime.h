// ImportingRuntime: a runtime with a static weight import session (spec 5.2), which none of the
// host runtimes has: a ForwardingRuntime whose begin_static_weight_import returns a session that
// uploads each component into its destination on a stream of its own; a sealed session refuses
// more components and a second seal (kUnsupportedOperation). Built with failing_seals = N, the
// first N seal() calls of the runtime's sessions fail (kInternal) and leave their session open,
// so a later seal of the same session can succeed. For tests of the recorder and the replayer;
// header-only.
#pragma once

#include <algorithm>
#include <memory>
#include <optional>
#include <span>

#include "vtrace/runtime/forwarding_runtime.h"

namespace vtrace::test {

class ImportingRuntime final : public runtime::ForwardingRuntime {
 public:
  explicit ImportingRuntime(std::unique_ptr<runtime::DeviceRuntime> inner, int failing_seals = 0)
      : ForwardingRuntime(std::move(inner)),
        failing_seals_(std::make_shared<int>(failing_seals)) {}
  std::optional<runtime::Result<std::unique_ptr<runtime::StaticWeightImportSession>>>
  begin_static_weight_import() override {
    return runtime::Result<std::unique_ptr<runtime::StaticWeightImportSession>>(
        std::make_unique<Session>(inner(), failing_seals_));
  }

 private:
  class Session final : public runtime::StaticWeightImportSession {
   public:
    Session(runtime::DeviceRuntime& runtime, std::shared_ptr<int> failing_seals)
        : runtime_(runtime), failing_seals_(std::move(failing_seals)) {}
    runtime::Result<void> import_component(std::span<const std::uint8_t> payload,
                                           const runtime::Buffer& destination,
                                           std::uint64_t offset_bytes) override {
      if (sealed_)
        return std::unexpected(
            runtime::RuntimeError(runtime::ErrorKind::kUnsupportedOperation, "sealed"));
      // The payload as whole elements of the destination's type.
      const auto type = runtime_.buffer_descriptor(destination).element_type;
      auto layout = runtime::HostTransferLayout::create(
          type, payload.size() / std::max<std::uint64_t>(1, runtime::element_size_bytes(type)));
      if (!layout)
        return std::unexpected(
            runtime::RuntimeError(runtime::ErrorKind::kUnsupportedOperation, "layout"));
      auto upload = runtime_.encode_upload(payload, *layout, destination, offset_bytes);
      if (!upload) return std::unexpected(upload.error());
      auto stream = runtime_.create_stream();
      if (!stream) return std::unexpected(stream.error());
      auto fence = runtime_.submit(**stream, runtime::CommandBatch::singleton(std::move(*upload)));
      if (!fence) return std::unexpected(fence.error().error());
      if (auto done = runtime_.wait_fence(**fence); !done) {
        return std::unexpected(std::move(done.error()).into_error());
      }
      return {};
    }
    runtime::Result<void> seal() override {
      if (sealed_)
        return std::unexpected(
            runtime::RuntimeError(runtime::ErrorKind::kUnsupportedOperation, "sealed twice"));
      if (*failing_seals_ > 0) {
        --*failing_seals_;
        return std::unexpected(
            runtime::RuntimeError(runtime::ErrorKind::kInternal, "seal failed (injected)"));
      }
      sealed_ = true;
      return {};
    }

   private:
    runtime::DeviceRuntime& runtime_;
    std::shared_ptr<int> failing_seals_;
    bool sealed_ = false;
  };
  std::shared_ptr<int> failing_seals_;
};

}  // namespace vtrace::test
