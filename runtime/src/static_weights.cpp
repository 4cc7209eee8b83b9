#include "vtrace/runtime/static_weights.h"

#include "vtrace/runtime/immediate.h"

namespace vtrace::runtime {

Result<StaticUploadReceipt> initialize_static_buffer(DeviceRuntime& runtime, Stream& stream,
                                                     const Buffer& destination,
                                                     std::span<const std::uint8_t> component,
                                                     ElementType element_type,
                                                     std::uint64_t destination_offset_bytes) {
  const std::uint64_t element_size = element_size_bytes(element_type);
  auto layout = HostTransferLayout::create(element_type, component.size() / element_size);
  if (!layout) return std::unexpected(RuntimeError(ErrorKind::kContractValue, layout.error()));

  if (auto session = runtime.begin_static_weight_import()) {
    if (!*session) return std::unexpected(session->error());
    auto& import = **session;
    if (auto imported = import->import_component(component, destination, destination_offset_bytes);
        !imported) {
      return std::unexpected(imported.error());
    }
    if (auto sealed = import->seal(); !sealed) return std::unexpected(sealed.error());
    return StaticUploadReceipt{1, component.size()};
  }

  const BufferDescriptor descriptor = runtime.buffer_descriptor(destination);
  auto zero = runtime.encode_zero(destination, 0, descriptor.size_bytes);
  if (!zero) return std::unexpected(zero.error());
  // encode_upload checks that the byte count matches the layout, so a component whose size is
  // not a multiple of the element size fails there.
  auto upload = runtime.encode_upload(component, *layout, destination, destination_offset_bytes);
  if (!upload) return std::unexpected(upload.error());

  CommandBatch batch;
  batch.push_initialization(std::move(*zero));
  batch.push_initialization(std::move(*upload));
  if (auto fence = immediate::submit_and_wait(runtime, stream, std::move(batch)); !fence) {
    return std::unexpected(std::move(fence).error());
  }
  return StaticUploadReceipt{1, component.size()};
}

}  // namespace vtrace::runtime
