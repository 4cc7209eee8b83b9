// vtrace replay T [--runtime R] [--check bits|ulp:N|none] [--events A:B] [--json report.json]
//                 [--profile t.json] [--exit-skip=125] [--repeat N] [--threads N] [--isa NAME]
//                 [--device-memory SIZE]
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <vector>

#include "cli_support.h"
#include "commands.h"
#include "report_files.h"
#include "runtime_flags.h"
#include "vtrace/drift/lockstep.h"
#include "vtrace/replayer/replay_trace.h"

namespace vtrace::cli {

namespace {

struct ReplayCommandOptions {
  std::string trace;
  std::string runtime;
  std::string check = "bits";
  std::string events;
  std::optional<std::string> json;
  std::optional<std::string> profile;
  std::optional<int> exit_skip;
  unsigned repeat = 1;
  RuntimeFlags runtime_flags;
};

// --repeat N: the runs compared with each other (drift::repeat_trace). Prints what it found;
// returns whether every run was identical, or the exit code of a failure.
std::expected<bool, int> check_repeat(const ReplayCommandOptions& o, const std::string& runtime,
                                      const runtime::RuntimeOpenOptions& open) {
  auto report = drift::repeat_trace(o.trace, runtime, o.repeat, open, runtime::default_registry());
  if (!report) {
    print_error(about_file(o.trace, report.error().message));
    return std::unexpected(report.error().kind == replayer::ReplayFailure::Kind::kRuntimeUnavailable
                               ? o.exit_skip.value_or(kExitRuntimeUnavailable)
                               : kExitUsage);
  }
  if (report->matched()) {
    fmt::print(
        "repeat: {} runs on {} identical (every answer and every written region, bit for "
        "bit)\n",
        o.repeat, runtime);
    return true;
  }
  const auto& f = *report->first_divergence;
  fmt::print(
      "NONDETERMINISM: {} runs on {} differ; first at event {} ({}) {}{}: {} is {} against "
      "{}#1\n",
      o.repeat, runtime, f.event, f.kind, f.call,
      f.command ? fmt::format(", command {}", *f.command) : "", f.runtime,
      drift::drift_class_name(f.cls), runtime);
  return false;
}

// The progress bar, and with --profile each step's time (steady clock, from the first step).
class ProgressObserver final : public replayer::ReplayObserver {
 public:
  ProgressObserver(bool quiet, bool profile) : progress_("replay", quiet), profile_(profile) {}
  void on_step(const replayer::ReplayStep&, std::uint64_t index, std::uint64_t total) override {
    progress_.update(index + 1, total);
    if (profile_) started_ = std::chrono::steady_clock::now();
  }
  void on_step_done(const replayer::ReplayStep&, std::uint64_t index) override {
    if (!profile_) return;
    const auto now = std::chrono::steady_clock::now();
    if (times_.empty()) origin_ = started_;
    times_.resize(index + 1);
    times_[index] = {ns(started_ - origin_), ns(now - started_)};
  }
  std::vector<report::StepTime> take_times() { return std::move(times_); }

 private:
  static std::uint64_t ns(std::chrono::steady_clock::duration d) {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
  }
  Progress progress_;
  bool profile_;
  std::chrono::steady_clock::time_point origin_, started_;
  std::vector<report::StepTime> times_;
};

int run_replay(const ReplayCommandOptions& o, const GlobalOptions& global) {
  replayer::ReplayTraceOptions options;
  options.runtime = o.runtime;
  // Without --runtime, the recorded runtime is the one opened; its name (from the header) is
  // only needed to check --isa and --threads against it.
  const bool runtime_specific = !o.runtime_flags.isa.empty() || o.runtime_flags.threads != 0;
  auto open = open_options(
      o.runtime_flags,
      {o.runtime.empty() && runtime_specific
           ? recorded_facts(o.trace).value_or(RecordedFacts{}).runtime
           : o.runtime});
  if (!open) {
    print_error(open.error());
    return kExitUsage;
  }
  options.open = *open;
  auto check = replayer::parse_check_mode(o.check);
  if (!check) {
    print_error(fmt::format("--check `{}` is not one of bits, ulp:N, none", o.check));
    return kExitUsage;
  }
  options.replay.check = *check;
  if (!o.events.empty()) {
    auto range = parse_event_range(o.events);
    if (!range) {
      print_error("--events: " + range.error());
      return kExitUsage;
    }
    range = fit_event_range(*range, "--events", o.events, o.trace);
    if (!range) {
      print_error(range.error());
      return kExitUsage;
    }
    options.replay.first_event = range->first;
    options.replay.end_event = range->end;
  }
  if (auto bad = refused_outputs(
          {{"--json", o.json, "the JSON report"}, {"--profile", o.profile, "the profile timeline"}},
          {{"the trace", o.trace}})) {
    print_error(*bad);
    return kExitUsage;
  }
  std::expected<replayer::ReplayReport, replayer::ReplayFailure> report;
  std::vector<report::StepTime> times;
  {
    ProgressObserver observer(global.quiet, o.profile.has_value());
    report = replayer::replay_trace(o.trace, options, runtime::default_registry(), &observer);
    times = observer.take_times();
  }
  if (!report) {
    print_error(about_file(o.trace, report.error().message));
    if (report.error().kind == replayer::ReplayFailure::Kind::kRuntimeUnavailable) {
      return o.exit_skip.value_or(kExitRuntimeUnavailable);
    }
    return kExitUsage;
  }
  const auto& r = *report;
  // Nothing recovered: a "match" would be vacuous (and `git bisect run` would read it as good).
  if (!r.complete && r.executed == 0) {
    print_error(about_file(o.trace, fmt::format("{}: no event could be recovered, so nothing was "
                                                "replayed", r.recovery_note)));
    return kExitUsage;
  }
  // A recovered trace: say so (even with --quiet: it qualifies the verdict), and what replay had to
  // leave out. Each note names the file.
  if (!r.complete) {
    print_warning(about_file(
        o.trace, fmt::format("{}; {} events are replayed", r.recovery_note, r.executed)));
    if (r.stopped_at) {
      print_warning(about_file(
          o.trace, fmt::format("replay stops before event {} because {}; the {} events before it "
                               "are replayed",
                               *r.stopped_at, r.stop_reason, *r.stopped_at)));
    }
  }
  for (const std::uint64_t begin : r.unfinished_submits) {
    print_warning(about_file(
        o.trace, fmt::format("event {} (SubmitBegin) has no SubmitEnd (the recording ended inside "
                             "this submit): the submit was re-executed, its outcome not compared",
                             begin)));
  }
  if (!global.quiet) {
    // Once, as information: what the contract lets differ between runtimes.
    for (const auto& difference : r.runtime_differences) fmt::print("note: {}\n", difference);
    fmt::print("{} on {} (check {}): events {}..{} checked ({} executed)\n", r.trace, r.runtime,
               r.check, r.first_event, r.end_event, r.executed);
    fmt::print(
        "checked: {} calls ({} recorded errors), {} readbacks ({} bytes), {} attribution rows, "
        "{} fences, {} counter snapshots\n",
        r.checked.calls, r.checked.error_outcomes, r.checked.readbacks, r.checked.readback_bytes,
        r.checked.attribution_rows, r.checked.fences, r.checked.counter_snapshots);
  }
  constexpr std::size_t kShown = 10;
  for (std::size_t i = 0; i < std::min(kShown, r.mismatches.size()); ++i) {
    const auto& m = r.mismatches[i];
    fmt::print("MISMATCH at event {}: {}\n  expected: {}\n  actual:   {}\n  reproduce: {}\n",
               m.event, m.call, m.expected, m.actual, m.reproduce);
  }
  if (r.mismatch_count > kShown) {
    fmt::print("... and {} more mismatches\n", r.mismatch_count - kShown);
  }
  std::vector<std::string> notes;
  if (!r.matched()) notes.push_back(fmt::format("{} mismatches", r.mismatch_count));
  if (!r.complete) notes.push_back(fmt::format("incomplete trace: {} recovered events replayed", r.executed));
  fmt::print("verdict: {}{}\n", r.matched() ? "match" : "mismatch",
             notes.empty() ? "" : fmt::format(" ({})", fmt::join(notes, "; ")));
  flush_stdout();
  // Written last, so that a bad --json path loses none of the verdict printed above.
  if (o.json && !write_json_report(*o.json, r.to_json())) return kExitUsage;
  if (o.profile &&
      write_timeline_file(o.trace, *o.profile, std::move(times), global.quiet) != kExitOk) {
    return kExitUsage;
  }
  if (o.repeat > 1) {
    auto repeated = check_repeat(o, r.runtime, options.open);
    if (!repeated) return repeated.error();
    if (!*repeated) return kExitMismatch;
  }
  return r.matched() ? kExitOk : kExitMismatch;
}

}  // namespace

void add_replay_command(CLI::App& app, const GlobalOptions& global, RunFunction* run) {
  auto options = std::make_shared<ReplayCommandOptions>();
  auto* cmd = app.add_subcommand("replay", "Re-execute a trace on a runtime and check every outcome");
  cmd->add_option("trace", options->trace, "The .vtrace file")->required();
  cmd->add_option("-r,--runtime", options->runtime,
                  "Registry name of the runtime (default: the one the trace was recorded on)");
  cmd->add_option("--check", options->check, "Readback comparison: bits, ulp:N or none")
      ->capture_default_str();
  cmd->add_option("--events", options->events,
                  "Check only events A:B (earlier events still run to rebuild state)");
  cmd->add_option("--json", options->json, "Write the replay report as JSON to this file");
  add_exit_skip_option(*cmd, options->exit_skip, "the runtime");
  cmd->add_option("--profile", options->profile,
                  "Write this replay as a timeline with measured durations (Chrome trace JSON)");
  cmd->add_option("--repeat", options->repeat,
                  "Also replay N times in lockstep and report any difference between the runs as "
                  "nondeterminism")
      ->check(decimal_range(1, 64));
  add_runtime_flags(*cmd, options->runtime_flags, "the recorded device's capacity");
  cmd->callback([options, &global, run]() {
    *run = [options, &global]() { return run_replay(*options, global); };
  });
}

}  // namespace vtrace::cli
