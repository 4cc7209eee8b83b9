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

void add_record_command(CLI::App& app, const GlobalOptions& global, RunFunction* run);
void add_replay_command(CLI::App& app, const GlobalOptions& global, RunFunction* run);
void add_compare_command(CLI::App& app, const GlobalOptions& global, RunFunction* run);
void add_diff_command(CLI::App& app, const GlobalOptions& global, RunFunction* run);
void add_extract_command(CLI::App& app, const GlobalOptions& global, RunFunction* run);
void add_export_command(CLI::App& app, const GlobalOptions& global, RunFunction* run);
void add_info_command(CLI::App& app, const GlobalOptions& global, RunFunction* run);
void add_dump_command(CLI::App& app, const GlobalOptions& global, RunFunction* run);
void add_verify_command(CLI::App& app, const GlobalOptions& global, RunFunction* run);
void add_demo_command(CLI::App& app, const GlobalOptions& global, RunFunction* run);
void add_list_runtimes_command(CLI::App& app, const GlobalOptions& global, RunFunction* run);

}  // namespace vtrace::cli
