// How replay compares a readback's bytes with the recorded ones (`--check`).
//
//   bits   every byte equal (the default).
//   ulp:N  F16, BF16 and F32 layouts are compared element by element; two elements match when
//          their ULP distance is at most N. Other element types are compared bit for bit.
//   none   readback bytes are not compared (calls, errors, attribution, fences and counters
//          still are).
//
// ULP distance: each element's bit pattern is mapped to a position on the number line, ordered
// as the values (negative patterns mirrored below zero), and the distance is the difference of
// positions. Rules, fixed here and in docs/CLI.md:
//   - +0 and -0 are 0 ULP apart (both map to position 0);
//   - NaN matches NaN only (any payload, any sign), and nothing else: NaN vs a number is a
//     mismatch whatever N is;
//   - an infinity matches the same infinity only: +inf vs +max (or vs -inf) is a mismatch
//     whatever N is (ulp_distance_* still place infinities one step beyond the largest finite
//     value, so +inf vs +max is 1 position apart, but compare_readback does not accept it);
//   - subnormals are ordinary positions (no flush to zero).
// These are also the rules of `vtrace compare`'s ulp:N and tol checks (drift/numeric.h).
//
// Thread rules: pure functions and values.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "vtrace/runtime/types.h"

namespace vtrace::replayer {

struct CheckMode {
  enum class Kind : std::uint8_t { kBits, kUlp, kNone };
  Kind kind = Kind::kBits;
  std::uint64_t max_ulp = 0;  // kUlp only

  static CheckMode bits() { return {}; }
  static CheckMode ulp(std::uint64_t n) { return {Kind::kUlp, n}; }
  static CheckMode none() { return {Kind::kNone, 0}; }
  std::string to_string() const;  // "bits", "ulp:3", "none"
  friend bool operator==(const CheckMode&, const CheckMode&) = default;
};

// Parses "bits", "none" or "ulp:N" (N a decimal u64); nullopt otherwise.
std::optional<CheckMode> parse_check_mode(std::string_view text);

// ULP distance of two 16-bit floats (F16 or BF16 patterns: both order the same way) or two F32
// patterns; nullopt when exactly one is NaN, 0 when both are NaN.
std::optional<std::uint64_t> ulp_distance_16(std::uint16_t a, std::uint16_t b, bool bf16);
std::optional<std::uint64_t> ulp_distance_32(std::uint32_t a, std::uint32_t b);

// How two readbacks differ; absent when they match under the mode.
struct ReadbackDifference {
  std::uint64_t first_element = 0;      // index of the first differing element (or byte)
  std::uint64_t differing_elements = 0;
  std::string expected;                 // the first differing element, "0x3c00 (1.0)"
  std::string actual;
  // Its ULP distance when comparable: nullopt for NaN or an infinity against another value, for
  // integer types, for a region that is not whole elements and for a length difference.
  std::optional<std::uint64_t> ulp;
  // Why a floating element has no distance ("NaN against a number", "an infinity against a
  // finite number", "+inf against -inf"); empty otherwise.
  std::string why_not_comparable;
  std::uint64_t max_ulp = 0;            // largest finite distance over all elements
  std::string summary() const;          // one sentence
};

// Compares `actual` with `expected` for a readback of `type` elements. A length difference is a
// mismatch under every mode but none.
std::optional<ReadbackDifference> compare_readback(std::span<const std::uint8_t> expected,
                                                   std::span<const std::uint8_t> actual,
                                                   runtime::ElementType type, CheckMode mode);

}  // namespace vtrace::replayer
