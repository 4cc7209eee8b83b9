#include "vtrace/runtime/identity.h"

#include <algorithm>

namespace vtrace::runtime {

namespace {

bool is_portable_byte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-' || c == ':' || c == '/';
}

}  // namespace

std::optional<std::string_view> identity_violation(std::string_view value) {
  if (value.empty()) return "identity must not be empty";
  if (value.size() > kMaxIdentityBytes) return "identity exceeds 160 bytes";
  if (!std::all_of(value.begin(), value.end(), is_portable_byte)) {
    return "identity contains a non-portable character";
  }
  return std::nullopt;
}

std::string ContractVersion::to_string() const {
  return std::to_string(major) + "." + std::to_string(minor);
}

std::optional<DeviceNativeOperationId> DeviceNativeOperationId::create(std::string_view value) {
  if (value.empty() || value.size() > kMaxBytes ||
      !std::all_of(value.begin(), value.end(), is_portable_byte)) {
    return std::nullopt;
  }
  return DeviceNativeOperationId(std::string(value));
}

}  // namespace vtrace::runtime
