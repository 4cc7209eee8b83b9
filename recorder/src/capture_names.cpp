#include "capture_names.h"

#include <fmt/format.h>

#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <system_error>

namespace vtrace::recorder::detail {

namespace {

std::mutex g_mu;
std::set<std::string> g_taken;  // under g_mu: normalized absolute paths

std::string key_of(const std::filesystem::path& path) {
  std::error_code ec;
  auto absolute = std::filesystem::absolute(path, ec);
  if (ec) absolute = path;
  return absolute.lexically_normal().string();
}

std::filesystem::path sibling(const std::filesystem::path& base, const std::string& suffix) {
  auto out = base;
  out.replace_filename(
      fmt::format("{}.{}{}", base.stem().string(), suffix, base.extension().string()));
  return out;
}

}  // namespace

std::filesystem::path take_capture_name(const std::filesystem::path& base) {
  const std::lock_guard lock(g_mu);
  for (std::uint64_t n = 1;; ++n) {
    auto candidate = n == 1 ? base : sibling(base, std::to_string(n));
    if (g_taken.insert(key_of(candidate)).second) return candidate;
  }
}

std::pair<std::filesystem::path, std::filesystem::path> take_journal_names(
    const std::filesystem::path& base) {
  const std::lock_guard lock(g_mu);
  for (std::uint64_t k = 1;; ++k) {
    auto first = sibling(base, fmt::format("journal-{}", 2 * k - 1));
    auto second = sibling(base, fmt::format("journal-{}", 2 * k));
    const auto a = key_of(first);
    const auto b = key_of(second);
    if (g_taken.contains(a) || g_taken.contains(b)) continue;
    g_taken.insert(a);
    g_taken.insert(b);
    return {std::move(first), std::move(second)};
  }
}

}  // namespace vtrace::recorder::detail
