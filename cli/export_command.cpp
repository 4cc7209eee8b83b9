// vtrace export T --format chrome -o t.json: the trace as a Chrome trace-event timeline.
#include <fmt/format.h>

#include "cli_support.h"
#include "commands.h"
#include "report_files.h"

namespace vtrace::cli {

namespace {

struct ExportCommandOptions {
  std::string trace;
  std::string format = "chrome";
  std::string output;
};

int run_export(const ExportCommandOptions& o, const GlobalOptions& global) {
  if (o.format != "chrome") {
    print_error(
        fmt::format("--format `{}` is not a timeline format this build writes (chrome)", o.format));
    return kExitUsage;
  }
  if (auto bad = refused_outputs({{"-o", o.output, "the timeline"}}, {{"the trace", o.trace}})) {
    print_error(*bad);
    return kExitUsage;
  }
  return write_timeline_file(o.trace, o.output, {}, global.quiet);
}

}  // namespace

void add_export_command(CLI::App& app, const GlobalOptions& global, RunFunction* run) {
  auto options = std::make_shared<ExportCommandOptions>();
  auto* cmd = app.add_subcommand(
      "export",
      "Write a trace as a timeline (Chrome trace-event JSON: Perfetto, chrome://tracing)");
  cmd->add_option("trace", options->trace, "The .vtrace file")->required();
  cmd->add_option("--format", options->format, "The timeline format: chrome")
      ->capture_default_str();
  cmd->add_option("-o,--output", options->output, "The timeline file to write")->required();
  cmd->callback([options, &global, run]() {
    *run = [options, &global]() { return run_export(*options, global); };
  });
}

}  // namespace vtrace::cli
