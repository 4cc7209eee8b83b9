// vtrace demo [--out DIR]: record decode on reference, replay it bit-exactly on reference and on
// cpu (with the speed-up), compare it in lockstep against cpu-splitk with --deep, extract its
// first divergent command into repro.vtrace and replay that on both, print a table.
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <optional>

#include "cli_support.h"
#include "commands.h"
#include "interrupt.h"
#include "vtrace/drift/extract.h"
#include "vtrace/drift/lockstep.h"
#include "vtrace/recorder/recording_runtime.h"
#include "vtrace/replayer/replay_trace.h"
#include "vtrace/runtime/registry.h"
#include "vtrace/workloads/workload.h"

namespace vtrace::cli {

namespace {

struct DemoOptions {
  std::string out = "vtrace-demo";
};

int run_demo(const DemoOptions& o) {
  std::error_code ec;
  if (o.out.empty()) {
    print_error("--out is empty; it names the directory for the demo trace and the repro");
    return kExitUsage;
  }
  std::filesystem::create_directories(o.out, ec);
  if (ec) {
    print_error(fmt::format("{}: cannot create the output directory: {}", o.out, ec.message()));
    return kExitUsage;
  }
  const auto trace = std::filesystem::path(o.out) / "decode.vtrace";
  if (auto bad = unusable_output(trace.string(), "the trace", false)) {
    print_error(*bad);
    return kExitUsage;
  }
  const auto& registry = runtime::default_registry();
  // A replay or comparison that could not run: one sentence naming the trace, and its exit code.
  const auto failed = [&](const replayer::ReplayFailure& f) {
    print_error(about_file(trace.string(), f.message));
    return f.kind == replayer::ReplayFailure::Kind::kRuntimeUnavailable ? kExitRuntimeUnavailable
                                                                        : kExitUsage;
  };
  auto inner = registry.open("reference");
  if (!inner) {
    print_error("runtime `reference` cannot be opened: " + inner.error().message());
    return kExitRuntimeUnavailable;
  }
  workloads::WorkloadSpec spec;
  spec.kind = workloads::WorkloadKind::kDecode;
  recorder::RecorderOptions options;
  options.workload_description = spec.describe();
  auto recording = recorder::RecordingRuntime::create(std::move(*inner), "reference", trace, options);
  if (!recording) {
    print_error(about_file(trace.string(), recording.error().message()));
    return kExitUsage;
  }
  // SIGINT/SIGTERM: the recording stops at the next call boundary and is closed marked
  // interrupted; after it, the demo stops before its next replay or comparison.
  const InterruptScope interrupts;
  const auto t0 = std::chrono::steady_clock::now();
  auto report =
      workloads::run_workload(spec, **recording, nullptr, &InterruptScope::stop_requested);
  const bool stopped = report && report->stopped;
  recorder::CloseReason reason;
  if (stopped) reason.interrupted_by = signal_name(InterruptScope::signal_received());
  auto closed = (*recording)->close(reason);
  const auto t1 = std::chrono::steady_clock::now();
  if (!closed) {
    print_error(about_file(trace.string(), fmt::format("writing the trace failed: {}{}",
                                                       closed.error().message,
                                                       partial_note(trace.string()))));
    return kExitUsage;
  }
  if (!report) {
    print_error("the decode workload failed: " + report.error().message);
    return kExitMismatch;
  }
  // A signal: one sentence about the trace, and the signal's exit code; nullopt to go on.
  const auto interrupted = [&]() -> std::optional<int> {
    const int signal = InterruptScope::signal_received();
    if (signal == 0) return std::nullopt;
    print_error(interrupted_sentence(signal, trace.string(), closed->events, stopped));
    return interrupted_exit_code(signal);
  };
  if (auto code = interrupted()) return *code;
  auto replayed = replayer::replay_trace(trace, {}, registry);
  const auto t2 = std::chrono::steady_clock::now();
  if (!replayed) return failed(replayed.error());
  if (auto code = interrupted()) return *code;
  // The same trace on the optimized cpu runtime: bit-exact, faster.
  replayer::ReplayTraceOptions on_cpu;
  on_cpu.runtime = "cpu";
  auto fast = replayer::replay_trace(trace, on_cpu, registry);
  const auto t3 = std::chrono::steady_clock::now();
  if (!fast) return failed(fast.error());
  if (auto code = interrupted()) return *code;
  // And in lockstep against cpu-splitk, whose blocked reductions round differently.
  drift::CompareOptions lockstep;
  lockstep.runtimes = {"reference", "cpu-splitk"};
  lockstep.deep = true;
  auto compared = drift::compare_trace(trace, lockstep, registry);
  if (!compared) return failed(compared.error());
  if (auto code = interrupted()) return *code;
  // The first divergent command as a standalone trace, replayed on both.
  const auto repro = std::filesystem::path(o.out) / "repro.vtrace";
  std::optional<drift::ExtractReport> extracted;
  std::optional<replayer::ReplayReport> repro_reference, repro_splitk;
  if (compared->first_divergence && compared->first_divergence->command) {
    drift::ExtractOptions what;
    what.first_event = what.last_event = compared->first_divergence->event;
    auto written = drift::extract_commands(trace, repro, what, registry);
    if (!written) return failed(written.error());
    extracted = std::move(*written);
    auto on_reference = replayer::replay_trace(repro, {}, registry);
    if (!on_reference) return failed(on_reference.error());
    replayer::ReplayTraceOptions on_splitk;
    on_splitk.runtime = "cpu-splitk";
    auto drifting = replayer::replay_trace(repro, on_splitk, registry);
    if (!drifting) return failed(drifting.error());
    repro_reference = std::move(*on_reference);
    repro_splitk = std::move(*drifting);
  }
  const auto ms = [](auto d) {
    return std::chrono::duration<double, std::milli>(d).count();
  };
  const auto& c = report->final_counters;
  fmt::print("vtrace demo: {}\n\n", spec.describe());
  fmt::print("  {:<22} {}\n", "events recorded", closed->events);
  fmt::print("  {:<22} {} ({} distinct payloads, {} referenced)\n", "payload bytes",
             human_bytes(closed->payload_raw_bytes), closed->blobs,
             human_bytes(closed->payload_referenced_bytes));
  fmt::print("  {:<22} {}\n", "trace file", human_bytes(closed->file_bytes));
  fmt::print("  {:<22} {:.2f}\n", "compression ratio",
             closed->file_bytes == 0 ? 0.0
                                     : static_cast<double>(closed->payload_raw_bytes) /
                                           static_cast<double>(closed->file_bytes));
  if (c) {
    fmt::print("  {:<22} submissions {}, commands {}, dense launches {}, uploaded {}, read back {}\n",
               "counters", c->submissions, c->commands, c->dense_linear_launches,
               human_bytes(c->uploaded_bytes), human_bytes(c->readback_bytes));
  }
  fmt::print("  {:<22} {} calls, {} readbacks ({}), {} counter snapshots\n", "checked on replay",
             replayed->checked.calls, replayed->checked.readbacks,
             human_bytes(replayed->checked.readback_bytes), replayed->checked.counter_snapshots);
  fmt::print("  {:<22} record {:.0f} ms, replay {:.0f} ms\n", "time", ms(t1 - t0), ms(t2 - t1));
  fmt::print("  {:<22} {}\n", "verdict", replayed->matched() ? "match (bit-exact)" : "MISMATCH");
  fmt::print("  {:<22} {} ({:.0f} ms, {:.1f}x the reference replay)\n", "replay on cpu",
             fast->matched() ? "match (bit-exact)" : "MISMATCH", ms(t3 - t2),
             ms(t3 - t2) > 0 ? ms(t2 - t1) / ms(t3 - t2) : 0.0);
  const auto& cmp = *compared;
  fmt::print("  {:<22} {} ({} commands compared, --deep)\n", "vs cpu-splitk", cmp.verdict(),
             cmp.counts().commands);
  if (cmp.first_divergence) {
    const auto& f = *cmp.first_divergence;
    fmt::print("  {:<22} event {} ({}) {}: {}\n", "first divergence", f.event, f.kind, f.call,
               drift::drift_class_name(f.cls));
    for (const auto& command : cmp.commands) {
      if (command.event != f.event || command.command != f.command) continue;
      const auto& p = command.results.front();
      fmt::print(
          "  {:<22} shapes {}, node {}, {} of {} elements differ, max abs {:.3g}, max ulp {}\n", "",
          command.shapes, command.node_index ? fmt::format("{}", *command.node_index) : "-",
          p.stats.differing, p.stats.elements, p.stats.max_abs_error, p.stats.max_ulp);
      break;
    }
  }
  if (extracted) {
    fmt::print("  {:<22} {} ({} events, {} buffers, {}): {} on reference, {} on cpu-splitk\n",
               "extracted repro", repro.string(), extracted->events, extracted->buffers.size(),
               human_bytes(extracted->uploaded_bytes),
               repro_reference->matched() ? "match" : "MISMATCH",
               repro_splitk->matched() ? "match" : "mismatch");
  }
  // The commands to look further, each one a line that runs as printed (shell words).
  const std::string t = shell_quote(path_argument(trace.string()));
  fmt::print("\ntrace: {}\n", trace.string());
  fmt::print("try:   vtrace info {0}  |  vtrace dump {0} --events 0:5  |  vtrace replay {0}\n", t);
  fmt::print(
      "       vtrace compare {0} --runtimes reference,cpu-splitk --resync --html report.html\n", t);
  if (extracted) {
    fmt::print("       vtrace replay {0} --runtime cpu-splitk  |  vtrace dump {0}\n",
               shell_quote(path_argument(repro.string())));
  }
  // Expected: bit-exact on reference and cpu, cpu-splitk's drift found (its reductions are
  // longer than one 256-long block here), and its first divergent command reproduced alone.
  const bool expected = replayed->matched() && fast->matched() && !cmp.matched() &&
                        cmp.first_divergence.has_value() && extracted &&
                        extracted->reproduces_baseline && repro_reference->matched() &&
                        !repro_splitk->matched();
  if (!expected) print_error("the demo did not behave as expected (see above)");
  return expected ? kExitOk : kExitMismatch;
}

}  // namespace

void add_demo_command(CLI::App& app, const GlobalOptions& /*global*/, RunFunction* run) {
  auto options = std::make_shared<DemoOptions>();
  auto* cmd = app.add_subcommand(
      "demo",
      "Record the decode workload, replay it on reference and cpu, compare with cpu-splitk");
  cmd->add_option("--out", options->out, "Directory for the demo trace and the repro")->capture_default_str();
  cmd->callback([options, run]() { *run = [options]() { return run_demo(*options); }; });
}

}  // namespace vtrace::cli
