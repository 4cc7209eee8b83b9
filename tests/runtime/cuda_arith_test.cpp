// The strict CUDA kernel's arithmetic, compiled for the host (runtime/cuda/src/strict_arith.h),
// against the reference runtime: the NaN output rule, the fmaf step against the reference's
// multiply-then-add, and the two kernels' tile walks (host emulations built from the same helpers
// the kernels call) against the reference dense-linear kernel on shapes with odd tails. Needs no
// GPU and no CUDA toolkit: it runs in every build. The f16 conversions need no test here: the
// kernels call vtrace/runtime/f16_bits.h, the reference's own code, which numerics_test checks on
// every pattern.
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "reference/dense_linear_kernel.h"
#include "strict_arith.h"
#include "vtrace/runtime/f16.h"

namespace {

namespace strict = vtrace::runtime::cuda::strict;
namespace rt = vtrace::runtime;

std::uint32_t bits_of(float value) { return std::bit_cast<std::uint32_t>(value); }

// f16 bits of data on which the summation order shows: mostly values of random sign and
// mantissa over a wide range of magnitudes (2^-10 .. 2^10), so partial sums are large against
// the result and a changed order rounds differently somewhere; some gaussian values,
// and, when `specials`, subnormals, infinities and NaNs (with payloads), so special values reach
// the reductions too.
std::vector<std::uint16_t> random_f16(std::mt19937& rng, std::size_t count, bool specials) {
  std::normal_distribution<float> gaussian(0.0f, 1.0f);
  std::uniform_int_distribution<int> kind(0, 199);
  std::uniform_int_distribution<int> exponent(-10, 10);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  std::uniform_int_distribution<std::uint32_t> any(0, 0xFFFF);
  std::vector<std::uint16_t> values(count);
  for (auto& v : values) {
    const int k = specials ? kind(rng) : kind(rng) % 190;
    if (k < 160) {
      const float sign = any(rng) % 2 == 0 ? 1.0f : -1.0f;
      v = rt::f32_to_f16(sign * std::ldexp(mantissa(rng), exponent(rng)));
    } else if (k < 190) {
      v = rt::f32_to_f16(gaussian(rng));
    } else if (k < 196) {
      v = static_cast<std::uint16_t>(any(rng) & 0x83FFu);  // subnormal or zero
    } else if (k < 197) {
      v = static_cast<std::uint16_t>(0x7C00u | (any(rng) & 0x8000u));  // infinity
    } else if (k < 198) {
      v = static_cast<std::uint16_t>(0x7C00u | (any(rng) & 0x83FFu) | 1u);  // NaN
    } else {
      v = static_cast<std::uint16_t>(any(rng));
    }
  }
  return values;
}

std::vector<std::uint8_t> to_bytes(const std::vector<std::uint16_t>& values) {
  std::vector<std::uint8_t> bytes(values.size() * 2);
  for (std::size_t i = 0; i < values.size(); ++i) {
    bytes[2 * i] = static_cast<std::uint8_t>(values[i] & 0xFFu);
    bytes[2 * i + 1] = static_cast<std::uint8_t>(values[i] >> 8);
  }
  return bytes;
}

std::vector<std::uint16_t> from_bytes(const std::vector<std::uint8_t>& bytes) {
  std::vector<std::uint16_t> values(bytes.size() / 2);
  for (std::size_t i = 0; i < values.size(); ++i) {
    values[i] = static_cast<std::uint16_t>(bytes[2 * i] | (bytes[2 * i + 1] << 8));
  }
  return values;
}

struct Shape {
  long rows, k, out;
};

// The outputs of one shape by `emulate`, by the reference kernel, and by the reference's order
// reversed (k descending), on random data (with special values for every fourth seed).
struct Outcome {
  std::size_t differing = 0;    // emulate vs reference
  std::size_t order_shows = 0;  // reversed order vs reference: the data can catch a reorder
};
template <typename Emulate>
Outcome run_shape(const Shape& s, std::uint32_t seed, Emulate emulate) {
  std::mt19937 rng(seed);
  const bool specials = seed % 4 == 0;
  auto input = random_f16(rng, static_cast<std::size_t>(s.rows * s.k), specials);
  auto weight = random_f16(rng, static_cast<std::size_t>(s.out * s.k), specials);
  // Cancellation, so that rounding noise reaches the f16 result and any change of order shows:
  // every fourth k-pair of every row holds one large value twice, and the odd outputs' weights
  // hold a large w and -w there, so those products cancel exactly in real arithmetic while each
  // f32 partial sum is rounded at their size.
  std::uniform_int_distribution<int> big(6, 12);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  for (long k = 0; k + 1 < s.k; k += 8) {
    for (long r = 0; r < s.rows; ++r) {
      const auto h = rt::f32_to_f16(std::ldexp(mantissa(rng), big(rng)));
      input[static_cast<std::size_t>(r * s.k + k)] = h;
      input[static_cast<std::size_t>(r * s.k + k + 1)] = h;
    }
    for (long o = 1; o < s.out; o += 2) {
      const auto h = rt::f32_to_f16(std::ldexp(mantissa(rng), big(rng)));
      weight[static_cast<std::size_t>(o * s.k + k)] = h;
      weight[static_cast<std::size_t>(o * s.k + k + 1)] = static_cast<std::uint16_t>(h ^ 0x8000u);
    }
  }
  std::vector<std::uint16_t> actual(static_cast<std::size_t>(s.rows * s.out), 0xFFFFu);
  emulate(input.data(), weight.data(), actual.data(), s);
  const auto expected = from_bytes(rt::reference::dense_linear_f16(
      to_bytes(input), to_bytes(weight), static_cast<std::size_t>(s.rows),
      static_cast<std::size_t>(s.k), static_cast<std::size_t>(s.out)));
  Outcome outcome;
  for (long r = 0; r < s.rows; ++r) {
    for (long o = 0; o < s.out; ++o) {
      const auto e = static_cast<std::size_t>(r * s.out + o);
      outcome.differing += actual[e] != expected[e] ? 1u : 0u;
      float reversed = +0.0f;
      for (long k = s.k - 1; k >= 0; --k) {
        reversed = reversed + rt::f16_to_f32(input[static_cast<std::size_t>(r * s.k + k)]) *
                                  rt::f16_to_f32(weight[static_cast<std::size_t>(o * s.k + k)]);
      }
      outcome.order_shows += strict::output_bits(reversed) != expected[e] ? 1u : 0u;
    }
  }
  return outcome;
}

}  // namespace

TEST_CASE("cuda strict output_bits writes NaN as 0x7E00 and every other value as f32_to_f16",
          "[cuda][arith]") {
  std::mt19937 rng(0xBA5E);
  std::uniform_int_distribution<std::uint32_t> any;
  std::size_t nans = 0;
  for (int i = 0; i < 1'000'000; ++i) {
    // Half of them NaN (random payload and sign).
    std::uint32_t bits = any(rng);
    if (i % 2 == 0) bits |= 0x7F800001u;
    const float value = std::bit_cast<float>(bits);
    const std::uint16_t expected =
        std::isnan(value) ? rt::reference::kDenseLinearNanOutput : rt::f32_to_f16(value);
    nans += std::isnan(value) ? 1u : 0u;
    REQUIRE(strict::output_bits(value) == expected);
  }
  CHECK(nans >= 500'000);
}

TEST_CASE(
    "cuda strict accumulate (one fmaf) equals the reference's rounded multiply then add for f16 "
    "operands",
    "[cuda][arith]") {
  // The bit-exact argument: an f16 x f16 product is exact in f32, so fmaf rounds once where the
  // reference rounds the exact product (no change) and then the sum.
  std::mt19937 rng(0xF00D);
  std::uniform_int_distribution<std::uint32_t> any_f16(0, 0xFFFF);
  std::normal_distribution<float> gaussian(0.0f, 64.0f);
  std::size_t differing = 0;
  for (int i = 0; i < 2'000'000; ++i) {
    const float a = rt::f16_to_f32(static_cast<std::uint16_t>(any_f16(rng)));
    const float w = rt::f16_to_f32(static_cast<std::uint16_t>(any_f16(rng)));
    // Accumulators: running-sum sizes, exact f16 values, zeros of both signs.
    const float acc = i % 3 == 0   ? gaussian(rng)
                      : i % 3 == 1 ? rt::f16_to_f32(static_cast<std::uint16_t>(any_f16(rng)))
                                   : (i % 2 == 0 ? 0.0f : -0.0f);
    const float product = a * w;  // -ffp-contract=off: rounded, then added
    const float expected = acc + product;
    const float actual = strict::accumulate(acc, a, w);
    const bool same =
        bits_of(actual) == bits_of(expected) || (std::isnan(actual) && std::isnan(expected));
    differing += same ? 0u : 1u;
  }
  CHECK(differing == 0);
}

TEST_CASE("cuda decode kernel's tile walk equals the reference kernel on shapes with odd tails",
          "[cuda][arith][kernel]") {
  const auto emulate = [](const std::uint16_t* in, const std::uint16_t* w, std::uint16_t* out,
                          const Shape& s) {
    strict::host_emulate_decode(in, w, out, static_cast<int>(s.rows), s.k, s.out);
  };
  std::uint32_t seed = 1;
  std::size_t cases = 0;
  std::size_t order_shows = 0;
  for (const long rows : {1L, 3L, 8L}) {
    for (const long k : {1L, 7L, 127L, 128L, 129L, 300L, 1031L}) {
      for (const long out : {1L, 31L, 33L, 70L}) {
        INFO("rows " << rows << " k " << k << " out " << out << " seed " << seed);
        const Outcome outcome = run_shape({rows, k, out}, seed++, emulate);
        CHECK(outcome.differing == 0);
        order_shows += outcome.order_shows;
        ++cases;
      }
    }
  }
  CHECK(cases == 84);
  INFO("outputs where k descending differs from k ascending: " << order_shows);
  CHECK(order_shows > 100);
}

TEST_CASE(
    "cuda tiled kernel's tile walk and micro-tiles equal the reference kernel on shapes with odd "
    "tails",
    "[cuda][arith][kernel]") {
  const auto emulate = [](const std::uint16_t* in, const std::uint16_t* w, std::uint16_t* out,
                          const Shape& s) {
    strict::host_emulate_tiled(in, w, out, s.rows, s.k, s.out);
  };
  std::uint32_t seed = 1000;
  std::size_t cases = 0;
  std::size_t order_shows = 0;
  for (const long rows : {9L, 64L, 67L, 130L}) {
    for (const long k : {1L, 15L, 16L, 17L, 100L}) {
      for (const long out : {1L, 63L, 65L, 130L}) {
        INFO("rows " << rows << " k " << k << " out " << out << " seed " << seed);
        const Outcome outcome = run_shape({rows, k, out}, seed++, emulate);
        CHECK(outcome.differing == 0);
        order_shows += outcome.order_shows;
        ++cases;
      }
    }
  }
  CHECK(cases == 80);
  INFO("outputs where k descending differs from k ascending: " << order_shows);
  CHECK(order_shows > 100);
}
