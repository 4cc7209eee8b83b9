#include "vtrace/workloads/workload.h"

#include <fmt/format.h>

#include <array>

namespace vtrace::workloads {

// Defined in the per-workload sources.
WorkloadResult<WorkloadReport> run_tiny(const WorkloadSpec& spec, runtime::DeviceRuntime& rt);
WorkloadResult<WorkloadReport> run_decode(const WorkloadSpec& spec, runtime::DeviceRuntime& rt,
                                          const StopRequested& stop);
WorkloadResult<WorkloadReport> run_contract(const WorkloadSpec& spec, runtime::DeviceRuntime& rt,
                                            runtime::DeviceRuntime& foreign,
                                            const StopRequested& stop);

namespace {
struct KindInfo {
  WorkloadKind kind;
  std::string_view name;
  std::string_view summary;
};
constexpr std::array<KindInfo, 3> kKinds = {{
    {WorkloadKind::kTiny, "tiny", "the spec's 2x2 dense linear: [1.5,-2] x [[2,1],[-1,3]]^T"},
    {WorkloadKind::kDecode, "decode",
     "an f16 transformer-shaped decode loop (static weights, dense linears, logits readback)"},
    {WorkloadKind::kContract, "contract",
     "a seeded sequence of valid and invalid calls reaching every contract error path"},
}};
}  // namespace

std::string_view workload_name(WorkloadKind kind) {
  for (const auto& info : kKinds) {
    if (info.kind == kind) return info.name;
  }
  return "unknown";
}

std::string_view workload_summary(WorkloadKind kind) {
  for (const auto& info : kKinds) {
    if (info.kind == kind) return info.summary;
  }
  return "";
}

std::optional<WorkloadKind> parse_workload_kind(std::string_view name) {
  for (const auto& info : kKinds) {
    if (info.name == name) return info.kind;
  }
  return std::nullopt;
}

std::vector<WorkloadKind> all_workload_kinds() {
  std::vector<WorkloadKind> kinds;
  for (const auto& info : kKinds) kinds.push_back(info.kind);
  return kinds;
}

namespace {
constexpr std::array<std::pair<WorkloadParameter, std::string_view>, 8> kParameters = {{
    {WorkloadParameter::kSeed, "seed"},
    {WorkloadParameter::kSteps, "steps"},
    {WorkloadParameter::kHidden, "hidden"},
    {WorkloadParameter::kFfn, "ffn"},
    {WorkloadParameter::kLayers, "layers"},
    {WorkloadParameter::kParticipants, "participants"},
    {WorkloadParameter::kWeights, "weights"},
    {WorkloadParameter::kNanAtStep, "nan-at-step"},
}};
}  // namespace

std::string_view workload_parameter_name(WorkloadParameter parameter) {
  for (const auto& [p, name] : kParameters) {
    if (p == parameter) return name;
  }
  return "unknown";
}

std::vector<WorkloadParameter> all_workload_parameters() {
  std::vector<WorkloadParameter> parameters;
  for (const auto& entry : kParameters) parameters.push_back(entry.first);
  return parameters;
}

bool workload_takes(WorkloadKind kind, WorkloadParameter parameter) {
  switch (kind) {
    case WorkloadKind::kTiny:
      return false;  // the spec's fixed 2x2 example
    case WorkloadKind::kContract:
      return parameter == WorkloadParameter::kSeed || parameter == WorkloadParameter::kSteps;
    case WorkloadKind::kDecode:
      return true;
  }
  return false;
}

WorkloadResult<void> validate(const WorkloadSpec& spec) {
  if (spec.kind != WorkloadKind::kDecode) return {};
  if (auto shape = check_decode_shape(spec.decode); !shape) return shape;
  if (spec.decode.weights.empty()) return {};
  return check_decode_weights(spec.decode);
}

std::string WorkloadSpec::describe() const {
  switch (kind) {
    case WorkloadKind::kTiny:
      return "tiny";
    case WorkloadKind::kDecode:
      return fmt::format(
          "decode hidden={} ffn={} layers={} participants={} steps={} seed={}{}{}", decode.hidden,
          decode.ffn, decode.layers, decode.participants, decode.steps, seed,
          decode.weights.empty() ? "" : " weights=" + decode.weights.string(),
          decode.nan_at_step ? fmt::format(" nan_at_step={}", *decode.nan_at_step) : "");
    case WorkloadKind::kContract:
      return fmt::format("contract rounds={} seed={}", contract.rounds, seed);
  }
  return "unknown";
}

WorkloadResult<WorkloadReport> run_workload(const WorkloadSpec& spec, runtime::DeviceRuntime& rt,
                                            runtime::DeviceRuntime* foreign) {
  return run_workload(spec, rt, foreign, StopRequested());
}

WorkloadResult<WorkloadReport> run_workload(const WorkloadSpec& spec, runtime::DeviceRuntime& rt,
                                            runtime::DeviceRuntime* foreign,
                                            const StopRequested& stop_requested) {
  const StopRequested never = [] { return false; };
  const StopRequested& stop = stop_requested ? stop_requested : never;
  switch (spec.kind) {
    case WorkloadKind::kTiny:
      // One short sequence of calls: its only boundary is before the first.
      if (stop()) {
        WorkloadReport report;
        report.workload = "tiny";
        report.final_counters = rt.counter_snapshot();
        report.stopped = true;
        return report;
      }
      return run_tiny(spec, rt);
    case WorkloadKind::kDecode:
      return run_decode(spec, rt, stop);
    case WorkloadKind::kContract:
      if (foreign == nullptr) {
        return std::unexpected(WorkloadError{
            "the contract workload needs a second runtime of the same kind for foreign objects"});
      }
      return run_contract(spec, rt, *foreign, stop);
  }
  return std::unexpected(WorkloadError{"unknown workload kind"});
}

}  // namespace vtrace::workloads
