#include "vtrace/runtime/immediate.h"

#include <limits>

namespace vtrace::runtime::immediate {

namespace {

RuntimeError contract_value(const VNextError& error) {
  return RuntimeError(ErrorKind::kContractValue, error);
}

// a * b, or the largest u64 when it overflows: a region that long is out of every buffer's bounds,
// so the contract reports it (kRegionOutOfBounds) instead of a wrapped, wrong length.
std::uint64_t saturating_product(std::uint64_t a, std::uint64_t b) {
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  if (a != 0 && b > kMax / a) return kMax;
  return a * b;
}

// The layout of `bytes` bytes as whole elements of `type` (rounded down: encode_upload and
// readback then say which count does not match).
Result<HostTransferLayout> layout_of(ElementType type, std::uint64_t bytes) {
  auto layout = HostTransferLayout::create(type, bytes / element_size_bytes(type));
  if (!layout) return std::unexpected(contract_value(layout.error()));
  return *layout;
}

// submit_and_wait for an operation whose fence the caller does not get.
Result<void> run(DeviceRuntime& runtime, Stream& stream, CommandBatch batch) {
  auto fence = submit_and_wait(runtime, stream, std::move(batch));
  if (!fence) return std::unexpected(std::move(fence).error());
  return {};
}

}  // namespace

Result<BufferPtr> allocate_buffer(DeviceRuntime& runtime, std::string_view resource_id,
                                  ElementType element_type, std::uint64_t element_count,
                                  BufferUsage usage, std::uint64_t alignment_bytes) {
  auto id = ResourceId::create(std::string(resource_id));
  if (!id) return std::unexpected(contract_value(id.error()));
  const std::uint64_t element_size = element_size_bytes(element_type);
  if (element_count > std::numeric_limits<std::uint64_t>::max() / element_size) {
    // BufferRequest::create's own sentence for a size it cannot take.
    return std::unexpected(contract_value(
        VNextError::invalid_execution_plan("buffer request has invalid size or alignment")));
  }
  auto request = BufferRequest::create(std::move(*id), element_count * element_size,
                                       alignment_bytes, usage, element_type);
  if (!request) return std::unexpected(contract_value(request.error()));
  auto permit = runtime.admit(*request);
  if (!permit) return std::unexpected(std::move(permit).error());
  return runtime.allocate(std::move(*permit));
}

Result<FencePtr> submit_and_wait(DeviceRuntime& runtime, Stream& stream, CommandBatch batch) {
  auto fence = runtime.submit(stream, std::move(batch));
  if (!fence) return std::unexpected(std::move(fence).error().into_error());
  auto receipt = runtime.wait_fence(**fence);
  if (!receipt) return std::unexpected(std::move(receipt).error().into_error());
  if (!receipt->terminal.is_succeeded()) return std::unexpected(*receipt->terminal.failure);
  return std::move(*fence);
}

Result<void> upload(DeviceRuntime& runtime, Stream& stream, const Buffer& destination,
                    std::span<const std::uint8_t> bytes, std::uint64_t destination_offset_bytes) {
  const BufferDescriptor descriptor = runtime.buffer_descriptor(destination);
  // An unknown buffer (size 0, see readback below): bytes, so that encode_upload names it.
  auto layout = layout_of(descriptor.size_bytes == 0 ? ElementType::kU8 : descriptor.element_type,
                          bytes.size());
  if (!layout) return std::unexpected(std::move(layout).error());
  auto command = runtime.encode_upload(bytes, *layout, destination, destination_offset_bytes);
  if (!command) return std::unexpected(std::move(command).error());
  CommandBatch batch;
  batch.push_dynamic_binding(std::move(*command));
  return run(runtime, stream, std::move(batch));
}

Result<void> dense_linear(DeviceRuntime& runtime, Stream& stream, const Buffer& input,
                          const Buffer& weight, const Buffer& output,
                          const DenseLinearShape& shape) {
  constexpr std::uint64_t kF16Bytes = 2;
  auto f16_region = [&](const Buffer& buffer, std::uint64_t a, std::uint64_t b) {
    return BufferRegionRef{&buffer, 0, saturating_product(saturating_product(a, b), kF16Bytes)};
  };
  const DenseLinearLaunch launch{f16_region(input, shape.rows, shape.in_features),
                                 f16_region(weight, shape.out_features, shape.in_features),
                                 f16_region(output, shape.rows, shape.out_features),
                                 shape.rows,
                                 shape.in_features,
                                 shape.out_features};
  auto command = runtime.encode_dense_linear({std::span(&launch, 1), 1, shape.rows});
  if (!command) return std::unexpected(std::move(command).error());
  return run(runtime, stream, CommandBatch::singleton(std::move(*command)));
}

Result<std::vector<std::uint8_t>> readback(DeviceRuntime& runtime, Stream& stream,
                                           const Buffer& source) {
  BufferDescriptor descriptor = runtime.buffer_descriptor(source);
  if (descriptor.size_bytes == 0) {
    // The runtime does not know the buffer (another runtime's: its descriptor is the default,
    // and no buffer of its own is empty): one byte asked, so that readback() names the buffer
    // with its own error (kReadbackForeign) rather than the layout failing first.
    descriptor.element_type = ElementType::kU8;
    descriptor.size_bytes = 1;
  }
  auto layout = layout_of(descriptor.element_type, descriptor.size_bytes);
  if (!layout) return std::unexpected(std::move(layout).error());
  auto region = CopyRegion::create(0, 0, descriptor.size_bytes);
  if (!region) return std::unexpected(contract_value(region.error()));
  return runtime.readback(stream, source, *region, *layout);
}

}  // namespace vtrace::runtime::immediate
