// Internal helpers shared by the container writer and reader: little-endian fields, byte planes,
// the XXH3 bridge and the FlatBuffers verifier limits. Not part of the public API.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <xxhash.h>

#include "vtrace/schema/format.h"
#include "vtrace/schema/trace_error.h"

namespace vtrace::schema::detail {

// The FlatBuffers verifier (2.0) checks only that a vector's length field is 4-byte aligned, but
// accessors read the elements in place: a vector of 8-byte scalars or structs must have 8-byte
// aligned elements (a builder places them so when there are any). An absent or empty vector has
// no element to read.
template <typename Vector>
bool elements_aligned(const Vector* vector) {
  return vector == nullptr || vector->size() == 0 ||
         reinterpret_cast<std::uintptr_t>(vector->Data()) % 8 == 0;
}

inline void put_u32(std::uint8_t* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}
inline void put_u64(std::uint8_t* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}
inline std::uint32_t get_u32(const std::uint8_t* p) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
inline std::uint64_t get_u64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
inline void append_u32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  const std::size_t at = out.size();
  out.resize(at + 4);
  put_u32(out.data() + at, v);
}
inline void append_u64(std::vector<std::uint8_t>& out, std::uint64_t v) {
  const std::size_t at = out.size();
  out.resize(at + 8);
  put_u64(out.data() + at, v);
}

inline bool is_skippable_magic(std::uint32_t magic) { return (magic & 0xFFFFFFF0u) == 0x184D2A50u; }
inline constexpr std::uint32_t kZstdFrameMagic = 0xFD2FB528u;

// Byte planes for 16-bit elements: all low bytes, then all high bytes. `in.size()` is even.
// SSE2 (part of x86-64) does 16 elements per step; the scalar loops finish the tail.
inline void encode_planes16(std::span<const std::uint8_t> in, std::uint8_t* out) {
  const std::size_t n = in.size() / 2;
  std::size_t i = 0;
#if defined(__SSE2__)
  const __m128i low_mask = _mm_set1_epi16(0x00FF);
  for (; i + 16 <= n; i += 16) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in.data() + 2 * i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in.data() + 2 * i + 16));
    const __m128i lo = _mm_packus_epi16(_mm_and_si128(a, low_mask), _mm_and_si128(b, low_mask));
    const __m128i hi = _mm_packus_epi16(_mm_srli_epi16(a, 8), _mm_srli_epi16(b, 8));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), lo);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + n + i), hi);
  }
#endif
  for (; i < n; ++i) {
    out[i] = in[2 * i];
    out[n + i] = in[2 * i + 1];
  }
}
inline void decode_planes16(std::span<const std::uint8_t> in, std::uint8_t* out) {
  const std::size_t n = in.size() / 2;
  std::size_t i = 0;
#if defined(__SSE2__)
  for (; i + 16 <= n; i += 16) {
    const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in.data() + i));
    const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in.data() + n + i));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * i), _mm_unpacklo_epi8(lo, hi));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * i + 16), _mm_unpackhi_epi8(lo, hi));
  }
#endif
  for (; i < n; ++i) {
    out[2 * i] = in[i];
    out[2 * i + 1] = in[n + i];
  }
}

// Format 1.1 integrity checks (docs/FORMAT.md). The header hash covers the header frame's content
// before it: kHeaderMagic + the Header table. The footer checksum covers the Footer table (the
// footer frame's content before the trailer); 0 is reserved for "not checked" (1.0 files), so a
// hash that happens to be 0 is stored as 1.
inline BlobId header_hash_of(std::span<const std::uint8_t> magic_and_table) {
  const XXH128_hash_t h = XXH3_128bits(magic_and_table.data(), magic_and_table.size());
  return BlobId{h.low64, h.high64};
}
inline std::uint64_t footer_checksum_of(std::span<const std::uint8_t> footer_table) {
  const std::uint64_t h = XXH3_64bits(footer_table.data(), footer_table.size());
  return h == 0 ? 1 : h;
}

inline TraceError make_error(TraceErrorKind kind, std::string message) {
  return TraceError{kind, std::move(message)};
}

}  // namespace vtrace::schema::detail
