// Workloads: programs that drive a DeviceRuntime the way a product would, through the
// DeviceRuntime interface only (admit + allocate, CommandBatch push helpers, submit, wait_fence,
// readback, counter_snapshot). Run on a RecordingRuntime they produce traces; run on a raw runtime
// they are the baseline replay is measured against.
//
//   tiny      the spec's 2x2 example: weights [[2,1],[-1,3]], input [1.5,-2] -> [1.0,-7.5].
//   decode    an f16 transformer-shaped decode loop (decode_workload.h).
//   contract  a seeded sequence of valid and invalid calls reaching every error path of the
//             contract (contract_workload.h).
//
// Determinism: for a given spec and runtime kind, a workload makes the same calls with the same
// arguments in the same order every time. Nothing depends on time, addresses or threads, so two
// recordings of one spec give the same trace.
//
// Stopping early: run_workload's `stop_requested` is asked at every call boundary a workload
// can end on cleanly (decode: before its weights are made, before each weight upload and each
// step; contract: before each probe; tiny: before it starts). When it answers true the workload
// makes no further call, releases its handles (everything it submitted was already waited for)
// and returns its report so far with `stopped` set: a recording of it ends on a call boundary.
// `vtrace record` and `vtrace demo` answer it from a SIGINT/SIGTERM flag (cli/interrupt.h).
//
// Ownership: the workload borrows the runtimes for the duration of run_workload() and releases
//   every handle it created before returning.
// Thread rules: one thread; the runtimes must not be used by anyone else during the call.
// Errors: WorkloadError, one sentence naming the step and the call. A runtime call that fails
//   where the workload expected success (or succeeds or fails differently where it expected a
//   given error) is a workload error: workloads double as conformance checks.
#pragma once

#include <cstdint>
#include <expected>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vtrace/runtime/device_runtime.h"
#include "vtrace/workloads/contract_workload.h"
#include "vtrace/workloads/decode_workload.h"
#include "vtrace/workloads/workload_error.h"

namespace vtrace::workloads {

enum class WorkloadKind : std::uint8_t { kTiny, kDecode, kContract };

std::string_view workload_name(WorkloadKind kind);  // "tiny", "decode", "contract"
std::optional<WorkloadKind> parse_workload_kind(std::string_view name);
// All kinds, in a stable order.
std::vector<WorkloadKind> all_workload_kinds();
// One sentence describing the workload (for --help and trace metadata).
std::string_view workload_summary(WorkloadKind kind);

// The parameters of a WorkloadSpec, named as `vtrace record` spells their options (`--steps`).
// kSteps is decode's steps and contract's rounds; kHidden..kWeights are decode's shape and
// weights, kNanAtStep its injected fault (DecodeOptions).
enum class WorkloadParameter : std::uint8_t {
  kSeed,
  kSteps,
  kHidden,
  kFfn,
  kLayers,
  kParticipants,
  kWeights,
  kNanAtStep,  // decode: "nan-at-step"
};
std::string_view workload_parameter_name(WorkloadParameter parameter);  // "seed", "steps", ...
// All parameters, in a stable order.
std::vector<WorkloadParameter> all_workload_parameters();
// Whether workload `kind` reads `parameter`; run_workload ignores the others. tiny reads none,
// contract kSeed and kSteps, decode all.
bool workload_takes(WorkloadKind kind, WorkloadParameter parameter);

struct WorkloadSpec {
  WorkloadKind kind = WorkloadKind::kTiny;
  // Seeds every random choice (weights, activations, the contract sequence).
  std::uint64_t seed = 1;
  DecodeOptions decode;
  ContractOptions contract;

  // "decode hidden=512 ffn=2048 layers=4 participants=2 steps=8 seed=1": what a trace's metadata
  // records as its workload description.
  std::string describe() const;
};

// What a workload observed. Replaying its trace reproduces every one of these observations.
struct WorkloadReport {
  std::string workload;
  std::uint64_t submissions = 0;        // successful submits made by the workload itself
  std::uint64_t readbacks = 0;          // successful readbacks
  std::uint64_t readback_bytes = 0;     // bytes returned by them
  std::uint64_t readback_digest = 0;    // XXH3-64 over all readback bytes, in call order
  std::vector<std::uint8_t> last_readback;  // the final readback's bytes (logits, tiny's output)
  std::uint64_t counter_checks = 0;     // counter snapshots compared with expected deltas
  std::uint64_t expected_errors = 0;    // calls that failed exactly as the workload expected
  std::vector<runtime::ErrorKind> error_kinds;  // distinct kinds seen, sorted
  std::optional<runtime::CounterSnapshot> final_counters;
  // stop_requested answered true: the workload ended early, at a call boundary, and this report
  // covers the calls it made before.
  bool stopped = false;
};

// Asked between calls (see "Stopping early" above); called on the workload's thread. An empty
// function never stops.
using StopRequested = std::function<bool()>;

// Fails, in one sentence naming the value and what is accepted, when run_workload would refuse
// `spec` whatever the runtime: for decode check_decode_shape and, when `weights` is set,
// check_decode_weights (which reads the file). tiny and contract accept every spec (contract's
// rounds may be 0: every probe once). What the device can hold is check_decode_fits (it needs
// the runtime's capacity). Call it before a trace is created, so a bad value records nothing.
WorkloadResult<void> validate(const WorkloadSpec& spec);

// Runs `spec` on `rt`. `foreign` is a second runtime of the same kind (opened independently, not
// recorded); the contract workload needs it for foreign streams, fences and buffers and fails
// without it; the other workloads ignore it.
WorkloadResult<WorkloadReport> run_workload(const WorkloadSpec& spec, runtime::DeviceRuntime& rt,
                                            runtime::DeviceRuntime* foreign);
// As above, stopping at the first call boundary where `stop_requested` answers true.
WorkloadResult<WorkloadReport> run_workload(const WorkloadSpec& spec, runtime::DeviceRuntime& rt,
                                            runtime::DeviceRuntime* foreign,
                                            const StopRequested& stop_requested);

}  // namespace vtrace::workloads
