// Integer options are decimal (commands.h: decimal_integers, decimal_range).
#include <fmt/format.h>

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

#include "commands.h"

namespace vtrace::cli {
namespace {

enum class Sign { kUnsigned, kSigned };

// Why `value` is not a decimal whole number of the given sign that fits 64 bits, or "" when it
// is one; then `value` is rewritten without its leading zeros ("010" -> "10", "-007" -> "-7") so
// that CLI11's own conversion, which reads a leading 0 as octal, 0x as hex and 0b as binary,
// sees plain decimal.
std::string make_decimal(std::string& value, Sign sign) {
  std::string_view digits = value;
  const bool negative = digits.starts_with('-');
  if (negative || digits.starts_with('+')) digits.remove_prefix(1);
  const bool all_digits =
      !digits.empty() && digits.find_first_not_of("0123456789") == std::string::npos;
  if (!all_digits) return fmt::format("`{}` is not a decimal whole number", value);
  if (negative && sign == Sign::kUnsigned)
    return fmt::format("{} is negative (expected 0 or more)", value);
  const auto first = digits.find_first_not_of('0');
  std::string canonical =
      std::string(negative ? "-" : "") +
      std::string(first == std::string_view::npos ? std::string_view("0") : digits.substr(first));
  // strtoull wraps or saturates what does not fit 64 bits without saying so; refuse it here.
  bool fits = false;
  if (sign == Sign::kUnsigned) {
    std::uint64_t parsed = 0;
    const auto [end, ec] =
        std::from_chars(canonical.data(), canonical.data() + canonical.size(), parsed);
    fits = ec == std::errc() && end == canonical.data() + canonical.size();
  } else {
    std::int64_t parsed = 0;
    const auto [end, ec] =
        std::from_chars(canonical.data(), canonical.data() + canonical.size(), parsed);
    fits = ec == std::errc() && end == canonical.data() + canonical.size();
  }
  if (!fits) return fmt::format("{} is out of range", value);
  if (canonical == "-0") canonical = "0";
  value = std::move(canonical);
  return {};
}

CLI::Validator decimal(Sign sign) {
  // No description, so that --help keeps showing the option's type alone (UINT, INT).
  return CLI::Validator([sign](std::string& value) { return make_decimal(value, sign); }, "",
                        "decimal");
}

}  // namespace

CLI::Validator decimal_range(std::int64_t low, std::int64_t high) {
  return CLI::Validator(
      [low, high](const std::string& text) -> std::string {
        std::string value = text;
        if (auto why = make_decimal(value, Sign::kSigned); !why.empty()) return why;
        std::int64_t parsed = 0;
        std::from_chars(value.data(), value.data() + value.size(), parsed);
        if (parsed < low || parsed > high) {
          return fmt::format("{} is not in {} to {}", text, low, high);
        }
        return {};
      },
      fmt::format("INT in [{} - {}]", low, high), "decimal_range");
}

void decimal_integers(CLI::App& app) {
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    decimal_integers(*sub);
  }
  for (CLI::Option* option : app.get_options()) {
    const std::string type = option->get_type_name();
    if (type.starts_with("UINT")) {
      option->transform(decimal(Sign::kUnsigned));
    } else if (type.starts_with("INT")) {
      option->transform(decimal(Sign::kSigned));
    }
  }
}

}  // namespace vtrace::cli
