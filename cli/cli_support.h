// Helpers shared by the subcommands: event ranges, the stderr progress bar, error printing.
#pragma once

#include <cstdint>
#include <expected>
#include <limits>
#include <string>
#include <string_view>

namespace vtrace::cli {

// "A:B" (events A to B-1), "A:" (A to the end), ":B", or "N" (event N only).
struct EventRange {
  std::uint64_t first = 0;
  std::uint64_t end = std::numeric_limits<std::uint64_t>::max();
};
std::expected<EventRange, std::string> parse_event_range(std::string_view text);

// One-line progress bar on stderr, drawn only when stderr is a terminal and not quiet.
class Progress {
 public:
  Progress(std::string label, bool quiet);
  ~Progress();
  void update(std::uint64_t done, std::uint64_t total);

 private:
  std::string label_;
  bool enabled_;
  int last_permille_ = -1;
};

// "vtrace: <message>" on stderr.
void print_error(std::string_view message);

// Human-readable byte count: "1.5 MiB".
std::string human_bytes(std::uint64_t bytes);

}  // namespace vtrace::cli
