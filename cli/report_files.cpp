// The report files (report_files.h).
#include "report_files.h"

#include <fmt/format.h>

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
  const bool profiled = !measured.empty();
  // A cut trace (replay --profile has said so already): the timeline holds what was recovered.
  if (!profiled && !plan->trace_complete()) {
    print_warning(about_file(trace, fmt::format("{}; export uses {} recovered events",
                                                plan->recovery().note, plan->steps().size())));
  }
  report::TimelineOptions options;
  options.trace_label = trace;
  options.measured = std::move(measured);
  report::TimelineStats stats;
  const bool written = write_report_file(output, "the timeline", [&](std::ostream& out) {
    auto done = report::write_timeline(*plan, out, options);
    if (!done) return std::optional<std::string>(done.error());
    stats = *done;
    return std::optional<std::string>();
  });
  if (!written) return kExitUsage;
  if (!quiet) {
    fmt::print(
        "timeline: {} ({}; {} tracks, {} batches, {} commands, {} flows, {} counter "
        "samples)\n",
        output, profiled ? "durations of this replay" : "laid out by event order", stats.tracks,
        stats.batches, stats.commands, stats.flows, stats.counters);
  }
  return kExitOk;
}

bool write_html_file(const std::string& output, const drift::CompareReport& report,
                     const report::HtmlOptions& options) {
  return write_report_file(output, "the HTML report", [&](std::ostream& out) {
    auto written = report::write_html_report(report, out, options);
    return written ? std::optional<std::string>() : std::optional<std::string>(written.error());
  });
}

}  // namespace vtrace::cli
