// A comparison (drift::CompareReport: `vtrace compare`, `vtrace diff`) as one self-contained HTML
// page: no network, no external script, style sheet or font; the charts are inline SVG drawn
// here, and one small inline script (sorting, the "all commands" toggle) marks the page
// `data-rendered="ok"` on <body> when it ran without error (what the headless-browser test checks).
//
// Sections (element ids, for tests and links): `facts` (trace, runtimes, baseline, check, deep,
// resync, events, commands compared, verdict; for a recovered (cut) input the verdict is
// qualified as the text's is, "match (incomplete trace: N recovered events compared)", with a
// `recovered` row (each cut trace's note, the events used, where the plan stopped) and, when
// compare re-executed submits that have no SubmitEnd, an `unfinished submits` row),
// `first-divergence` (event, kind, call, runtime,
// class, shapes, node, its statistics and the reproduce line), `error-chart` (an SVG: max ULP per
// compared command in execution order on a log scale, one series per runtime, the first
// divergence marked; with --resync the introduced error beside the inherited one), `histograms`
// (per runtime, the ULP histogram and the magnitude histogram summed over the commands), `classes`
// (per runtime, how many commands fell in each class), `worst` (the ten worst commands by max ULP,
// each with a command line that reproduces it), `structural` (the structural differences: the
// first 100, then "... and N more (all in --json `structural`)") and `commands` (every compared
// command, in a collapsed table).
//
// Text from the report (paths, calls, runtime names, notes) is escaped: the markup characters as
// references, each maximal invalid UTF-8 subpart as U+FFFD (the page is declared utf-8; the JSON
// reports replace the same bytes), C0 controls other than tab and newline, and DEL, as numeric
// references (NUL as U+FFFD). SVG <title> and <text> are escaped alike, so the SVG is
// well-formed.
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
  // Appended to each `vtrace extract` line: how the baseline was opened, as extract takes it
  // (" --threads 2 --device-memory 1073741824", replayer::open_option_words).
  std::string extract_options;
};

std::expected<void, std::string> write_html_report(const drift::CompareReport& report,
                                                   std::ostream& out, const HtmlOptions& options);

}  // namespace vtrace::report
