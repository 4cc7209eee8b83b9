// The IEEE binary16 <-> binary32 conversions, written once for the host and for CUDA devices.
//
// f16.h's f16_to_f32 and f32_to_f16 (what the reference runtime and every host runtime use) and
// the strict CUDA kernels (runtime/cuda/src/kernels.cu) call these same two functions, so the
// device cannot round differently from the oracle. The rules, spec 11.2:
// - to_f32 is exact for every number and infinity (subnormals included); a NaN keeps its sign
//   and payload and comes back quiet (f32 quiet bit set), as in the Rust half crate and F16C.
// - from_f32 rounds to nearest, ties to even; overflow goes to infinity (|x| >= 65520),
//   underflow to subnormals or signed zero; a NaN becomes a quiet NaN keeping the top payload
//   bits: sign | 0x7C00 | 0x0200 | (mantissa >> 13).
//
// binary16: 1 sign bit, 5 exponent bits (bias 15), 10 mantissa bits.
// binary32: 1 sign bit, 8 exponent bits (bias 127), 23 mantissa bits.
//
// The header compiles as C++17 (nvcc's dialect for kernels.cu) and C++23; under nvcc every
// function is __host__ __device__ (VTRACE_HD), elsewhere plain inline.
// Thread rules: pure functions. Errors: none (every bit pattern has a defined result).
#pragma once

#include <cstdint>

#ifndef VTRACE_HD
#ifdef __CUDACC__
#define VTRACE_HD __host__ __device__
#else
#define VTRACE_HD
#endif
#endif

namespace vtrace::runtime::f16_bits {

VTRACE_HD inline float bits_to_float(std::uint32_t bits) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(bits);
#else
  return __builtin_bit_cast(float, bits);
#endif
}

VTRACE_HD inline std::uint32_t float_to_bits(float value) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(value);
#else
  return __builtin_bit_cast(std::uint32_t, value);
#endif
}

// f16 bits -> f32.
VTRACE_HD inline float to_f32(std::uint16_t bits) {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1Fu;
  std::uint32_t mantissa = bits & 0x3FFu;

  if (exponent == 0x1Fu) {
    if (mantissa == 0) return bits_to_float(sign | 0x7F800000u);  // infinity
    // NaN: the payload moves to the top of the f32 mantissa and the quiet bit is set (a
    // signalling NaN comes back quiet).
    return bits_to_float(sign | 0x7FC00000u | (mantissa << 13));
  }
  if (exponent == 0) {
    if (mantissa == 0) return bits_to_float(sign);  // signed zero
    // Subnormal: value = mantissa * 2^-24. Normalise so the leading 1 reaches bit 10.
    std::uint32_t shift = 0;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      ++shift;
    }
    mantissa &= 0x3FFu;
    const std::uint32_t f32_exponent = 127 - 15 + 1 - shift;
    return bits_to_float(sign | (f32_exponent << 23) | (mantissa << 13));
  }
  return bits_to_float(sign | ((exponent + 127 - 15) << 23) | (mantissa << 13));
}

// f32 -> f16 bits.
VTRACE_HD inline std::uint16_t from_f32(float value) {
  const std::uint32_t bits = float_to_bits(value);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const std::uint32_t exponent = (bits >> 23) & 0xFFu;
  const std::uint32_t mantissa = bits & 0x7FFFFFu;

  if (exponent == 0xFFu) {
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
    const auto biased = static_cast<std::uint32_t>(unbiased + 15);
    return static_cast<std::uint16_t>(sign + (biased << 10) + rounded - 0x400u);
  }
  // Subnormal: rounded is the mantissa directly; a carry into bit 10 yields the smallest normal.
  return static_cast<std::uint16_t>(sign | rounded);
}

}  // namespace vtrace::runtime::f16_bits
