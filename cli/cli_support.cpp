#include "cli_support.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <streambuf>
#include <vector>

#include "vtrace/schema/trace_reader.h"
#include "vtrace/schema/events.h"
#include "vtrace/schema/trace_repair.h"
#include "vtrace/replayer/json_text.h"

namespace vtrace::cli {

namespace {
std::optional<std::uint64_t> parse_u64(std::string_view text) {
  std::uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}
}  // namespace

std::expected<EventRange, std::string> parse_event_range(std::string_view text) {
  const auto colon = text.find(':');
  EventRange range;
  if (colon == std::string_view::npos) {
    auto n = parse_u64(text);
    if (!n || *n == std::numeric_limits<std::uint64_t>::max()) {
      return std::unexpected(fmt::format("`{}` is not an event range (A:B, A:, :B or N)", text));
    }
    return EventRange{*n, *n + 1};
  }
  const auto a = text.substr(0, colon);
  const auto b = text.substr(colon + 1);
  if (!a.empty()) {
    auto n = parse_u64(a);
    if (!n) return std::unexpected(fmt::format("`{}` is not an event range (A:B, A:, :B or N)", text));
    range.first = *n;
  }
  if (!b.empty()) {
    auto n = parse_u64(b);
    if (!n) return std::unexpected(fmt::format("`{}` is not an event range (A:B, A:, :B or N)", text));
    range.end = *n;
  }
  if (range.end <= range.first) {
    return std::unexpected(fmt::format("event range `{}` is empty (B must be greater than A)", text));
  }
  return range;
}

std::expected<EventRange, std::string> fit_event_range(EventRange range, std::string_view option,
                                                       std::string_view text,
                                                       std::string_view trace,
                                                       std::uint64_t event_count) {
  if (range.first >= event_count) {
    return std::unexpected(fmt::format(
        "{} {} starts past the last event: {} has {} events{}", option, text, trace, event_count,
        event_count == 0 ? "" : fmt::format(" (0 to {})", event_count - 1)));
  }
  range.end = std::min(range.end, event_count);
  return range;
}

std::expected<EventRange, std::string> fit_event_range(EventRange range, std::string_view option,
                                                       std::string_view text,
                                                       const std::string& trace) {
  auto reader = schema::TraceReader::open(trace);
  if (!reader) return std::unexpected(about_file(trace, reader.error().message));
  return fit_event_range(range, option, text, trace, (*reader)->event_count());
}

Progress::Progress(std::string label, bool quiet)
    : label_(std::move(label)), enabled_(!quiet && ::isatty(STDERR_FILENO) == 1) {}

Progress::~Progress() {
  if (enabled_ && last_permille_ >= 0) std::fputs("\r\033[K", stderr);
}

void Progress::update(std::uint64_t done, std::uint64_t total) {
  if (!enabled_ || total == 0) return;
  const int permille = static_cast<int>(done * 1000 / total);
  if (permille == last_permille_) return;
  last_permille_ = permille;
  constexpr int kWidth = 30;
  const int filled = permille * kWidth / 1000;
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.resize(kWidth, ' ');
  std::fprintf(stderr, "\r%s [%s] %3d%% %llu/%llu", label_.c_str(), bar.c_str(), permille / 10,
               static_cast<unsigned long long>(done), static_cast<unsigned long long>(total));
  std::fflush(stderr);
}

void print_error(std::string_view message) {
  std::fprintf(stderr, "vtrace: %.*s\n", static_cast<int>(message.size()), message.data());
}

namespace {
int g_stdout_errno = 0;  // the first failed flush's errno; 0 while none failed (one thread)
}  // namespace

void note_stdout_failure(int err) {
  if (g_stdout_errno == 0) g_stdout_errno = err != 0 ? err : EIO;
}

void flush_stdout() {
  errno = 0;
  if (std::fflush(stdout) != 0) note_stdout_failure(errno);
}

std::optional<std::string> stdout_failure() {
  flush_stdout();
  if (g_stdout_errno == 0 && std::ferror(stdout) == 0) return std::nullopt;
  return fmt::format("writing to standard output failed{}",
                     g_stdout_errno != 0 ? fmt::format(" ({})", std::strerror(g_stdout_errno))
                                         : std::string());
}

void print_warning(std::string_view message) {
  std::fprintf(stderr, "vtrace: warning: %.*s\n", static_cast<int>(message.size()),
               message.data());
}

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7F) {
      out += fmt::format("\\x{:02X}", byte);
    } else {
      out += c;
    }
  }
  return out;
}

// Refuses an output path that cannot become a trace file before anything runs: an existing
// directory, device or other non-regular file (the .partial would be renamed over it), or a
// missing directory.
std::optional<std::string> unusable_output(const std::string& output, std::string_view what,
                                           bool devices_ok) {
  namespace fs = std::filesystem;
  if (output.empty()) return fmt::format("an empty path names no file to write {} to", what);
  std::error_code ec;
  const fs::path path(output);
  const auto status = fs::status(path, ec);
  if (fs::exists(status) && !fs::is_regular_file(status) &&
      (!devices_ok || fs::is_directory(status))) {
    return fmt::format("{} exists and is {}; expected a new or regular file to write {} to",
                       output, fs::is_directory(status) ? "a directory" : "not a regular file", what);
  }
  const fs::path parent = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  if (!fs::is_directory(parent, ec)) {
    return fmt::format("{}: the directory {} does not exist", output, parent.string());
  }
  // A new file: can it be created there? Tried, not guessed (root passes access(2) where /proc or
  // a read-only mount refuses a create): created and removed at once. An existing file is left
  // to its writer (a trace replaces it by rename, which needs no write permission on it).
  if (!fs::exists(status)) {
    const int fd = ::open(output.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
      return fmt::format("{} cannot be created ({}): nothing was run", output,
                         std::strerror(errno));
    }
    ::close(fd);
    ::unlink(output.c_str());
  }
  return std::nullopt;
}

std::optional<RecordedFacts> recorded_facts(const std::string& trace) {
  auto reader = schema::TraceReader::open(trace);
  if (!reader) return std::nullopt;
  RecordedFacts facts;
  if (const auto* m = schema::read_trace_metadata((*reader)->header().metadata)) {
    if (m->runtime_name() != nullptr) facts.runtime = m->runtime_name()->str();
    if (m->workload_description() != nullptr) facts.workload = m->workload_description()->str();
  }
  return facts;
}

bool same_file(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) {
    const bool same = fs::equivalent(a, b, ec);
    return !ec && same;
  }
  const auto resolved = [](const std::string& path) {
    std::error_code error;
    const fs::path absolute = fs::absolute(path, error);
    if (error) return fs::path(path).lexically_normal();
    const fs::path canonical = fs::weakly_canonical(absolute, error);
    return error ? absolute.lexically_normal() : canonical;
  };
  return resolved(a) == resolved(b);
}

namespace {
// "-o x.vtrace", or "-o x.vtrace (written as x.vtrace.partial first)" for its temporary file.
std::string written_as(const OutputFile& output, bool temporary) {
  if (!temporary) return fmt::format("{} {}", output.role, *output.path);
  return fmt::format("{} {} (written as {}{} first)", output.role, *output.path, *output.path,
                     output.temporary);
}

// refused_outputs without its effect: why `outputs` cannot be written, or nullopt.
std::optional<std::string> refused_among(std::initializer_list<OutputFile> outputs,
                                         std::initializer_list<InputFile> inputs) {
  // Every path an output writes: the file, and a trace's temporary (.partial).
  struct Written {
    const OutputFile* output;
    bool partial;
    std::string path;
  };
  std::vector<Written> written;
  for (const auto& output : outputs) {
    if (!output.path) continue;
    if (auto bad = unusable_output(*output.path, output.what, !output.trace)) return bad;
    written.push_back({&output, false, *output.path});
    if (output.trace) {
      written.push_back({&output, true, *output.path + std::string(output.temporary)});
    }
  }
  for (std::size_t i = 0; i < written.size(); ++i) {
    const auto& w = written[i];
    const auto refuse = [&](const std::string& other) {
      return fmt::format("{} is the same file as {}: choose another path for {}",
                         written_as(*w.output, w.partial), other, w.output->what);
    };
    for (const auto& input : inputs) {
      if (!input.path.empty() && same_file(w.path, input.path)) {
        return refuse(fmt::format("{} {}", input.role, input.path));
      }
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (written[j].output != w.output && same_file(w.path, written[j].path)) {
        return refuse(written_as(*written[j].output, written[j].partial));
      }
    }
  }
  return std::nullopt;
}

// The original standard output, once a report file claimed it (reserve_stdout_for_report), and
// that file's path as the command named it; -1 and "" before.
int g_report_stdout = -1;
std::string g_report_stdout_path;

// Routes what the command prints to stderr, keeping the original standard output for the report
// file `path` (write_report_file). Does nothing when the descriptor cannot be duplicated (the
// text then stays on stdout, as before).
void reserve_stdout_for_report(const std::string& path) {
  if (g_report_stdout >= 0) return;
  flush_stdout();
  const int saved = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
  if (saved < 0) return;
  if (::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
    ::close(saved);
    return;
  }
  g_report_stdout = saved;
  g_report_stdout_path = path;
}

// An output stream buffer over a file descriptor it does not own: 64 KiB buffered, written with
// write(2) (EINTR retried); the first failure's errno is kept and ends the writing.
class DescriptorBuffer final : public std::streambuf {
 public:
  explicit DescriptorBuffer(int fd) : fd_(fd), buffer_(1 << 16) {
    setp(buffer_.data(), buffer_.data() + buffer_.size());
  }
  int error() const { return error_; }

 protected:
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  bool drain() {
    const char* p = pbase();
    while (error_ == 0 && p < pptr()) {
      const ::ssize_t n = ::write(fd_, p, static_cast<std::size_t>(pptr() - p));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        error_ = n < 0 ? errno : ENOSPC;
        break;
      }
      p += n;
    }
    setp(buffer_.data(), buffer_.data() + buffer_.size());
    return error_ == 0;
  }
  int fd_;
  std::vector<char> buffer_;
  int error_ = 0;
};

}  // namespace

bool is_standard_output(const std::string& path) {
  if (g_report_stdout >= 0) return path == g_report_stdout_path;
  struct stat file {};
  struct stat out {};
  if (::stat(path.c_str(), &file) != 0 || ::fstat(STDOUT_FILENO, &out) != 0) return false;
  return file.st_dev == out.st_dev && file.st_ino == out.st_ino;
}

std::optional<std::string> refused_outputs(std::initializer_list<OutputFile> outputs,
                                           std::initializer_list<InputFile> inputs) {
  if (auto refused = refused_among(outputs, inputs)) return refused;
  for (const auto& output : outputs) {
    if (output.path && !output.trace && is_standard_output(*output.path)) {
      reserve_stdout_for_report(*output.path);
    }
  }
  return std::nullopt;
}

// "; the events recorded so far are in OUT.partial (`vtrace repair OUT.partial -o OUT` finishes
// it)" when the writer left one that holds bytes, else "; nothing had reached the file, and none
// is left" (a sink that wrote nothing removes its .partial).
std::string partial_note(const std::string& output) {
  const auto found = schema::recoverable_partial(output);
  if (!found) return "; nothing had reached the file, and none is left";
  const std::string partial = found->string();
  return fmt::format(
      "; the events recorded so far are in {} (`{}` finishes it)", partial,
      shell_command({"vtrace", "repair", path_argument(partial), "-o",
                     path_argument(schema::repair_output_for(output).string())}));
}

std::string human_bytes(std::uint64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  const double kib = static_cast<double>(bytes) / 1024.0;
  if (kib < 1024) return fmt::format("{:.1f} KiB", kib);
  return fmt::format("{:.2f} MiB", kib / 1024.0);
}

bool write_report_file(const std::string& path, std::string_view what,
                       const std::function<std::optional<std::string>(std::ostream&)>& body) {
  namespace fs = std::filesystem;
  if (g_report_stdout >= 0 && path == g_report_stdout_path) {
    // The original standard output, kept for this file (refused_outputs).
    DescriptorBuffer buffer(g_report_stdout);
    std::ostream out(&buffer);
    errno = 0;
    std::optional<std::string> failed = body(out);
    out.flush();
    const int err = buffer.error() != 0 ? buffer.error() : errno;
    if (!failed && (out.fail() || buffer.error() != 0)) {
      failed = fmt::format("writing {} failed", what);
    }
    if (!failed) return true;
    print_error(fmt::format("{}: {}{}", path, *failed,
                            err != 0 ? fmt::format(" ({})", std::strerror(err)) : ""));
    return false;
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    const int err = errno;
    print_error(fmt::format("{}: cannot write {}{}", path, what,
                            err != 0 ? fmt::format(" ({})", std::strerror(err)) : ""));
    return false;
  }
  errno = 0;
  std::optional<std::string> failed = body(out);
  out.close();
  const int err = errno;
  if (!failed && out.fail()) failed = fmt::format("writing {} failed", what);
  if (!failed) return true;
  std::error_code ec;
  const bool regular = fs::is_regular_file(path, ec);
  if (regular) fs::remove(path, ec);
  print_error(fmt::format("{}: {}{}{}", path, *failed,
                          err != 0 ? fmt::format(" ({})", std::strerror(err)) : "",
                          regular && !ec ? "; the incomplete file was removed" : ""));
  return false;
}

bool write_json_report(const std::string& path, const nlohmann::json& report) {
  return write_report_file(path, "the JSON report", [&](std::ostream& out) {
    out << replayer::json_text(report, 2) << '\n';
    return std::optional<std::string>();
  });
}

}  // namespace vtrace::cli
