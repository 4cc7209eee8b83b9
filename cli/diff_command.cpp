// vtrace diff A.vtrace B.vtrace [--check bits|ulp:N|tol[:ATOL,RTOL]] [--json R] [--html R]
#include <fmt/format.h>

#include "cli_support.h"
#include "commands.h"
#include "drift_text.h"
#include "report_files.h"
#include "vtrace/drift/lockstep.h"

namespace vtrace::cli {

namespace {

struct DiffCommandOptions {
  std::string a, b;
  std::string check = "bits";
  std::optional<std::string> json;
  std::optional<std::string> html;
};

int run_diff(const DiffCommandOptions& o, const GlobalOptions& global) {
  auto check = drift::parse_drift_check(o.check);
  if (!check) {
    print_error(fmt::format("--check `{}` is not one of bits, ulp:N, tol, tol:ATOL,RTOL", o.check));
    return kExitUsage;
  }
  if (auto bad = refused_outputs(
          {{"--json", o.json, "the JSON report"}, {"--html", o.html, "the HTML report"}},
          {{"trace A", o.a}, {"trace B", o.b}})) {
    print_error(*bad);
    return kExitUsage;
  }
  auto report = drift::diff_traces(o.a, o.b, *check, "a", "b");
  if (!report) {
    print_error(report.error().message);
    return kExitUsage;
  }
  // diff aligns two recordings of one workload: of two workloads, its numbers compare nothing.
  const auto fa = recorded_facts(o.a);
  const auto fb = recorded_facts(o.b);
  if (fa && fb && !fa->workload.empty() && !fb->workload.empty() && fa->workload != fb->workload) {
    print_warning(fmt::format("{} and {} record different workloads (`{}` and `{}`): their "
                              "differences are the workloads', not the runtimes'",
                              o.a, o.b, printable(fa->workload), printable(fb->workload)));
  }
  warn_incomplete(*report, "diff");
  const std::string reproduce = shell_command(
      {"vtrace", "diff", path_argument(o.a), path_argument(o.b), "--check", o.check});
  if (!global.quiet || !report->matched()) print_drift_report(*report, reproduce);
  flush_stdout();
  if (o.json && !write_json_report(*o.json, report->to_json())) return kExitUsage;
  if (o.html && !write_html_file(*o.html, *report, {"vtrace diff", reproduce, "", ""})) {
    return kExitUsage;
  }
  return report->matched() ? kExitOk : kExitMismatch;
}

}  // namespace

void add_diff_command(CLI::App& app, const GlobalOptions& global, RunFunction* run) {
  auto options = std::make_shared<DiffCommandOptions>();
  auto* cmd = app.add_subcommand(
      "diff", "Align two recorded traces event by event: structural differences, then numbers");
  cmd->add_option("a", options->a, "The first .vtrace file (the baseline, `a`)")->required();
  cmd->add_option("b", options->b, "The second .vtrace file (`b`)")->required();
  cmd->add_option("--check", options->check,
                  "Agreement: bits, ulp:N, tol (atol 1e-5, rtol 1e-3) or tol:ATOL,RTOL")
      ->capture_default_str();
  cmd->add_option("--json", options->json, "Write the report as JSON to this file");
  cmd->add_option("--html", options->html, "Write the report as one self-contained HTML page");
  cmd->callback([options, &global, run]() {
    *run = [options, &global]() { return run_diff(*options, global); };
  });
}

}  // namespace vtrace::cli
