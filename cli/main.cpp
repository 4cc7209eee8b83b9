// vtrace: record, replay, inspect and verify device-runtime traces. See docs/CLI.md.
#include <fmt/format.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <system_error>

#include "cli11.h"
#include "cli_support.h"
#include "commands.h"

int main(int argc, char** argv) {
  using namespace vtrace::cli;
  // A file size limit (`ulimit -f`) then makes write() fail with EFBIG, which every writer
  // reports in one sentence (removing what it had not finished), instead of SIGXFSZ ending vtrace
  // with no word and exit 153.
  std::signal(SIGXFSZ, SIG_IGN);
  CLI::App app{"vtrace: deterministic trace recording and replay for the device runtime contract",
               "vtrace"};
  app.require_subcommand(1);
  app.fallthrough();  // global flags (--quiet) are accepted after the subcommand too
  app.set_version_flag("--version", version_text(),
                       "Print vtrace's version and the trace format it writes");
  app.failure_message(usage_failure_message);
  GlobalOptions global;
  app.add_flag("-q,--quiet", global.quiet, "Print only errors (and what a subcommand must print)");
  RunFunction run;
  add_record_command(app, global, &run);
  add_replay_command(app, global, &run);
  add_compare_command(app, global, &run);
  add_diff_command(app, global, &run);
  add_extract_command(app, global, &run);
  add_export_command(app, global, &run);
  add_info_command(app, global, &run);
  add_dump_command(app, global, &run);
  add_verify_command(app, global, &run);
  add_repair_command(app, global, &run);
  add_demo_command(app, global, &run);
  add_list_runtimes_command(app, global, &run);
  add_help_command(app);
  decimal_integers(app);
  if (auto code = run_before_parse(app, argc, argv)) return *code;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version are "errors" with exit code 0; usage errors exit 2 (docs/CLI.md).
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  if (!run) return kExitUsage;
  int code = kExitUsage;
  try {
    code = run();
  } catch (const std::system_error& e) {
    // fmt::print throws once what it prints cannot be written (a full disk, a closed stdout).
    print_error(fmt::format("writing to standard output failed ({})", e.code().message()));
    return kExitUsage;
  }
  // What is still buffered, and a write that failed without a throw (std::printf, fmt's
  // buffered path): a command whose output was lost does not report success.
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0) {
    const int err = errno;
    print_error(fmt::format("writing to standard output failed{}",
                            err != 0 ? fmt::format(" ({})", std::strerror(err)) : ""));
    return code == kExitOk ? kExitUsage : code;
  }
  return code;
}
