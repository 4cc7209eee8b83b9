// Options of the `contract` workload: a seeded sequence of valid and invalid calls that reaches
// every error path of the runtime contract the reference runtime can produce through the
// DeviceRuntime interface.
//
// The sequence is: every probe once, in a seed-shuffled order, then `rounds` more probes drawn at
// random (seeded), each with seeded sizes, offsets and data. A probe is one scenario: an upload
// then a readback; an out-of-bounds region; a copy between element types; a submit on another
// runtime's stream; an empty batch; a timing mode; a replay-required path; a reusable capture;
// logical work on a compute command; another runtime's buffer, command or fence; over-capacity
// admission; every readback error; every dense-linear encoding error; ... Each invalid call must
// fail with the ErrorKind the contract names, each valid one must succeed; anything else ends the
// workload with an error naming the probe.
//
// Needs a second runtime instance of the same kind (the `foreign` argument of run_workload).
#pragma once

#include <cstdint>

namespace vtrace::workloads {

struct ContractOptions {
  std::uint32_t rounds = 48;
};

}  // namespace vtrace::workloads
