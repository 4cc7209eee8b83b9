// The report files (report_files.h).
#include "report_files.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "cli_support.h"
#include "commands.h"
#include "vtrace/replayer/replay_trace.h"

namespace vtrace::cli {

int write_timeline_file(const std::string& trace, const std::string& output,
                        std::vector<report::StepTime> measured, bool quiet) {
  auto plan = replayer::open_plan(trace);
  if (!plan) {
    print_error(about_file(trace, plan.error().message));
    return kExitUsage;
  }
  std::ofstream out(output, std::ios::binary | std::ios::trunc);
  if (!out) {
    print_error(fmt::format("{}: cannot write the timeline: {}", output, std::strerror(errno)));
    return kExitUsage;
  }
  report::TimelineOptions options;
  options.trace_label = trace;
  const bool profiled = !measured.empty();
  options.measured = std::move(measured);
  auto stats = report::write_timeline(*plan, out, options);
  if (!stats) {
    print_error(fmt::format("{}: {}", output, stats.error()));
    return kExitUsage;
  }
  if (!quiet) {
    fmt::print(
        "timeline: {} ({}; {} tracks, {} batches, {} commands, {} flows, {} counter "
        "samples)\n",
        output, profiled ? "durations of this replay" : "laid out by event order", stats->tracks,
        stats->batches, stats->commands, stats->flows, stats->counters);
  }
  return kExitOk;
}

bool write_html_file(const std::string& output, const drift::CompareReport& report,
                     const report::HtmlOptions& options) {
  std::ofstream out(output, std::ios::binary | std::ios::trunc);
  if (!out) {
    print_error(fmt::format("{}: cannot write the HTML report: {}", output, std::strerror(errno)));
    return false;
  }
  if (auto written = report::write_html_report(report, out, options); !written) {
    print_error(fmt::format("{}: {}", output, written.error()));
    return false;
  }
  return true;
}

}  // namespace vtrace::cli
