// Device-level data types of the vNext contract (spec 2).
//
// Every validating constructor is a static create() returning VNextResult; types with private
// fields can only hold valid values. Thread rules: plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "vtrace/runtime/error.h"
#include "vtrace/runtime/identity.h"

namespace vtrace::runtime {

// spec 2.1
enum class DeviceClass : std::uint8_t { kHost, kAccelerator, kReference };
std::string_view device_class_name(DeviceClass value);  // "host", "accelerator", "reference"
std::optional<DeviceClass> parse_device_class(std::string_view name);

// spec 2.3
enum class DynamicStorageAllocatorKind : std::uint8_t { kLinearArena, kFixedBlockArena };
enum class DynamicStorageViewKind : std::uint8_t { kContiguous, kPagedRegions };

class DynamicStorageProfile {
 public:
  // Valid: LinearArena+Contiguous; FixedBlockArena{b}+Contiguous with b a power of two;
  // FixedBlockArena{b}+PagedRegions{b} with b a power of two. Block sizes are ignored for the
  // kinds that carry none. Otherwise "dynamic storage allocator/view profile is incompatible or
  // invalid".
  static VNextResult<DynamicStorageProfile> create(DynamicStorageAllocatorKind allocator,
                                                   std::uint64_t allocator_block_bytes,
                                                   DynamicStorageViewKind view,
                                                   std::uint64_t view_block_bytes);
  static DynamicStorageProfile linear_contiguous();

  DynamicStorageAllocatorKind allocator() const { return allocator_; }
  std::uint64_t allocator_block_bytes() const { return allocator_block_bytes_; }
  DynamicStorageViewKind view() const { return view_; }
  std::uint64_t view_block_bytes() const { return view_block_bytes_; }
  // Allocator first, then view (derived Ord upstream).
  friend auto operator<=>(const DynamicStorageProfile&, const DynamicStorageProfile&) = default;

 private:
  DynamicStorageProfile() = default;
  DynamicStorageAllocatorKind allocator_ = DynamicStorageAllocatorKind::kLinearArena;
  std::uint64_t allocator_block_bytes_ = 0;
  DynamicStorageViewKind view_ = DynamicStorageViewKind::kContiguous;
  std::uint64_t view_block_bytes_ = 0;
};

// spec 2.2
struct DeviceDescriptor {
  DeviceId id = *DeviceId::create("device.unset");
  DeviceClass device_class = DeviceClass::kReference;
  std::uint32_t ordinal = 0;
  std::uint64_t total_memory_bytes = 0;
  std::string runtime_implementation_fingerprint;
  std::set<CapabilityId> capabilities;
  std::set<DynamicStorageProfile> dynamic_storage_profiles;

  // Fails with InvalidExecutionPlan "device `{id}` has invalid capacity or runtime implementation
  // fingerprint" when capacity is 0, no storage profile is listed, or the fingerprint is not 64
  // lowercase hex characters.
  VNextResult<void> validate() const;
  friend bool operator==(const DeviceDescriptor&, const DeviceDescriptor&) = default;
};

// spec 2.4 (declaration order is the Ord order)
enum class ElementType : std::uint8_t { kBool, kU8, kU32, kI8, kI32, kF16, kBf16, kF32 };
std::uint64_t element_size_bytes(ElementType type);
std::string_view element_type_name(ElementType type);  // "bool", "u8", ..., "f32"
std::optional<ElementType> parse_element_type(std::string_view name);

// spec 2.5
enum class BufferUsage : std::uint8_t {
  kWeights,
  kActivations,
  kState,
  kPersistent,
  kBinding,
  kScratch,
  kTransfer,
};
std::string_view buffer_usage_name(BufferUsage usage);
std::optional<BufferUsage> parse_buffer_usage(std::string_view name);

// spec 2.6
class BufferRequest {
 public:
  // Fails with InvalidExecutionPlan "buffer request has invalid size or alignment" when the size
  // is 0, the alignment is 0, or the alignment is not a power of two.
  static VNextResult<BufferRequest> create(ResourceId resource_id, std::uint64_t size_bytes,
                                           std::uint64_t alignment_bytes, BufferUsage usage,
                                           ElementType element_type);
  const ResourceId& resource_id() const { return resource_id_; }
  std::uint64_t size_bytes() const { return size_bytes_; }
  std::uint64_t alignment_bytes() const { return alignment_bytes_; }
  BufferUsage usage() const { return usage_; }
  ElementType element_type() const { return element_type_; }
  friend bool operator==(const BufferRequest&, const BufferRequest&) = default;

 private:
  BufferRequest(ResourceId id, std::uint64_t size, std::uint64_t alignment, BufferUsage usage,
                ElementType type)
      : resource_id_(std::move(id)),
        size_bytes_(size),
        alignment_bytes_(alignment),
        usage_(usage),
        element_type_(type) {}
  ResourceId resource_id_;
  std::uint64_t size_bytes_;
  std::uint64_t alignment_bytes_;
  BufferUsage usage_;
  ElementType element_type_;
};

// spec 2.7: the reference runtime echoes the request.
struct BufferDescriptor {
  ResourceId resource_id = *ResourceId::create("resource.unset");
  std::uint64_t size_bytes = 0;
  std::uint64_t alignment_bytes = 0;
  BufferUsage usage = BufferUsage::kActivations;
  ElementType element_type = ElementType::kU8;
  static BufferDescriptor from_request(const BufferRequest& request);
  friend bool operator==(const BufferDescriptor&, const BufferDescriptor&) = default;
};

// spec 2.10
class CopyRegion {
 public:
  // Fails with "copy region is empty or overflows u64" when length is 0 or either end overflows.
  static VNextResult<CopyRegion> create(std::uint64_t source_offset_bytes,
                                        std::uint64_t destination_offset_bytes,
                                        std::uint64_t length_bytes);
  std::uint64_t source_offset_bytes() const { return source_offset_bytes_; }
  std::uint64_t destination_offset_bytes() const { return destination_offset_bytes_; }
  std::uint64_t length_bytes() const { return length_bytes_; }
  // In order: "source copy range overflows u64", "destination copy range overflows u64",
  // "copy region exceeds a buffer boundary". Element types and alignment are not checked.
  VNextResult<void> validate_bounds(const BufferDescriptor& source,
                                    const BufferDescriptor& destination) const;
  friend bool operator==(const CopyRegion&, const CopyRegion&) = default;

 private:
  CopyRegion(std::uint64_t src, std::uint64_t dst, std::uint64_t len)
      : source_offset_bytes_(src), destination_offset_bytes_(dst), length_bytes_(len) {}
  std::uint64_t source_offset_bytes_;
  std::uint64_t destination_offset_bytes_;
  std::uint64_t length_bytes_;
};

// spec 2.11
class HostTransferLayout {
 public:
  // Fails with "host transfer layout is empty or overflows u64".
  static VNextResult<HostTransferLayout> create(ElementType element_type,
                                                std::uint64_t element_count);
  ElementType element_type() const { return element_type_; }
  std::uint64_t element_count() const { return element_count_; }
  // element_count * size; cannot overflow after create().
  std::uint64_t byte_len() const { return element_count_ * element_size_bytes(element_type_); }
  // "host transfer byte count does not match its element layout" unless byte_len() == bytes.
  VNextResult<void> validate_bytes(std::uint64_t bytes) const;
  friend bool operator==(const HostTransferLayout&, const HostTransferLayout&) = default;

 private:
  HostTransferLayout(ElementType type, std::uint64_t count)
      : element_type_(type), element_count_(count) {}
  ElementType element_type_;
  std::uint64_t element_count_;
};

// spec 2.12
enum class StreamState : std::uint8_t { kReady, kRecording, kSubmitted, kFailed };
std::string_view stream_state_name(StreamState state);
std::optional<StreamState> parse_stream_state(std::string_view name);

// spec 5.1: ferrum_types::AttentionExecutionPolicy, kebab-case.
enum class AttentionExecutionPolicy : std::uint8_t { kAuto, kPortable, kNativeAdaptive };
std::string_view attention_policy_name(AttentionExecutionPolicy policy);
// Trims, lowercases and maps '_' to '-' before matching (parse_runtime_value).
std::optional<AttentionExecutionPolicy> parse_attention_policy(std::string_view text);

}  // namespace vtrace::runtime
