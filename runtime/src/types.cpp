#include "vtrace/runtime/types.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <string>
#include <utility>

#include "enum_names.h"
#include "white_space.h"

namespace vtrace::runtime {

namespace {

using detail::name_of;
using detail::parse_name;

constexpr std::pair<DeviceClass, std::string_view> kDeviceClassNames[] = {
    {DeviceClass::kHost, "host"},
    {DeviceClass::kAccelerator, "accelerator"},
    {DeviceClass::kReference, "reference"},
};

constexpr std::pair<ElementType, std::string_view> kElementTypeNames[] = {
    {ElementType::kBool, "bool"}, {ElementType::kU8, "u8"},   {ElementType::kU32, "u32"},
    {ElementType::kI8, "i8"},     {ElementType::kI32, "i32"}, {ElementType::kF16, "f16"},
    {ElementType::kBf16, "bf16"}, {ElementType::kF32, "f32"},
};

constexpr std::pair<BufferUsage, std::string_view> kBufferUsageNames[] = {
    {BufferUsage::kWeights, "weights"},   {BufferUsage::kActivations, "activations"},
    {BufferUsage::kState, "state"},       {BufferUsage::kPersistent, "persistent"},
    {BufferUsage::kBinding, "binding"},   {BufferUsage::kScratch, "scratch"},
    {BufferUsage::kTransfer, "transfer"},
};

constexpr std::pair<StreamState, std::string_view> kStreamStateNames[] = {
    {StreamState::kReady, "ready"},
    {StreamState::kRecording, "recording"},
    {StreamState::kSubmitted, "submitted"},
    {StreamState::kFailed, "failed"},
};

constexpr std::pair<AttentionExecutionPolicy, std::string_view> kAttentionPolicyNames[] = {
    {AttentionExecutionPolicy::kAuto, "auto"},
    {AttentionExecutionPolicy::kPortable, "portable"},
    {AttentionExecutionPolicy::kNativeAdaptive, "native-adaptive"},
};

bool is_lower_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

}  // namespace

std::string_view device_class_name(DeviceClass value) { return name_of(kDeviceClassNames, value); }
std::optional<DeviceClass> parse_device_class(std::string_view name) {
  return parse_name(kDeviceClassNames, name);
}

VNextResult<DynamicStorageProfile> DynamicStorageProfile::create(
    DynamicStorageAllocatorKind allocator, std::uint64_t allocator_block_bytes,
    DynamicStorageViewKind view, std::uint64_t view_block_bytes) {
  DynamicStorageProfile profile;
  profile.allocator_ = allocator;
  profile.view_ = view;
  bool valid = false;
  if (allocator == DynamicStorageAllocatorKind::kLinearArena) {
    // Block sizes of kinds that carry none are ignored (and normalised to 0 so ordering and
    // equality see only meaningful fields).
    valid = view == DynamicStorageViewKind::kContiguous;
  } else if (std::has_single_bit(allocator_block_bytes)) {
    profile.allocator_block_bytes_ = allocator_block_bytes;
    if (view == DynamicStorageViewKind::kContiguous) {
      valid = true;
    } else {
      valid = view_block_bytes == allocator_block_bytes;
      profile.view_block_bytes_ = view_block_bytes;
    }
  }
  if (!valid) {
    return std::unexpected(VNextError::invalid_execution_plan(
        "dynamic storage allocator/view profile is incompatible or invalid"));
  }
  return profile;
}

DynamicStorageProfile DynamicStorageProfile::linear_contiguous() { return DynamicStorageProfile(); }

VNextResult<void> DeviceDescriptor::validate() const {
  const bool fingerprint_ok =
      runtime_implementation_fingerprint.size() == 64 &&
      std::all_of(runtime_implementation_fingerprint.begin(),
                  runtime_implementation_fingerprint.end(), is_lower_hex);
  if (total_memory_bytes == 0 || dynamic_storage_profiles.empty() || !fingerprint_ok) {
    return std::unexpected(VNextError::invalid_execution_plan(
        "device `" + id.str() + "` has invalid capacity or runtime implementation fingerprint"));
  }
  return {};
}

std::uint64_t element_size_bytes(ElementType type) {
  switch (type) {
    case ElementType::kBool:
    case ElementType::kU8:
    case ElementType::kI8: return 1;
    case ElementType::kF16:
    case ElementType::kBf16: return 2;
    case ElementType::kU32:
    case ElementType::kI32:
    case ElementType::kF32: return 4;
  }
  return 1;
}
std::string_view element_type_name(ElementType type) { return name_of(kElementTypeNames, type); }
std::optional<ElementType> parse_element_type(std::string_view name) {
  return parse_name(kElementTypeNames, name);
}

std::string_view buffer_usage_name(BufferUsage usage) { return name_of(kBufferUsageNames, usage); }
std::optional<BufferUsage> parse_buffer_usage(std::string_view name) {
  return parse_name(kBufferUsageNames, name);
}

VNextResult<BufferRequest> BufferRequest::create(ResourceId resource_id, std::uint64_t size_bytes,
                                                 std::uint64_t alignment_bytes, BufferUsage usage,
                                                 ElementType element_type) {
  if (size_bytes == 0 || !std::has_single_bit(alignment_bytes)) {
    return std::unexpected(
        VNextError::invalid_execution_plan("buffer request has invalid size or alignment"));
  }
  return BufferRequest(std::move(resource_id), size_bytes, alignment_bytes, usage, element_type);
}

BufferDescriptor BufferDescriptor::from_request(const BufferRequest& request) {
  return BufferDescriptor{request.resource_id(), request.size_bytes(), request.alignment_bytes(),
                          request.usage(), request.element_type()};
}

VNextResult<CopyRegion> CopyRegion::create(std::uint64_t source_offset_bytes,
                                           std::uint64_t destination_offset_bytes,
                                           std::uint64_t length_bytes) {
  std::uint64_t end = 0;
  if (length_bytes == 0 || __builtin_add_overflow(source_offset_bytes, length_bytes, &end) ||
      __builtin_add_overflow(destination_offset_bytes, length_bytes, &end)) {
    return std::unexpected(
        VNextError::invalid_execution_plan("copy region is empty or overflows u64"));
  }
  return CopyRegion(source_offset_bytes, destination_offset_bytes, length_bytes);
}

VNextResult<void> CopyRegion::validate_bounds(const BufferDescriptor& source,
                                              const BufferDescriptor& destination) const {
  std::uint64_t source_end = 0;
  std::uint64_t destination_end = 0;
  if (__builtin_add_overflow(source_offset_bytes_, length_bytes_, &source_end)) {
    return std::unexpected(VNextError::invalid_execution_plan("source copy range overflows u64"));
  }
  if (__builtin_add_overflow(destination_offset_bytes_, length_bytes_, &destination_end)) {
    return std::unexpected(
        VNextError::invalid_execution_plan("destination copy range overflows u64"));
  }
  if (source_end > source.size_bytes || destination_end > destination.size_bytes) {
    return std::unexpected(
        VNextError::invalid_execution_plan("copy region exceeds a buffer boundary"));
  }
  return {};
}

VNextResult<HostTransferLayout> HostTransferLayout::create(ElementType element_type,
                                                           std::uint64_t element_count) {
  std::uint64_t bytes = 0;
  if (element_count == 0 ||
      __builtin_mul_overflow(element_count, element_size_bytes(element_type), &bytes)) {
    return std::unexpected(
        VNextError::invalid_execution_plan("host transfer layout is empty or overflows u64"));
  }
  return HostTransferLayout(element_type, element_count);
}

VNextResult<void> HostTransferLayout::validate_bytes(std::uint64_t bytes) const {
  if (byte_len() != bytes) {
    return std::unexpected(VNextError::invalid_execution_plan(
        "host transfer byte count does not match its element layout"));
  }
  return {};
}

std::string_view stream_state_name(StreamState state) { return name_of(kStreamStateNames, state); }
std::optional<StreamState> parse_stream_state(std::string_view name) {
  return parse_name(kStreamStateNames, name);
}

std::string_view attention_policy_name(AttentionExecutionPolicy policy) {
  return name_of(kAttentionPolicyNames, policy);
}

std::optional<AttentionExecutionPolicy> parse_attention_policy(std::string_view text) {
  // parse_runtime_value: trim (Unicode White_Space, as Rust's str::trim), lowercase, '_' -> '-'.
  text = text::trim_white_space(text);
  std::string normalized;
  normalized.reserve(text.size());
  for (char c : text) {
    normalized.push_back(c == '_' ? '-'
                                  : static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return parse_name(kAttentionPolicyNames, normalized);
}

}  // namespace vtrace::runtime
