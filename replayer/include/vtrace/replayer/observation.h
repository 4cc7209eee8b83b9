// Observation: what one step's call answered on one runtime (StepExecutor, step_executor.h), or
// what the recording says it answered (recorded_observation, comparator.h). Both sides have the
// same shape, so any two can be compared: recording against a runtime today, runtime against
// runtime for a lockstep compare later.
//
// Every field is optional; a field is present exactly when that side has the answer. A field the
// step's call does not answer is absent on both sides; a field that only a successful call answers
// (a readback's bytes, an allocation's descriptor, a preparation receipt, ...) is absent on the
// side where the call failed. The comparator compares a field only where both sides have it.
//
// `problems` (live side only) says why part of a step could not be executed at all: an object it
// names was never created in this replay (because of an earlier mismatch), a permit's admit did
// not succeed, a SubmitEnd's SubmitBegin could not run, a recorded argument is not valid here.
// When a problem stopped the call, the answers it would have given are absent.
//
// Ownership: a value. ReadbackAnswer may borrow its bytes (the recorded side borrows the plan's
// payload; the plan must outlive the observation). Thread rules: a plain value.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "vtrace/replayer/replay_plan.h"

namespace vtrace::replayer {

struct ExecutionProblem {
  enum class Kind : std::uint8_t {
    kMissingObject,   // `object` was never created in this replay
    kMissingPermit,   // the permit generation `number`'s admit did not succeed in this replay
    kMissingSession,  // import session#`number` was never created in this replay
    kSubmitNotRun,    // the SubmitBegin of this SubmitEnd could not be re-executed
    kInvalidArgument, // a recorded argument is not valid here (`detail` says why)
  };
  Kind kind = Kind::kMissingObject;
  ObjectRef object;
  ObjectKind object_kind = ObjectKind::kBuffer;
  std::uint64_t number = 0;
  std::string detail;
};

struct ReadbackAnswer {
  runtime::ElementType element_type = runtime::ElementType::kU8;
  std::vector<std::uint8_t> owned;                    // the live bytes
  const std::vector<std::uint8_t>* borrowed = nullptr;  // or bytes owned elsewhere (the plan)
  std::span<const std::uint8_t> bytes() const {
    return borrowed != nullptr ? std::span<const std::uint8_t>(*borrowed)
                               : std::span<const std::uint8_t>(owned);
  }
};

struct AttributionAnswer {
  std::optional<runtime::SubmissionAttribution> rows;  // nullopt: no attribution
};

struct DescribeAnswer {
  std::optional<bool> retryable;  // nullopt: describe_error failed
  std::string failure;            // its display text (live side), when it failed
};

struct Observation {
  std::vector<ExecutionProblem> problems;

  // The call's outcome: nullopt inside = success. Absent for a step that is no call with an error
  // channel, or whose call did not run.
  std::optional<Outcome> outcome;
  bool rejected = false;  // SubmitEnd: submit_guarded answered Rejected(AttributionUnavailable)
  // begin_static_weight_import / encode_static_weight_transform: supported (not nullopt).
  std::optional<bool> supported;

  std::optional<runtime::BufferDescriptor> descriptor;  // Allocate, BufferDescriptorQueried
  std::optional<runtime::StreamState> stream_state;     // StreamStateQueried
  std::optional<runtime::FenceQuery> fence;             // QueryFence, WaitFence
  std::optional<AttributionAnswer> attribution;         // SubmissionAttribution
  std::optional<ReadbackAnswer> readback;               // Readback (successful)
  std::optional<runtime::CounterSnapshot> counters;     // CounterSnapshot (runtime has counters)
  std::optional<DescribeAnswer> described;              // DescribeError

  // Optional methods (spec 5.2).
  std::optional<bool> flag;                // supports_guarded_submission
  std::optional<bool> returned_command;    // encode_*: a command (true) or Ok(None) (false)
  std::optional<std::uint64_t> returned_commands;  // coalesce_program_bindings: how many
  std::optional<runtime::ReusableExecutionPreparation> preparation;
  std::optional<std::vector<runtime::ReusableExecutionProgram>> catalog;
  std::optional<runtime::ReusableExecutionTrim> trim;
};

}  // namespace vtrace::replayer
