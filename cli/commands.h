// The subcommands of `vtrace`: one options struct and one run function per subcommand, each in its
// own <name>_command.cpp. add_<name>_command registers the subcommand's options with CLI11 and
// sets *run to the function main() calls after parsing.
//
// Exit codes (docs/CLI.md): 0 success / all matched; 1 mismatch, workload failure or integrity
// failure; 2 usage error or unreadable trace; 3 runtime unavailable (replay: --exit-skip maps it).
#pragma once

#include "cli11.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace vtrace::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitMismatch = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitRuntimeUnavailable = 3;

struct GlobalOptions {
  bool quiet = false;
};

using RunFunction = std::function<int()>;

// Every integer option of `app` and its subcommands (what CLI11 types UINT or INT) reads decimal
// only, with leading zeros ignored: CLI11 alone reads 010 as octal 8, 0x10 as 16 and 0b11 as 3,
// wraps -1 to the largest unsigned value and saturates what does not fit 64 bits. Each is refused
// instead: "--steps: `0x10` is not a decimal whole number", "--seed: -1 is negative (expected 0 or
// more)", "--seed: 99999999999999999999 is out of range". main() calls it once every subcommand is
// added (integer_options.cpp).
void decimal_integers(CLI::App& app);
// A range check on a decimal integer option, for CLI::Range's place: CLI::Range reads its value
// the octal way before decimal_integers' transform rewrites it ("--level: 20 is not in 1 to 19").
CLI::Validator decimal_range(std::int64_t low, std::int64_t high);

void add_record_command(CLI::App& app, const GlobalOptions& global, RunFunction* run);
void add_replay_command(CLI::App& app, const GlobalOptions& global, RunFunction* run);
void add_compare_command(CLI::App& app, const GlobalOptions& global, RunFunction* run);
void add_diff_command(CLI::App& app, const GlobalOptions& global, RunFunction* run);
void add_extract_command(CLI::App& app, const GlobalOptions& global, RunFunction* run);
void add_export_command(CLI::App& app, const GlobalOptions& global, RunFunction* run);
void add_info_command(CLI::App& app, const GlobalOptions& global, RunFunction* run);
void add_dump_command(CLI::App& app, const GlobalOptions& global, RunFunction* run);
void add_verify_command(CLI::App& app, const GlobalOptions& global, RunFunction* run);
void add_repair_command(CLI::App& app, const GlobalOptions& global, RunFunction* run);
void add_demo_command(CLI::App& app, const GlobalOptions& global, RunFunction* run);
void add_list_runtimes_command(CLI::App& app, const GlobalOptions& global, RunFunction* run);
// `vtrace help [SUBCOMMAND]`: the overview, or that subcommand's --help (help_command.cpp).
// Registered so that the overview lists it; run_before_parse runs it.
void add_help_command(CLI::App& app);

// The top level (help_command.cpp). `vtrace --version`: "vtrace 0.1.0 (writes trace format
// 1.2)", the project() VERSION of CMakeLists.txt and schema/format.h's version.
std::string version_text();
// What CLI11 would misread, handled before it parses; returns the exit code, or nullopt to parse.
// A first word (that is no option) naming no subcommand: "vtrace: unknown subcommand `replya`;
// did you mean `replay`?", exit 2 (CLI11 takes it for a stray argument). `help [SUBCOMMAND]`: run
// here, since CLI11 would take the SUBCOMMAND for a second subcommand.
std::optional<int> run_before_parse(const CLI::App& app, int argc, const char* const* argv);
// CLI11's own refusals (unknown option, missing required option, bad value) as one line:
// "vtrace: <what>; see `vtrace help SUBCOMMAND`" (CLI::App::failure_message).
std::string usage_failure_message(const CLI::App* app, const CLI::Error& error);

}  // namespace vtrace::cli
