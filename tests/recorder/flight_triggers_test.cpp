// The flight recorder's trigger predicates on their own (recorder/src/flight_recorder.h): the
// first non-finite element of a readback, over every f16 and bf16 pattern and the f32 classes,
// at every position; and the counters a threshold can name.
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "flight_recorder.h"

namespace rt = vtrace::runtime;
using vtrace::recorder::detail::counter_value;
using vtrace::recorder::detail::first_non_finite;

namespace {

// `count` little-endian elements of `width` bytes, all `fill` but `at`, which is `value`.
std::vector<std::uint8_t> elements(std::size_t width, std::size_t count, std::uint32_t fill,
                                   std::size_t at, std::uint32_t value) {
  std::vector<std::uint8_t> bytes(width * count);
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint32_t v = i == at ? value : fill;
    for (std::size_t b = 0; b < width; ++b) bytes[i * width + b] = static_cast<std::uint8_t>(v >> (8 * b));
  }
  return bytes;
}

}  // namespace

TEST_CASE("flight trigger: every f16 and bf16 pattern is non-finite exactly when its exponent is "
          "all ones, found at its position") {
  struct Type {
    rt::ElementType type;
    std::uint32_t exponent;  // the exponent field's mask
    std::uint32_t one;       // 1.0
  };
  for (const Type t : {Type{rt::ElementType::kF16, 0x7c00u, 0x3c00u},
                       Type{rt::ElementType::kBf16, 0x7f80u, 0x3f80u}}) {
    INFO("type " << rt::element_type_name(t.type));
    std::size_t non_finite = 0;
    for (std::uint32_t v = 0; v <= 0xffffu; ++v) {
      const bool expected = (v & t.exponent) == t.exponent;
      non_finite += expected ? 1 : 0;
      // Alone, then third of five finite values.
      const auto alone = first_non_finite(elements(2, 1, 0, 0, v), t.type);
      const auto third = first_non_finite(elements(2, 5, t.one, 2, v), t.type);
      if (alone.has_value() != expected || third != (expected ? std::optional<std::uint64_t>(2)
                                                              : std::nullopt)) {
        FAIL("pattern " << v);
      }
    }
    CHECK(non_finite == 2 * (t.type == rt::ElementType::kF16 ? 1024u : 128u));  // +-Inf and NaNs
    // At the first and the last element; the first of two.
    CHECK(first_non_finite(elements(2, 4, t.one, 0, t.exponent), t.type) == 0u);
    CHECK(first_non_finite(elements(2, 4, t.one, 3, t.exponent | 1u), t.type) == 3u);
    auto two = elements(2, 4, t.one, 1, t.exponent);
    two[6] = static_cast<std::uint8_t>(t.exponent);
    two[7] = static_cast<std::uint8_t>(t.exponent >> 8);
    CHECK(first_non_finite(two, t.type) == 1u);
    // A trailing odd byte is not an element.
    auto odd = elements(2, 2, t.one, 9, 0);
    odd.push_back(0xff);
    CHECK_FALSE(first_non_finite(odd, t.type).has_value());
  }
}

TEST_CASE("flight trigger: f32 non-finite values are found, and finite ones never") {
  const auto f32 = [](float x) { return std::bit_cast<std::uint32_t>(x); };
  const std::uint32_t one = f32(1.0f);
  for (const std::uint32_t v : {0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f800001u, 0xffffffffu,
                                0x7fbfffffu}) {
    INFO("pattern " << v);
    CHECK(first_non_finite(elements(4, 3, one, 0, v), rt::ElementType::kF32) == 0u);
    CHECK(first_non_finite(elements(4, 3, one, 2, v), rt::ElementType::kF32) == 2u);
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 100000; ++i) {
    const std::uint32_t v = static_cast<std::uint32_t>(rng());
    const bool expected = !std::isfinite(std::bit_cast<float>(v));
    if (first_non_finite(elements(4, 2, one, 1, v), rt::ElementType::kF32).has_value() != expected) {
      FAIL("pattern " << v);
    }
  }
  for (const float x : {0.0f, -0.0f, 1e-45f, 3.4028235e38f, -3.4028235e38f}) {
    CHECK_FALSE(first_non_finite(elements(4, 1, 0, 0, f32(x)), rt::ElementType::kF32).has_value());
  }
}

TEST_CASE("flight trigger: types without NaN or Inf never trigger") {
  const std::vector<std::uint8_t> ones(16, 0xff);
  for (const auto type : {rt::ElementType::kU8, rt::ElementType::kI8, rt::ElementType::kU32,
                          rt::ElementType::kI32, rt::ElementType::kBool}) {
    CHECK_FALSE(first_non_finite(ones, type).has_value());
  }
}

TEST_CASE("flight trigger: a counter threshold can name each counter of spec 7.6, and no other") {
  const rt::CounterSnapshot c{1, 2, 3, 4, 5, 6, 7};
  CHECK(counter_value(c, "allocations") == 1u);
  CHECK(counter_value(c, "live_allocations") == 2u);
  CHECK(counter_value(c, "submissions") == 3u);
  CHECK(counter_value(c, "commands") == 4u);
  CHECK(counter_value(c, "uploaded_bytes") == 5u);
  CHECK(counter_value(c, "dense_linear_launches") == 6u);
  CHECK(counter_value(c, "readback_bytes") == 7u);
  CHECK_FALSE(counter_value(c, "readbacks").has_value());
  CHECK_FALSE(counter_value(c, "").has_value());
}
