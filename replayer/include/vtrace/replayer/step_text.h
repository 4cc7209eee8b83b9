// The text that describes a replay step and the values it answers: one place for what `vtrace
// replay` prints in a mismatch (and what dump and the later diff can share).
//
//   describe_step(step)     the call a step re-executes, one line: "readback(stream#0, buffer#10,
//                           src 0 dst 0 len 256, f16 x 128)", "admit(resource.x, 64 bytes)",
//                           "counter_snapshot (after event 12)"; the event kind name for a step
//                           that is no call (RuntimeOpened, Released, Skipped, ...).
//   *_text(value)           a value as mismatches show it ("success", "error kind (message)",
//                           "{resource 64 bytes align 16 scratch u8}", "terminal succeeded", ...).
//
// The texts are part of the replay report (docs/CLI.md shows them); changing one changes what
// `vtrace replay` prints.
// Ownership: returns new strings; borrows nothing. Thread rules: pure functions. Errors: none.
#pragma once

#include <string>
#include <vector>

#include "vtrace/replayer/replay_plan.h"

namespace vtrace::replayer {

std::string describe_step(const ReplayStep& step);

std::string outcome_text(const Outcome& outcome);  // "success" or "error <kind> (<message>)"
std::string descriptor_text(const runtime::BufferDescriptor& descriptor);
std::string stream_state_text(runtime::StreamState state);
std::string fence_text(const runtime::FenceQuery& answer);  // "pending", "terminal succeeded", ...
std::string attribution_row_text(const runtime::NativeWorkAttribution& row);
std::string counters_text(const runtime::CounterSnapshot& counters);
std::string preparation_text(const runtime::ReusableExecutionPreparation& preparation);
std::string catalog_text(const std::vector<runtime::ReusableExecutionProgram>& catalog);

}  // namespace vtrace::replayer
