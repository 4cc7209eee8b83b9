// Shared helpers for the runtime tests: a reference runtime with a stream, buffer allocation
// through admission, and whole-buffer fill / read through the runtime's own commands.
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "vtrace/runtime/f16.h"
#include "vtrace/runtime/reference/reference_runtime.h"

namespace vtrace::runtime::testing {

inline std::unique_ptr<reference::ReferenceRuntime> make_reference(
    const std::string& device_id = "device.reference.test.0") {
  auto descriptor = reference::reference_descriptor(device_id);
  REQUIRE(descriptor.has_value());
  auto runtime = reference::ReferenceRuntime::create(std::move(*descriptor));
  REQUIRE(runtime.has_value());
  return std::move(*runtime);
}

inline BufferPtr allocate(DeviceRuntime& runtime, std::uint64_t size, ElementType type,
                          std::uint64_t alignment = 16, const std::string& name = "resource.test") {
  auto request =
      BufferRequest::create(*ResourceId::create(name), size, alignment, BufferUsage::kActivations, type);
  REQUIRE(request.has_value());
  auto permit = runtime.admit(*request);
  REQUIRE(permit.has_value());
  auto buffer = runtime.allocate(std::move(*permit));
  REQUIRE(buffer.has_value());
  return std::move(*buffer);
}

inline void submit_ok(DeviceRuntime& runtime, Stream& stream, CommandBatch batch) {
  auto fence = runtime.submit(stream, std::move(batch));
  REQUIRE(fence.has_value());
  REQUIRE(runtime.wait_fence(**fence).has_value());
}

// Uploads `bytes` to the start of `buffer` (whose element type decides the layout).
inline void fill(DeviceRuntime& runtime, Stream& stream, const Buffer& buffer,
                 const std::vector<std::uint8_t>& bytes) {
  const ElementType type = runtime.buffer_descriptor(buffer).element_type;
  auto layout = HostTransferLayout::create(type, bytes.size() / element_size_bytes(type));
  REQUIRE(layout.has_value());
  auto upload = runtime.encode_upload(bytes, *layout, buffer, 0);
  REQUIRE(upload.has_value());
  submit_ok(runtime, stream, CommandBatch::singleton(std::move(*upload)));
}

// The whole buffer, read back.
inline std::vector<std::uint8_t> contents(DeviceRuntime& runtime, Stream& stream,
                                          const Buffer& buffer) {
  const BufferDescriptor descriptor = runtime.buffer_descriptor(buffer);
  auto layout = HostTransferLayout::create(
      descriptor.element_type, descriptor.size_bytes / element_size_bytes(descriptor.element_type));
  REQUIRE(layout.has_value());
  auto region = CopyRegion::create(0, 0, descriptor.size_bytes);
  REQUIRE(region.has_value());
  auto bytes = runtime.readback(stream, buffer, *region, *layout);
  REQUIRE(bytes.has_value());
  return std::move(*bytes);
}

inline std::vector<std::uint8_t> f16_bytes(const std::vector<float>& values) {
  std::vector<std::uint8_t> bytes;
  for (float value : values) {
    const std::uint16_t bits = f32_to_f16(value);
    bytes.push_back(static_cast<std::uint8_t>(bits & 0xFF));
    bytes.push_back(static_cast<std::uint8_t>(bits >> 8));
  }
  return bytes;
}

inline std::vector<float> f16_values(const std::vector<std::uint8_t>& bytes) {
  std::vector<float> values;
  for (std::size_t i = 0; i + 1 < bytes.size(); i += 2) {
    values.push_back(f16_to_f32(static_cast<std::uint16_t>(bytes[i] | (bytes[i + 1] << 8))));
  }
  return values;
}

inline std::vector<std::uint8_t> pattern(std::size_t size, std::uint8_t seed = 0x11) {
  std::vector<std::uint8_t> bytes(size);
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::uint8_t>(seed + 7 * i);
  return bytes;
}

}  // namespace vtrace::runtime::testing
