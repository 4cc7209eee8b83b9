// How a trace fits the runtime it is replayed on.
//
// A trace recorded on one runtime may be replayed on another (reference <-> cpu <-> cpu-splitk,
// later cuda). Replay then compares everything the contract fixes (outcomes, error kinds,
// attribution, fences, readback bytes, counters). What legitimately differs between runtimes is
// not a mismatch: runtime_differences() lists it once, as information, for the report. And a
// trace that needs more device memory than the target has is refused before it runs
// (check_capacity), in one sentence, instead of failing its admits one by one.
//
// Thread rules: pure functions. Errors: check_capacity returns the sentence.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "vtrace/replayer/replay_plan.h"
#include "vtrace/runtime/device_runtime.h"

namespace vtrace::replayer {

// The recorded RuntimeOpened step (the device the trace was recorded on), if the plan has one.
const step::RuntimeOpened* recorded_device(const ReplayPlan& plan);

// The most device memory the recording held admitted at once: the sum of the sizes of
// successful admits, less each buffer's size at its Released event (a permit's bytes stay held
// until its buffer is released; a permit that never became a buffer holds them to the end, as
// the runtime cannot know better). `event` is the ordinal of the admit that reached the peak.
struct CapacityNeed {
  std::uint64_t bytes = 0;
  std::uint64_t event = 0;
};
CapacityNeed peak_admitted_bytes(const ReplayPlan& plan);

// One sentence per property that differs between the recorded device and `live` and that the
// contract leaves to the runtime: registry name, device class, implementation fingerprint,
// capacity, attention policy, capabilities. Empty when the trace replays on its own kind.
std::vector<std::string> runtime_differences(const step::RuntimeOpened& recorded,
                                             const runtime::DeviceRuntime& live,
                                             const std::string& live_name);

// nullopt when `live` has the capacity the trace needs; otherwise the sentence that says how
// much the trace needs, where, and how much the target has.
std::optional<std::string> check_capacity(const ReplayPlan& plan,
                                          const runtime::DeviceRuntime& live,
                                          const std::string& live_name);

}  // namespace vtrace::replayer
