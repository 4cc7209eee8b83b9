// Stable identities, contract versions and native operation ids (spec 1.1 to 1.3).
//
// Identity<Tag> is a validated, owned string. Validation order: empty, longer than 160 bytes,
// a byte outside [A-Za-z0-9._:/-]. No prefix is enforced. Ordering is byte-wise.
//
// Thread rules: plain values. Errors: create() returns VNextError::invalid_identity.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "vtrace/runtime/error.h"

namespace vtrace::runtime {

inline constexpr std::size_t kMaxIdentityBytes = 160;

// The reason create() would fail with, or nullopt when `value` is a valid identity.
std::optional<std::string_view> identity_violation(std::string_view value);

template <typename Tag>
class Identity {
 public:
  static VNextResult<Identity> create(std::string value) {
    if (auto reason = identity_violation(value)) {
      return std::unexpected(VNextError::invalid_identity(Tag::kKind, value, *reason));
    }
    return Identity(std::move(value));
  }
  const std::string& str() const { return value_; }
  friend auto operator<=>(const Identity&, const Identity&) = default;
  friend bool operator==(const Identity&, const Identity&) = default;

 private:
  explicit Identity(std::string value) : value_(std::move(value)) {}
  std::string value_;
};

#define VTRACE_IDENTITY(Name, label)                   \
  struct Name##Tag {                                   \
    static constexpr std::string_view kKind = label;   \
  };                                                   \
  using Name = Identity<Name##Tag>;

VTRACE_IDENTITY(CapabilityId, "capability")
VTRACE_IDENTITY(DeviceId, "device")
VTRACE_IDENTITY(NodeId, "node")
VTRACE_IDENTITY(OperationId, "operation")
VTRACE_IDENTITY(ProviderId, "provider")
VTRACE_IDENTITY(ResourceId, "resource")
VTRACE_IDENTITY(TransactionId, "transaction")
VTRACE_IDENTITY(WeightId, "weight")
VTRACE_IDENTITY(WeightFormatId, "weight format")
VTRACE_IDENTITY(ProgramId, "program value")
#undef VTRACE_IDENTITY

// spec 1.2
struct ContractVersion {
  std::uint16_t major = 0;
  std::uint16_t minor = 0;
  // Same major and minor >= required.minor.
  bool satisfies(ContractVersion required) const {
    return major == required.major && minor >= required.minor;
  }
  std::string to_string() const;  // "{major}.{minor}"
  friend bool operator==(ContractVersion, ContractVersion) = default;
};

// spec 1.3: 1 to 256 bytes of [A-Za-z0-9._:/-]. Upstream wraps a static string; the port owns it.
class DeviceNativeOperationId {
 public:
  static constexpr std::size_t kMaxBytes = 256;
  static std::optional<DeviceNativeOperationId> create(std::string_view value);
  const std::string& str() const { return value_; }
  friend bool operator==(const DeviceNativeOperationId&, const DeviceNativeOperationId&) = default;

 private:
  explicit DeviceNativeOperationId(std::string value) : value_(std::move(value)) {}
  std::string value_;
};

// spec 6: constant strings.
inline constexpr std::string_view kDeviceCopyNativeOperationId = "device.copy";
inline constexpr std::string_view kHostUploadNativeOperationId = "host.upload";
inline constexpr std::string_view kDeviceZeroNativeOperationId = "device.zero";
inline constexpr std::string_view kDenseLinearNativeOperationLabel = "vnext_dense_linear";
inline constexpr std::string_view kDenseLinearOperationId = "operation.dense_linear";
inline constexpr std::string_view kDenseLinearF16CapabilityId =
    "capability.operation.dense_linear.f16";
inline constexpr std::string_view kReferenceRuntimeErrorCode = "reference_runtime";
inline constexpr std::string_view kReferenceDenseSafetensorsFormatId =
    "weight-format.safetensors.dense";

}  // namespace vtrace::runtime
