#include <catch2/catch.hpp>

#include <array>
#include <cstring>

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
  CHECK(compare_readback(expected, actual, ElementType::kU8, CheckMode::ulp(5)).has_value());
}
