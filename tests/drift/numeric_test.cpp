// The numeric classes and statistics of vtrace/drift/numeric.h: each class and each agreement
// rule with two answers that differ in exactly that way, the statistics on a worked example, and
// every f16 pattern against its neighbour.
#include "vtrace/drift/numeric.h"

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <limits>
#include <cmath>
#include <cstring>
#include <vector>

#include "vtrace/replayer/readback_check.h"
#include "vtrace/runtime/f16.h"

namespace dr = vtrace::drift;
namespace rt = vtrace::runtime;
using Bytes = std::vector<std::uint8_t>;

namespace {

Bytes f16(const std::vector<std::uint16_t>& bits) {
  Bytes out(bits.size() * 2);
  std::memcpy(out.data(), bits.data(), out.size());
  return out;
}
Bytes f16_values(const std::vector<float>& values) {
  std::vector<std::uint16_t> bits;
  for (float v : values) bits.push_back(rt::f32_to_f16(v));
  return f16(bits);
}
Bytes f32(const std::vector<float>& values) {
  Bytes out(values.size() * 4);
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}
dr::DriftCheck check(const char* text) {
  auto c = dr::parse_drift_check(text);
  REQUIRE(c.has_value());
  return *c;
}
dr::NumericComparison cmp(const Bytes& e, const Bytes& a, const char* mode,
                          rt::ElementType t = rt::ElementType::kF16) {
  return dr::compare_values(e, a, t, check(mode));
}

}  // namespace

TEST_CASE("check modes parse, print, and tol has torch's f16 defaults", "[drift]") {
  CHECK(check("bits").kind == dr::DriftCheck::Kind::kBits);
  CHECK(check("ulp:3").max_ulp == 3);
  const auto tol = check("tol");
  CHECK(tol.kind == dr::DriftCheck::Kind::kTolerance);
  CHECK(tol.atol == 1e-5);
  CHECK(tol.rtol == 1e-3);
  const auto custom = check("tol:0.5,0.25");
  CHECK(custom.atol == 0.5);
  CHECK(custom.rtol == 0.25);
  CHECK(check("ulp:2").to_string() == "ulp:2");
  CHECK(check("tol:0.5,0.25").to_string() == "tol:0.5,0.25");
  for (const char* bad : {"", "ulp", "ulp:", "ulp:-1", "ulp:x", "tol:", "tol:1", "tol:1,",
                          "tol:-1,0", "tol:1,nan", "tol:inf,0", "tol:0,inf", "bit", "none"}) {
    INFO(bad);
    CHECK_FALSE(dr::parse_drift_check(bad).has_value());
  }
}

TEST_CASE("identical answers are bitwise and agree under every mode", "[drift]") {
  const auto a = f16_values({1.0f, -2.5f, 0.0f});
  for (const char* mode : {"bits", "ulp:0", "tol"}) {
    const auto c = cmp(a, a, mode);
    CHECK(c.cls == dr::DriftClass::kBitwise);
    CHECK(c.agrees);
    CHECK(c.stats.differing == 0);
    CHECK(c.stats.ulp_histogram[0] == 3);
  }
}

TEST_CASE("+0 and -0 are 0 ULP and 0 apart: not bitwise, but equal values", "[drift]") {
  const auto c = cmp(f16({0x3c00, 0x0000}), f16({0x3c00, 0x8000}), "bits");
  CHECK(c.cls == dr::DriftClass::kWithin1Ulp);
  CHECK_FALSE(c.agrees);
  // Their bits differ: a differing element (the one bits disagrees on), with no error.
  CHECK(c.stats.differing == 1);
  CHECK(c.stats.first_differing == std::optional<std::uint64_t>(1));
  CHECK(c.stats.max_ulp == 0);
  CHECK(c.stats.max_abs_error == 0);
  CHECK(c.stats.ulp_histogram[0] == 2);
  CHECK(c.stats.magnitude_histogram[0] == 1);  // |e| = 0: < 1e-4
  CHECK(cmp(f16({0x0000}), f16({0x8000}), "ulp:0").agrees);
  CHECK(cmp(f16({0x0000}), f16({0x8000}), "tol").agrees);
}

TEST_CASE("one ULP apart is within_1_ulp, ulp:N agrees up to N", "[drift]") {
  const auto e = f16({0x3c00});  // 1.0
  const auto a = f16({0x3c01});  // the next f16
  const auto c = cmp(e, a, "bits");
  CHECK(c.cls == dr::DriftClass::kWithin1Ulp);
  CHECK_FALSE(c.agrees);
  CHECK(c.stats.max_ulp == 1);
  CHECK(c.stats.ulp_histogram[1] == 1);
  CHECK(cmp(e, a, "ulp:1").agrees);
  CHECK_FALSE(cmp(e, a, "ulp:0").agrees);
  CHECK_FALSE(cmp(e, f16({0x3c02}), "ulp:1").agrees);
  CHECK(cmp(e, f16({0x3c02}), "ulp:2").agrees);
}

TEST_CASE("each ULP bucket and each magnitude decade takes exactly its own elements", "[drift]") {
  // ULP distances on both sides of every bucket edge (kUlpBuckets: 0, 1, 2-3, 4-15, 16-255, 256+).
  std::vector<std::uint16_t> expected, actual;
  for (const int d : {0, 1, 2, 3, 4, 15, 16, 255, 256}) {
    expected.push_back(0x3c00);  // 1.0
    actual.push_back(static_cast<std::uint16_t>(0x3c00 + d));
  }
  const auto u = cmp(f16(expected), f16(actual), "bits");
  CHECK(u.stats.ulp_histogram == std::array<std::uint64_t, 7>{1, 1, 2, 2, 2, 1, 0});
  CHECK(u.stats.max_ulp == 256);
  // One differing element per decade of the baseline's value (kMagnitudeBuckets), each one ULP
  // off: 5e-5, 5e-4, 5e-3, 5e-2, 0.5, 5.
  std::vector<std::uint16_t> decades, next;
  for (const float v : {5e-5f, 5e-4f, 5e-3f, 5e-2f, 0.5f, 5.0f}) {
    decades.push_back(rt::f32_to_f16(v));
    next.push_back(static_cast<std::uint16_t>(decades.back() + 1));  // the next f16 up
  }
  const auto m = cmp(f16(decades), f16(next), "bits");
  CHECK(m.stats.differing == 6);
  CHECK(m.stats.magnitude_histogram == std::array<std::uint64_t, 7>{1, 1, 1, 1, 1, 1, 0});
}

TEST_CASE("within the tolerance but more than 1 ULP is within_tolerance, beyond it is drift",
          "[drift]") {
  // 1000 and the f16 two steps above it (0.5 apart each): |a - e| = 1 <= 1e-5 + 1e-3 * 1000.
  const auto e = f16({0x63d0});
  const auto near = f16({0x63d2});
  const auto c = cmp(e, near, "tol");
  CHECK(c.cls == dr::DriftClass::kWithinTolerance);
  CHECK(c.agrees);
  CHECK(c.stats.max_ulp == 2);
  CHECK_FALSE(cmp(e, near, "bits").agrees);
  CHECK_FALSE(cmp(e, near, "ulp:1").agrees);
  // Three steps (1.5 apart) is beyond 1e-5 + 1.0: drift, and tol disagrees.
  const auto far = cmp(e, f16({0x63d3}), "tol");
  CHECK(far.cls == dr::DriftClass::kDrift);
  CHECK_FALSE(far.agrees);
  // A custom tolerance moves the line.
  CHECK(cmp(e, f16({0x63d6}), "tol:3,0").agrees);
  CHECK_FALSE(cmp(e, f16({0x63d6}), "tol:2.9,0").agrees);
  // rtol scales the baseline's magnitude, not the answer's: e = 1, a = 2 is 1 apart, more than
  // 0.5 * |e| (though not more than 0.5 * |a|).
  const auto relative = cmp(f16({0x3c00}), f16({0x4000}), "tol:0,0.5");
  CHECK(relative.cls == dr::DriftClass::kDrift);
  CHECK_FALSE(relative.agrees);
  CHECK(cmp(f16({0x3c00}), f16({0x4000}), "tol:0,1").agrees);
}

TEST_CASE("NaN matches NaN only, a NaN or infinity that appears or vanishes is nan_inf",
          "[drift]") {
  // Two NaNs with different payloads and signs: equal under every non-bits mode.
  const auto nans = cmp(f16({0x7e00}), f16({0xfe01}), "ulp:0");
  CHECK(nans.agrees);
  CHECK(nans.stats.differing == 1);  // bits differ, values do not
  CHECK(nans.stats.max_ulp == 0);
  // Under bits they disagree, and the element that differs is named.
  const auto nan_bits = cmp(f16({0x3c00, 0x7e00}), f16({0x3c00, 0xfe01}), "bits");
  CHECK_FALSE(nan_bits.agrees);
  CHECK(nan_bits.stats.differing == 1);
  CHECK(nan_bits.stats.first_differing == std::optional<std::uint64_t>(1));
  CHECK(cmp(f16({0x7e00}), f16({0xfe01}), "tol").agrees);
  // NaN against a number, either way round, and an infinity against the largest finite value.
  for (const auto& [e, a] :
       std::vector<std::pair<std::uint16_t, std::uint16_t>>{{0x7e00, 0x3c00},
                                                            {0x3c00, 0x7e00},
                                                            {0x7c00, 0x7bff},
                                                            {0x7bff, 0x7c00},
                                                            {0x7c00, 0xfc00}}) {
    INFO(e << " vs " << a);
    for (const char* mode : {"bits", "ulp:100000", "tol:1e9,1e9"}) {
      const auto c = cmp(f16({e}), f16({a}), mode);
      CHECK(c.cls == dr::DriftClass::kNanInf);
      CHECK_FALSE(c.agrees);
      CHECK(c.stats.ulp_histogram[6] == 1);
      // The magnitude is the baseline's: 1.0 (0x3c00) and 65504 (0x7bff) are ">=1", a NaN or an
      // infinity "non_finite".
      const bool finite_baseline = e == 0x3c00 || e == 0x7bff;
      CHECK(c.stats.magnitude_histogram[finite_baseline ? 5 : 6] == 1);
    }
  }
  // The first differing element is the first, when NaNs vanish from several.
  const auto vanished = cmp(f16({0x7e00, 0x7e00}), f16({0x3c00, 0x3c00}), "bits");
  CHECK(vanished.stats.first_differing == std::optional<std::uint64_t>(0));
  CHECK(vanished.stats.differing == 2);
  // nan_inf is reported before drift when both occur.
  const auto both = cmp(f16({0x3c00, 0x7e00}), f16({0x4000, 0x3c00}), "bits");
  CHECK(both.cls == dr::DriftClass::kNanInf);
}

TEST_CASE("different lengths are structural", "[drift]") {
  const auto c = cmp(f16({0x3c00, 0x3c00}), f16({0x3c00}), "tol");
  CHECK(c.cls == dr::DriftClass::kStructural);
  CHECK_FALSE(c.agrees);
  CHECK(c.stats.elements == 2);  // the longer side's count
  CHECK(cmp(f16({0x3c00}), f16({0x3c00, 0x3c00}), "tol").stats.elements == 2);
  CHECK(dr::worst(dr::DriftClass::kDrift, dr::DriftClass::kStructural) ==
        dr::DriftClass::kStructural);
  CHECK(dr::worst(dr::DriftClass::kWithin1Ulp, dr::DriftClass::kBitwise) ==
        dr::DriftClass::kWithin1Ulp);
}

TEST_CASE("the statistics of a worked example", "[drift]") {
  // e = [1, 2, 0.001, 100], a = [1, 2.5, 0.0011, 100]: two differing elements.
  const auto e = f32({1.0f, 2.0f, 0.001f, 100.0f});
  const auto a = f32({1.0f, 2.5f, 0.0011f, 100.0f});
  const auto c = dr::compare_values(e, a, rt::ElementType::kF32, check("bits"));
  const auto& s = c.stats;
  CHECK(s.elements == 4);
  CHECK(s.differing == 2);
  REQUIRE(s.first_differing.has_value());
  CHECK(*s.first_differing == 1);
  CHECK(s.max_abs_error == Approx(0.5));
  CHECK(s.mean_abs_error == Approx((0.5 + (0.0011f - 0.001f)) / 4.0).epsilon(1e-6));
  CHECK(s.max_rel_error == Approx(0.25));  // |2.5 - 2| / 2 beats |0.0011 - 0.001| / 0.001
  CHECK(s.ulp_histogram[0] == 2);          // the equal elements
  CHECK(s.ulp_histogram[5] == 2);          // f32 steps near 2.5 and 0.0011: far over 255
  CHECK(s.magnitude_histogram[2] == 1);    // |e| = 0.001: < 1e-2
  CHECK(s.magnitude_histogram[5] == 1);    // |e| = 2: >= 1
  CHECK(c.cls == dr::DriftClass::kDrift);
  // The relative error is over the elements whose baseline is not zero: 0 against the smallest
  // subnormal counts in the absolute error only.
  const auto from_zero = cmp(f16({0x0000}), f16({0x0001}), "bits");
  CHECK(from_zero.stats.max_rel_error == 0.0);
  CHECK(from_zero.stats.max_abs_error > 0.0);
}

TEST_CASE("the mean absolute error is over the finite pairs only", "[drift]") {
  // e = [1, NaN, 2, inf], a = [1.5, 3, 2, inf]: the NaN pair and the infinite pair have no error
  // to average; the finite pairs are 0 and 2, with errors 0.5 and 0.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const auto c = dr::compare_values(f32({1.0f, nan, 2.0f, inf}), f32({1.5f, 3.0f, 2.0f, inf}),
                                    rt::ElementType::kF32, check("bits"));
  CHECK(c.stats.elements == 4);
  CHECK(c.stats.mean_abs_error == Approx(0.25));  // (0.5 + 0) / 2, not / 4
  CHECK(c.stats.max_abs_error == Approx(0.5));
}

TEST_CASE("bf16 and integer answers", "[drift]") {
  Bytes e(2), a(2);
  const std::uint16_t one = 0x3f80, next = 0x3f81;
  std::memcpy(e.data(), &one, 2);
  std::memcpy(a.data(), &next, 2);
  const auto b = dr::compare_values(e, a, rt::ElementType::kBf16, check("ulp:1"));
  CHECK(b.cls == dr::DriftClass::kWithin1Ulp);
  CHECK(b.agrees);
  const auto u =
      dr::compare_values(Bytes{1, 2, 3}, Bytes{1, 9, 3}, rt::ElementType::kU8, check("tol"));
  CHECK(u.cls == dr::DriftClass::kDrift);
  CHECK_FALSE(u.agrees);
  CHECK(u.stats.differing == 1);
  CHECK(dr::compare_values(Bytes{1, 2}, Bytes{1, 2}, rt::ElementType::kU8, check("bits")).cls ==
        dr::DriftClass::kBitwise);
}

TEST_CASE(
    "every finite f16 against the next pattern up is within_1_ulp, 1 ULP, and agrees under ulp:1",
    "[drift]") {
  std::uint64_t checked = 0;
  for (std::uint32_t p = 0; p <= 0xffff; ++p) {
    const auto bits = static_cast<std::uint16_t>(p);
    const float v = rt::f16_to_f32(bits);
    if (!std::isfinite(v)) continue;
    // The next value up: away from zero for positives, toward zero for negatives (-0 -> +0's
    // neighbour 0x0001 is one position up from -0).
    std::uint16_t up;
    if (bits == 0x8000) {
      up = 0x0001;
    } else if ((bits & 0x8000) != 0) {
      up = static_cast<std::uint16_t>(bits - 1);
    } else {
      up = static_cast<std::uint16_t>(bits + 1);
    }
    if (!std::isfinite(rt::f16_to_f32(up))) continue;  // +max's neighbour is +inf
    const auto c = cmp(f16({bits}), f16({up}), "ulp:1");
    if (c.cls != dr::DriftClass::kWithin1Ulp || !c.agrees || c.stats.max_ulp != 1) {
      FAIL_CHECK("pattern " << p);
    }
    ++checked;
  }
  // 65,536 patterns less 2,048 infinities and NaNs, less +max (its neighbour up is +inf).
  CHECK(checked == 63487);
}

TEST_CASE("compare's ulp:N and replay's ulp:N agree on NaN, infinities and signed zero",
          "[drift]") {
  // One rule for both (readback_check.h): an infinity agrees with the same infinity only, NaN
  // with NaN only, +0 with -0.
  const std::vector<std::pair<std::uint16_t, std::uint16_t>> pairs = {
      {0x7bff, 0x7c00}, {0x7c00, 0x7bff}, {0xfbff, 0xfc00}, {0x7c00, 0x7c00}, {0x7c00, 0xfc00},
      {0x0000, 0x8000}, {0x7e00, 0xfe01}, {0x7e00, 0x3c00}, {0x3c00, 0x3c01}, {0x3c00, 0x3c03}};
  for (const auto& [e, a] : pairs) {
    for (const std::uint64_t n : {0ull, 1ull, 2ull, 1000000ull}) {
      INFO(e << " vs " << a << " under ulp:" << n);
      const auto mode = fmt::format("ulp:{}", n);
      const bool compare_agrees = cmp(f16({e}), f16({a}), mode.c_str()).agrees;
      const bool replay_agrees =
          !vtrace::replayer::compare_readback(f16({e}), f16({a}), rt::ElementType::kF16,
                                              vtrace::replayer::CheckMode::ulp(n))
               .has_value();
      CHECK(compare_agrees == replay_agrees);
    }
  }
  CHECK_FALSE(cmp(f16({0x7bff}), f16({0x7c00}), "ulp:1").agrees);
}
