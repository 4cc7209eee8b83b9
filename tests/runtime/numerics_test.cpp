// Numerics: binary16 conversions (exhaustively, against independent converters) and the
// reference dense-linear kernel itself (spec 11: the 2x2 example, pinned NaN), white-box.
// Dense linear through a runtime (shared vectors, batching forms, aliasing, NaN pinning, the
// differential tests) is the conformance suite's, for every runtime (tests/runtime/conformance/).
#include <catch2/catch.hpp>

#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <thread>


#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define VTRACE_TEST_HAS_X86 1
#endif

#include "runtime_test_support.h"
#include "support/test_support.h"
#include "reference/dense_linear_kernel.h"

using namespace vtrace::runtime;
using namespace vtrace::runtime::testing;

namespace {

// --- independent converters (different method from src/f16.cpp) ---

// f16 -> f32 by arithmetic on doubles: value = (-1)^s * m * 2^(e-25) for normals.
float decode_with_ldexp(std::uint16_t h) {
  const bool negative = (h & 0x8000) != 0;
  const int exponent = (h >> 10) & 0x1F;
  const int mantissa = h & 0x3FF;
  double magnitude = 0;
  if (exponent == 0x1F) {
    if (mantissa != 0) {  // NaN: payload on top of the f32 mantissa, quiet bit set
      return std::bit_cast<float>((negative ? 0x80000000u : 0u) | 0x7FC00000u |
                                  (static_cast<std::uint32_t>(mantissa) << 13));
    }
    magnitude = HUGE_VAL;
  } else if (exponent == 0) {
    magnitude = std::ldexp(static_cast<double>(mantissa), -24);
  } else {
    magnitude = std::ldexp(static_cast<double>(1024 + mantissa), exponent - 25);
  }
  return static_cast<float>(negative ? -magnitude : magnitude);
}

// f32 -> f16 through double arithmetic: scale to an integer grid and let nearbyint (ties to
// even in the default rounding mode) pick the neighbour.
std::uint16_t encode_with_double(float value) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000);
  if (std::isnan(value)) {
    return static_cast<std::uint16_t>(sign | 0x7E00 | ((bits & 0x7FFFFF) >> 13));
  }
  const double magnitude = std::fabs(static_cast<double>(value));
  if (magnitude >= 65520.0) return static_cast<std::uint16_t>(sign | 0x7C00);
  if (magnitude < std::ldexp(1.0, -14)) {
    // Subnormal grid 2^-24; a result of 1024 is the smallest normal, encoded the same way.
    return static_cast<std::uint16_t>(sign | static_cast<int>(std::nearbyint(magnitude * 0x1p24)));
  }
  int exponent = 0;
  std::frexp(magnitude, &exponent);  // magnitude = f * 2^exponent, f in [0.5, 1)
  int unbiased = exponent - 1;
  double scaled = std::nearbyint(std::ldexp(magnitude, 10 - unbiased));  // in [1024, 2048]
  if (scaled == 2048.0) {
    scaled = 1024.0;
    ++unbiased;
  }
  return static_cast<std::uint16_t>(sign | ((unbiased + 15) << 10) |
                                    (static_cast<int>(scaled) - 1024));
}

#ifdef VTRACE_TEST_HAS_X86
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wold-style-cast"
__attribute__((target("avx,f16c"))) void encode_with_f16c(const std::uint32_t* in,
                                                            std::uint16_t* out) {
  const __m256 values = _mm256_castsi256_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in)));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out),
                   _mm256_cvtps_ph(values, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
__attribute__((target("avx,f16c"))) void decode_with_f16c(const std::uint16_t* in,
                                                            std::uint32_t* out) {
  const __m128i halves = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm256_castps_si256(_mm256_cvtph_ps(halves)));
}
#pragma GCC diagnostic pop
bool has_f16c() { return __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx"); }
#else
bool has_f16c() { return false; }
void decode_with_f16c(const std::uint16_t*, std::uint32_t*) {}
#endif

struct SweepResult {
  std::uint64_t mismatches = 0;
  std::uint32_t first_input = 0;
  std::uint16_t first_expected = 0;
  std::uint16_t first_actual = 0;
};

// Compares f32_to_f16 with an independent converter on f32 patterns [begin, end) (end exclusive,
// as a 64-bit bound so the full range fits).
SweepResult sweep(std::uint64_t begin, std::uint64_t end, bool use_f16c) {
  SweepResult result;
  const auto record = [&result](std::uint32_t input, std::uint16_t expected, std::uint16_t actual) {
    if (expected != actual && result.mismatches++ == 0) {
      result.first_input = input;
      result.first_expected = expected;
      result.first_actual = actual;
    }
  };
  std::uint64_t bits = begin;
#ifdef VTRACE_TEST_HAS_X86
  if (use_f16c) {
    std::uint32_t in[8];
    std::uint16_t expected[8];
    for (; bits + 8 <= end; bits += 8) {
      for (std::uint32_t lane = 0; lane < 8; ++lane) in[lane] = static_cast<std::uint32_t>(bits + lane);
      encode_with_f16c(in, expected);
      for (std::size_t lane = 0; lane < 8; ++lane) {
        record(in[lane], expected[lane], f32_to_f16(std::bit_cast<float>(in[lane])));
      }
    }
  }
#else
  (void)use_f16c;
#endif
  for (; bits < end; ++bits) {
    const auto input = static_cast<std::uint32_t>(bits);
    record(input, encode_with_double(std::bit_cast<float>(input)),
           f32_to_f16(std::bit_cast<float>(input)));
  }
  return result;
}

std::uint16_t load_u16(const std::vector<std::uint8_t>& bytes, std::size_t element) {
  return static_cast<std::uint16_t>(bytes[2 * element] | (bytes[2 * element + 1] << 8));
}

bool is_f16_nan(std::uint16_t bits) { return (bits & 0x7C00) == 0x7C00 && (bits & 0x3FF) != 0; }

}  // namespace

TEST_CASE("f16 to f32 agrees with an ldexp-based decoder on all 65536 patterns", "[runtime][f16]") {
  std::uint32_t mismatches = 0;
  for (std::uint32_t h = 0; h <= 0xFFFF; ++h) {
    const auto bits = static_cast<std::uint16_t>(h);
    if (std::bit_cast<std::uint32_t>(f16_to_f32(bits)) !=
        std::bit_cast<std::uint32_t>(decode_with_ldexp(bits))) {
      ++mismatches;
      UNSCOPED_INFO("pattern " << h);
    }
  }
  CHECK(mismatches == 0);
  CHECK(f16_to_f32(0x0001) == std::ldexp(1.0f, -24));
  CHECK(f16_to_f32(0x7BFF) == 65504.0f);
  CHECK(std::signbit(f16_to_f32(0x8000)));
}

TEST_CASE("f16 to f32 quiets signalling NaNs and keeps sign and payload", "[runtime][f16]") {
  // Signalling (quiet bit 0x0200 clear): payload kept under the f32 quiet bit 0x00400000.
  CHECK(std::bit_cast<std::uint32_t>(f16_to_f32(0x7C01)) == 0x7FC02000u);
  CHECK(std::bit_cast<std::uint32_t>(f16_to_f32(0xFC01)) == 0xFFC02000u);
  CHECK(std::bit_cast<std::uint32_t>(f16_to_f32(0x7DFF)) == 0x7FFFE000u);
  // Quiet NaNs are unchanged apart from the widening.
  CHECK(std::bit_cast<std::uint32_t>(f16_to_f32(0x7E00)) == 0x7FC00000u);
  CHECK(std::bit_cast<std::uint32_t>(f16_to_f32(0xFE3F)) == 0xFFC7E000u);
  CHECK(std::bit_cast<std::uint32_t>(f16_to_f32(0x7FFF)) == 0x7FFFE000u);
  // Infinities are not NaNs.
  CHECK(std::bit_cast<std::uint32_t>(f16_to_f32(0x7C00)) == 0x7F800000u);
  CHECK(std::bit_cast<std::uint32_t>(f16_to_f32(0xFC00)) == 0xFF800000u);
  std::uint32_t not_quiet = 0;
  for (std::uint32_t h = 0; h <= 0xFFFF; ++h) {
    const auto bits = static_cast<std::uint16_t>(h);
    if (!is_f16_nan(bits)) continue;
    const std::uint32_t wide = std::bit_cast<std::uint32_t>(f16_to_f32(bits));
    if ((wide & 0x00400000u) == 0 || (wide >> 31) != (h >> 15u) ||
        ((wide >> 13) & 0x1FFu) != (h & 0x1FFu)) {
      ++not_quiet;
    }
  }
  CHECK(not_quiet == 0);
}

TEST_CASE("f16 to f32 agrees with the F16C instruction on all 65536 patterns where the CPU has it",
          "[runtime][f16]") {
  if (!has_f16c()) VTRACE_SKIP("this CPU has no F16C (the ldexp cross-check is a test of its own)");
  std::uint32_t mismatches = 0;
  for (std::uint32_t h = 0; h <= 0xFFFF; h += 8) {
    std::uint16_t in[8];
    std::uint32_t out[8];
    for (std::uint32_t lane = 0; lane < 8; ++lane) in[lane] = static_cast<std::uint16_t>(h + lane);
    decode_with_f16c(in, out);
    for (std::size_t lane = 0; lane < 8; ++lane) {
      if (std::bit_cast<std::uint32_t>(f16_to_f32(in[lane])) != out[lane]) {
        if (mismatches++ == 0) UNSCOPED_INFO("first mismatch: pattern " << in[lane]);
      }
    }
  }
  CHECK(mismatches == 0);
}

TEST_CASE("every f16 pattern survives f16 to f32 to f16, signalling NaNs coming back quiet",
          "[runtime][f16]") {
  std::uint32_t mismatches = 0;
  for (std::uint32_t h = 0; h <= 0xFFFF; ++h) {
    const auto bits = static_cast<std::uint16_t>(h);
    const bool signalling_nan = is_f16_nan(bits) && (bits & 0x0200) == 0;
    const auto expected = static_cast<std::uint16_t>(signalling_nan ? bits | 0x0200 : bits);
    if (f32_to_f16(f16_to_f32(bits)) != expected) ++mismatches;
  }
  CHECK(mismatches == 0);
}

TEST_CASE("f32 to f16 rounds the edge cases of spec 11.2", "[runtime][f16]") {
  CHECK(f32_to_f16(65504.0f) == 0x7BFF);
  CHECK(f32_to_f16(65519.996f) == 0x7BFF);
  CHECK(f32_to_f16(65520.0f) == 0x7C00);
  CHECK(f32_to_f16(-65520.0f) == 0xFC00);
  CHECK(f32_to_f16(1e10f) == 0x7C00);
  CHECK(f32_to_f16(std::ldexp(1.0f, -25)) == 0x0000);
  CHECK(f32_to_f16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)) == 0x0001);
  CHECK(f32_to_f16(std::ldexp(1.0f, -24)) == 0x0001);
  CHECK(f32_to_f16(-std::ldexp(1.0f, -24)) == 0x8001);
  CHECK(f32_to_f16(std::ldexp(3.0f, -25)) == 0x0002);  // tie between 1 and 2 subnormal steps: even
  CHECK(f32_to_f16(1.00048828125f) == 0x3C00);          // tie to even
  CHECK(f32_to_f16(1.00146484375f) == 0x3C02);          // tie to even, upwards
  CHECK(f32_to_f16(-0.0f) == 0x8000);
  CHECK(f32_to_f16(INFINITY) == 0x7C00);
  CHECK(f32_to_f16(-INFINITY) == 0xFC00);
  CHECK(f32_to_f16(std::ldexp(1.0f, -14)) == 0x0400);
  CHECK(f32_to_f16(std::nextafter(std::ldexp(1.0f, -14), 0.0f)) == 0x0400);  // rounds up to normal
  // NaN: sign | 0x7C00 | 0x0200 | (mantissa >> 13).
  CHECK(f32_to_f16(std::bit_cast<float>(0x7F800001u)) == 0x7E00);
  CHECK(f32_to_f16(std::bit_cast<float>(0xFFC02000u)) == 0xFE01);
  CHECK(f32_to_f16(std::bit_cast<float>(0x7FBFE000u)) == 0x7FFF);
}

namespace {

// Sweeps all 2^32 f32 patterns on two threads and checks that no input disagrees.
void check_exhaustive_sweep(bool use_f16c) {
  const auto start = std::chrono::steady_clock::now();
  SweepResult halves[2];
  constexpr std::uint64_t kHalf = 1ull << 31;
  std::thread low([&] { halves[0] = sweep(0, kHalf, use_f16c); });
  std::thread high([&] { halves[1] = sweep(kHalf, 2 * kHalf, use_f16c); });
  low.join();
  high.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Reported, never asserted (tests do not assert on wall time).
  WARN("exhaustive f32->f16 sweep against " << (use_f16c ? "F16C" : "double arithmetic") << ": "
                                            << seconds << " s");
  for (const auto& half : halves) {
    INFO("first mismatch: input 0x" << std::hex << half.first_input << " expected 0x"
                                    << half.first_expected << " got 0x" << half.first_actual);
    CHECK(half.mismatches == 0);
  }
}

}  // namespace

TEST_CASE("f32 to f16 agrees with a double-arithmetic software converter on all 2^32 inputs",
          "[runtime][f16]") {
  check_exhaustive_sweep(false);
}

TEST_CASE("f32 to f16 agrees with the F16C instruction on all 2^32 inputs where the CPU has it",
          "[runtime][f16]") {
  if (!has_f16c()) {
    VTRACE_SKIP("this CPU has no F16C (the software cross-check is a test of its own)");
  }
  check_exhaustive_sweep(true);
}

TEST_CASE("the kernel computes the spec's 2x2 example", "[runtime][dense_linear]") {
  const auto out = reference::dense_linear_f16(f16_bytes({1.5f, -2.0f}),
                                               f16_bytes({2.0f, 1.0f, -1.0f, 3.0f}), 1, 2, 2);
  CHECK(f16_values(out) == std::vector<float>{1.0f, -7.5f});
}

TEST_CASE("NaN outputs are pinned to 0x7E00 whatever produced them and infinities stay infinite",
          "[runtime][dense_linear]") {
  const std::uint16_t nan_neg_payload = 0xFE3F;
  const auto raw = [](std::vector<std::uint16_t> values) {
    std::vector<std::uint8_t> bytes;
    for (auto v : values) {
      bytes.push_back(static_cast<std::uint8_t>(v & 0xFF));
      bytes.push_back(static_cast<std::uint8_t>(v >> 8));
    }
    return bytes;
  };
  // Weight [[1, 0], [1, 1]] as [out][in].
  // Row 0 [NaN, 1]: NaN input in both outputs.
  // Row 1 [1, inf]: o0 = 1 + inf*0 (NaN), o1 = 1 + inf (inf).
  // Row 2 [inf, -inf]: o0 = inf + (-inf*0) (NaN), o1 = inf + -inf (NaN).
  // Row 3 [-inf, 1]: both stay -inf.
  const auto input = raw({nan_neg_payload, 0x3C00, 0x3C00, 0x7C00, 0x7C00, 0xFC00, 0xFC00, 0x3C00});
  const auto weight = raw({0x3C00, 0x0000, 0x3C00, 0x3C00});
  const auto out = reference::dense_linear_f16(input, weight, 4, 2, 2);
  REQUIRE(out.size() == 16);
  const std::uint16_t nan = reference::kDenseLinearNanOutput;
  const std::vector<std::uint16_t> expected = {nan, nan, nan, 0x7C00, nan, nan, 0xFC00, 0xFC00};
  for (std::size_t e = 0; e < expected.size(); ++e) {
    INFO("element " << e);
    CHECK(load_u16(out, e) == expected[e]);
  }
  CHECK(reference::kDenseLinearNanOutput == 0x7E00);
}

