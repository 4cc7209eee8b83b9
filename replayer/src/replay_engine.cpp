// The replay loop (replay_engine.h): execute, compare, report.
#include "vtrace/replayer/replay_engine.h"

#include <fmt/format.h>

#include "vtrace/replayer/comparator.h"
#include "vtrace/replayer/replay_target.h"
#include "vtrace/replayer/shell_words.h"
#include "vtrace/replayer/step_executor.h"
#include "vtrace/replayer/step_text.h"

namespace vtrace::replayer {

namespace {

void add(ReplayChecks& total, const ReplayChecks& more) {
  total.calls += more.calls;
  total.readbacks += more.readbacks;
  total.readback_bytes += more.readback_bytes;
  total.attribution_rows += more.attribution_rows;
  total.fences += more.fences;
  total.counter_snapshots += more.counter_snapshots;
  total.error_outcomes += more.error_outcomes;
}

}  // namespace

ReplayReport execute_plan(const ReplayPlan& plan, runtime::DeviceRuntime& runtime,
                        runtime::DeviceRuntime& auxiliary, const ReplayOptions& options,
                        ReplayObserver* observer) {
  ReplayReport report;
  report.trace = options.trace_label;
  report.runtime = options.runtime_name;
  report.check = options.check.to_string();
  const auto& steps = plan.steps();
  const std::uint64_t end = std::min<std::uint64_t>(options.end_event, steps.size());
  report.first_event = std::min(options.first_event, end);
  report.end_event = end;

  StepExecutor executor(plan, runtime, auxiliary);
  for (std::uint64_t i = 0; i < end; ++i) {
    const ReplayStep& s = steps[i];
    if (observer) observer->on_step(s, i, end);
    const bool checking = s.ordinal >= options.first_event;
    if (checking) ++report.events;
    ++report.executed;
    if (const auto* opened = std::get_if<step::RuntimeOpened>(&s.body)) {
      report.runtime_differences = runtime_differences(*opened, runtime, options.runtime_name);
    }
    const Observation live = executor.execute(s);
    if (observer) observer->on_step_done(s, i);
    if (!checking) continue;
    const Observation recorded = recorded_observation(s, plan);
    Comparison comparison = compare(recorded, live, options.check);
    add(report.checked, comparison.checked);
    for (auto& difference : comparison.differences) {
      auto text = render(difference, recorded, live);
      ++report.mismatch_count;
      Mismatch m{s.ordinal,
                 describe_step(s),
                 std::move(text.expected),
                 std::move(text.actual),
                 shell_command({"vtrace", "replay", path_argument(options.trace_label), "--events",
                                fmt::format("{}:{}", s.ordinal, s.ordinal + 1), "--runtime",
                                options.runtime_name, "--check", options.check.to_string()}) +
                     open_option_words(options.runtime_open),
                 std::move(difference)};
      if (observer) observer->on_mismatch(m);
      if (report.mismatches.size() < options.max_mismatches) {
        report.mismatches.push_back(std::move(m));
      }
    }
  }
  report.complete = plan.trace_complete();
  if (!report.complete) {
    report.recovery_note = plan.recovery().note;
    report.events_recovered = plan.recovery().events_recovered;
    report.cut_offset = plan.recovery().cut_offset;
    report.file_bytes = plan.recovery().file_bytes;
    report.stopped_at = plan.recovery().stopped_at;
    report.stop_reason = plan.recovery().stop_reason;
  }
  // A submit the recording never saw end was re-executed; nothing recorded to compare it with.
  // Let it finish before the objects it uses are released.
  for (const std::uint64_t begin : plan.unfinished_submits()) {
    if (begin >= end) break;
    report.unfinished_submits.push_back(begin);
    executor.settle_submit(begin);
  }
  return report;
}

}  // namespace vtrace::replayer
