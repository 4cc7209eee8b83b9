#include "white_space.h"

#include <array>

namespace vtrace::runtime::text {

namespace {

// The UTF-8 encodings of the White_Space code points above U+007F.
constexpr std::array<std::string_view, 16> kWideWhiteSpace = {
    "\xC2\x85",     "\xC2\xA0",     "\xE1\x9A\x80", "\xE2\x80\x80", "\xE2\x80\x81", "\xE2\x80\x82",
    "\xE2\x80\x83", "\xE2\x80\x84", "\xE2\x80\x85", "\xE2\x80\x86", "\xE2\x80\x87", "\xE2\x80\x88",
    "\xE2\x80\x89", "\xE2\x80\x8A", "\xE2\x80\xA8", "\xE2\x80\xA9"};
constexpr std::array<std::string_view, 3> kMoreWideWhiteSpace = {"\xE2\x80\xAF", "\xE2\x81\x9F",
                                                                 "\xE3\x80\x80"};

bool ascii_white_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

// The byte length of the White_Space code point `text` starts (or, `at_end`, ends) with; 0 when
// it has none there. UTF-8 lead bytes are never continuation bytes, so matching a whole
// encoding at the end cannot split a longer code point.
std::size_t white_space_length(std::string_view text, bool at_end) {
  if (text.empty()) return 0;
  if (ascii_white_space(at_end ? text.back() : text.front())) return 1;
  const auto matches = [&](std::string_view encoding) {
    return at_end ? text.ends_with(encoding) : text.starts_with(encoding);
  };
  for (const std::string_view encoding : kWideWhiteSpace) {
    if (matches(encoding)) return encoding.size();
  }
  for (const std::string_view encoding : kMoreWideWhiteSpace) {
    if (matches(encoding)) return encoding.size();
  }
  return 0;
}

}  // namespace

std::string_view trim_white_space(std::string_view text) {
  while (const std::size_t n = white_space_length(text, false)) text.remove_prefix(n);
  while (const std::size_t n = white_space_length(text, true)) text.remove_suffix(n);
  return text;
}

}  // namespace vtrace::runtime::text
