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
  // Every way out: what is still buffered is flushed, and a command whose output was lost (a full
  // disk, a closed stdout; help and --version included) does not report success.
  const auto finish = [](int code) {
    if (const auto failed = stdout_failure()) {
      print_error(*failed);
      return code == kExitOk ? kExitUsage : code;
    }
    return code;
  };
  try {
    if (auto code = run_before_parse(app, argc, argv)) return finish(*code);
    try {
      app.parse(argc, argv);
    } catch (const CLI::CallForVersion& e) {
      // Printed here, not by app.exit: its std::endl flushes where a failure's errno is lost.
      fmt::print("{}\n", e.what());
      return finish(kExitOk);
    } catch (const CLI::ParseError& e) {
      // --help and --version are "errors" with exit code 0; usage errors exit 2 (docs/CLI.md).
      const int code = app.exit(e);
      return finish(code == 0 ? kExitOk : kExitUsage);
    }
    if (!run) return finish(kExitUsage);
    return finish(run());
  } catch (const std::system_error& e) {
    // fmt::print throws once what it prints cannot be written (a full disk, a closed stdout).
    note_stdout_failure(e.code().value());
    return finish(kExitUsage);
  }
}
