// A comparison (drift::CompareReport: `vtrace compare`, `vtrace diff`) as one self-contained HTML
// page: no network, no external script, style sheet or font; the charts are inline SVG drawn
// here, and one small inline script (sorting, the "all commands" toggle) marks the page
// `data-rendered="ok"` on <body> when it ran without error (what the headless-browser test checks).
//
// Sections (element ids, for tests and links): `facts` (trace, runtimes, baseline, check, deep,
// resync, events, commands compared, verdict), `first-divergence` (event, kind, call, runtime,
// class, shapes, node, its statistics and the reproduce line), `error-chart` (an SVG: max ULP per
// compared command in execution order on a log scale, one series per runtime, the first
// divergence marked; with --resync the introduced error beside the inherited one), `histograms`
// (per runtime, the ULP histogram and the magnitude histogram summed over the commands), `classes`
// (per runtime, how many commands fell in each class), `worst` (the ten worst commands by max ULP,
// each with a command line that reproduces it), `structural` (the structural differences, up to
// 100) and `commands` (every compared command, in a collapsed table).
//
// Ownership: writes to `out`. Thread rules: one thread. Errors: "writing the HTML report failed"
// when the stream went bad.
#pragma once

#include <expected>
#include <ostream>
#include <string>

#include "vtrace/drift/lockstep.h"

namespace vtrace::report {

struct HtmlOptions {
  std::string title = "vtrace compare";
  std::string reproduce;   // the command line that reproduces the whole comparison
  std::string trace_path;  // for the per-command `vtrace extract` lines; none when empty
};

std::expected<void, std::string> write_html_report(const drift::CompareReport& report,
                                                   std::ostream& out, const HtmlOptions& options);

}  // namespace vtrace::report
