// The numeric classes and statistics (numeric.h).
#include "vtrace/drift/numeric.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstring>

#include "vtrace/replayer/readback_check.h"
#include "vtrace/runtime/f16.h"

namespace vtrace::drift {

namespace rt = vtrace::runtime;

std::string DriftCheck::to_string() const {
  switch (kind) {
    case Kind::kBits:
      return "bits";
    case Kind::kUlp:
      return fmt::format("ulp:{}", max_ulp);
    case Kind::kTolerance:
      return fmt::format("tol:{},{}", atol, rtol);
  }
  return "bits";
}

namespace {
std::optional<double> parse_non_negative(std::string_view text) {
  double value = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || !(value >= 0) || !std::isfinite(value))
    return std::nullopt;
  return value;
}
}  // namespace

std::optional<DriftCheck> parse_drift_check(std::string_view text) {
  DriftCheck check;
  if (text == "bits") return check;
  if (text == "tol") {
    check.kind = DriftCheck::Kind::kTolerance;
    return check;
  }
  if (text.starts_with("ulp:")) {
    const auto digits = text.substr(4);
    std::uint64_t n = 0;
    const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    if (digits.empty() || ec != std::errc() || ptr != digits.data() + digits.size()) {
      return std::nullopt;
    }
    check.kind = DriftCheck::Kind::kUlp;
    check.max_ulp = n;
    return check;
  }
  if (text.starts_with("tol:")) {
    const auto rest = text.substr(4);
    const auto comma = rest.find(',');
    if (comma == std::string_view::npos) return std::nullopt;
    const auto atol = parse_non_negative(rest.substr(0, comma));
    const auto rtol = parse_non_negative(rest.substr(comma + 1));
    if (!atol || !rtol) return std::nullopt;
    check.kind = DriftCheck::Kind::kTolerance;
    check.atol = *atol;
    check.rtol = *rtol;
    return check;
  }
  return std::nullopt;
}

std::string_view drift_class_name(DriftClass c) {
  switch (c) {
    case DriftClass::kBitwise:
      return "bitwise";
    case DriftClass::kWithin1Ulp:
      return "within_1_ulp";
    case DriftClass::kWithinTolerance:
      return "within_tolerance";
    case DriftClass::kNanInf:
      return "nan_inf";
    case DriftClass::kDrift:
      return "drift";
    case DriftClass::kStructural:
      return "structural";
  }
  return "structural";
}

DriftClass worst(DriftClass a, DriftClass b) {
  return static_cast<std::uint8_t>(a) >= static_cast<std::uint8_t>(b) ? a : b;
}

namespace {

std::size_t ulp_bucket(std::uint64_t ulp) {
  if (ulp == 0) return 0;
  if (ulp == 1) return 1;
  if (ulp <= 3) return 2;
  if (ulp <= 15) return 3;
  if (ulp <= 255) return 4;
  return 5;
}

std::size_t magnitude_bucket(double e) {
  if (!std::isfinite(e)) return 6;
  const double m = std::fabs(e);
  if (m < 1e-4) return 0;
  if (m < 1e-3) return 1;
  if (m < 1e-2) return 2;
  if (m < 1e-1) return 3;
  if (m < 1) return 4;
  return 5;
}

// One floating element of a buffer: its value and its ULP distance to another.
struct Floats {
  rt::ElementType type;
  std::size_t width() const { return type == rt::ElementType::kF32 ? 4 : 2; }
  std::uint32_t bits(std::span<const std::uint8_t> b, std::size_t i) const {
    std::uint32_t v = 0;
    std::memcpy(&v, b.data() + i * width(), width());  // little-endian, as the contract
    return v;
  }
  double value(std::uint32_t bits) const {
    switch (type) {
      case rt::ElementType::kF16:
        return rt::f16_to_f32(static_cast<std::uint16_t>(bits));
      case rt::ElementType::kBf16: {
        const std::uint32_t wide = bits << 16;
        float f = 0;
        std::memcpy(&f, &wide, 4);
        return f;
      }
      default: {
        float f = 0;
        std::memcpy(&f, &bits, 4);
        return f;
      }
    }
  }
  std::optional<std::uint64_t> ulp(std::uint32_t a, std::uint32_t b) const {
    if (type == rt::ElementType::kF32) return replayer::ulp_distance_32(a, b);
    return replayer::ulp_distance_16(static_cast<std::uint16_t>(a), static_cast<std::uint16_t>(b),
                                     type == rt::ElementType::kBf16);
  }
};

bool floating(rt::ElementType t) {
  return t == rt::ElementType::kF16 || t == rt::ElementType::kBf16 || t == rt::ElementType::kF32;
}

}  // namespace

NumericComparison compare_values(std::span<const std::uint8_t> expected,
                                 std::span<const std::uint8_t> actual, rt::ElementType type,
                                 const DriftCheck& check) {
  NumericComparison out;
  const bool same_bytes = expected.size() == actual.size() &&
                          std::memcmp(expected.data(), actual.data(), expected.size()) == 0;
  const std::uint64_t width = std::max<std::uint64_t>(1, rt::element_size_bytes(type));
  if (expected.size() != actual.size() || expected.size() % width != 0) {
    out.cls = DriftClass::kStructural;
    out.agrees = false;
    out.stats.elements = std::max(expected.size(), actual.size()) / width;
    return out;
  }
  ElementStats& s = out.stats;
  s.elements = expected.size() / width;
  if (!floating(type)) {
    for (std::uint64_t i = 0; i < s.elements; ++i) {
      if (std::memcmp(expected.data() + i * width, actual.data() + i * width, width) != 0) {
        if (!s.first_differing) s.first_differing = i;
        ++s.differing;
      }
    }
    out.cls = same_bytes ? DriftClass::kBitwise : DriftClass::kDrift;
    out.agrees = same_bytes;
    return out;
  }
  const Floats f{type};
  bool non_finite_mismatch = false;
  bool all_within_tol = true;
  double sum_abs = 0;
  std::uint64_t finite_pairs = 0;  // the mean's denominator: pairs whose error is a number
  for (std::uint64_t i = 0; i < s.elements; ++i) {
    const std::uint32_t eb = f.bits(expected, i);
    const std::uint32_t ab = f.bits(actual, i);
    const double e = f.value(eb);
    const double a = f.value(ab);
    const auto ulp = f.ulp(eb, ab);
    if (std::isfinite(e) && std::isfinite(a)) ++finite_pairs;
    // NaN vs NaN agrees (ulp 0); NaN vs anything else has no distance; an infinity against
    // anything but itself is a non-finite mismatch too, whatever its position distance.
    const bool mismatch_non_finite = !ulp || ((std::isinf(e) || std::isinf(a)) && *ulp != 0);
    if (mismatch_non_finite) {
      non_finite_mismatch = true;
      all_within_tol = false;
      ++s.ulp_histogram[6];
      ++s.magnitude_histogram[magnitude_bucket(e)];  // by the baseline's value, as every element
      ++s.differing;
      if (!s.first_differing) s.first_differing = i;
      continue;
    }
    ++s.ulp_histogram[ulp_bucket(*ulp)];
    if (eb == ab) continue;
    // Bits differ: a differing element, even when the values are equal (+0 and -0, two NaNs).
    ++s.differing;
    if (!s.first_differing) s.first_differing = i;
    ++s.magnitude_histogram[magnitude_bucket(e)];
    if (*ulp == 0) continue;  // equal values: no error
    s.max_ulp = std::max(s.max_ulp, *ulp);
    const double abs = std::fabs(a - e);
    sum_abs += abs;
    s.max_abs_error = std::max(s.max_abs_error, abs);
    if (e != 0) s.max_rel_error = std::max(s.max_rel_error, abs / std::fabs(e));
    if (!(abs <= check.atol + check.rtol * std::fabs(e))) all_within_tol = false;
  }
  s.mean_abs_error = finite_pairs == 0 ? 0 : sum_abs / static_cast<double>(finite_pairs);
  if (same_bytes) {
    out.cls = DriftClass::kBitwise;
  } else if (non_finite_mismatch) {
    out.cls = DriftClass::kNanInf;
  } else if (s.max_ulp <= 1) {
    out.cls = DriftClass::kWithin1Ulp;
  } else if (all_within_tol) {
    out.cls = DriftClass::kWithinTolerance;
  } else {
    out.cls = DriftClass::kDrift;
  }
  switch (check.kind) {
    case DriftCheck::Kind::kBits:
      out.agrees = same_bytes;
      break;
    case DriftCheck::Kind::kUlp:
      out.agrees = !non_finite_mismatch && s.max_ulp <= check.max_ulp;
      break;
    case DriftCheck::Kind::kTolerance:
      out.agrees = !non_finite_mismatch && all_within_tol;
      break;
  }
  return out;
}

}  // namespace vtrace::drift
