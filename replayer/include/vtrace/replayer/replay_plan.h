// ReplayPlan: a trace decoded and validated once, before anything runs.
//
// build() visits every event of a TraceReader and turns it into a typed ReplayStep. It refuses a
// trace (with a TraceError naming the event) when an event is of an unknown required kind, its
// sequence number is not its ordinal, a field does not convert to a valid runtime value, an object
// is referenced before the event that creates it (or after the one that releases it), a permit
// generation was never admitted, a SubmitEnd names no SubmitBegin, or a payload blob is missing.
// The objects, permits, submits and payloads an event links to come from schema::event_links, the
// one list the recorder's tests and `vtrace dump --payloads` use too. Unknown events marked not
// required are kept as Skipped steps; so is a 1.0-1.1 OptionalCall naming a method this build
// does not know when it is not required (a required one is refused with kUnknownRequiredEvent,
// like an unknown required kind). Every payload the steps name is loaded into the plan, so
// executing it reads nothing from the file.
//
// Recovered traces (no footer: the recording died or the file was cut) are planned as far as they
// are meaningful: every recovered event is a step, except that the plan stops before the first
// event naming a payload the cut file lost (everything before it is kept; recovery() names the
// event). A SubmitBegin whose SubmitEnd is not in the plan (the run died inside that submit) is a
// step like any other: replay re-executes the submit and has nothing to compare for its outcome;
// unfinished_submits() lists them. In a complete trace a missing payload is an error naming the
// event.
//
// Ownership: the plan owns its steps and payloads; it does not keep the reader.
// Thread rules: immutable after build(); several engines may execute one plan concurrently.
// Errors: TraceError (kCorrupt, kMissingBlob, kUnknownRequiredEvent, or the reader's own).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "vtrace/runtime/device_runtime.h"
#include "vtrace/schema/format.h"
#include "vtrace/schema/objects.h"
#include "vtrace/schema/trace_reader.h"

namespace vtrace::replayer {

// Object kinds and references: the schema's one vocabulary (vtrace/schema/objects.h).
using schema::object_kind_name;
using schema::ObjectKind;
using schema::ObjectRef;

// nullopt = the call succeeded.
using Outcome = std::optional<runtime::RuntimeError>;

namespace step {
struct RuntimeOpened {
  std::string registry_name;
  runtime::DeviceDescriptor descriptor;
  runtime::AttentionExecutionPolicy policy = runtime::AttentionExecutionPolicy::kPortable;
};
struct ForeignObjectSeen {
  ObjectKind kind = ObjectKind::kBuffer;
  std::uint64_t ordinal = 0;
  std::optional<runtime::BufferDescriptor> descriptor;  // buffers
};
struct Admit {
  runtime::BufferRequest request;
  std::optional<std::uint64_t> generation;
  Outcome outcome;
};
struct Allocate {
  std::uint64_t generation = 0;
  std::optional<std::uint64_t> buffer;
  std::optional<runtime::BufferDescriptor> descriptor;
  Outcome outcome;
};
struct BufferDescriptorQueried {
  ObjectRef buffer;
  runtime::BufferDescriptor descriptor;
};
// BufferReleased, StreamReleased, CommandReleased, FenceReleased: one type per event, one shape.
template <ObjectKind K>
struct Released {
  static constexpr ObjectKind kKind = K;
  std::uint64_t ordinal = 0;
};
using BufferReleased = Released<ObjectKind::kBuffer>;
using StreamReleased = Released<ObjectKind::kStream>;
using CommandReleased = Released<ObjectKind::kCommand>;
using FenceReleased = Released<ObjectKind::kFence>;
struct StreamCreated {
  std::optional<std::uint64_t> stream;
  Outcome outcome;
};
struct StreamStateQueried {
  ObjectRef stream;
  runtime::StreamState state = runtime::StreamState::kReady;
};
struct EncodeCopy {
  ObjectRef source, destination;
  runtime::CopyRegion region;
  std::optional<std::uint64_t> command;
  Outcome outcome;
};
struct EncodeUpload {
  schema::BlobId payload;
  std::uint64_t payload_bytes = 0;
  runtime::HostTransferLayout layout;
  ObjectRef destination;
  std::uint64_t offset_bytes = 0;
  std::optional<std::uint64_t> command;
  Outcome outcome;
};
struct EncodeZero {
  ObjectRef destination;
  std::uint64_t offset_bytes = 0;
  std::uint64_t length_bytes = 0;
  std::optional<std::uint64_t> command;
  Outcome outcome;
};
struct Region {
  ObjectRef buffer;
  std::uint64_t offset_bytes = 0;
  std::uint64_t length_bytes = 0;
};
struct Launch {
  Region input, weight, output;
  std::uint64_t rows = 0, in_features = 0, out_features = 0;
};
struct EncodeDenseLinear {
  std::vector<Launch> launches;
  std::uint32_t participant_count = 0;
  std::uint64_t token_count = 0;
  std::optional<std::uint64_t> command;
  Outcome outcome;
};
struct Entry {
  runtime::CommandPhase phase = runtime::CommandPhase::kCompute;
  std::optional<std::uint32_t> node_index;
  std::optional<runtime::LogicalWork> logical_work;
  ObjectRef command;
};
struct SubmitBegin {
  ObjectRef stream;
  std::vector<Entry> entries;
  runtime::TimingMode timing = runtime::TimingMode::kOff;
  runtime::ComputePathRequirement path = runtime::ComputePathRequirement::kAdaptive;
  std::vector<std::uint32_t> declared_eager;
  runtime::AttributionRequirement attribution = runtime::AttributionRequirement::kNone;
  std::optional<runtime::ReusableExecutionCapture> capture;
  bool guarded = false;
  std::uint64_t guard_maximum_commands = 0;
};
struct SubmitEnd {
  std::uint64_t begin_seq = 0;
  std::optional<std::uint64_t> fence;
  Outcome not_submitted;
  bool rejected = false;  // submit_guarded's Rejected(AttributionUnavailable)
};
struct SubmissionAttribution {
  ObjectRef fence;
  std::optional<runtime::SubmissionAttribution> rows;
};
struct QueryFence {
  ObjectRef fence;
  runtime::FenceQuery result;
};
struct WaitFence {
  ObjectRef fence;
  runtime::FenceQuery result;  // Terminal or RuntimeError (Indeterminate), never Pending
};
struct Synchronize {
  ObjectRef stream;
  Outcome outcome;
};
struct Readback {
  ObjectRef stream, source;
  runtime::CopyRegion region;
  runtime::HostTransferLayout layout;
  std::optional<schema::BlobId> payload;
  std::uint64_t payload_bytes = 0;
  Outcome outcome;
};
struct DescribeError {
  runtime::RuntimeError input;
  std::optional<runtime::DeviceErrorReport> report;  // nullopt: describe_error failed
};
// The optional methods (spec 5.2) and the static weight import session, one step each (format
// 1.2's event kinds; a 1.0-1.1 OptionalCall decodes into the step of its method). Every one is
// re-executed. `supported = false`: the method answered "not supported" (nullopt).
struct GuardedSubmissionQueried {
  bool supported = false;
};
struct BeginStaticWeightImport {
  bool supported = true;
  std::optional<std::uint64_t> session;  // the import session created
  Outcome outcome;
};
struct ImportComponent {
  std::uint64_t session = 0;
  ObjectRef destination;
  std::uint64_t offset_bytes = 0;
  schema::BlobId payload;
  std::uint64_t payload_bytes = 0;
  Outcome outcome;
};
struct SealStaticWeightImport {
  std::uint64_t session = 0;
  Outcome outcome;
};
struct EncodeStaticWeightTransform {
  ObjectRef source, destination;
  std::string transform_id;
  bool supported = true;
  std::optional<std::uint64_t> command;
  Outcome outcome;
};
// The answer of the three preparation-returning methods.
struct PreparationAnswer {
  ObjectRef stream;
  std::optional<runtime::ReusableExecutionPreparation> preparation;  // on success
  Outcome outcome;
};
struct ConfigureReusableExecutables : PreparationAnswer {
  std::uint64_t maximum_executables = 0;
  runtime::ReusableExecutionCatalogLifetime catalog_lifetime =
      runtime::ReusableExecutionCatalogLifetime::kStartupSealed;
};
struct SealReusableExecutables : PreparationAnswer {};
struct ReusablePreparationQueried : PreparationAnswer {};
struct ReusableCatalogQueried {
  ObjectRef stream;
  std::optional<std::vector<runtime::ReusableExecutionProgram>> catalog;  // on success
  Outcome outcome;
};
struct EncodeReusableExecution {
  std::string program_id;
  std::uint32_t node_index = 0;
  std::optional<std::uint64_t> command;  // success may return none
  Outcome outcome;
};
struct TrimReusableExecutables {
  ObjectRef stream;
  std::optional<runtime::ReusableExecutionTrim> trim;  // on success
  Outcome outcome;
};
// The input commands are consumed; the outputs take the recorded ordinals, in order.
struct CoalesceProgramBindings {
  std::vector<ObjectRef> commands_in;
  std::vector<std::uint64_t> commands_out;
  Outcome outcome;
};
struct CounterSnapshot {
  std::uint64_t after_seq = 0;
  runtime::CounterSnapshot counters;
};
// An event of a kind this build does not know, recorded with required = false.
struct Skipped {
  std::string kind;
};
}  // namespace step

// One alternative per event kind of vtrace.fbs (named after it; a 1.0-1.1 OptionalCall becomes
// the alternative of its method), and Skipped.
using ReplayStepBody = std::variant<
    step::RuntimeOpened, step::ForeignObjectSeen, step::Admit, step::Allocate,
    step::BufferDescriptorQueried, step::BufferReleased, step::StreamCreated, step::StreamReleased,
    step::StreamStateQueried, step::EncodeCopy, step::EncodeUpload, step::EncodeZero,
    step::EncodeDenseLinear, step::CommandReleased, step::SubmitBegin, step::SubmitEnd,
    step::SubmissionAttribution, step::QueryFence, step::WaitFence, step::FenceReleased,
    step::Synchronize, step::Readback, step::DescribeError, step::CounterSnapshot,
    step::GuardedSubmissionQueried, step::BeginStaticWeightImport, step::ImportComponent,
    step::SealStaticWeightImport, step::EncodeStaticWeightTransform,
    step::ConfigureReusableExecutables, step::SealReusableExecutables,
    step::ReusablePreparationQueried, step::ReusableCatalogQueried, step::EncodeReusableExecution,
    step::TrimReusableExecutables, step::CoalesceProgramBindings, step::Skipped>;

struct ReplayStep {
  std::uint64_t ordinal = 0;
  std::string kind;  // the event kind name ("Admit", "SubmitBegin", ...)
  ReplayStepBody body;
};

// What a plan of a recovered trace holds and what it had to leave out. Empty for a complete trace.
struct PlanRecovery {
  std::string note;                 // the reader's sentence: events recovered, where the file was cut
  std::uint64_t events_recovered = 0;
  std::uint64_t cut_offset = 0;     // where the valid data ends
  std::uint64_t file_bytes = 0;
  // The first event left out of the plan because it names a payload the cut file lost, and why.
  std::optional<std::uint64_t> stopped_at;
  std::string stop_reason;          // "event N (EncodeUpload) names payload <hex>, which ..."
};

class ReplayPlan {
 public:
  static schema::TraceResult<ReplayPlan> build(schema::TraceReader& reader);

  const std::vector<ReplayStep>& steps() const { return steps_; }
  // The registry name the trace was recorded on (TraceMetadata, else RuntimeOpened); may be empty.
  const std::string& recorded_runtime() const { return recorded_runtime_; }
  // A flight window or mid-run capture (TraceMetadata.window, docs/FLIGHT.md): the ordinal of
  // the CounterSnapshot that holds the counters at the window's start. Replay checks the counters
  // of every later snapshot as changes since that one; nullopt for a trace that starts with the
  // run.
  std::optional<std::uint64_t> counter_baseline() const { return counter_baseline_; }
  // A payload named by a step; never null for an id a step holds.
  const std::vector<std::uint8_t>* payload(const schema::BlobId& id) const;
  std::uint64_t payload_bytes() const { return payload_bytes_; }  // distinct payloads, decoded
  bool trace_complete() const { return trace_complete_; }
  // Only meaningful when !trace_complete().
  const PlanRecovery& recovery() const { return recovery_; }
  // Ordinals of SubmitBegin steps with no SubmitEnd in the plan, in order (a recovered trace whose
  // run died inside a submit; empty for every complete trace the recorder writes).
  const std::vector<std::uint64_t>& unfinished_submits() const { return unfinished_submits_; }
  // The SubmitEnd step of the SubmitBegin at `begin_ordinal`; nullptr when it has none (or
  // `begin_ordinal` is no SubmitBegin).
  const ReplayStep* submit_end(std::uint64_t begin_ordinal) const {
    auto it = submit_ends_.find(begin_ordinal);
    return it == submit_ends_.end() ? nullptr : &steps_[it->second];
  }
  // Whether the recording's submit at `begin_ordinal` ran: it ended with a fence, not refused.
  bool submit_ran(std::uint64_t begin_ordinal) const {
    const ReplayStep* end = submit_end(begin_ordinal);
    if (end == nullptr) return false;
    const auto& e = std::get<step::SubmitEnd>(end->body);
    return e.fence.has_value() && !e.rejected;
  }

 private:
  std::vector<ReplayStep> steps_;
  std::string recorded_runtime_;
  std::optional<std::uint64_t> counter_baseline_;
  std::map<schema::BlobId, std::vector<std::uint8_t>> payloads_;
  std::uint64_t payload_bytes_ = 0;
  bool trace_complete_ = true;
  PlanRecovery recovery_;
  std::vector<std::uint64_t> unfinished_submits_;
  std::map<std::uint64_t, std::uint64_t> submit_ends_;  // SubmitBegin ordinal -> SubmitEnd ordinal
};

// One event decoded into its step with the decoding build() applies, without the rules that need
// the rest of the trace (references, payloads): what `vtrace dump` describes each event with.
// Errors: kCorrupt (a field that does not convert), kUnknownRequiredEvent.
schema::TraceResult<ReplayStep> decode_step(std::uint64_t ordinal, const fb::Event& event);

}  // namespace vtrace::replayer
