// vtrace demo [--out DIR]: record decode on reference, replay it bit-exactly, print a table.
#include <fmt/format.h>

#include <chrono>
#include <filesystem>

#include "cli_support.h"
#include "commands.h"
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
    print_error(about_file(trace.string(), "cannot start recording: " + recording.error().message()));
    return kExitUsage;
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto report = workloads::run_workload(spec, **recording, nullptr);
  auto closed = (*recording)->close();
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
  auto replayed = replayer::replay_trace(trace, {}, registry);
  const auto t2 = std::chrono::steady_clock::now();
  if (!replayed) {
    print_error(about_file(trace.string(), replayed.error().message));
    return replayed.error().kind == replayer::ReplayFailure::Kind::kRuntimeUnavailable
               ? kExitRuntimeUnavailable
               : kExitUsage;
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
  fmt::print("  {:<22} {}\n\n", "verdict", replayed->matched() ? "match (bit-exact)" : "MISMATCH");
  fmt::print("trace: {}\n", trace.string());
  fmt::print("try:   vtrace info {0}  |  vtrace dump {0} --events 0:5  |  vtrace replay {0}\n",
             trace.string());
  return replayed->matched() ? kExitOk : kExitMismatch;
}

}  // namespace

void add_demo_command(CLI::App& app, const GlobalOptions& /*global*/, RunFunction* run) {
  auto options = std::make_shared<DemoOptions>();
  auto* cmd = app.add_subcommand("demo", "Record the decode workload, replay it, print a summary");
  cmd->add_option("--out", options->out, "Directory for the demo trace")->capture_default_str();
  cmd->callback([options, run]() { *run = [options]() { return run_demo(*options); }; });
}

}  // namespace vtrace::cli
