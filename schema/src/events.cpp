#include "vtrace/schema/events.h"

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "container_internal.h"
#include "vtrace/schema/trace_reader.h"

namespace vtrace::schema {

namespace {

// The fb enums are declared with the runtime enums' numeric values (vtrace.fbs), so conversion is
// a cast plus a range check on the way in. Each pair is tied here, enumerator by enumerator, and
// the fb enum must end where the listed runtime values end: renumbering or adding a value on one
// side only fails to compile (tests/schema/enum_pairs_test.cpp checks that the runtime enums have no
// value beyond fb's MAX and that the names agree).
#define VTRACE_SAME(Enum, FbValue, RtValue)                                        \
  static_assert(static_cast<int>(fb::Enum::FbValue) ==                             \
                    static_cast<int>(runtime::Enum::RtValue),                      \
                "vtrace.fbs " #Enum "::" #FbValue " differs from runtime " #RtValue);
#define VTRACE_LAST(Enum, FbValue)                                                 \
  static_assert(fb::Enum::MAX == fb::Enum::FbValue, "vtrace.fbs " #Enum " has values the runtime lacks");
VTRACE_SAME(DeviceClass, Host, kHost)
VTRACE_SAME(DeviceClass, Accelerator, kAccelerator)
VTRACE_SAME(DeviceClass, Reference, kReference)
VTRACE_LAST(DeviceClass, Reference)
VTRACE_SAME(ElementType, Bool, kBool)
VTRACE_SAME(ElementType, U8, kU8)
VTRACE_SAME(ElementType, U32, kU32)
VTRACE_SAME(ElementType, I8, kI8)
VTRACE_SAME(ElementType, I32, kI32)
VTRACE_SAME(ElementType, F16, kF16)
VTRACE_SAME(ElementType, Bf16, kBf16)
VTRACE_SAME(ElementType, F32, kF32)
VTRACE_LAST(ElementType, F32)
VTRACE_SAME(BufferUsage, Weights, kWeights)
VTRACE_SAME(BufferUsage, Activations, kActivations)
VTRACE_SAME(BufferUsage, State, kState)
VTRACE_SAME(BufferUsage, Persistent, kPersistent)
VTRACE_SAME(BufferUsage, Binding, kBinding)
VTRACE_SAME(BufferUsage, Scratch, kScratch)
VTRACE_SAME(BufferUsage, Transfer, kTransfer)
VTRACE_LAST(BufferUsage, Transfer)
VTRACE_SAME(StreamState, Ready, kReady)
VTRACE_SAME(StreamState, Recording, kRecording)
VTRACE_SAME(StreamState, Submitted, kSubmitted)
VTRACE_SAME(StreamState, Failed, kFailed)
VTRACE_LAST(StreamState, Failed)
VTRACE_SAME(AttentionExecutionPolicy, Auto, kAuto)
VTRACE_SAME(AttentionExecutionPolicy, Portable, kPortable)
VTRACE_SAME(AttentionExecutionPolicy, NativeAdaptive, kNativeAdaptive)
VTRACE_LAST(AttentionExecutionPolicy, NativeAdaptive)
VTRACE_SAME(CommandPhase, Initialization, kInitialization)
VTRACE_SAME(CommandPhase, DynamicBinding, kDynamicBinding)
VTRACE_SAME(CommandPhase, Compute, kCompute)
VTRACE_SAME(CommandPhase, ResultBinding, kResultBinding)
VTRACE_LAST(CommandPhase, ResultBinding)
VTRACE_SAME(BatchingForm, Scalar, kScalar)
VTRACE_SAME(BatchingForm, Packed, kPacked)
VTRACE_SAME(BatchingForm, ParticipantLoop, kParticipantLoop)
VTRACE_LAST(BatchingForm, ParticipantLoop)
VTRACE_SAME(ExecutionPath, Eager, kEager)
VTRACE_SAME(ExecutionPath, Replayed, kReplayed)
VTRACE_LAST(ExecutionPath, Replayed)
VTRACE_SAME(TimingMode, Off, kOff)
VTRACE_SAME(TimingMode, Completion, kCompletion)
VTRACE_SAME(TimingMode, Replay, kReplay)
VTRACE_SAME(TimingMode, Kernel, kKernel)
VTRACE_SAME(TimingMode, Verification, kVerification)
VTRACE_LAST(TimingMode, Verification)
VTRACE_SAME(ComputePathRequirement, Adaptive, kAdaptive)
VTRACE_SAME(ComputePathRequirement, EagerOnly, kEagerOnly)
VTRACE_SAME(ComputePathRequirement, ReplayedOnly, kReplayedOnly)
VTRACE_SAME(ComputePathRequirement, ReplayedWithDeclaredEagerBoundaries,
            kReplayedWithDeclaredEagerBoundaries)
VTRACE_LAST(ComputePathRequirement, ReplayedWithDeclaredEagerBoundaries)
VTRACE_SAME(AttributionRequirement, None, kNone)
VTRACE_SAME(AttributionRequirement, LogicalExecutionPath, kLogicalExecutionPath)
VTRACE_LAST(AttributionRequirement, LogicalExecutionPath)
VTRACE_SAME(VNextErrorKind, InvalidIdentity, kInvalidIdentity)
VTRACE_SAME(VNextErrorKind, InvalidExecutionPlan, kInvalidExecutionPlan)
VTRACE_SAME(VNextErrorKind, Serialization, kSerialization)
VTRACE_LAST(VNextErrorKind, Serialization)
VTRACE_SAME(ReusableExecutionCatalogLifetime, StartupSealed, kStartupSealed)
VTRACE_SAME(ReusableExecutionCatalogLifetime, OnDemandBounded, kOnDemandBounded)
VTRACE_LAST(ReusableExecutionCatalogLifetime, OnDemandBounded)
VTRACE_SAME(ReusableExecutionState, Unsupported, kUnsupported)
VTRACE_SAME(ReusableExecutionState, Preparing, kPreparing)
VTRACE_SAME(ReusableExecutionState, Ready, kReady)
VTRACE_LAST(ReusableExecutionState, Ready)
#undef VTRACE_SAME
#undef VTRACE_LAST

template <typename To, typename From>
To cast_enum(From v) {
  return static_cast<To>(static_cast<std::underlying_type_t<From>>(v));
}

template <typename To, typename FbEnum>
std::optional<To> checked_enum(FbEnum v, FbEnum max) {
  if (static_cast<unsigned>(v) > static_cast<unsigned>(max)) return std::nullopt;
  return cast_enum<To>(v);
}

TraceError corrupt(std::string what) {
  return TraceError{TraceErrorKind::kCorrupt, "event field " + what};
}

template <typename T>
TraceResult<T> need(std::optional<T> v, const char* field) {
  if (!v) return std::unexpected(corrupt(std::string(field) + " has an unknown enum value"));
  return *v;
}

std::string str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

template <typename T, typename E>
TraceResult<T> from_vnext(std::expected<T, E> r, const char* field) {
  if (!r) return std::unexpected(corrupt(std::string(field) + ": " + r.error().display()));
  return std::move(*r);
}

}  // namespace

// ---- enums -------------------------------------------------------------------------------------
#define VTRACE_ENUM_PAIR(Rt, Fb)                                                       \
  fb::Fb to_fb(runtime::Rt v) { return cast_enum<fb::Fb>(v); }                         \
  std::optional<runtime::Rt> from_fb(fb::Fb v) { return checked_enum<runtime::Rt>(v, fb::Fb::MAX); }

VTRACE_ENUM_PAIR(DeviceClass, DeviceClass)
VTRACE_ENUM_PAIR(ElementType, ElementType)
VTRACE_ENUM_PAIR(BufferUsage, BufferUsage)
VTRACE_ENUM_PAIR(StreamState, StreamState)
VTRACE_ENUM_PAIR(AttentionExecutionPolicy, AttentionExecutionPolicy)
VTRACE_ENUM_PAIR(CommandPhase, CommandPhase)
VTRACE_ENUM_PAIR(BatchingForm, BatchingForm)
VTRACE_ENUM_PAIR(ExecutionPath, ExecutionPath)
VTRACE_ENUM_PAIR(ComputePathRequirement, ComputePathRequirement)
VTRACE_ENUM_PAIR(AttributionRequirement, AttributionRequirement)
VTRACE_ENUM_PAIR(ReusableExecutionCatalogLifetime, ReusableExecutionCatalogLifetime)
VTRACE_ENUM_PAIR(ReusableExecutionState, ReusableExecutionState)
#undef VTRACE_ENUM_PAIR

fb::TimingMode to_fb(runtime::TimingMode v) { return cast_enum<fb::TimingMode>(v); }
std::optional<runtime::TimingMode> from_fb(fb::TimingMode v) {
  return checked_enum<runtime::TimingMode>(v, fb::TimingMode::MAX);
}
fb::VNextErrorKind to_fb(runtime::VNextErrorKind v) { return cast_enum<fb::VNextErrorKind>(v); }

// ---- structs -----------------------------------------------------------------------------------
fb::BlobRef to_fb(const BlobId& id) { return fb::BlobRef(id.low, id.high); }
BlobId from_fb(const fb::BlobRef& ref) { return BlobId{ref.low(), ref.high()}; }

fb::CopyRegion to_fb(const runtime::CopyRegion& r) {
  return fb::CopyRegion(r.source_offset_bytes(), r.destination_offset_bytes(), r.length_bytes());
}
TraceResult<runtime::CopyRegion> from_fb(const fb::CopyRegion& r) {
  return from_vnext(runtime::CopyRegion::create(r.source_offset_bytes(),
                                                r.destination_offset_bytes(), r.length_bytes()),
                    "copy region");
}

fb::HostTransferLayout to_fb(const runtime::HostTransferLayout& l) {
  return fb::HostTransferLayout(to_fb(l.element_type()), l.element_count());
}
TraceResult<runtime::HostTransferLayout> from_fb(const fb::HostTransferLayout& l) {
  auto type = need(from_fb(l.element_type()), "layout element type");
  if (!type) return std::unexpected(type.error());
  return from_vnext(runtime::HostTransferLayout::create(*type, l.element_count()), "layout");
}

fb::LogicalWork to_fb(const runtime::LogicalWork& w) {
  return fb::LogicalWork(to_fb(w.batching_form()), w.participant_start(), w.participant_count(),
                         w.token_count());
}
TraceResult<runtime::LogicalWork> from_fb(const fb::LogicalWork& w) {
  auto form = need(from_fb(w.batching_form()), "logical work batching form");
  if (!form) return std::unexpected(form.error());
  return from_vnext(runtime::LogicalWork::for_participant_range(
                        *form, w.participant_start(), w.participant_count(), w.token_count()),
                    "logical work");
}

fb::Counters to_fb(const runtime::CounterSnapshot& c) {
  return fb::Counters(c.allocations, c.live_allocations, c.submissions, c.commands,
                      c.uploaded_bytes, c.dense_linear_launches, c.readback_bytes);
}
runtime::CounterSnapshot from_fb(const fb::Counters& c) {
  return runtime::CounterSnapshot{c.allocations(),    c.live_allocations(),
                                  c.submissions(),    c.commands(),
                                  c.uploaded_bytes(), c.dense_linear_launches(),
                                  c.readback_bytes()};
}

fb::Timing to_fb(const runtime::TimingMeasurement& t) {
  return fb::Timing(cast_enum<fb::TimingStatus>(t.status),
                    cast_enum<fb::TimingUnavailableReason>(t.reason), t.elapsed_ns);
}
TraceResult<runtime::TimingMeasurement> from_fb(const fb::Timing& t) {
  auto status = checked_enum<runtime::TimingMeasurement::Status>(t.status(), fb::TimingStatus::MAX);
  auto reason =
      checked_enum<runtime::TimingUnavailableReason>(t.reason(), fb::TimingUnavailableReason::MAX);
  if (!status || !reason) return std::unexpected(corrupt("timing has an unknown enum value"));
  runtime::TimingMeasurement m;
  m.status = *status;
  m.reason = *reason;
  m.elapsed_ns = t.elapsed_ns();
  return m;
}

// ---- tables ------------------------------------------------------------------------------------
flatbuffers::Offset<fb::DeviceDescriptor> build_descriptor(Builder& b,
                                                           const runtime::DeviceDescriptor& d) {
  std::vector<flatbuffers::Offset<flatbuffers::String>> caps;
  caps.reserve(d.capabilities.size());
  for (const auto& c : d.capabilities) caps.push_back(b.CreateString(c.str()));
  std::vector<flatbuffers::Offset<fb::StorageProfile>> profiles;
  for (const auto& p : d.dynamic_storage_profiles) {
    profiles.push_back(fb::CreateStorageProfile(
        b, cast_enum<fb::DynamicStorageAllocatorKind>(p.allocator()), p.allocator_block_bytes(),
        cast_enum<fb::DynamicStorageViewKind>(p.view()), p.view_block_bytes()));
  }
  auto id = b.CreateString(d.id.str());
  auto fp = b.CreateString(d.runtime_implementation_fingerprint);
  auto caps_v = b.CreateVector(caps);
  auto prof_v = b.CreateVector(profiles);
  return fb::CreateDeviceDescriptor(b, id, to_fb(d.device_class), d.ordinal, d.total_memory_bytes,
                                    fp, caps_v, prof_v);
}

TraceResult<runtime::DeviceDescriptor> read_descriptor(const fb::DeviceDescriptor* d) {
  if (!d) return std::unexpected(corrupt("device descriptor is missing"));
  runtime::DeviceDescriptor out;
  auto id = from_vnext(runtime::DeviceId::create(str(d->id())), "device id");
  if (!id) return std::unexpected(id.error());
  out.id = std::move(*id);
  auto cls = need(from_fb(d->device_class()), "device class");
  if (!cls) return std::unexpected(cls.error());
  out.device_class = *cls;
  out.ordinal = d->ordinal();
  out.total_memory_bytes = d->total_memory_bytes();
  out.runtime_implementation_fingerprint = str(d->runtime_implementation_fingerprint());
  if (d->capabilities()) {
    for (const auto* c : *d->capabilities()) {
      auto cap = from_vnext(runtime::CapabilityId::create(str(c)), "capability");
      if (!cap) return std::unexpected(cap.error());
      out.capabilities.insert(std::move(*cap));
    }
  }
  if (d->dynamic_storage_profiles()) {
    for (const auto* p : *d->dynamic_storage_profiles()) {
      if (!p) return std::unexpected(corrupt("storage profile is missing"));
      auto alloc = checked_enum<runtime::DynamicStorageAllocatorKind>(
          p->allocator(), fb::DynamicStorageAllocatorKind::MAX);
      auto view =
          checked_enum<runtime::DynamicStorageViewKind>(p->view(), fb::DynamicStorageViewKind::MAX);
      if (!alloc || !view) return std::unexpected(corrupt("storage profile kind is unknown"));
      auto prof = from_vnext(runtime::DynamicStorageProfile::create(
                                 *alloc, p->allocator_block_bytes(), *view, p->view_block_bytes()),
                             "storage profile");
      if (!prof) return std::unexpected(prof.error());
      out.dynamic_storage_profiles.insert(*prof);
    }
  }
  return out;
}

flatbuffers::Offset<fb::BufferRequest> build_buffer_request(Builder& b,
                                                            const runtime::BufferRequest& r) {
  auto id = b.CreateString(r.resource_id().str());
  return fb::CreateBufferRequest(b, id, r.size_bytes(), r.alignment_bytes(), to_fb(r.usage()),
                                 to_fb(r.element_type()));
}

TraceResult<runtime::BufferRequest> read_buffer_request(const fb::BufferRequest* r) {
  if (!r) return std::unexpected(corrupt("buffer request is missing"));
  auto id = from_vnext(runtime::ResourceId::create(str(r->resource_id())), "resource id");
  if (!id) return std::unexpected(id.error());
  auto usage = need(from_fb(r->usage()), "buffer usage");
  if (!usage) return std::unexpected(usage.error());
  auto type = need(from_fb(r->element_type()), "element type");
  if (!type) return std::unexpected(type.error());
  return from_vnext(runtime::BufferRequest::create(std::move(*id), r->size_bytes(),
                                                   r->alignment_bytes(), *usage, *type),
                    "buffer request");
}

flatbuffers::Offset<fb::BufferDescriptor> build_buffer_descriptor(
    Builder& b, const runtime::BufferDescriptor& d) {
  auto id = b.CreateString(d.resource_id.str());
  return fb::CreateBufferDescriptor(b, id, d.size_bytes, d.alignment_bytes, to_fb(d.usage),
                                    to_fb(d.element_type));
}

TraceResult<runtime::BufferDescriptor> read_buffer_descriptor(const fb::BufferDescriptor* d) {
  if (!d) return std::unexpected(corrupt("buffer descriptor is missing"));
  auto id = from_vnext(runtime::ResourceId::create(str(d->resource_id())), "resource id");
  if (!id) return std::unexpected(id.error());
  auto usage = need(from_fb(d->usage()), "buffer usage");
  if (!usage) return std::unexpected(usage.error());
  auto type = need(from_fb(d->element_type()), "element type");
  if (!type) return std::unexpected(type.error());
  runtime::BufferDescriptor out;
  out.resource_id = std::move(*id);
  out.size_bytes = d->size_bytes();
  out.alignment_bytes = d->alignment_bytes();
  out.usage = *usage;
  out.element_type = *type;
  return out;
}

flatbuffers::Offset<fb::Error> build_error(Builder& b, const runtime::RuntimeError& e) {
  auto kind = b.CreateString(runtime::error_kind_name(e.kind()));
  auto message = b.CreateString(e.message());
  return fb::CreateError(b, kind, message);
}

TraceResult<runtime::RuntimeError> read_error(const fb::Error* e) {
  if (!e) return std::unexpected(corrupt("error is missing"));
  auto kind = runtime::parse_error_kind(str(e->kind()));
  if (!kind) return std::unexpected(corrupt("error kind `" + str(e->kind()) + "` is unknown"));
  return runtime::RuntimeError(*kind, str(e->message()));
}

flatbuffers::Offset<fb::VNextErrorRecord> build_vnext_error(Builder& b,
                                                            const runtime::VNextError& e) {
  auto reason = b.CreateString(e.reason());
  auto display = b.CreateString(e.display());
  return fb::CreateVNextErrorRecord(b, to_fb(e.kind()), reason, display);
}

bool vnext_error_matches(const fb::VNextErrorRecord* record, const runtime::VNextError& e) {
  return record != nullptr && record->kind() == to_fb(e.kind()) &&
         str(record->reason()) == e.reason() && str(record->display()) == e.display();
}

flatbuffers::Offset<fb::DeviceErrorReport> build_error_report(
    Builder& b, const runtime::DeviceErrorReport& r) {
  auto code = b.CreateString(r.code());
  auto message = b.CreateString(r.message());
  return fb::CreateDeviceErrorReport(b, code, message, r.retryable());
}

TraceResult<runtime::DeviceErrorReport> read_error_report(const fb::DeviceErrorReport* r) {
  if (!r) return std::unexpected(corrupt("device error report is missing"));
  return from_vnext(
      runtime::DeviceErrorReport::create(str(r->code()), str(r->message()), r->retryable()),
      "device error report");
}

flatbuffers::Offset<fb::TerminalReceipt> build_receipt(Builder& b,
                                                       const runtime::TerminalReceipt& r) {
  flatbuffers::Offset<fb::Error> failure;
  if (r.terminal.failure) failure = build_error(b, *r.terminal.failure);
  auto exec = to_fb(r.execution_timing);
  auto sub = to_fb(r.submission_timing);
  return fb::CreateTerminalReceipt(b, failure, &exec, &sub);
}

TraceResult<runtime::TerminalReceipt> read_receipt(const fb::TerminalReceipt* r) {
  if (!r) return std::unexpected(corrupt("terminal receipt is missing"));
  runtime::TerminalReceipt out;
  if (r->failure()) {
    auto e = read_error(r->failure());
    if (!e) return std::unexpected(e.error());
    out.terminal.failure = std::move(*e);
  }
  if (r->execution_timing()) {
    auto t = from_fb(*r->execution_timing());
    if (!t) return std::unexpected(t.error());
    out.execution_timing = *t;
  }
  if (r->submission_timing()) {
    auto t = from_fb(*r->submission_timing());
    if (!t) return std::unexpected(t.error());
    out.submission_timing = *t;
  }
  return out;
}

flatbuffers::Offset<fb::FenceResult> build_fence_query(Builder& b, const runtime::FenceQuery& q) {
  if (const auto* receipt = std::get_if<runtime::TerminalReceipt>(&q)) {
    auto r = build_receipt(b, *receipt);
    return fb::CreateFenceResult(b, fb::FenceResultKind::Terminal, r);
  }
  if (const auto* error = std::get_if<runtime::RuntimeError>(&q)) {
    auto e = build_error(b, *error);
    return fb::CreateFenceResult(b, fb::FenceResultKind::Indeterminate, 0, e);
  }
  return fb::CreateFenceResult(b, fb::FenceResultKind::Pending);
}

flatbuffers::Offset<fb::FenceResult> build_fence_wait(
    Builder& b, const std::expected<runtime::TerminalReceipt, runtime::FenceIndeterminate>& w) {
  if (w) {
    auto r = build_receipt(b, *w);
    return fb::CreateFenceResult(b, fb::FenceResultKind::Terminal, r);
  }
  auto e = build_error(b, w.error().error());
  return fb::CreateFenceResult(b, fb::FenceResultKind::Indeterminate, 0, e);
}

TraceResult<runtime::FenceQuery> read_fence_query(const fb::FenceResult* r) {
  if (!r) return std::unexpected(corrupt("fence result is missing"));
  switch (r->kind()) {
    case fb::FenceResultKind::Pending:
      return runtime::FenceQuery{runtime::FenceQueryPending{}};
    case fb::FenceResultKind::Terminal: {
      auto receipt = read_receipt(r->receipt());
      if (!receipt) return std::unexpected(receipt.error());
      return runtime::FenceQuery{std::move(*receipt)};
    }
    case fb::FenceResultKind::Indeterminate: {
      auto e = read_error(r->error());
      if (!e) return std::unexpected(e.error());
      return runtime::FenceQuery{std::move(*e)};
    }
  }
  return std::unexpected(corrupt("fence result kind is unknown"));
}

TraceResult<std::expected<runtime::TerminalReceipt, runtime::FenceIndeterminate>> read_fence_wait(
    const fb::FenceResult* r) {
  using Wait = std::expected<runtime::TerminalReceipt, runtime::FenceIndeterminate>;
  auto q = read_fence_query(r);
  if (!q) return std::unexpected(q.error());
  if (auto* receipt = std::get_if<runtime::TerminalReceipt>(&*q)) return Wait(std::move(*receipt));
  if (auto* error = std::get_if<runtime::RuntimeError>(&*q)) {
    return Wait(std::unexpect, runtime::FenceIndeterminate(std::move(*error)));
  }
  return std::unexpected(corrupt("fence wait result is Pending"));
}

flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::AttributionRow>>>
build_attribution_rows(Builder& b, const runtime::SubmissionAttribution& a) {
  std::vector<flatbuffers::Offset<fb::AttributionRow>> rows;
  rows.reserve(a.commands().size());
  for (const auto& row : a.commands()) {
    auto op = b.CreateString(row.native_op_id());
    fb::AttributionRowBuilder rb(b);
    rb.add_command_index(row.command_index());
    if (row.node_index()) rb.add_node_index(*row.node_index());
    rb.add_phase(to_fb(row.command_phase()));
    rb.add_native_op_id(op);
    rb.add_execution_path(to_fb(row.execution_path()));
    rb.add_batching_form(to_fb(row.batching_form()));
    rb.add_participant_start(row.participant_start());
    rb.add_participant_count(row.participant_count());
    rb.add_token_count(row.token_count());
    rb.add_compute_dispatch_count(row.compute_dispatch_count());
    rb.add_transfer_command_count(row.transfer_command_count());
    if (row.reusable_graph_node_count()) {
      rb.add_reusable_graph_node_count(*row.reusable_graph_node_count());
    }
    rows.push_back(rb.Finish());
  }
  return b.CreateVector(rows);
}

TraceResult<std::optional<runtime::SubmissionAttribution>> read_attribution(
    const flatbuffers::Vector<flatbuffers::Offset<fb::AttributionRow>>* rows) {
  if (!rows) return std::optional<runtime::SubmissionAttribution>{};
  std::vector<runtime::NativeWorkAttribution> out;
  out.reserve(rows->size());
  for (const auto* r : *rows) {
    if (!r) return std::unexpected(corrupt("attribution row is missing"));
    auto phase = need(from_fb(r->phase()), "attribution phase");
    auto path = need(from_fb(r->execution_path()), "attribution path");
    auto form = need(from_fb(r->batching_form()), "attribution batching form");
    if (!phase || !path || !form) return std::unexpected(corrupt("attribution enum is unknown"));
    auto op = runtime::DeviceNativeOperationId::create(str(r->native_op_id()));
    if (!op) return std::unexpected(corrupt("attribution native operation id is invalid"));
    auto row = runtime::NativeWorkAttribution::with_participant_range(
        r->command_index(), r->node_index(), *phase, std::move(*op), *path, *form,
        r->participant_start(), r->participant_count(), r->token_count(),
        r->compute_dispatch_count(), r->transfer_command_count(), r->reusable_graph_node_count());
    if (!row) return std::unexpected(corrupt("attribution row is invalid"));
    out.push_back(std::move(*row));
  }
  auto a = runtime::SubmissionAttribution::create(std::move(out));
  if (!a) return std::unexpected(corrupt("attribution rows are empty or unordered"));
  return std::optional<runtime::SubmissionAttribution>(std::move(*a));
}

flatbuffers::Offset<fb::ReusableCapture> build_reusable_capture(
    Builder& b, const runtime::ReusableExecutionCapture& c) {
  auto id = b.CreateString(c.program_id().str());
  auto eager = b.CreateVector(c.eager_boundary_node_indices());
  auto binding = b.CreateVector(c.per_wave_binding_node_indices());
  return fb::CreateReusableCapture(b, id, c.node_count(), eager, binding);
}

TraceResult<runtime::ReusableExecutionCapture> read_reusable_capture(const fb::ReusableCapture* c) {
  if (!c) return std::unexpected(corrupt("reusable capture is missing"));
  auto id = from_vnext(runtime::ProgramId::create(str(c->program_id())), "program id");
  if (!id) return std::unexpected(id.error());
  auto to_vec = [](const flatbuffers::Vector<std::uint32_t>* v) {
    return v ? std::vector<std::uint32_t>(v->begin(), v->end()) : std::vector<std::uint32_t>{};
  };
  return from_vnext(
      runtime::ReusableExecutionCapture::create(std::move(*id), c->node_count(),
                                                to_vec(c->eager_boundary_node_indices()),
                                                to_vec(c->per_wave_binding_node_indices())),
      "reusable capture");
}

flatbuffers::Offset<fb::ReusablePreparation> build_preparation(
    Builder& b, const runtime::ReusableExecutionPreparation& p) {
  return fb::CreateReusablePreparation(b, to_fb(p.state), to_fb(p.catalog_lifetime),
                                       p.maximum_executables, p.resident_executables,
                                       p.rejected_executables, p.captured_executables,
                                       p.uploaded_executables, p.capacity_deferred_executables);
}

TraceResult<runtime::ReusableExecutionPreparation> read_preparation(
    const fb::ReusablePreparation* p) {
  if (!p) return std::unexpected(corrupt("reusable preparation is missing"));
  auto state = need(from_fb(p->state()), "preparation state");
  auto lifetime = need(from_fb(p->catalog_lifetime()), "preparation lifetime");
  if (!state || !lifetime) return std::unexpected(corrupt("preparation enum is unknown"));
  runtime::ReusableExecutionPreparation out;
  out.state = *state;
  out.catalog_lifetime = *lifetime;
  out.maximum_executables = p->maximum_executables();
  out.resident_executables = p->resident_executables();
  out.rejected_executables = p->rejected_executables();
  out.captured_executables = p->captured_executables();
  out.uploaded_executables = p->uploaded_executables();
  out.capacity_deferred_executables = p->capacity_deferred_executables();
  return out;
}

// ---- events ------------------------------------------------------------------------------------
std::string_view event_kind_name(fb::EventBody kind) {
  if (kind == fb::EventBody::NONE) return "None";
  if (static_cast<unsigned>(kind) > static_cast<unsigned>(fb::EventBody::MAX)) return "Unknown";
  return fb::EnumNameEventBody(kind);
}

std::string_view event_kind_name(const fb::Event& event) {
  return event_kind_name(event.body_type());
}

bool event_kind_known(const fb::Event& event) {
  auto kind = event.body_type();
  return kind != fb::EventBody::NONE &&
         static_cast<unsigned>(kind) <= static_cast<unsigned>(fb::EventBody::MAX);
}

bool verify_event_record(std::span<const std::uint8_t> bytes) {
  // A FlatBuffer is at least a root offset; the verifier also bounds every offset by the span.
  if (bytes.size() < sizeof(flatbuffers::uoffset_t) || bytes.size() > kMaxRecordBytes) {
    return false;
  }
  // The verifier reads scalars in place: a record whose bytes are not 8-byte aligned (a record
  // header ends at any offset) is verified on an aligned copy.
  std::vector<std::uint64_t> copy;
  const std::uint8_t* data = bytes.data();
  if (reinterpret_cast<std::uintptr_t>(data) % alignof(std::uint64_t) != 0) {
    copy.resize((bytes.size() + 7) / 8);
    std::memcpy(copy.data(), data, bytes.size());
    data = reinterpret_cast<const std::uint8_t*>(copy.data());
  }
  flatbuffers::Verifier verifier(data, bytes.size(), kEventMaxDepth, kEventMaxTables);
  // An unknown union member verifies as "skip" (flatc generates `default: return true`), so a
  // newer writer's events still reach the reader, which then applies Event.required.
  if (!verifier.VerifyBuffer<fb::Event>(nullptr)) return false;
  // The verifier accepts a union type without its value (an absent table verifies); every
  // reader of a known kind takes the body as present, so an event naming a kind has its body.
  const fb::Event* event = flatbuffers::GetRoot<fb::Event>(data);
  if (event->body_type() != fb::EventBody::NONE && event->body() == nullptr) return false;
  // The vectors of 8-byte elements in vtrace.fbs (container_internal.h, elements_aligned); the
  // buffer itself is 8-byte aligned here.
  using detail::elements_aligned;
  switch (event->body_type()) {
    case fb::EventBody::EncodeDenseLinear:
      return elements_aligned(event->body_as_EncodeDenseLinear()->launches());
    case fb::EventBody::OptionalCall: {
      const auto* e = event->body_as_OptionalCall();
      return elements_aligned(e->commands_in()) && elements_aligned(e->commands_out());
    }
    case fb::EventBody::CoalesceProgramBindings: {
      const auto* e = event->body_as_CoalesceProgramBindings();
      return elements_aligned(e->commands_in()) && elements_aligned(e->commands_out());
    }
    default:
      return true;
  }
}

const fb::TraceMetadata* read_trace_metadata(std::span<const std::uint8_t> bytes) {
  if (bytes.size() < sizeof(flatbuffers::uoffset_t)) return nullptr;
  flatbuffers::Verifier verifier(bytes.data(), bytes.size(), kEventMaxDepth, kEventMaxTables);
  if (!verifier.VerifyBuffer<fb::TraceMetadata>(nullptr)) return nullptr;
  return flatbuffers::GetRoot<fb::TraceMetadata>(bytes.data());
}

const fb::TraceSummary* read_trace_summary(std::span<const std::uint8_t> bytes) {
  if (bytes.size() < sizeof(flatbuffers::uoffset_t)) return nullptr;
  flatbuffers::Verifier verifier(bytes.data(), bytes.size(), kEventMaxDepth, kEventMaxTables);
  if (!verifier.VerifyBuffer<fb::TraceSummary>(nullptr)) return nullptr;
  return flatbuffers::GetRoot<fb::TraceSummary>(bytes.data());
}

}  // namespace vtrace::schema
