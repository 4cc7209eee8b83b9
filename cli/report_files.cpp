// The report files (report_files.h).
#include "report_files.h"

#include <fmt/format.h>

#include "cli_support.h"
#include "commands.h"
#include "vtrace/schema/trace_reader.h"

namespace vtrace::cli {

int write_timeline_file(const std::string& trace, const std::string& output,
                        std::vector<report::StepTime> measured, bool quiet) {
  // Read from the file event by event (report::TraceTimeline): no payload is loaded.
  auto reader = schema::TraceReader::open(trace);
  if (!reader) {
    print_error(about_file(trace, reader.error().message));
    return kExitUsage;
  }
  const bool profiled = !measured.empty();
  report::TimelineOptions options;
  options.trace_label = trace;
  options.measured = std::move(measured);
  auto timeline = report::TraceTimeline::prepare(**reader, std::move(options));
  if (!timeline) {
    print_error(about_file(trace, timeline.error()));
    return kExitUsage;
  }
  // A cut trace (replay --profile has said so already): the timeline holds what was recovered.
  if (!profiled && !(*reader)->complete()) {
    print_warning(about_file(trace, fmt::format("{}; export uses {} recovered events",
                                                (*reader)->recovery().note, timeline->events())));
  }
  report::TimelineStats stats;
  const bool written = write_report_file(output, "the timeline", [&](std::ostream& out) {
    auto done = timeline->write(out);
    if (!done) return std::optional<std::string>(done.error());
    stats = *done;
    return std::optional<std::string>();
  });
  if (!written) return kExitUsage;
  if (!quiet) {
    // On stderr when the timeline itself went to standard output (refused_outputs).
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
