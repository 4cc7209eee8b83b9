#include "runtime_flags.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>
#include <charconv>
#include <cmath>

#include "commands.h"
#include "vtrace/runtime/cpu/cpu_runtime.h"

namespace vtrace::cli {

void add_runtime_flags(CLI::App& cmd, RuntimeFlags& flags, std::string_view device_memory_default) {
  cmd.add_option("--threads", flags.threads,
                 fmt::format("cpu runtimes: worker threads, at most {} (default: the machine's "
                             "hardware threads)",
                             runtime::cpu::kCpuMaxThreads))
      ->check(decimal_range(0, runtime::cpu::kCpuMaxThreads));
  cmd.add_option("--isa", flags.isa,
                 "cpu runtimes: instruction path portable, avx2-f16c or avx512 (default: the best "
                 "this CPU has)");
  cmd.add_option("--device-memory", flags.device_memory,
                 fmt::format("Device capacity, e.g. 8GiB or 4096MiB (default: {})",
                             device_memory_default));
}

void add_exit_skip_option(CLI::App& cmd, std::optional<int>& exit_skip, std::string_view what) {
  cmd.add_option("--exit-skip", exit_skip,
                 fmt::format("Exit with this code (0 to 255) instead of 3 when {} is unavailable",
                             what))
      ->check(decimal_range(0, 255));
}

std::expected<std::uint64_t, std::string> parse_byte_size(std::string_view text) {
  const auto bad = [&] {
    return std::unexpected(fmt::format(
        "`{}` is not a byte size (a number with an optional K, M, G, KiB, MiB or GiB)", text));
  };
  double number = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  const auto [stop, ec] = std::from_chars(begin, end, number, std::chars_format::fixed);
  if (ec != std::errc() || !(number > 0) || !std::isfinite(number)) return bad();
  std::string unit(stop, end);
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  double scale = 1;
  if (unit.empty() || unit == "b") {
    scale = 1;
  } else if (unit == "k" || unit == "kib") {
    scale = 1024.0;
  } else if (unit == "m" || unit == "mib") {
    scale = 1024.0 * 1024.0;
  } else if (unit == "g" || unit == "gib") {
    scale = 1024.0 * 1024.0 * 1024.0;
  } else {
    return bad();
  }
  const double bytes = std::ceil(number * scale);
  if (bytes >= 18446744073709551615.0) return bad();
  return static_cast<std::uint64_t>(bytes);
}

namespace {

// Why `option` (given) does nothing for `runtimes`; nullopt when one of them takes it.
std::optional<std::string> ignored_by_all(std::string_view option,
                                          const std::vector<std::string>& runtimes,
                                          bool runtime::OpenOptionsTaken::*field) {
  const auto& registry = runtime::default_registry();
  std::vector<std::string> takers;
  for (const auto& name : registry.names()) {
    if (registry.takes(name).*field) takers.push_back(name);
  }
  for (const auto& name : runtimes) {
    if (!registry.contains(name) || registry.takes(name).*field) return std::nullopt;
  }
  return fmt::format("{} applies only to the runtime{} {}; {} {} not take it", option,
                     takers.size() == 1 ? "" : "s", fmt::join(takers, ", "),
                     fmt::join(runtimes, ", "), runtimes.size() == 1 ? "does" : "do");
}

}  // namespace

std::expected<runtime::RuntimeOpenOptions, std::string> open_options(
    const RuntimeFlags& flags, const std::vector<std::string>& runtimes) {
  if (!flags.isa.empty()) {
    if (auto ignored = ignored_by_all("--isa", runtimes, &runtime::OpenOptionsTaken::isa)) {
      return std::unexpected(*ignored);
    }
  }
  if (flags.threads != 0) {
    if (auto ignored = ignored_by_all("--threads", runtimes, &runtime::OpenOptionsTaken::threads)) {
      return std::unexpected(*ignored);
    }
  }
  runtime::RuntimeOpenOptions options;
  options.threads = flags.threads;
  options.isa = flags.isa;
  if (!flags.device_memory.empty()) {
    auto bytes = parse_byte_size(flags.device_memory);
    if (!bytes) return std::unexpected("--device-memory: " + bytes.error());
    options.device_memory_bytes = *bytes;
  }
  return options;
}

runtime::RuntimeOpenOptions taken_by(runtime::RuntimeOpenOptions open, const std::string& runtime) {
  const auto taken = runtime::default_registry().takes(runtime);
  if (!taken.threads) open.threads = 0;
  if (!taken.isa) open.isa.clear();
  return open;
}

}  // namespace vtrace::cli
