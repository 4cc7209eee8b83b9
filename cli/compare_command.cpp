// vtrace compare T --runtimes a,b[,c...] [--check bits|ulp:N|tol[:ATOL,RTOL]] [--deep] [--resync]
//                  [--json R] [--html R] [--exit-skip=N] [--threads N] [--isa NAME]
//                  [--device-memory SIZE]
#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "cli_support.h"
#include "commands.h"
#include "drift_text.h"
#include "report_files.h"
#include "runtime_flags.h"
#include "vtrace/drift/extract.h"
#include "vtrace/drift/lockstep.h"

namespace vtrace::cli {

namespace {

struct CompareCommandOptions {
  std::string trace;
  std::string runtimes;
  std::string check = "bits";
  bool deep = false;
  bool resync = false;
  std::optional<std::string> json;
  std::optional<std::string> html;
  std::optional<int> exit_skip;
  RuntimeFlags runtime_flags;
};

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(item);
  return out;
}

int run_compare(const CompareCommandOptions& o, const GlobalOptions& global) {
  drift::CompareOptions options;
  options.runtimes = split(o.runtimes);
  if (o.runtimes.empty() || o.runtimes.back() == ',' ||
      std::find(options.runtimes.begin(), options.runtimes.end(), "") != options.runtimes.end()) {
    print_error(
        fmt::format("--runtimes `{}` names an empty runtime (expected A,B[,C...])", o.runtimes));
    return kExitUsage;
  }
  if (options.runtimes.size() < 2) {
    // Said here, not by compare_trace: its sentence would be taken for one about the trace.
    print_error(fmt::format("--runtimes `{}` names one runtime; compare needs at least two (the "
                            "first is the baseline)",
                            o.runtimes));
    return kExitUsage;
  }
  for (auto it = options.runtimes.begin(); it != options.runtimes.end(); ++it) {
    if (std::find(options.runtimes.begin(), it, *it) != it) {
      print_error(fmt::format(
          "--runtimes `{}` names {} twice (name each runtime once; `vtrace replay --runtime {} "
          "--repeat N` compares runs of one runtime)",
          o.runtimes, *it, *it));
      return kExitUsage;
    }
  }
  auto check = drift::parse_drift_check(o.check);
  if (!check) {
    print_error(fmt::format("--check `{}` is not one of bits, ulp:N, tol, tol:ATOL,RTOL", o.check));
    return kExitUsage;
  }
  options.check = *check;
  options.deep = o.deep;
  options.resync = o.resync;
  auto open = open_options(o.runtime_flags, options.runtimes);
  if (!open) {
    print_error(open.error());
    return kExitUsage;
  }
  options.open = *open;
  if (auto bad = refused_outputs(
          {{"--json", o.json, "the JSON report"}, {"--html", o.html, "the HTML report"}},
          {{"the trace", o.trace}})) {
    print_error(*bad);
    return kExitUsage;
  }
  auto report = drift::compare_trace(o.trace, options, runtime::default_registry());
  if (!report) {
    print_error(about_file(o.trace, report.error().message));
    if (report.error().kind == replayer::ReplayFailure::Kind::kRuntimeUnavailable) {
      return o.exit_skip.value_or(kExitRuntimeUnavailable);
    }
    return kExitUsage;
  }
  // Nothing recovered: a "match" would be vacuous, as for replay.
  if (!report->complete() && report->events == 0) {
    const auto& cut = report->recovered.front();  // compare's one trace
    print_error(about_file(
        o.trace, fmt::format("{}: no event could be recovered, so nothing was compared",
                             cut ? cut->recovery.note : std::string("the trace is cut"))));
    return kExitUsage;
  }
  warn_incomplete(*report, "compare");
  std::string reproduce =
      shell_command({"vtrace", "compare", path_argument(o.trace), "--runtimes", o.runtimes,
                     "--check", o.check});
  if (o.deep) reproduce += " --deep";
  if (o.resync) reproduce += " --resync";
  reproduce += open_option_words(options.open);
  // extract runs the baseline alone: only the options it takes.
  const std::string extract_options =
      open_option_words(taken_by(options.open, options.runtimes.front()));
  std::string extract;
  if (const auto& f = report->first_divergence; f && f->command && report->command_of(*f)) {
    extract = drift::extract_command_line(o.trace, f->event, options.runtimes.front(),
                                          extract_options);
  }
  if (!global.quiet || !report->matched()) print_drift_report(*report, reproduce, extract);
  flush_stdout();
  if (o.json && !write_json_report(*o.json, report->to_json())) return kExitUsage;
  if (o.html && !write_html_file(*o.html, *report,
                                 {"vtrace compare", reproduce, o.trace, extract_options})) {
    return kExitUsage;
  }
  return report->matched() ? kExitOk : kExitMismatch;
}

}  // namespace

void add_compare_command(CLI::App& app, const GlobalOptions& global, RunFunction* run) {
  auto options = std::make_shared<CompareCommandOptions>();
  auto* cmd = app.add_subcommand(
      "compare", "Replay a trace on several runtimes in lockstep and name the first divergence");
  cmd->add_option("trace", options->trace, "The .vtrace file")->required();
  cmd->add_option("--runtimes", options->runtimes,
                  "Comma-separated registry names; the first is the baseline")
      ->required();
  cmd->add_option("--check", options->check,
                  "Agreement: bits, ulp:N, tol (atol 1e-5, rtol 1e-3) or tol:ATOL,RTOL")
      ->capture_default_str();
  cmd->add_flag("--deep", options->deep,
                "Run each batch command by command and compare every region each one wrote");
  cmd->add_flag("--resync", options->resync,
                "Also run each command on the baseline's inputs: the error it introduced "
                "(implies --deep)");
  cmd->add_option("--json", options->json, "Write the comparison report as JSON to this file");
  cmd->add_option("--html", options->html,
                  "Write the comparison as one self-contained HTML page to this file");
  add_exit_skip_option(*cmd, options->exit_skip, "a runtime");
  add_runtime_flags(*cmd, options->runtime_flags, "the recorded device's capacity");
  cmd->callback([options, &global, run]() {
    *run = [options, &global]() { return run_compare(*options, global); };
  });
}

}  // namespace vtrace::cli
