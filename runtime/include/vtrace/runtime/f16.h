// IEEE binary16 conversions, written to be read (spec 11.2).
//
// f16_to_f32 is exact for every number and infinity (subnormals included); a NaN keeps its sign
// and payload and comes back quiet (f32 quiet bit set), as in the Rust half crate and F16C, so a
// signalling f16 NaN becomes a quiet f32 NaN.
// f32_to_f16 rounds to nearest, ties to even; overflow goes to infinity (|x| >= 65520), underflow
// to subnormals or signed zero; NaN becomes a quiet NaN keeping the top payload bits:
// sign | 0x7C00 | 0x0200 | (mantissa >> 13).
//
// These are the portable software conversions the reference runtime uses; they compile without
// any ISA flag. Their code is f16_bits.h's, which the CUDA kernels compile too. to_f16_bytes and
// from_f16_bytes apply them to the host form of an f16 buffer (little-endian pairs of bytes, what
// encode_upload takes and readback returns). Thread rules: pure functions. Errors: none.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace vtrace::runtime {

float f16_to_f32(std::uint16_t bits);
std::uint16_t f32_to_f16(float value);

// The little-endian f16 bytes of `values`, each rounded by f32_to_f16 (2 bytes per value).
std::vector<std::uint8_t> to_f16_bytes(std::span<const float> values);
// f16_to_f32 of each little-endian pair of `bytes`, in order; an odd last byte is ignored.
std::vector<float> from_f16_bytes(std::span<const std::uint8_t> bytes);

}  // namespace vtrace::runtime
