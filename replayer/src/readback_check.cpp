#include "vtrace/replayer/readback_check.h"

#include <fmt/format.h>

#include <bit>
#include <charconv>
#include <cmath>

#include "vtrace/runtime/f16.h"

namespace vtrace::replayer {

namespace rt = vtrace::runtime;

std::string CheckMode::to_string() const {
  switch (kind) {
    case Kind::kBits:
      return "bits";
    case Kind::kNone:
      return "none";
    case Kind::kUlp:
      return fmt::format("ulp:{}", max_ulp);
  }
  return "bits";
}

std::optional<CheckMode> parse_check_mode(std::string_view text) {
  if (text == "bits") return CheckMode::bits();
  if (text == "none") return CheckMode::none();
  if (text.starts_with("ulp:")) {
    const auto digits = text.substr(4);
    std::uint64_t n = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    if (ec == std::errc() && end == digits.data() + digits.size() && !digits.empty()) {
      return CheckMode::ulp(n);
    }
  }
  return std::nullopt;
}

namespace {

// Position on the number line of a sign-magnitude pattern: -0 and +0 both map to 0.
std::int64_t position(std::uint64_t bits, unsigned width) {
  const std::uint64_t sign = 1ull << (width - 1);
  const auto magnitude = static_cast<std::int64_t>(bits & (sign - 1));
  return (bits & sign) ? -magnitude : magnitude;
}

std::uint64_t distance(std::int64_t a, std::int64_t b) {
  return a > b ? static_cast<std::uint64_t>(a - b) : static_cast<std::uint64_t>(b - a);
}

bool is_nan_16(std::uint16_t v, bool bf16) {
  return bf16 ? ((v & 0x7F80u) == 0x7F80u && (v & 0x7Fu) != 0)
              : ((v & 0x7C00u) == 0x7C00u && (v & 0x3FFu) != 0);
}

// NaN or infinity (every exponent bit set) of a `width`-byte floating element.
bool non_finite(std::uint64_t v, std::size_t width, bool bf16) {
  if (width == 4) return (v & 0x7F800000u) == 0x7F800000u;
  return bf16 ? (v & 0x7F80u) == 0x7F80u : (v & 0x7C00u) == 0x7C00u;
}

// Why two different floating elements have no ULP distance under the rules above (NaN against a
// number, an infinity against another value); empty when they have one.
std::string not_comparable(std::uint64_t e, std::uint64_t a, std::size_t width, bool bf16) {
  const bool special_e = non_finite(e, width, bf16);
  const bool special_a = non_finite(a, width, bf16);
  if (!special_e && !special_a) return {};
  const bool nan_e = width == 4 ? (e & 0x7FFFFFu) != 0 && special_e
                                : is_nan_16(static_cast<std::uint16_t>(e), bf16);
  const bool nan_a = width == 4 ? (a & 0x7FFFFFu) != 0 && special_a
                                : is_nan_16(static_cast<std::uint16_t>(a), bf16);
  if (nan_e && nan_a) return {};  // NaN matches NaN: 0 ULP
  if (nan_e || nan_a) return "NaN against a number";
  if (special_e && special_a) return "+inf against -inf";  // different bits: opposite signs
  return "an infinity against a finite number";
}

std::uint64_t load(std::span<const std::uint8_t> bytes, std::size_t index, std::size_t width) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < width; ++i) {
    v |= static_cast<std::uint64_t>(bytes[index * width + i]) << (8 * i);
  }
  return v;
}

std::string show(std::uint64_t bits, rt::ElementType type) {
  switch (type) {
    case rt::ElementType::kF16:
      return fmt::format("0x{:04x} ({})", bits, rt::f16_to_f32(static_cast<std::uint16_t>(bits)));
    case rt::ElementType::kBf16:
      return fmt::format("0x{:04x} ({})", bits,
                         std::bit_cast<float>(static_cast<std::uint32_t>(bits << 16)));
    case rt::ElementType::kF32:
      return fmt::format("0x{:08x} ({})", bits,
                         std::bit_cast<float>(static_cast<std::uint32_t>(bits)));
    default:
      return fmt::format("0x{:02x}", bits);
  }
}

}  // namespace

std::optional<std::uint64_t> ulp_distance_16(std::uint16_t a, std::uint16_t b, bool bf16) {
  const bool nan_a = is_nan_16(a, bf16);
  const bool nan_b = is_nan_16(b, bf16);
  if (nan_a || nan_b) return nan_a && nan_b ? std::optional<std::uint64_t>(0) : std::nullopt;
  return distance(position(a, 16), position(b, 16));
}

std::optional<std::uint64_t> ulp_distance_32(std::uint32_t a, std::uint32_t b) {
  const bool nan_a = (a & 0x7F800000u) == 0x7F800000u && (a & 0x7FFFFFu) != 0;
  const bool nan_b = (b & 0x7F800000u) == 0x7F800000u && (b & 0x7FFFFFu) != 0;
  if (nan_a || nan_b) return nan_a && nan_b ? std::optional<std::uint64_t>(0) : std::nullopt;
  return distance(position(a, 32), position(b, 32));
}

std::string ReadbackDifference::summary() const {
  std::string text = fmt::format("{} element(s) differ; first at element {}: expected {}, got {}",
                                 differing_elements, first_element, expected, actual);
  if (ulp) {
    text += fmt::format(" ({} ULP; max {} ULP)", *ulp, max_ulp);
  } else if (!why_not_comparable.empty()) {
    text += fmt::format(" ({})", why_not_comparable);
  }
  return text;
}

std::optional<ReadbackDifference> compare_readback(std::span<const std::uint8_t> expected,
                                                   std::span<const std::uint8_t> actual,
                                                   rt::ElementType type, CheckMode mode) {
  if (mode.kind == CheckMode::Kind::kNone) return std::nullopt;
  if (expected.size() != actual.size()) {
    ReadbackDifference d;
    d.differing_elements = 1;
    d.expected = fmt::format("{} bytes", expected.size());
    d.actual = fmt::format("{} bytes", actual.size());
    return d;
  }
  const bool floating = type == rt::ElementType::kF16 || type == rt::ElementType::kBf16 ||
                        type == rt::ElementType::kF32;
  const bool by_ulp = mode.kind == CheckMode::Kind::kUlp && floating;
  // Bits mode compares bytes of any type, but reports elements when the width divides the size.
  std::size_t width = static_cast<std::size_t>(rt::element_size_bytes(type));
  if (width == 0 || expected.size() % width != 0) width = 1;
  const std::size_t count = expected.size() / width;

  std::optional<ReadbackDifference> d;
  // Over all elements, those accepted under ulp:N before the first mismatch included.
  std::uint64_t max_ulp = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t e = load(expected, i, width);
    const std::uint64_t a = load(actual, i, width);
    if (e == a) continue;
    std::optional<std::uint64_t> ulp;
    std::string why;
    if ((width == 2 || width == 4) && floating) {
      // An infinity matches the same infinity only (not the largest finite value 1 ULP away).
      why = not_comparable(e, a, width, type == rt::ElementType::kBf16);
      if (why.empty()) {
        ulp = width == 2
                  ? ulp_distance_16(static_cast<std::uint16_t>(e), static_cast<std::uint16_t>(a),
                                    type == rt::ElementType::kBf16)
                  : ulp_distance_32(static_cast<std::uint32_t>(e), static_cast<std::uint32_t>(a));
      }
    }
    if (ulp) max_ulp = std::max(max_ulp, *ulp);
    if (by_ulp && ulp && *ulp <= mode.max_ulp) continue;
    if (!d) {
      d.emplace();
      d->first_element = i;
      d->expected = show(e, width == 1 ? rt::ElementType::kU8 : type);
      d->actual = show(a, width == 1 ? rt::ElementType::kU8 : type);
      d->ulp = ulp;
      d->why_not_comparable = why;
    }
    ++d->differing_elements;
  }
  if (d) d->max_ulp = max_ulp;
  return d;
}

}  // namespace vtrace::replayer
