// Private to vtrace_replayer: the decoding of one event into its typed replay step
// (replay_plan.h's step types), shared by ReplayPlan::build and decode_step.
//
// decode_body() converts and checks every field (enums known, exactly one of result and error,
// required fields present) and nothing that needs the rest of the trace. Errors: TraceError
// kCorrupt "event N (Kind): ...", or kUnknownRequiredEvent for a required kind (or 1.0-1.1
// OptionalCall method) this build does not know; a not-required one decodes as step::Skipped.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "vtrace/replayer/replay_plan.h"

namespace vtrace::replayer::detail {

// "event N (Kind): what", kCorrupt.
schema::TraceError corrupt(std::uint64_t ordinal, std::string_view kind, std::string what);

schema::TraceResult<ReplayStepBody> decode_body(std::uint64_t ordinal, std::string_view kind,
                                                const fb::Event& event);

}  // namespace vtrace::replayer::detail
