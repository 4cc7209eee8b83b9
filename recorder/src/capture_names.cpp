#include "capture_names.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <system_error>

namespace vtrace::recorder::detail {

namespace {

std::mutex g_mu;
std::set<std::string> g_taken;   // under g_mu: normalized absolute paths
std::set<std::string> g_in_use;  // under g_mu: the taken names a live full recording writes

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

// The family's members in order: the base, then "<stem>.<N><ext>" for N = 2, 3, ...
std::filesystem::path member(const std::filesystem::path& base, std::uint64_t n) {
  return n == 1 ? base : sibling(base, std::to_string(n));
}

// The first member not in g_taken, taken. Under g_mu.
std::filesystem::path take_first_free(const std::filesystem::path& base) {
  for (std::uint64_t n = 1;; ++n) {
    auto candidate = member(base, n);
    if (g_taken.insert(key_of(candidate)).second) return candidate;
  }
}

}  // namespace

std::filesystem::path take_capture_name(const std::filesystem::path& base) {
  const std::lock_guard lock(g_mu);
  return take_first_free(base);
}

std::filesystem::path take_capture_name_in_crash_child(const std::filesystem::path& base) {
  std::unique_lock lock(g_mu, std::try_to_lock);
  if (lock.owns_lock()) return take_first_free(base);
  // Held by a thread of the parent that the fork did not copy: the lock is never released here
  // and g_taken may be half updated, so the disk decides. A name is free when neither it nor
  // its .partial exists: every window written so far exists, every capture still being written
  // has its .partial, and a name taken but not yet written belonged to a thread that is gone.
  for (std::uint64_t n = 1;; ++n) {
    auto candidate = member(base, n);
    auto partial = candidate;
    partial += ".partial";
    std::error_code ec;
    if (!std::filesystem::exists(std::filesystem::symlink_status(candidate, ec)) &&
        !std::filesystem::exists(std::filesystem::symlink_status(partial, ec))) {
      return candidate;
    }
  }
}

std::optional<CapturePathClaim> claim_capture_path(const std::filesystem::path& path) {
  auto key = key_of(path);
  const std::lock_guard lock(g_mu);
  if (!g_in_use.insert(key).second) return std::nullopt;
  g_taken.insert(key);
  return CapturePathClaim(std::move(key));
}

CapturePathClaim& CapturePathClaim::operator=(CapturePathClaim&& other) noexcept {
  if (this != &other) {
    CapturePathClaim released(std::move(*this));
    key_ = std::exchange(other.key_, {});
  }
  return *this;
}

CapturePathClaim::~CapturePathClaim() {
  if (key_.empty()) return;
  const std::lock_guard lock(g_mu);
  g_in_use.erase(key_);
}

std::unique_lock<std::mutex> hold_capture_names() { return std::unique_lock(g_mu); }

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

schema::TraceResult<void> check_capture_path(const std::filesystem::path& path) {
  const auto refuse = [](std::string why) -> schema::TraceResult<void> {
    return std::unexpected(schema::TraceError{schema::TraceErrorKind::kIo, std::move(why)});
  };
  std::error_code ec;
  const auto status = std::filesystem::symlink_status(path, ec);
  if (!ec && std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) {
    return refuse(fmt::format(
        "{} exists and is not a regular file; a trace is only written to a regular file",
        path.string()));
  }
  std::filesystem::path partial = path;
  partial += ".partial";
  const int fd = ::open(partial.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd >= 0) {
    ::close(fd);
    ::unlink(partial.c_str());
    return {};
  }
  const int err = errno;
  if (err != EEXIST) {
    return refuse(fmt::format("cannot create {}: {}", partial.string(), std::strerror(err)));
  }
  // A leftover .partial (a run that died): kept, as recording to it would truncate it later.
  const auto leftover = std::filesystem::symlink_status(partial, ec);
  if (ec || !std::filesystem::is_regular_file(leftover)) {
    return refuse(fmt::format("{} exists and is not a regular file", partial.string()));
  }
  if (::access(partial.c_str(), W_OK) != 0) {
    return refuse(fmt::format("cannot write {}: {}", partial.string(), std::strerror(errno)));
  }
  return {};
}

}  // namespace vtrace::recorder::detail
