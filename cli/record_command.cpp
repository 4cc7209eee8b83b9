// vtrace record --workload W [--runtime R] [--seed S] [--steps N] [--level L] -o out.vtrace
//               [--threads N] [--isa NAME] [--device-memory SIZE]
//               [--mode full|flight [--window-batches N] [--window-mib M]] [--nan-at-step K]
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <expected>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cli_support.h"
#include "commands.h"
#include "interrupt.h"
#include "runtime_flags.h"
#include "vtrace/recorder/recording_runtime.h"
#include "vtrace/runtime/registry.h"
#include "vtrace/workloads/decode_workload.h"
#include "vtrace/workloads/workload.h"

namespace vtrace::cli {

namespace {

struct RecordOptions {
  std::string workload;
  std::string runtime = "reference";
  std::uint64_t seed = 1;
  std::optional<std::uint32_t> steps;
  int level = 1;
  std::string output;
  std::uint32_t hidden = workloads::DecodeOptions{}.hidden;
  std::uint32_t ffn = workloads::DecodeOptions{}.ffn;
  std::uint32_t layers = workloads::DecodeOptions{}.layers;
  std::uint32_t participants = workloads::DecodeOptions{}.participants;
  std::optional<std::string> weights;
  std::optional<std::uint32_t> nan_at_step;
  // Flight mode (docs/FLIGHT.md).
  std::string mode = "full";
  std::optional<std::uint64_t> window_batches;
  std::optional<std::uint64_t> window_mib;
  RuntimeFlags runtime_flags;
};

// The recorder options of --mode and its window options; a usage sentence when they do not fit.
std::expected<recorder::RecorderOptions, std::string> capture_options(const RecordOptions& o) {
  recorder::RecorderOptions r;
  if (o.mode == "full") {
    if (o.window_batches || o.window_mib) {
      return std::unexpected(fmt::format("{} needs --mode flight (it sizes the flight window)",
                                         o.window_batches ? "--window-batches" : "--window-mib"));
    }
    return r;
  }
  if (o.mode != "flight") {
    return std::unexpected(fmt::format("--mode takes full or flight, not `{}`", o.mode));
  }
  r.mode = recorder::CaptureMode::kFlight;
  if (o.window_batches) {
    if (*o.window_batches == 0) return std::unexpected("--window-batches takes 1 or more, not 0");
    r.flight.window_batches = *o.window_batches;
  }
  if (o.window_mib) {
    if (*o.window_mib == 0 || *o.window_mib > (1u << 20)) {
      return std::unexpected(
          fmt::format("--window-mib takes 1 to 1048576 (MiB), not {}", *o.window_mib));
    }
    r.flight.window_bytes = *o.window_mib << 20;
  }
  r.flight.trigger_on_signal = true;
  return r;
}

// "2 windows written: w.vtrace (non_finite_readback at event 4017, 16 batches), ...".
void print_windows(const recorder::FlightStats& stats, const std::string& output) {
  if (stats.windows_written == 0) {
    fmt::print(
        "flight recorder: no trigger fired, nothing written ({} held at most, {} "
        "checkpoints)\n",
        human_bytes(stats.peak_held_bytes), stats.checkpoints);
    return;
  }
  fmt::print("flight recorder: {} window{} written beside {} ({} held at most, {} checkpoints{})\n",
             stats.windows_written, stats.windows_written == 1 ? "" : "s", output,
             human_bytes(stats.peak_held_bytes), stats.checkpoints,
             stats.windows_not_written > 0
                 ? fmt::format(", {} trigger(s) not written: {}", stats.windows_not_written,
                               stats.last_error)
                 : "");
}

// What a flight recording left, for the sentence of an interrupted run (a window's events are
// not "the events recorded so far", and nothing is marked interrupted): "the flight recorder
// wrote 2 windows: w.vtrace (85 events, signal), w.2.vtrace (85 events, signal)", or "... wrote
// no window (no trigger fired), so no trace was written", then the triggers that wrote nothing.
std::string flight_outcome(const recorder::FlightStats& stats) {
  std::string out;
  if (stats.windows.empty()) {
    out = "the flight recorder wrote no window (no trigger fired), so no trace was written";
  } else {
    std::vector<std::string> windows;
    for (const auto& w : stats.windows) {
      windows.push_back(fmt::format("{} ({} events, {})", w.path.string(), w.events, w.trigger));
    }
    out = fmt::format("the flight recorder wrote {} window{}: {}", windows.size(),
                      windows.size() == 1 ? "" : "s", fmt::join(windows, ", "));
  }
  if (stats.windows_not_written > 0) {
    out += fmt::format("; {} trigger(s) not written: {}", stats.windows_not_written,
                       stats.last_error);
  }
  return out;
}

// The workload options given on the command line that `kind` does not read (workload_takes):
// "workload `tiny` does not take --steps (it takes no workload options)", or nullopt.
std::optional<std::string> untaken_option(const CLI::App& cmd, workloads::WorkloadKind kind) {
  std::vector<std::string> taken;
  std::optional<std::string> given;
  for (const auto parameter : workloads::all_workload_parameters()) {
    const auto option = fmt::format("--{}", workloads::workload_parameter_name(parameter));
    if (workloads::workload_takes(kind, parameter)) {
      taken.push_back(option);
    } else if (!given && cmd.count(option) > 0) {
      given = option;
    }
  }
  if (!given) return std::nullopt;
  return fmt::format(
      "workload `{}` does not take {} (it takes {})", workloads::workload_name(kind), *given,
      taken.empty() ? "no workload options" : fmt::format("{}", fmt::join(taken, ", ")));
}

int run_record(const RecordOptions& o, const CLI::App& cmd, const GlobalOptions& global) {
  if (auto bad = refused_outputs({{"-o", o.output, "the trace", true}},
                                 {{"--weights", o.weights.value_or("")}})) {
    print_error(*bad);
    return kExitUsage;
  }
  auto kind = workloads::parse_workload_kind(o.workload);
  if (!kind) {
    print_error(fmt::format("unknown workload `{}` (known: tiny, decode, contract)", o.workload));
    return kExitUsage;
  }
  if (auto untaken = untaken_option(cmd, *kind)) {
    print_error(*untaken);
    return kExitUsage;
  }
  if (o.weights && o.weights->empty()) {
    print_error("--weights: an empty path names no safetensors file");
    return kExitUsage;
  }
  workloads::WorkloadSpec spec;
  spec.kind = *kind;
  spec.seed = o.seed;
  spec.decode = {
      o.hidden,     o.ffn, o.layers, o.participants, spec.decode.steps, o.weights.value_or(""),
      o.nan_at_step};
  auto capture = capture_options(o);
  if (!capture) {
    print_error(capture.error());
    return kExitUsage;
  }
  if (o.steps) {
    spec.decode.steps = *o.steps;
    spec.contract.rounds = *o.steps;
  }
  // Every value before anything runs: a bad one records nothing.
  if (auto valid = workloads::validate(spec); !valid) {
    print_error(fmt::format("{} (nothing was recorded)", valid.error().message));
    return kExitUsage;
  }

  auto open = open_options(o.runtime_flags, {o.runtime});
  if (!open) {
    print_error(open.error());
    return kExitUsage;
  }
  const auto& registry = runtime::default_registry();
  open->device_id = "device.vtrace.0";
  auto inner = registry.open(o.runtime, *open);
  if (!inner) {
    print_error(fmt::format("runtime `{}` cannot be opened: {}", o.runtime, inner.error().message()));
    return kExitRuntimeUnavailable;
  }
  if (spec.kind == workloads::WorkloadKind::kDecode) {
    if (auto fits = workloads::check_decode_fits(spec.decode,
                                                 (*inner)->descriptor().total_memory_bytes);
        !fits) {
      print_error(fmt::format("runtime `{}`: {} (nothing was recorded)", o.runtime,
                              fits.error().message));
      return kExitUsage;
    }
  }
  std::unique_ptr<runtime::DeviceRuntime> foreign;
  if (spec.kind == workloads::WorkloadKind::kContract) {
    open->device_id = "device.vtrace.1";
    auto opened = registry.open(o.runtime, *open);
    if (!opened) {
      print_error(fmt::format("a second `{}` runtime (for foreign objects) cannot be opened: {}",
                              o.runtime, opened.error().message()));
      return kExitRuntimeUnavailable;
    }
    foreign = std::move(*opened);
  }
  recorder::RecorderOptions recorder_options = std::move(*capture);
  const bool flight = recorder_options.mode == recorder::CaptureMode::kFlight;
  recorder_options.writer.zstd_level = o.level;
  recorder_options.workload_description = spec.describe();
  auto recording = recorder::RecordingRuntime::create(std::move(*inner), o.runtime, o.output,
                                                      recorder_options);
  if (!recording) {
    print_error(about_file(o.output, recording.error().message()));
    return kExitUsage;
  }
  // SIGINT/SIGTERM: stop at the next call boundary, close the trace marked interrupted.
  const InterruptScope interrupts;
  auto report =
      workloads::run_workload(spec, **recording, foreign.get(), &InterruptScope::stop_requested);
  const int signal = InterruptScope::signal_received();
  const bool stopped = report && report->stopped;
  if (flight && !report) {
    // A failed workload is a trigger too: the window that led to the failure.
    (void)(*recording)
        ->dump_window(recorder::FlightTriggerKind::kWorkloadFailed, report.error().message);
  }
  recorder::CloseReason reason;
  if (stopped) reason.interrupted_by = signal_name(signal);
  auto closed = (*recording)->close(reason);
  // After close(): every window the recording wrote is counted.
  const auto flight_stats = (*recording)->flight_stats();
  if (!closed) {
    print_error(about_file(o.output, fmt::format("writing the trace failed: {}{}",
                                                 closed.error().message, partial_note(o.output))));
    return kExitUsage;
  }
  if (!report) {
    print_error(fmt::format(
        "workload `{}` failed on runtime `{}`: {} ({})", o.workload, o.runtime,
        report.error().message,
        flight ? fmt::format("flight windows: {} written beside {}",
                             flight_stats ? flight_stats->windows_written : 0, o.output)
               : fmt::format("the trace {} holds the calls up to the failure", o.output)));
    return kExitMismatch;
  }
  if (signal != 0 && flight && flight_stats) {
    // No trace at -o holds "the events recorded so far": say what the windows are.
    print_error(fmt::format("interrupted by {}{}; {}", signal_name(signal),
                            stopped ? ": the workload stopped at a call boundary"
                                    : " after the workload's last call",
                            flight_outcome(*flight_stats)));
    return interrupted_exit_code(signal);
  }
  if (signal != 0) {
    print_error(interrupted_sentence(signal, o.output, closed->events, stopped));
    return interrupted_exit_code(signal);
  }
  if (flight && flight_stats) {
    if (!global.quiet) print_windows(*flight_stats, o.output);
    return kExitOk;
  }
  if (!global.quiet) {
    fmt::print("recorded {} on {}: {} events, {} payloads ({} raw), {} in {}\n",
               spec.describe(), o.runtime, closed->events, closed->blobs,
               human_bytes(closed->payload_raw_bytes), human_bytes(closed->file_bytes), o.output);
    fmt::print("workload: {} submissions, {} readbacks ({} bytes, xxh3 {:016x}), {} counter checks, "
               "{} expected errors\n",
               report->submissions, report->readbacks, report->readback_bytes,
               report->readback_digest, report->counter_checks, report->expected_errors);
  }
  return kExitOk;
}

}  // namespace

void add_record_command(CLI::App& app, const GlobalOptions& global, RunFunction* run) {
  auto options = std::make_shared<RecordOptions>();
  auto* cmd = app.add_subcommand("record", "Run a workload on a runtime and record every call");
  cmd->add_option("-w,--workload", options->workload, "tiny, decode or contract")->required();
  cmd->add_option("-r,--runtime", options->runtime, "Registry name of the runtime")
      ->capture_default_str();
  cmd->add_option("--seed", options->seed, "decode, contract: seed of every random choice")
      ->capture_default_str();
  cmd->add_option("--steps", options->steps, "decode: decode steps; contract: extra random rounds");
  cmd->add_option("--level", options->level, "zstd compression level of the trace (1-19)")
      ->capture_default_str()
      ->check(decimal_range(1, 19));
  cmd->add_option("-o,--output", options->output, "The trace file to write")->required();
  cmd->add_option("--hidden", options->hidden, "decode: hidden size")->capture_default_str();
  cmd->add_option("--ffn", options->ffn, "decode: feed-forward size")->capture_default_str();
  cmd->add_option("--layers", options->layers, "decode: layers")->capture_default_str();
  cmd->add_option("--participants", options->participants, "decode: participants (1-8)")
      ->capture_default_str();
  cmd->add_option("--weights", options->weights,
                  "decode: safetensors file to use instead of generated weights");
  cmd->add_option("--nan-at-step", options->nan_at_step,
                  "decode: the first activation of step K (0-based) is a NaN (an injected fault)");
  cmd->add_option("--mode", options->mode,
                  "full: every call to -o; flight: a bounded window in memory, written to -o "
                  "(then -o's stem.2, .3...) when a trigger fires (docs/FLIGHT.md)")
      ->capture_default_str();
  cmd->add_option("--window-batches", options->window_batches,
                  "flight: the window's last N batches (default 16)");
  cmd->add_option("--window-mib", options->window_mib,
                  "flight: at most M MiB of events and payloads held (default 256)");
  add_runtime_flags(*cmd, options->runtime_flags,
                    "the runtime's own: reference 64MiB, cpu and cpu-splitk 4GiB");
  cmd->callback([options, cmd, &global, run]() {
    *run = [options, cmd, &global]() { return run_record(*options, *cmd, global); };
  });
}

}  // namespace vtrace::cli
