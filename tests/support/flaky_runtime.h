// FlakyRuntime: a runtime made nondeterministic on purpose, for the drift tests. A
// ForwardingRuntime whose every second readback (counted in `calls`: one counter per instance,
// or one shared by all instances, like a reduction order that depends on timing) comes back with
// the lowest bit of its first byte flipped. Header-only.
#pragma once

#include <memory>
#include <vector>

#include "vtrace/runtime/forwarding_runtime.h"

namespace vtrace::test {

class FlakyRuntime final : public runtime::ForwardingRuntime {
 public:
  FlakyRuntime(std::unique_ptr<runtime::DeviceRuntime> inner, std::shared_ptr<unsigned> calls)
      : ForwardingRuntime(std::move(inner)), calls_(std::move(calls)) {}
  runtime::Result<std::vector<std::uint8_t>> readback(
      runtime::Stream& stream, const runtime::Buffer& source, const runtime::CopyRegion& region,
      const runtime::HostTransferLayout& layout) override {
    auto bytes = ForwardingRuntime::readback(stream, source, region, layout);
    if (bytes && !bytes->empty() && (++*calls_ % 2) == 0) (*bytes)[0] ^= 1;
    return bytes;
  }

 private:
  std::shared_ptr<unsigned> calls_;
};

}  // namespace vtrace::test
