// Conversions between the runtime's contract types (vtrace/runtime/*.h) and the FlatBuffers event
// types of schema/vtrace.fbs (namespace vtrace::fb), shared by the recorder and the replayer.
//
// Direction to_fb / build_*: runtime value -> FlatBuffers (structs by value, tables built into the
// caller's FlatBufferBuilder). Direction from_fb / read_*: FlatBuffers -> runtime value. Readers
// re-run the runtime's own validating constructors, so a value read back is always a valid runtime
// value; anything that does not convert (an unknown enum value, an unknown error kind name, a
// missing required field, an invalid identity) is a TraceError of kind kCorrupt naming the field.
//
// Ownership: builders write into the FlatBufferBuilder they are given; readers take pointers into
//   a verified buffer that must stay alive during the call and copy what they return.
// Thread rules: free functions without shared state.
// Errors: TraceResult (trace_error.h); nothing throws or aborts on bad input.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include <flatbuffers/flatbuffers.h>

#include "vtrace_generated.h"
#include "vtrace/runtime/device_runtime.h"
#include "vtrace/schema/format.h"
#include "vtrace/schema/trace_error.h"

namespace vtrace::schema {

namespace fb = ::vtrace::fb;
using Builder = flatbuffers::FlatBufferBuilder;

// ---- enums (from_fb: nullopt for a value this build does not know) -------------------------------
fb::DeviceClass to_fb(runtime::DeviceClass v);
fb::ElementType to_fb(runtime::ElementType v);
fb::BufferUsage to_fb(runtime::BufferUsage v);
fb::StreamState to_fb(runtime::StreamState v);
fb::AttentionExecutionPolicy to_fb(runtime::AttentionExecutionPolicy v);
fb::CommandPhase to_fb(runtime::CommandPhase v);
fb::BatchingForm to_fb(runtime::BatchingForm v);
fb::ExecutionPath to_fb(runtime::ExecutionPath v);
fb::TimingMode to_fb(runtime::TimingMode v);
fb::ComputePathRequirement to_fb(runtime::ComputePathRequirement v);
fb::AttributionRequirement to_fb(runtime::AttributionRequirement v);
fb::ReusableExecutionCatalogLifetime to_fb(runtime::ReusableExecutionCatalogLifetime v);
fb::ReusableExecutionState to_fb(runtime::ReusableExecutionState v);
fb::VNextErrorKind to_fb(runtime::VNextErrorKind v);

std::optional<runtime::DeviceClass> from_fb(fb::DeviceClass v);
std::optional<runtime::ElementType> from_fb(fb::ElementType v);
std::optional<runtime::BufferUsage> from_fb(fb::BufferUsage v);
std::optional<runtime::StreamState> from_fb(fb::StreamState v);
std::optional<runtime::AttentionExecutionPolicy> from_fb(fb::AttentionExecutionPolicy v);
std::optional<runtime::CommandPhase> from_fb(fb::CommandPhase v);
std::optional<runtime::BatchingForm> from_fb(fb::BatchingForm v);
std::optional<runtime::ExecutionPath> from_fb(fb::ExecutionPath v);
std::optional<runtime::TimingMode> from_fb(fb::TimingMode v);
std::optional<runtime::ComputePathRequirement> from_fb(fb::ComputePathRequirement v);
std::optional<runtime::AttributionRequirement> from_fb(fb::AttributionRequirement v);
std::optional<runtime::ReusableExecutionCatalogLifetime> from_fb(
    fb::ReusableExecutionCatalogLifetime v);
std::optional<runtime::ReusableExecutionState> from_fb(fb::ReusableExecutionState v);

// ---- structs ----------------------------------------------------------------------------------
fb::BlobRef to_fb(const BlobId& id);
BlobId from_fb(const fb::BlobRef& ref);
fb::CopyRegion to_fb(const runtime::CopyRegion& region);
TraceResult<runtime::CopyRegion> from_fb(const fb::CopyRegion& region);
fb::HostTransferLayout to_fb(const runtime::HostTransferLayout& layout);
TraceResult<runtime::HostTransferLayout> from_fb(const fb::HostTransferLayout& layout);
fb::LogicalWork to_fb(const runtime::LogicalWork& work);
TraceResult<runtime::LogicalWork> from_fb(const fb::LogicalWork& work);
fb::Counters to_fb(const runtime::CounterSnapshot& counters);
runtime::CounterSnapshot from_fb(const fb::Counters& counters);
fb::Timing to_fb(const runtime::TimingMeasurement& timing);
TraceResult<runtime::TimingMeasurement> from_fb(const fb::Timing& timing);

// ---- tables -----------------------------------------------------------------------------------
flatbuffers::Offset<fb::DeviceDescriptor> build_descriptor(Builder& b,
                                                           const runtime::DeviceDescriptor& d);
TraceResult<runtime::DeviceDescriptor> read_descriptor(const fb::DeviceDescriptor* d);

flatbuffers::Offset<fb::BufferRequest> build_buffer_request(Builder& b,
                                                            const runtime::BufferRequest& r);
TraceResult<runtime::BufferRequest> read_buffer_request(const fb::BufferRequest* r);

flatbuffers::Offset<fb::BufferDescriptor> build_buffer_descriptor(
    Builder& b, const runtime::BufferDescriptor& d);
TraceResult<runtime::BufferDescriptor> read_buffer_descriptor(const fb::BufferDescriptor* d);

// RuntimeError <-> {kind name, message}.
flatbuffers::Offset<fb::Error> build_error(Builder& b, const runtime::RuntimeError& e);
TraceResult<runtime::RuntimeError> read_error(const fb::Error* e);

// VNextError has no public constructor from its parts; the record keeps kind, reason and display
// text, and replay compares them with vnext_error_matches.
flatbuffers::Offset<fb::VNextErrorRecord> build_vnext_error(Builder& b,
                                                            const runtime::VNextError& e);
bool vnext_error_matches(const fb::VNextErrorRecord* record, const runtime::VNextError& e);

flatbuffers::Offset<fb::DeviceErrorReport> build_error_report(Builder& b,
                                                              const runtime::DeviceErrorReport& r);
TraceResult<runtime::DeviceErrorReport> read_error_report(const fb::DeviceErrorReport* r);

flatbuffers::Offset<fb::TerminalReceipt> build_receipt(Builder& b,
                                                       const runtime::TerminalReceipt& r);
TraceResult<runtime::TerminalReceipt> read_receipt(const fb::TerminalReceipt* r);

// query_fence's answer, and wait_fence's (Terminal or Indeterminate).
flatbuffers::Offset<fb::FenceResult> build_fence_query(Builder& b, const runtime::FenceQuery& q);
flatbuffers::Offset<fb::FenceResult> build_fence_wait(
    Builder& b, const std::expected<runtime::TerminalReceipt, runtime::FenceIndeterminate>& w);
TraceResult<runtime::FenceQuery> read_fence_query(const fb::FenceResult* r);
// Fails with kCorrupt for a Pending result (a wait never answers Pending).
TraceResult<std::expected<runtime::TerminalReceipt, runtime::FenceIndeterminate>> read_fence_wait(
    const fb::FenceResult* r);

flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::AttributionRow>>>
build_attribution_rows(Builder& b, const runtime::SubmissionAttribution& a);
// nullptr rows -> nullopt (the runtime returned none).
TraceResult<std::optional<runtime::SubmissionAttribution>> read_attribution(
    const flatbuffers::Vector<flatbuffers::Offset<fb::AttributionRow>>* rows);

flatbuffers::Offset<fb::ReusableCapture> build_reusable_capture(
    Builder& b, const runtime::ReusableExecutionCapture& c);
TraceResult<runtime::ReusableExecutionCapture> read_reusable_capture(const fb::ReusableCapture* c);

flatbuffers::Offset<fb::ReusablePreparation> build_preparation(
    Builder& b, const runtime::ReusableExecutionPreparation& p);
TraceResult<runtime::ReusableExecutionPreparation> read_preparation(
    const fb::ReusablePreparation* p);

// ---- events -----------------------------------------------------------------------------------

// The union member's name ("Admit", "SubmitBegin", ...), or "Unknown" for a body type this build
// does not know, "None" for an event without a body.
std::string_view event_kind_name(fb::EventBody kind);
std::string_view event_kind_name(const fb::Event& event);
// True when this build knows the event's body type.
bool event_kind_known(const fb::Event& event);

// The event inside a record that passed verify_event_record (trace_reader.h).
inline const fb::Event* event_of(std::span<const std::uint8_t> verified_record) {
  return flatbuffers::GetRoot<fb::Event>(verified_record.data());
}

// Verified access to the header metadata and footer summary; nullptr when the bytes are empty or
// do not verify.
const fb::TraceMetadata* read_trace_metadata(std::span<const std::uint8_t> bytes);
const fb::TraceSummary* read_trace_summary(std::span<const std::uint8_t> bytes);

// Verifier limits for one event record (nesting depth, table count).
inline constexpr flatbuffers::uoffset_t kEventMaxDepth = 16;
inline constexpr flatbuffers::uoffset_t kEventMaxTables = 1u << 20;

}  // namespace vtrace::schema
