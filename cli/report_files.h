// The report/ library's files, as the subcommands write them: a timeline (`vtrace export`,
// `vtrace replay --profile`) and an HTML comparison report (`compare --html`, `diff --html`).
#pragma once

#include <string>
#include <vector>

#include "vtrace/report/html_report.h"
#include "vtrace/report/timeline.h"

namespace vtrace::cli {

// Exit code: 0 written; 2 the trace cannot be read (an event that does not decode included) or
// the file cannot be written (one sentence on stderr naming it).
// Reads `trace` event by event through report::TraceTimeline (two passes, no payload loaded, so
// memory does not grow with payload bytes), streams the timeline into `output` and prints one
// line saying what was written (on stderr when `output` is standard output itself: see
// refused_outputs, cli_support.h).
int write_timeline_file(const std::string& trace, const std::string& output,
                        std::vector<report::StepTime> measured, bool quiet);

// Writes the page; false, with one sentence on stderr naming the file and the reason, when it
// cannot. Called after the text report is printed, so a bad path loses none of it.
bool write_html_file(const std::string& output, const drift::CompareReport& report,
                     const report::HtmlOptions& options);

}  // namespace vtrace::cli
