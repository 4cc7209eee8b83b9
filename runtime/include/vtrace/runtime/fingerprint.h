// Implementation fingerprints (spec 8.2 step 4): SHA-256 over length-framed parts.
//
// implementation_fingerprint(parts) hashes, for each part in order, its byte length as an 8-byte
// little-endian integer followed by its bytes, and returns the digest as 64 lowercase hex
// characters, the form DeviceDescriptor::validate() requires.
//
// Thread rules: pure functions. Errors: none.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

namespace vtrace::runtime {

// SHA-256 (FIPS 180-4) of `bytes`.
std::array<std::uint8_t, 32> sha256(std::span<const std::uint8_t> bytes);
// Lowercase hex of a digest.
std::string to_lower_hex(std::span<const std::uint8_t> bytes);
std::string implementation_fingerprint(std::initializer_list<std::string_view> parts);

}  // namespace vtrace::runtime
