#include <catch2/catch.hpp>

#include <array>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "vtrace/replayer/readback_check.h"

using vtrace::replayer::CheckMode;
using vtrace::replayer::compare_readback;
using vtrace::replayer::parse_check_mode;
using vtrace::replayer::ulp_distance_16;
using vtrace::replayer::ulp_distance_32;
using vtrace::runtime::ElementType;

TEST_CASE("check modes parse bits, none and ulp:N and reject anything else", "[replayer]") {
  CHECK(parse_check_mode("bits") == CheckMode::bits());
  CHECK(parse_check_mode("none") == CheckMode::none());
  CHECK(parse_check_mode("ulp:3") == CheckMode::ulp(3));
  CHECK(parse_check_mode("ulp:3")->to_string() == "ulp:3");
  CHECK_FALSE(parse_check_mode("ulp:").has_value());
  CHECK_FALSE(parse_check_mode("ulp:-1").has_value());
  CHECK_FALSE(parse_check_mode("exact").has_value());
}

TEST_CASE("f16 ULP distance counts representable steps across zero", "[replayer]") {
  CHECK(ulp_distance_16(0x3C00, 0x3C01, false) == 1u);  // 1.0 and the next f16
  CHECK(ulp_distance_16(0x0000, 0x8000, false) == 0u);  // +0 and -0
  CHECK(ulp_distance_16(0x0001, 0x8001, false) == 2u);  // +/- smallest subnormal
  CHECK(ulp_distance_16(0x7BFF, 0x7C00, false) == 1u);  // max finite and +inf
  CHECK(ulp_distance_16(0xBC00, 0x3C00, false) == 2u * 0x3C00u);
}

TEST_CASE("NaN matches NaN only, whatever the payload", "[replayer]") {
  CHECK(ulp_distance_16(0x7E00, 0xFE01, false) == 0u);
  CHECK_FALSE(ulp_distance_16(0x7E00, 0x3C00, false).has_value());
  CHECK_FALSE(ulp_distance_16(0x7C00, 0x7E00, false).has_value());  // inf is not NaN
  CHECK(ulp_distance_32(0x7FC00000u, 0x7FC00001u) == 0u);
  CHECK_FALSE(ulp_distance_32(0x7FC00000u, 0x3F800000u).has_value());
  CHECK(ulp_distance_32(0x3F800000u, 0x3F800002u) == 2u);
  // The smallest mantissa payload is a NaN too, and an infinity is not one in either place.
  CHECK(ulp_distance_16(0x7C01, 0x7E00, false) == 0u);
  CHECK_FALSE(ulp_distance_32(0x7F800000u, 0x7FC00000u).has_value());
  CHECK_FALSE(ulp_distance_32(0x7FC00000u, 0x7F800000u).has_value());
  const std::array<std::uint8_t, 2> quiet = {0x00, 0x7E}, signalling = {0x01, 0x7C};
  CHECK_FALSE(compare_readback(quiet, signalling, ElementType::kF16, CheckMode::ulp(0)));
}

TEST_CASE("max_ulp is the largest distance over every element, accepted ones included",
          "[replayer]") {
  // ulp:1: element 0 is accepted (1 ULP) before the mismatch at element 1 (NaN against 1.0).
  const std::array<std::uint8_t, 4> expected = {0x00, 0x3C, 0x00, 0x7E};
  const std::array<std::uint8_t, 4> before = {0x01, 0x3C, 0x00, 0x3C};
  auto d = compare_readback(expected, before, ElementType::kF16, CheckMode::ulp(1));
  REQUIRE(d.has_value());
  CHECK(d->first_element == 1);
  CHECK(d->differing_elements == 1);
  CHECK(d->max_ulp == 1u);
  // ... and after it.
  const std::array<std::uint8_t, 4> nan_first = {0x00, 0x7E, 0x00, 0x3C};
  const std::array<std::uint8_t, 4> after = {0x00, 0x3C, 0x01, 0x3C};
  d = compare_readback(nan_first, after, ElementType::kF16, CheckMode::ulp(1));
  REQUIRE(d.has_value());
  CHECK(d->first_element == 0);
  CHECK(d->max_ulp == 1u);
}

TEST_CASE("ulp:N accepts f16 readbacks within N ULP and bits does not", "[replayer]") {
  const std::array<std::uint8_t, 4> expected = {0x00, 0x3C, 0x00, 0x40};  // [1.0, 2.0]
  const std::array<std::uint8_t, 4> actual = {0x01, 0x3C, 0x00, 0x40};    // [1.0 + 1 ULP, 2.0]
  CHECK_FALSE(compare_readback(expected, actual, ElementType::kF16, CheckMode::ulp(1)));
  CHECK_FALSE(compare_readback(expected, actual, ElementType::kF16, CheckMode::none()));
  auto bits = compare_readback(expected, actual, ElementType::kF16, CheckMode::bits());
  REQUIRE(bits.has_value());
  CHECK(bits->first_element == 0);
  CHECK(bits->differing_elements == 1);
  CHECK(bits->ulp == 1u);
  CHECK(compare_readback(expected, actual, ElementType::kF16, CheckMode::ulp(0)).has_value());
}

TEST_CASE("ulp:N compares integer readbacks bit for bit", "[replayer]") {
  const std::array<std::uint8_t, 2> expected = {1, 2};
  const std::array<std::uint8_t, 2> actual = {1, 3};
  auto d = compare_readback(expected, actual, ElementType::kU8, CheckMode::ulp(100));
  REQUIRE(d.has_value());
  CHECK(d->first_element == 1);
}

TEST_CASE("a readback of another length is a mismatch", "[replayer]") {
  const std::array<std::uint8_t, 2> expected = {1, 2};
  const std::array<std::uint8_t, 1> actual = {1};
  const auto d = compare_readback(expected, actual, ElementType::kU8, CheckMode::ulp(5));
  REQUIRE(d.has_value());
  CHECK(d->summary() == "1 element(s) differ; first at element 0: expected 2 bytes, got 1 bytes");
}

TEST_CASE("a mismatch says NaN against a number only when one side is a NaN of a float type",
          "[replayer]") {
  const auto says_nan = [](const std::optional<vtrace::replayer::ReadbackDifference>& d) {
    REQUIRE(d.has_value());
    INFO(d->summary());
    return d->summary().find("NaN") != std::string::npos;
  };
  // Integers: an i32 and a u8 element differ, no NaN anywhere.
  const std::array<std::uint8_t, 4> two = {0x02, 0, 0, 0};
  const std::array<std::uint8_t, 4> three = {0x03, 0, 0, 0};
  for (const auto mode : {CheckMode::bits(), CheckMode::ulp(4)}) {
    const auto i32 = compare_readback(two, three, ElementType::kI32, mode);
    CHECK_FALSE(says_nan(i32));
    CHECK(i32->summary().ends_with("expected 0x02, got 0x03"));
    CHECK_FALSE(says_nan(compare_readback(two, three, ElementType::kU8, mode)));
  }
  // A length difference.
  const std::array<std::uint8_t, 2> short_one = {0x02, 0};
  const auto length = compare_readback(two, short_one, ElementType::kF16, CheckMode::bits());
  CHECK_FALSE(says_nan(length));
  CHECK(length->summary().ends_with("expected 4 bytes, got 2 bytes"));
  // A region that is not whole elements is compared byte by byte.
  const std::array<std::uint8_t, 3> odd_e = {0x00, 0x7E, 0x01};
  const std::array<std::uint8_t, 3> odd_a = {0x00, 0x3C, 0x01};
  CHECK_FALSE(says_nan(compare_readback(odd_e, odd_a, ElementType::kF16, CheckMode::bits())));
  // Floats: a finite difference has its ULP; a NaN against a number says so, either way round.
  const std::array<std::uint8_t, 2> one = {0x00, 0x3C}, nan = {0x00, 0x7E}, next = {0x01, 0x3C};
  const auto finite = compare_readback(one, next, ElementType::kF16, CheckMode::bits());
  CHECK_FALSE(says_nan(finite));
  CHECK(finite->summary().ends_with("(1 ULP; max 1 ULP)"));
  for (const auto& [e, a] : {std::pair{one, nan}, std::pair{nan, one}}) {
    const auto d = compare_readback(e, a, ElementType::kF16, CheckMode::bits());
    CHECK(says_nan(d));
    CHECK(d->summary().ends_with("(NaN against a number)"));
  }
  const std::array<std::uint8_t, 4> f32_nan = {0x00, 0x00, 0xC0, 0x7F};
  const std::array<std::uint8_t, 4> f32_one = {0x00, 0x00, 0x80, 0x3F};
  CHECK(says_nan(compare_readback(f32_nan, f32_one, ElementType::kF32, CheckMode::ulp(9))));
}

TEST_CASE("ulp:N accepts an infinity against the same infinity only", "[replayer]") {
  const std::array<std::uint8_t, 2> max = {0xFF, 0x7B}, inf = {0x00, 0x7C};
  CHECK_FALSE(compare_readback(inf, inf, ElementType::kF16, CheckMode::ulp(0)));
  const auto d = compare_readback(max, inf, ElementType::kF16, CheckMode::ulp(1));
  REQUIRE(d.has_value());
  CHECK_FALSE(d->ulp.has_value());
  CHECK(d->summary().ends_with("(an infinity against a finite number)"));
}
