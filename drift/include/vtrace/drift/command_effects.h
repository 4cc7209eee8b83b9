// What each encoded command of a plan reads and writes: the regions `compare --deep` compares and
// `--resync` overwrites, the buffers `vtrace extract` carries, and what `vtrace export` says of
// each command. Only the four kinds a StepExecutor can encode again (copy, upload, zero, dense
// linear) have effects; the outputs of a CoalesceProgramBindings take their inputs' effects, in
// order. Only own buffers are listed; a command naming a foreign one is marked `foreign`.
//
// Ownership: a CommandEffects points at the plan's encode step: the plan must outlive the map.
// Thread rules: build with visit() on one thread; find() is const. Errors: none (an unknown
// command is nullptr).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "vtrace/replayer/replay_plan.h"

namespace vtrace::drift {

// A byte range of an own buffer (its recorded ordinal).
struct Region {
  std::uint64_t buffer = 0;
  std::uint64_t offset_bytes = 0;
  std::uint64_t length_bytes = 0;
};

struct CommandEffects {
  std::uint64_t event = 0;  // the encode step's ordinal
  std::string kind;         // "EncodeDenseLinear", ...
  std::string call;         // replayer::describe_step of the encode step
  std::string shapes;       // "3x512x2048" per launch, "f16 x 1536", "4096 bytes"
  const replayer::ReplayStep* step = nullptr;  // the encode step (run again by run_private)
  std::uint64_t encoded_as = 0;                // the ordinal `step` creates (a coalesce renames it)
  std::vector<Region> writes;
  std::vector<Region> reads;  // copy sources, dense-linear inputs and weights
  bool foreign = false;       // it names a foreign buffer (in neither list)
};

// "RxIxO" per launch, space-separated.
std::string launch_shapes(const replayer::step::EncodeDenseLinear& s);

// The effects of every command of a plan, keyed by its recorded ordinal.
class CommandEffectsMap {
 public:
  // Takes the effects of the command `s` encodes (nothing for other steps). Steps in plan order.
  void visit(const replayer::ReplayStep& s);
  // The effects of an own command visited so far; nullptr when unknown (not encoded by one of
  // the four kinds, or not own).
  const CommandEffects* find(const replayer::ObjectRef& command) const;

 private:
  std::map<std::uint64_t, CommandEffects> commands_;
};

}  // namespace vtrace::drift
