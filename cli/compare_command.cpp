// vtrace compare T --runtimes a,b[,c...] [--check bits|ulp:N|tol[:ATOL,RTOL]] [--deep]
//                  [--json R] [--exit-skip=N] [--threads N] [--isa NAME] [--device-memory SIZE]
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "cli_support.h"
#include "commands.h"
#include "runtime_flags.h"
#include "vtrace/drift/lockstep.h"

namespace vtrace::cli {

namespace {

struct CompareCommandOptions {
  std::string trace;
  std::string runtimes;
  std::string check = "bits";
  bool deep = false;
  std::string json;
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

// A word as the shell reads it back: unchanged when it is plain, else in single quotes.
std::string shell_quote(const std::string& word) {
  const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("-_./:,=+@%", c) != nullptr;
  });
  if (plain) return word;
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string stats_text(const drift::PairResult& p) {
  const auto& s = p.stats;
  if (!p.note.empty()) return p.note;
  return fmt::format(
      "{} of {} elements differ, max abs {:.3g}, mean abs {:.3g}, max rel {:.3g}, "
      "max ulp {}",
      s.differing, s.elements, s.max_abs_error, s.mean_abs_error, s.max_rel_error, s.max_ulp);
}

void print_report(const drift::CompareReport& r, const CompareCommandOptions& o) {
  fmt::print("{} on {} (baseline {}, check {}{}): {} events, {} commands compared\n", r.trace,
             fmt::format("{}", fmt::join(r.runtimes, ", ")), r.runtimes.front(), r.check,
             r.deep ? ", deep" : "", r.events, r.commands.size());
  if (r.first_divergence) {
    const auto& f = *r.first_divergence;
    fmt::print("first divergence: event {} ({}) {}{}\n  runtime {}: {}\n", f.event, f.kind, f.call,
               f.command ? fmt::format(", command {}", *f.command) : "", f.runtime,
               drift::drift_class_name(f.cls));
    for (const auto& c : r.commands) {
      if (c.event != f.event || c.command != f.command) continue;
      if (!c.shapes.empty()) fmt::print("  shapes: {}\n", c.shapes);
      if (c.node_index) fmt::print("  node: {}\n", *c.node_index);
      if (c.participants > 0) fmt::print("  participants: {}\n", c.participants);
      if (!c.region.empty()) fmt::print("  region: {}\n", c.region);
      for (const auto& p : c.results) {
        fmt::print("  {}: {} ({})\n", p.runtime, drift::drift_class_name(p.cls), stats_text(p));
      }
      break;
    }
    std::string reproduce =
        fmt::format("vtrace compare {} --runtimes {} --check {}", shell_quote(o.trace),
                    shell_quote(o.runtimes), shell_quote(o.check));
    if (o.deep) reproduce += " --deep";
    fmt::print("  reproduce: {}\n", reproduce);
  }
  for (std::size_t i = 0; i < std::min<std::size_t>(10, r.structural.size()); ++i) {
    const auto& d = r.structural[i];
    fmt::print("STRUCTURAL at event {}: {} ({} on {} vs {})\n  expected: {}\n  actual:   {}\n",
               d.event, d.call, d.kind, d.runtime, d.against, d.expected, d.actual);
  }
  // The worst commands: the largest max ULP among those that disagree.
  std::vector<const drift::CommandComparison*> bad;
  for (const auto& c : r.commands) {
    if (!c.agrees) bad.push_back(&c);
  }
  auto max_ulp = [](const drift::CommandComparison* c) {
    std::uint64_t m = 0;
    for (const auto& p : c->results) m = std::max(m, p.stats.max_ulp);
    return m;
  };
  std::stable_sort(bad.begin(), bad.end(),
                   [&](auto* a, auto* b) { return max_ulp(a) > max_ulp(b); });
  if (!bad.empty()) fmt::print("worst commands ({} disagree):\n", bad.size());
  for (std::size_t i = 0; i < std::min<std::size_t>(5, bad.size()); ++i) {
    const auto& c = *bad[i];
    for (const auto& p : c.results) {
      if (p.agrees) continue;
      fmt::print("  event {} {} {}: {} {} ({})\n", c.event, c.kind, c.shapes, p.runtime,
                 drift::drift_class_name(p.cls), stats_text(p));
    }
  }
  std::uint64_t vs_recording = r.vs_recording.size();
  for (const auto& c : r.commands) {
    for (const auto& p : c.vs_recording) vs_recording += p.agrees ? 0 : 1;
  }
  if (vs_recording > 0) {
    fmt::print("note: {} answers differ from the recording (see --json `vs_recording`)\n",
               vs_recording);
  }
  fmt::print("verdict: {}\n", r.verdict());
}

int run_compare(const CompareCommandOptions& o, const GlobalOptions& global) {
  drift::CompareOptions options;
  options.runtimes = split(o.runtimes);
  auto check = drift::parse_drift_check(o.check);
  if (!check) {
    print_error(fmt::format("--check `{}` is not one of bits, ulp:N, tol, tol:ATOL,RTOL", o.check));
    return kExitUsage;
  }
  options.check = *check;
  options.deep = o.deep;
  auto open = open_options(o.runtime_flags);
  if (!open) {
    print_error(open.error());
    return kExitUsage;
  }
  options.open = *open;
  if (!o.json.empty()) {
    if (auto bad = unusable_output(o.json, "the JSON report", true)) {
      print_error(*bad);
      return kExitUsage;
    }
  }
  auto report = drift::compare_trace(o.trace, options, runtime::default_registry());
  if (!report) {
    print_error(about_file(o.trace, report.error().message));
    if (report.error().kind == replayer::ReplayFailure::Kind::kRuntimeUnavailable) {
      return o.exit_skip.value_or(kExitRuntimeUnavailable);
    }
    return kExitUsage;
  }
  if (!global.quiet || !report->matched()) print_report(*report, o);
  std::fflush(stdout);
  if (!o.json.empty()) {
    std::ofstream out(o.json);
    if (out) out << report->to_json().dump(2) << '\n';
    out.close();
    if (!out) {
      const int err = errno;
      print_error(fmt::format("{}: cannot write the JSON report{}", o.json,
                              err != 0 ? fmt::format(" ({})", std::strerror(err)) : ""));
      return kExitUsage;
    }
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
                "After every batch, compare every region its commands wrote");
  cmd->add_option("--json", options->json, "Write the comparison report as JSON to this file");
  cmd->add_option("--exit-skip", options->exit_skip,
                  "Exit with this code instead of 3 when a runtime is unavailable");
  add_runtime_flags(*cmd, options->runtime_flags, "the recorded device's capacity");
  cmd->callback([options, &global, run]() {
    *run = [options, &global]() { return run_compare(*options, global); };
  });
}

}  // namespace vtrace::cli
