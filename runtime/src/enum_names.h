// Private helper: one table per enum gives both name() and parse(), so the two cannot drift.
#pragma once

#include <optional>
#include <string_view>
#include <utility>

namespace vtrace::runtime::detail {

template <typename Enum, std::size_t N>
std::string_view name_of(const std::pair<Enum, std::string_view> (&table)[N], Enum value) {
  for (const auto& [candidate, name] : table) {
    if (candidate == value) return name;
  }
  return "unknown";
}

template <typename Enum, std::size_t N>
std::optional<Enum> parse_name(const std::pair<Enum, std::string_view> (&table)[N],
                               std::string_view name) {
  for (const auto& [candidate, text] : table) {
    if (text == name) return candidate;
  }
  return std::nullopt;
}

}  // namespace vtrace::runtime::detail
