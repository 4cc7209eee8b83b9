// Static weight initialisation through the portable zero-then-upload path (spec 10, open
// question 15.1 decided here).
//
// Decision: one submit per static buffer, an Initialization-phase batch of two entries: encode_zero
// over the whole buffer, then encode_upload of the component bytes verbatim (identity
// materializer) at the destination offset. The batch is waited on before returning, so the
// buffer is initialised when the call succeeds. If the runtime offers begin_static_weight_import
// (not nullopt), that session is used instead and sealed.
//
// Thread rules: uses `stream` exclusively for the duration of the call.
// Errors: the first failing runtime call's error, unchanged; nothing later is attempted.
#pragma once

#include <cstdint>
#include <span>

#include "vtrace/runtime/device_runtime.h"

namespace vtrace::runtime {

struct StaticUploadReceipt {
  std::uint64_t uploaded_component_count = 0;
  std::uint64_t uploaded_bytes = 0;
};

Result<StaticUploadReceipt> initialize_static_buffer(DeviceRuntime& runtime, Stream& stream,
                                                     const Buffer& destination,
                                                     std::span<const std::uint8_t> component,
                                                     ElementType element_type,
                                                     std::uint64_t destination_offset_bytes = 0);

}  // namespace vtrace::runtime
