// One call from a trace file to a replay report: open the trace, build the plan, open the runtimes
// through a registry, run the engine. What `vtrace replay` and the tests use.
//
// Errors, each with the exit code `vtrace replay` maps it to:
//   kTrace (2)               the file cannot be read or the plan is invalid;
//   kUsage (2)               the options do not fit the trace (an empty or inverted range);
//   kRuntimeUnavailable (3)  the registry does not know the runtime, it cannot open here, or it
//                            has less device memory than the trace holds at its peak
//                            (replay_target.h: one sentence, before anything runs).
//
// Ownership: the trace file is read by open_plan() and closed before it returns (the plan keeps
//   no reader). `registry` is borrowed for the call only. open_target() borrows `plan` for the
//   call and hands both runtimes to the caller (ReplayTarget owns them; a runtime opened before a
//   later failure is destroyed). replay_trace() owns its plan and runtimes and destroys them
//   before it returns; `observer` (may be null) is borrowed for the call, and the steps and
//   mismatches it is shown live only during each callback. The report is a value.
// Thread rules: no shared state of its own: calls on different threads are independent, even
//   with one registry, provided nobody add()s to that registry meanwhile (registry.h); each call
//   opens its own runtimes. The observer is called on the calling thread, in step order.
#pragma once

#include <expected>
#include <filesystem>
#include <memory>
#include <string>

#include "vtrace/replayer/replay_engine.h"
#include "vtrace/runtime/registry.h"

namespace vtrace::replayer {

struct ReplayFailure {
  enum class Kind : std::uint8_t { kTrace, kUsage, kRuntimeUnavailable };
  Kind kind = Kind::kTrace;
  std::string message;
};

struct ReplayTraceOptions {
  std::string runtime;  // empty: the runtime the trace was recorded on
  ReplayOptions replay;  // trace_label and runtime_name are filled in when empty
  // How the runtime is opened (threads, instruction path, capacity). A device_memory_bytes of 0
  // gives the runtime the recorded device's capacity, so capacity-dependent outcomes (an admit
  // refused as over capacity) replay as recorded on every host runtime.
  runtime::RuntimeOpenOptions open{};
};

// A trace opened and planned, or why not (kTrace: "<file>: <reason>").
std::expected<ReplayPlan, ReplayFailure> open_plan(const std::filesystem::path& trace);

// One runtime to replay `plan` on, and a second instance of the same kind for the recording's
// foreign objects, opened as replay_trace opens them (the recorded capacity when
// open.device_memory_bytes is 0, device ids "device.vtrace.<2n>" and "<2n+1>" for instance n),
// and checked against the trace's peak admitted bytes. Errors: kRuntimeUnavailable.
struct ReplayTarget {
  std::unique_ptr<runtime::DeviceRuntime> runtime;
  std::unique_ptr<runtime::DeviceRuntime> auxiliary;
};
std::expected<ReplayTarget, ReplayFailure> open_target(const ReplayPlan& plan,
                                                       const std::filesystem::path& trace,
                                                       const std::string& name,
                                                       runtime::RuntimeOpenOptions open,
                                                       const runtime::RuntimeRegistry& registry,
                                                       unsigned instance = 0);

std::expected<ReplayReport, ReplayFailure> replay_trace(const std::filesystem::path& trace,
                                                        const ReplayTraceOptions& options,
                                                        const runtime::RuntimeRegistry& registry,
                                                        ReplayObserver* observer = nullptr);

}  // namespace vtrace::replayer
