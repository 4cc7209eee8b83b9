#include "vtrace/replayer/replay_trace.h"

#include <fmt/format.h>

#include "vtrace/replayer/replay_target.h"

namespace vtrace::replayer {

namespace rt = vtrace::runtime;

namespace {
// "<file>: <message>", naming the file once.
std::string about(const std::filesystem::path& trace, const std::string& message) {
  return schema::about_file(trace.string(), message);
}
}  // namespace

std::expected<ReplayPlan, ReplayFailure> open_plan(const std::filesystem::path& trace) {
  auto reader = schema::TraceReader::open(trace);
  if (!reader) {
    return std::unexpected(
        ReplayFailure{ReplayFailure::Kind::kTrace, about(trace, reader.error().message)});
  }
  auto plan = ReplayPlan::build(**reader);
  if (!plan) {
    return std::unexpected(
        ReplayFailure{ReplayFailure::Kind::kTrace, about(trace, plan.error().message)});
  }
  return std::move(*plan);
}

std::expected<ReplayTarget, ReplayFailure> open_target(
    const ReplayPlan& plan, const std::filesystem::path& trace, const std::string& name,
    rt::RuntimeOpenOptions open, const rt::RuntimeRegistry& registry, unsigned instance) {
  using Kind = ReplayFailure::Kind;
  if (open.device_memory_bytes == 0) {
    if (const auto* recorded = recorded_device(plan)) {
      open.device_memory_bytes = recorded->descriptor.total_memory_bytes;
    }
  }
  open.device_id = fmt::format("device.vtrace.{}", 2 * instance);
  auto runtime = registry.open(name, open);
  if (!runtime) {
    return std::unexpected(ReplayFailure{
        Kind::kRuntimeUnavailable, fmt::format("runtime `{}` cannot be opened: {}", name,
                                               runtime.error().message())});
  }
  if (auto short_of = check_capacity(plan, **runtime, name)) {
    return std::unexpected(ReplayFailure{Kind::kRuntimeUnavailable, about(trace, *short_of)});
  }
  // Foreign objects of the recording came from another instance of the same kind.
  open.device_id = fmt::format("device.vtrace.{}", 2 * instance + 1);
  auto auxiliary = registry.open(name, open);
  if (!auxiliary) {
    return std::unexpected(ReplayFailure{
        Kind::kRuntimeUnavailable,
        fmt::format("a second instance of runtime `{}` (for foreign objects) cannot be opened: {}",
                    name, auxiliary.error().message())});
  }
  return ReplayTarget{std::move(*runtime), std::move(*auxiliary)};
}

std::expected<ReplayReport, ReplayFailure> replay_trace(const std::filesystem::path& trace,
                                                        const ReplayTraceOptions& options,
                                                        const rt::RuntimeRegistry& registry,
                                                        ReplayObserver* observer) {
  using Kind = ReplayFailure::Kind;
  auto plan = open_plan(trace);
  if (!plan) return std::unexpected(plan.error());
  ReplayOptions replay = options.replay;
  const std::uint64_t events = plan->steps().size();
  if ((replay.first_event > 0 && replay.first_event >= events) ||
      (replay.end_event != std::numeric_limits<std::uint64_t>::max() &&
       (replay.end_event > events || replay.end_event <= replay.first_event))) {
    return std::unexpected(ReplayFailure{
        Kind::kUsage,
        fmt::format("{}: the event range {}:{} is not inside the trace's {} {}events (expected "
                    "A < B <= {})",
                    trace.string(), replay.first_event,
                    replay.end_event == std::numeric_limits<std::uint64_t>::max()
                        ? std::string("end")
                        : std::to_string(replay.end_event),
                    events, plan->trace_complete() ? "" : "replayable recovered ", events)});
  }
  std::string name = options.runtime.empty() ? plan->recorded_runtime() : options.runtime;
  if (name.empty()) name = "reference";
  auto target = open_target(*plan, trace, name, options.open, registry);
  if (!target) return std::unexpected(target.error());
  if (replay.trace_label.empty()) replay.trace_label = trace.string();
  if (replay.runtime_name.empty()) replay.runtime_name = name;
  replay.runtime_open = options.open;
  return execute_plan(*plan, *target->runtime, *target->auxiliary, replay, observer);
}

}  // namespace vtrace::replayer
