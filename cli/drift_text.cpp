// The text of a drift report (drift_text.h).
#include "drift_text.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "cli_support.h"

namespace vtrace::cli {

namespace {

std::string stats_text(const drift::PairResult& p) {
  const auto& s = p.stats;
  if (!p.note.empty()) return p.note;
  return fmt::format(
      "{} of {} elements differ, max abs {:.3g}, mean abs {:.3g}, max rel {:.3g}, "
      "max ulp {}",
      s.differing, s.elements, s.max_abs_error, s.mean_abs_error, s.max_rel_error, s.max_ulp);
}

// --resync: which commands introduce error, and which only carry in what an earlier one made.
// Counted per command in its batch (CompareCounts); a command's regions are listed each.
void print_introduced(const drift::CompareReport& r) {
  std::vector<const drift::CommandComparison*> introducing;
  for (const auto& c : r.commands) {
    if (std::any_of(c.introduced.begin(), c.introduced.end(),
                    [](const drift::PairResult& p) { return !p.agrees; })) {
      introducing.push_back(&c);
    }
  }
  const auto n = r.counts();
  fmt::print(
      "introduced error (--resync): {} of {} commands introduce error, {} only carry it in\n",
      n.commands_introducing, n.commands, n.commands_carrying_only);
  for (std::size_t i = 0; i < std::min<std::size_t>(10, introducing.size()); ++i) {
    const auto& c = *introducing[i];
    for (std::size_t k = 0; k < c.introduced.size(); ++k) {
      const auto& in = c.introduced[k];
      if (in.agrees) continue;
      const auto& carried = c.results[k];
      fmt::print("  event {} {} {}{} {}: {} introduced {} (max ulp {}), carried {} (max ulp {})\n",
                 c.event, c.kind, c.shapes, c.node_index ? fmt::format(" node {}", *c.node_index) : "",
                 c.region, in.runtime, drift::drift_class_name(in.cls), in.stats.max_ulp,
                 drift::drift_class_name(carried.cls), carried.stats.max_ulp);
    }
  }
  if (introducing.size() > 10) {
    fmt::print("  ... {} more regions in --json\n", introducing.size() - 10);
  }
}

}  // namespace

void print_drift_report(const drift::CompareReport& r, const std::string& reproduce,
                        const std::string& extract) {
  const auto n = r.counts();
  fmt::print("{} on {} (baseline {}, check {}{}): {} events, {} results compared{}\n", r.trace,
             fmt::format("{}", fmt::join(r.runtimes, ", ")), r.runtimes.front(), r.check,
             r.resync ? ", deep, resync" : (r.deep ? ", deep" : ""), r.events, n.results,
             n.regions == 0 ? fmt::format(" ({} readbacks)", n.readbacks)
                            : fmt::format(" ({} regions written by {} commands, {} readbacks)",
                                          n.regions, n.commands, n.readbacks));
  if (r.first_divergence) {
    const auto& f = *r.first_divergence;
    fmt::print("first divergence: event {} ({}) {}{}\n  runtime {}: {}\n", f.event, f.kind, f.call,
               f.command ? fmt::format(", command {}", *f.command) : "", f.runtime,
               drift::drift_class_name(f.cls));
    if (const auto* command = r.command_of(f)) {
      const auto& c = *command;
      if (!c.shapes.empty()) fmt::print("  shapes: {}\n", c.shapes);
      if (c.node_index) fmt::print("  node: {}\n", *c.node_index);
      if (c.participants > 0) fmt::print("  participants: {}\n", c.participants);
      if (!c.region.empty()) fmt::print("  region: {}\n", c.region);
      for (const auto& p : c.results) {
        fmt::print("  {}: {} ({})\n", p.runtime, drift::drift_class_name(p.cls), stats_text(p));
      }
      for (const auto& p : c.introduced) {
        fmt::print("  {} introduced (on the baseline's inputs): {} ({})\n", p.runtime,
                   drift::drift_class_name(p.cls), stats_text(p));
      }
    }
    fmt::print("  reproduce: {}\n", reproduce);
    if (!extract.empty()) fmt::print("  extract: {}\n", extract);
  }
  for (std::size_t i = 0; i < std::min<std::size_t>(10, r.structural.size()); ++i) {
    const auto& d = r.structural[i];
    fmt::print("STRUCTURAL at event {}: {} ({} on {} vs {})\n  expected: {}\n  actual:   {}\n",
               d.event, d.call, d.kind, d.runtime, d.against, d.expected, d.actual);
  }
  // The worst commands among those that disagree: structural, then nan_inf, then by max ULP.
  std::vector<const drift::CommandComparison*> bad;
  for (const auto& c : r.commands) {
    if (!c.agrees) bad.push_back(&c);
  }
  std::stable_sort(bad.begin(), bad.end(),
                   [](auto* a, auto* b) { return drift::worse_command(*a, *b); });
  if (!bad.empty()) {
    fmt::print("worst results ({} of {} disagree{}):\n", bad.size(), n.results,
               n.regions == 0 ? ""
                              : fmt::format("; {} of {} commands", n.commands_disagreeing,
                                            n.commands));
  }
  for (std::size_t i = 0; i < std::min<std::size_t>(5, bad.size()); ++i) {
    const auto& c = *bad[i];
    for (const auto& p : c.results) {
      if (p.agrees) continue;
      fmt::print("  event {} {} {}: {} {} ({})\n", c.event, c.kind, c.shapes, p.runtime,
                 drift::drift_class_name(p.cls), stats_text(p));
    }
  }
  if (r.resync) print_introduced(r);
  std::uint64_t vs_recording = r.vs_recording.size();
  for (const auto& c : r.commands) {
    for (const auto& p : c.vs_recording) vs_recording += p.agrees ? 0 : 1;
  }
  if (vs_recording > 0) {
    fmt::print("note: {} answers differ from the recording (see --json `vs_recording`)\n",
               vs_recording);
  }
  std::string incomplete;
  if (!r.complete())
    incomplete = fmt::format(" (incomplete trace: {} recovered events compared)", r.events);
  fmt::print("verdict: {}{}\n", r.verdict(), incomplete);
}

void warn_recovered(const drift::RecoveredTrace& t, std::string_view command) {
  print_warning(about_file(
      t.path, fmt::format("{}; {} uses {} recovered events", t.recovery.note, command, t.events)));
  if (t.recovery.stopped_at) {
    const auto at = *t.recovery.stopped_at;
    print_warning(about_file(
        t.path, fmt::format("{} stops before event {} because {}; the {} events before it are used",
                            command, at, t.recovery.stop_reason, at)));
  }
}

void warn_incomplete(const drift::CompareReport& report, std::string_view command) {
  for (const auto& r : report.recovered) {
    if (r) warn_recovered(*r, command);
  }
  const auto& trace = report.recovered.empty() || !report.recovered.front()
                          ? report.trace
                          : report.recovered.front()->path;
  for (const std::uint64_t begin : report.unfinished_submits) {
    print_warning(about_file(
        trace, fmt::format("event {} (SubmitBegin) has no SubmitEnd (the recording ended inside "
                           "this submit): the submit was re-executed, its outcome not compared",
                           begin)));
  }
}

}  // namespace vtrace::cli
