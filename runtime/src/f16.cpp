#include "vtrace/runtime/f16.h"

#include <bit>

namespace vtrace::runtime {

// binary16: 1 sign bit, 5 exponent bits (bias 15), 10 mantissa bits.
// binary32: 1 sign bit, 8 exponent bits (bias 127), 23 mantissa bits.

float f16_to_f32(std::uint16_t bits) {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1Fu;
  std::uint32_t mantissa = bits & 0x3FFu;

  if (exponent == 0x1F) {
    if (mantissa == 0) return std::bit_cast<float>(sign | 0x7F800000u);  // infinity
    // NaN: the payload moves to the top of the f32 mantissa and the quiet bit is set, as the
    // Rust half crate and F16C's vcvtph2ps do (a signalling NaN comes back quiet).
    return std::bit_cast<float>(sign | 0x7FC00000u | (mantissa << 13));
  }
  if (exponent == 0) {
    if (mantissa == 0) return std::bit_cast<float>(sign);  // signed zero
    // Subnormal: value = mantissa * 2^-24. Normalise so the leading 1 reaches bit 10.
    std::uint32_t shift = 0;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      ++shift;
    }
    mantissa &= 0x3FFu;
    const std::uint32_t f32_exponent = 127 - 15 + 1 - shift;
    return std::bit_cast<float>(sign | (f32_exponent << 23) | (mantissa << 13));
  }
  return std::bit_cast<float>(sign | ((exponent + 127 - 15) << 23) | (mantissa << 13));
}

std::uint16_t f32_to_f16(float value) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const std::uint32_t exponent = (bits >> 23) & 0xFFu;
  const std::uint32_t mantissa = bits & 0x7FFFFFu;

  if (exponent == 0xFF) {
    if (mantissa == 0) return static_cast<std::uint16_t>(sign | 0x7C00u);  // infinity
    // NaN: always quiet, keeping the top payload bits.
    return static_cast<std::uint16_t>(sign | 0x7C00u | 0x0200u | (mantissa >> 13));
  }

  // Unbiased exponent; f32 subnormals (exponent 0) are far below the f16 range and round to 0.
  const int unbiased = static_cast<int>(exponent) - 127;
  if (unbiased > 15) return static_cast<std::uint16_t>(sign | 0x7C00u);  // overflow to infinity
  if (unbiased < -25) return sign;  // below half the smallest subnormal: rounds to zero

  // The significand with its implicit bit: 24 bits, value = significand * 2^(unbiased - 23).
  const std::uint32_t significand = mantissa | 0x800000u;
  // Number of low bits to drop so the result has the f16 spacing at this magnitude: 13 for
  // normals, more for subnormals (whose spacing is fixed at 2^-24).
  const int drop = unbiased >= -14 ? 13 : 13 + (-14 - unbiased);
  const std::uint32_t kept = significand >> drop;
  const std::uint32_t remainder = significand & ((1u << drop) - 1u);
  const std::uint32_t half = 1u << (drop - 1);
  // Round to nearest, ties to even.
  const bool round_up = remainder > half || (remainder == half && (kept & 1u) != 0);
  const std::uint32_t rounded = kept + (round_up ? 1u : 0u);

  if (unbiased >= -14) {
    // Normal: rounded holds the implicit bit at bit 10. A carry to bit 11 bumps the exponent,
    // which the addition below performs naturally (and reaches 0x7C00 = infinity at the top).
    const std::uint32_t biased = static_cast<std::uint32_t>(unbiased + 15);
    return static_cast<std::uint16_t>(sign + (biased << 10) + rounded - 0x400u);
  }
  // Subnormal: rounded is the mantissa directly; a carry into bit 10 yields the smallest normal.
  return static_cast<std::uint16_t>(sign | rounded);
}

std::vector<std::uint8_t> to_f16_bytes(std::span<const float> values) {
  std::vector<std::uint8_t> bytes(values.size() * 2);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::uint16_t h = f32_to_f16(values[i]);
    bytes[2 * i] = static_cast<std::uint8_t>(h & 0xFFu);
    bytes[2 * i + 1] = static_cast<std::uint8_t>(h >> 8);
  }
  return bytes;
}

std::vector<float> from_f16_bytes(std::span<const std::uint8_t> bytes) {
  std::vector<float> values(bytes.size() / 2);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const auto h = static_cast<std::uint16_t>(bytes[2 * i] | (bytes[2 * i + 1] << 8));
    values[i] = f16_to_f32(h);
  }
  return values;
}

}  // namespace vtrace::runtime
