// vtrace extract T (--event N | --events A:B) -o repro.vtrace [--runtime R] [--level L]
//                  [--json R] [--exit-skip=N] [--threads N] [--isa NAME] [--device-memory SIZE]
#include <fmt/format.h>

#include "cli_support.h"
#include "commands.h"
#include "drift_text.h"
#include "runtime_flags.h"
#include "vtrace/drift/extract.h"

namespace vtrace::cli {

namespace {

struct ExtractCommandOptions {
  std::string trace;
  std::optional<std::uint64_t> event;
  std::string events;
  std::string output;
  std::string runtime = "reference";
  int level = 1;
  std::optional<std::string> json;
  std::optional<int> exit_skip;
  RuntimeFlags runtime_flags;
};

void print_extract_report(const drift::ExtractReport& r) {
  const auto& first = r.commands.front();
  if (r.commands.size() == 1) {
    fmt::print("extracted event {} of {} ({} {}{}, command {}, submitted at event {})\n",
               first.event, r.trace, first.kind, first.shapes,
               first.node_index ? fmt::format(", node {}", *first.node_index) : "", first.command,
               first.submit_event);
  } else {
    fmt::print("extracted {} commands of {}, events {} to {} in execution order\n",
               r.commands.size(), r.trace, first.event, r.commands.back().event);
  }
  fmt::print("  {}: {} events; buffers uploaded: {} ({}); readbacks: {}, holding {}'s results\n",
             r.output, r.events, r.buffers.size(), human_bytes(r.uploaded_bytes), r.readbacks,
             r.runtime);
  fmt::print("  replay it: vtrace replay {} --runtime RUNTIME\n",
             shell_quote(path_argument(r.output)));
}

int run_extract(const ExtractCommandOptions& o, const GlobalOptions& global) {
  drift::ExtractOptions options;
  if (o.event.has_value() == !o.events.empty()) {
    print_error("extract needs exactly one of --event N and --events A:B");
    return kExitUsage;
  }
  EventRange range;
  if (o.event) {
    range = {*o.event, *o.event + 1};
  } else {
    auto parsed = parse_event_range(o.events);
    if (!parsed) {
      print_error("--events: " + parsed.error());
      return kExitUsage;
    }
    range = *parsed;
  }
  auto fitted = fit_event_range(range, o.event ? "--event" : "--events",
                                o.event ? std::to_string(*o.event) : o.events, o.trace);
  if (!fitted) {
    print_error(fitted.error());
    return kExitUsage;
  }
  options.first_event = fitted->first;
  options.last_event = fitted->end - 1;  // A:B is events A to B-1, as for dump
  options.runtime = o.runtime;
  options.zstd_level = o.level;
  auto open = open_options(o.runtime_flags, {o.runtime});
  if (!open) {
    print_error(open.error());
    return kExitUsage;
  }
  options.open = *open;
  if (auto bad = refused_outputs(
          {{"-o", o.output, "the repro", true}, {"--json", o.json, "the JSON report"}},
          {{"the trace", o.trace}})) {
    print_error(*bad);
    return kExitUsage;
  }
  auto report = drift::extract_commands(o.trace, o.output, options, runtime::default_registry());
  if (!report) {
    print_error(about_file(o.trace, report.error().message));
    if (report.error().kind == replayer::ReplayFailure::Kind::kRuntimeUnavailable) {
      return o.exit_skip.value_or(kExitRuntimeUnavailable);
    }
    return kExitUsage;
  }
  if (report->recovered) warn_recovered(*report->recovered, "extract");
  if (!global.quiet) print_extract_report(*report);
  if (!report->reproduces_baseline) {
    print_warning(fmt::format("{} was written, but it does not reproduce {}: {}", report->output,
                              report->runtime, report->difference));
  }
  flush_stdout();
  if (o.json && !write_json_report(*o.json, report->to_json())) return kExitUsage;
  return report->reproduces_baseline ? kExitOk : kExitMismatch;
}

}  // namespace

void add_extract_command(CLI::App& app, const GlobalOptions& global, RunFunction* run) {
  auto options = std::make_shared<ExtractCommandOptions>();
  auto* cmd = app.add_subcommand(
      "extract", "Write a standalone minimal trace that reproduces one command or a window");
  cmd->add_option("trace", options->trace, "The .vtrace file")->required();
  cmd->add_option("--event", options->event,
                  "The encode event of the command (compare --deep names it)");
  cmd->add_option("--events", options->events,
                  "Every command from the first encoded in A:B to the last (events A to B-1)");
  cmd->add_option("-o,--output", options->output, "The repro trace to write")->required();
  cmd->add_option("--runtime", options->runtime,
                  "The baseline: its state before the command, its results recorded")
      ->capture_default_str();
  cmd->add_option("--level", options->level, "zstd compression level of the repro (1-19)")
      ->capture_default_str()
      ->check(decimal_range(1, 19));
  cmd->add_option("--json", options->json, "Write what was extracted as JSON to this file");
  add_exit_skip_option(*cmd, options->exit_skip, "the runtime");
  add_runtime_flags(*cmd, options->runtime_flags, "the recorded device's capacity");
  cmd->callback([options, &global, run]() {
    *run = [options, &global]() { return run_extract(*options, global); };
  });
}

}  // namespace vtrace::cli
