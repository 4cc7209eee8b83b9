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

// For a 64-bit unsigned option: CLI11 reads "-1" as its largest value (strtoull wraps it), so a
// negative number is refused instead ("--payload-bytes: -1 is negative (expected 0 or more)").
inline CLI::Validator not_negative() {
  return CLI::Validator(
      [](const std::string& value) {
        return value.starts_with('-') ? value + " is negative (expected 0 or more)" : std::string();
      },
      "NONNEGATIVE", "not_negative");
}

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
