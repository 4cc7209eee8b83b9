#include "vtrace/recorder/recording_runtime.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <mutex>
#include <optional>
#include <type_traits>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "vtrace/schema/events.h"

namespace vtrace::recorder {

namespace rt = vtrace::runtime;
namespace fb = vtrace::fb;
using schema::build_error;
using schema::to_fb;
using Off = flatbuffers::Offset<void>;

namespace {

enum Kind : std::size_t { kBuffer, kStream, kCommand, kFence, kSession, kKindCount };

constexpr fb::ObjectKind kObjectKinds[kKindCount] = {fb::ObjectKind::Buffer, fb::ObjectKind::Stream,
                                                      fb::ObjectKind::Command, fb::ObjectKind::Fence,
                                                      fb::ObjectKind::ImportSession};

constexpr std::size_t kEventKinds = static_cast<std::size_t>(fb::EventBody::MAX) + 1;

// The blob encoding hint: the element size when the bytes are whole elements of 1, 2 or 4 bytes.
std::uint32_t element_bytes_for(rt::ElementType type, std::size_t bytes) {
  const std::uint64_t size = rt::element_size_bytes(type);
  if ((size == 2 || size == 4) && bytes % size == 0) return static_cast<std::uint32_t>(size);
  return 1;
}

}  // namespace

// Handle wrappers: each owns the wrapped runtime's handle and remembers its recorder and ordinal.
// Dropping one records the release of its kind; a command whose inner handle was consumed (by
// submit or coalesce) was not dropped and records nothing. The destructor is defined below, once
// State is complete.
template <typename Handle, Kind kKind>
class Recorded final : public Handle {
 public:
  Recorded(RecordingRuntime::State* s, std::uint64_t o, std::unique_ptr<Handle> in)
      : owner(s), ordinal(o), inner(std::move(in)) {}
  ~Recorded() override;
  RecordingRuntime::State* owner;
  std::uint64_t ordinal;
  std::unique_ptr<Handle> inner;  // for commands: null once submitted or coalesced
};
using RecordedBuffer = Recorded<rt::Buffer, kBuffer>;
using RecordedStream = Recorded<rt::Stream, kStream>;
using RecordedCommand = Recorded<rt::Command, kCommand>;
using RecordedFence = Recorded<rt::Fence, kFence>;

namespace {

// Unwrapping ignores the owner on purpose: a wrapper of another recorder forwards that recorder's
// wrapped handle, so the wrapped runtime answers exactly as it would without recorders.
const rt::Buffer* unwrap(const rt::Buffer* b) {
  if (const auto* w = dynamic_cast<const RecordedBuffer*>(b)) return w->inner.get();
  return b;
}
rt::Stream& unwrap(rt::Stream& s) {
  if (auto* w = dynamic_cast<RecordedStream*>(&s)) return *w->inner;
  return s;
}
const rt::Stream& unwrap(const rt::Stream& s) {
  if (const auto* w = dynamic_cast<const RecordedStream*>(&s)) return *w->inner;
  return s;
}
const rt::Fence& unwrap(const rt::Fence& f) {
  if (const auto* w = dynamic_cast<const RecordedFence*>(&f)) return *w->inner;
  return f;
}
rt::CommandPtr unwrap(rt::CommandPtr c) {
  if (auto* w = dynamic_cast<RecordedCommand*>(c.get())) return std::move(w->inner);
  return c;
}

}  // namespace

struct RecordingRuntime::State {
  // Declared first so it is destroyed last: the writer and the wrappers go before the runtime.
  std::unique_ptr<rt::DeviceRuntime> inner;
  std::unique_ptr<schema::TraceWriter> writer;
  RecorderOptions options;
  std::string runtime_name;

  // The order lock: every recorded call (and every wrapper release) holds it from its first event
  // through the wrapped call to its last event (SubmitBegin, the flush before submit, the submit,
  // SubmitEnd and its CounterSnapshot are one unit), so the trace order is the order the wrapped
  // runtime ran the calls in and a replay sees the same device state at every step. Recording
  // therefore serializes calls to the wrapped runtime, waits and flushes included. A plain mutex,
  // not a recursive one: no wrapper with a live inner handle dies while it is held (submit and
  // coalesce move the inner handles out of the wrappers before the emptied wrappers die, and an
  // emptied wrapper's destructor returns before locking), so a re-entry would be a bug, and
  // deadlocking on it in tests beats recording a release in the middle of another call's event.
  // Lock order: `order`, then `mu`.
  mutable std::mutex order;
  // Guards the recording state below (short sections; taken alone by the queries that do not
  // forward: events_recorded, recording_failed).
  mutable std::mutex mu;
  std::atomic<bool> active{true};  // false once closed or failed
  std::optional<schema::TraceError> first_error;
  std::optional<RecorderCloseResult> close_result;
  flatbuffers::FlatBufferBuilder fbb{4096};
  std::uint64_t seq = 0;
  std::array<std::uint64_t, kKindCount> next_own{};
  std::array<std::uint64_t, kKindCount> next_foreign{};
  std::array<std::unordered_map<const void*, std::uint64_t>, kKindCount> foreign;
  std::array<std::uint64_t, kEventKinds> event_counts{};
  std::uint64_t submits = 0;
  std::uint64_t upload_bytes = 0;
  std::uint64_t readback_bytes = 0;

  // ---- everything below with `mu` held unless said otherwise ----

  void fail_locked(const schema::TraceError& error) {
    if (!first_error) first_error = error;
    active.store(false);
  }

  // Wraps `body` (built in fbb) in an Event with the next sequence number and appends it.
  std::uint64_t emit_locked(fb::EventBody type, Off body) {
    const std::uint64_t this_seq = seq;
    auto event = fb::CreateEvent(fbb, this_seq, type, body);
    fbb.Finish(event);
    auto appended = writer->append_event(std::span(fbb.GetBufferPointer(), fbb.GetSize()));
    fbb.Clear();
    if (!appended) {
      fail_locked(appended.error());
      return this_seq;
    }
    ++event_counts[static_cast<std::size_t>(type)];
    ++seq;
    return this_seq;
  }

  // The reference to a handle; a foreign one is introduced by a ForeignObjectSeen event first.
  // Call before starting to build the event that uses it (fbb must be empty).
  template <typename Wrapper, typename Base>
  fb::ObjectRef ref_locked(Kind kind, const Base* handle) {
    if (handle == nullptr) return fb::ObjectRef(0, fb::RefSpace::Null);
    if (const auto* w = dynamic_cast<const Wrapper*>(handle); w != nullptr && w->owner == this) {
      return fb::ObjectRef(w->ordinal, fb::RefSpace::Own);
    }
    auto [it, inserted] = foreign[kind].try_emplace(handle, next_foreign[kind]);
    if (inserted) {
      ++next_foreign[kind];
      flatbuffers::Offset<fb::BufferDescriptor> descriptor;
      if constexpr (std::is_same_v<Base, rt::Buffer>) {
        descriptor = schema::build_buffer_descriptor(fbb, inner->buffer_descriptor(*unwrap(handle)));
      }
      fb::ForeignObjectSeenBuilder b(fbb);
      b.add_object(kObjectKinds[kind]);
      b.add_ordinal(it->second);
      b.add_buffer_descriptor(descriptor);
      emit_locked(fb::EventBody::ForeignObjectSeen, b.Finish().Union());
    }
    return fb::ObjectRef(it->second, fb::RefSpace::Foreign);
  }
  fb::ObjectRef buffer_ref(const rt::Buffer* b) { return ref_locked<RecordedBuffer>(kBuffer, b); }
  fb::ObjectRef stream_ref(const rt::Stream* s) { return ref_locked<RecordedStream>(kStream, s); }
  fb::ObjectRef command_ref(const rt::Command* c) {
    return ref_locked<RecordedCommand>(kCommand, c);
  }
  fb::ObjectRef fence_ref(const rt::Fence* f) { return ref_locked<RecordedFence>(kFence, f); }

  void record_release(Kind kind, std::uint64_t ordinal) {
    std::lock_guard lock(mu);
    if (!active.load()) return;
    switch (kind) {
      case kBuffer:
        emit_locked(fb::EventBody::BufferReleased, fb::CreateBufferReleased(fbb, ordinal).Union());
        break;
      case kStream:
        emit_locked(fb::EventBody::StreamReleased, fb::CreateStreamReleased(fbb, ordinal).Union());
        break;
      case kCommand:
        emit_locked(fb::EventBody::CommandReleased,
                    fb::CreateCommandReleased(fbb, ordinal).Union());
        break;
      case kFence:
        emit_locked(fb::EventBody::FenceReleased, fb::CreateFenceReleased(fbb, ordinal).Union());
        break;
      default:
        break;
    }
  }

  void counters_locked(std::uint64_t after_seq, const std::optional<rt::CounterSnapshot>& c) {
    if (!c || !active.load()) return;
    auto counters = to_fb(*c);
    emit_locked(fb::EventBody::CounterSnapshot,
                fb::CreateCounterSnapshot(fbb, after_seq, &counters).Union());
  }

  // Without `mu`: stores a payload (the writer serializes itself); nullopt when not recording.
  std::optional<schema::BlobId> put_blob(std::span<const std::uint8_t> bytes,
                                         std::uint32_t element_bytes) {
    if (!active.load()) return std::nullopt;
    auto id = writer->put_blob(bytes, element_bytes);
    if (!id) {
      std::lock_guard lock(mu);
      fail_locked(id.error());
      return std::nullopt;
    }
    return *id;
  }

  // Without `mu`.
  void flush() {
    if (!active.load()) return;
    auto flushed = writer->flush();
    if (!flushed) {
      std::lock_guard lock(mu);
      fail_locked(flushed.error());
    }
  }

  // The fields an OptionalCall may carry; offsets must be built before emit_optional_locked.
  struct OptionalFields {
    std::optional<fb::ObjectRef> stream, buffer, destination;
    std::optional<std::uint64_t> session, command;
    std::uint64_t offset_bytes = 0;
    std::optional<fb::BlobRef> payload;
    std::uint64_t payload_bytes = 0;
    flatbuffers::Offset<flatbuffers::String> text;
    std::uint32_t node_index = 0;
    std::uint64_t plan_maximum_executables = 0;
    fb::ReusableExecutionCatalogLifetime plan_lifetime = fb::ReusableExecutionCatalogLifetime::StartupSealed;
    flatbuffers::Offset<flatbuffers::Vector<const fb::ObjectRef*>> commands_in;
    bool supported = true;
    bool flag = false;
    flatbuffers::Offset<flatbuffers::Vector<std::uint64_t>> commands_out;
    flatbuffers::Offset<fb::ReusablePreparation> preparation;
    flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::ReusableProgram>>> catalog;
    std::uint64_t released_executables = 0;
    std::uint64_t released_rejections = 0;
    flatbuffers::Offset<fb::Error> error;
  };

  void emit_optional_locked(std::string_view method, const OptionalFields& f) {
    auto name = fbb.CreateString(method.data(), method.size());
    fb::OptionalCallBuilder b(fbb);
    b.add_method(name);
    if (f.stream) b.add_stream(&*f.stream);
    if (f.session) b.add_session(*f.session);
    if (f.buffer) b.add_buffer(&*f.buffer);
    if (f.destination) b.add_destination(&*f.destination);
    b.add_offset_bytes(f.offset_bytes);
    if (f.payload) b.add_payload(&*f.payload);
    b.add_payload_bytes(f.payload_bytes);
    b.add_text(f.text);
    b.add_node_index(f.node_index);
    b.add_plan_maximum_executables(f.plan_maximum_executables);
    b.add_plan_catalog_lifetime(f.plan_lifetime);
    b.add_commands_in(f.commands_in);
    b.add_supported(f.supported);
    b.add_flag(f.flag);
    if (f.command) b.add_command(*f.command);
    b.add_commands_out(f.commands_out);
    b.add_preparation(f.preparation);
    b.add_catalog(f.catalog);
    b.add_released_executables(f.released_executables);
    b.add_released_rejections(f.released_rejections);
    b.add_error(f.error);
    emit_locked(fb::EventBody::OptionalCall, b.Finish().Union());
  }

  // Records a preparation-returning optional method.
  void record_preparation(std::string_view method, const rt::Stream& stream,
                          const rt::Result<rt::ReusableExecutionPreparation>& r,
                          const rt::ReusableExecutionPlan* plan) {
    std::lock_guard lock(mu);
    if (!active.load()) return;
    OptionalFields f;
    f.stream = stream_ref(&stream);
    if (plan != nullptr) {
      f.plan_maximum_executables = plan->maximum_executables();
      f.plan_lifetime = to_fb(plan->catalog_lifetime());
    }
    if (r) {
      f.preparation = schema::build_preparation(fbb, *r);
    } else {
      f.error = build_error(fbb, r.error());
    }
    emit_optional_locked(method, f);
  }

  // SubmitBegin for submit and submit_guarded; returns its sequence number.
  std::uint64_t record_submit_begin(const rt::Stream& stream, const rt::CommandBatch& batch,
                                    const rt::SubmissionGuard* guard) {
    std::lock_guard lock(mu);
    if (!active.load()) return 0;
    const auto stream_r = stream_ref(&stream);
    std::vector<fb::ObjectRef> command_refs;
    command_refs.reserve(batch.size());
    for (const auto& entry : batch.entries()) command_refs.push_back(command_ref(entry.command.get()));

    std::vector<flatbuffers::Offset<fb::CommandEntry>> entries;
    entries.reserve(batch.size());
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const auto& entry = batch.entries()[i];
      fb::CommandEntryBuilder eb(fbb);
      eb.add_phase(to_fb(entry.phase));
      if (entry.node_index) eb.add_node_index(*entry.node_index);
      std::optional<fb::LogicalWork> work;
      if (entry.logical_work) work = to_fb(*entry.logical_work);
      if (work) eb.add_logical_work(&*work);
      eb.add_command(&command_refs[i]);
      entries.push_back(eb.Finish());
    }
    auto entries_v = fbb.CreateVector(entries);
    auto eager = fbb.CreateVector(batch.declared_eager_compute_node_indices());
    flatbuffers::Offset<fb::ReusableCapture> capture;
    if (batch.reusable_execution_capture()) {
      capture = schema::build_reusable_capture(fbb, *batch.reusable_execution_capture());
    }
    fb::SubmitBeginBuilder b(fbb);
    b.add_stream(&stream_r);
    b.add_entries(entries_v);
    b.add_timing_mode(to_fb(batch.timing_mode()));
    b.add_compute_path_requirement(to_fb(batch.compute_path_requirement()));
    b.add_declared_eager_indices(eager);
    b.add_attribution_requirement(to_fb(batch.attribution_requirement()));
    b.add_reusable_capture(capture);
    if (guard != nullptr) {
      b.add_guarded(true);
      b.add_guard_maximum_commands(guard->maximum_commands);
    }
    ++submits;
    return emit_locked(fb::EventBody::SubmitBegin, b.Finish().Union());
  }

  // The batch handed to the wrapped runtime: same settings, entries with unwrapped commands.
  static rt::CommandBatch rebuild(rt::CommandBatch batch) {
    rt::CommandBatch out(batch.timing_mode(), batch.compute_path_requirement());
    if (!batch.declared_eager_compute_node_indices().empty()) {
      // Cannot fail: the same indices were accepted for the same path by the caller's batch.
      (void)out.set_declared_eager_compute_node_indices(batch.declared_eager_compute_node_indices());
    }
    if (batch.attribution_requirement() == rt::AttributionRequirement::kLogicalExecutionPath) {
      out.require_logical_execution_path_attribution();
    }
    if (batch.reusable_execution_capture()) {
      (void)out.set_reusable_execution_capture(*batch.reusable_execution_capture());
    }
    for (auto& entry : std::move(batch).into_entries()) {
      entry.command = unwrap(std::move(entry.command));
      out.push_entry(std::move(entry));
    }
    return out;
  }

  rt::FencePtr wrap_fence(std::uint64_t ordinal, rt::FencePtr f) {
    return std::make_unique<RecordedFence>(this, ordinal, std::move(f));
  }
  rt::CommandPtr wrap_command(std::uint64_t ordinal, rt::CommandPtr c) {
    return std::make_unique<RecordedCommand>(this, ordinal, std::move(c));
  }

  // Assigns the next own ordinal of `kind` (even while not recording, so wrappers stay unique).
  std::uint64_t next_locked(Kind kind) { return next_own[kind]++; }

  std::vector<std::uint8_t> build_summary_locked() {
    fbb.Clear();
    std::vector<flatbuffers::Offset<fb::EventKindCount>> counts;
    std::vector<std::pair<std::string_view, std::uint64_t>> named;
    for (std::size_t i = 0; i < kEventKinds; ++i) {
      if (event_counts[i] == 0) continue;
      named.emplace_back(schema::event_kind_name(static_cast<fb::EventBody>(i)), event_counts[i]);
    }
    std::sort(named.begin(), named.end());
    for (const auto& [name, count] : named) {
      counts.push_back(fb::CreateEventKindCount(fbb, fbb.CreateString(name.data(), name.size()),
                                                count));
    }
    auto counts_v = fbb.CreateVector(counts);
    const auto final_counters = inner->counter_snapshot();
    std::optional<fb::Counters> fc;
    if (final_counters) fc = to_fb(*final_counters);
    const auto stats = writer->stats();
    fb::TraceSummaryBuilder b(fbb);
    b.add_event_counts(counts_v);
    if (fc) b.add_final_counters(&*fc);
    b.add_events(seq);
    b.add_blobs(stats.blobs);
    b.add_blob_references(stats.blob_references);
    b.add_payload_raw_bytes(stats.payload_raw_bytes);
    b.add_payload_referenced_bytes(stats.payload_referenced_bytes);
    b.add_submits(submits);
    b.add_readback_bytes(readback_bytes);
    b.add_upload_bytes(upload_bytes);
    fbb.Finish(b.Finish());
    std::vector<std::uint8_t> out(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
    fbb.Clear();
    return out;
  }
};

template <typename Handle, Kind kKind>
Recorded<Handle, kKind>::~Recorded() {
  if (!inner) return;
  const std::lock_guard in_order(owner->order);
  inner.reset();
  owner->record_release(kKind, ordinal);
}

namespace {

class RecordedImportSession final : public rt::StaticWeightImportSession {
 public:
  RecordedImportSession(RecordingRuntime::State* s, std::uint64_t o,
                        std::unique_ptr<rt::StaticWeightImportSession> in)
      : state_(s), ordinal_(o), inner_(std::move(in)) {}

  rt::Result<void> import_component(std::span<const std::uint8_t> payload,
                                    const rt::Buffer& destination,
                                    std::uint64_t destination_offset_bytes) override {
    const std::lock_guard in_order(state_->order);
    auto r = inner_->import_component(payload, *unwrap(&destination), destination_offset_bytes);
    auto blob = state_->put_blob(payload, 1);
    std::lock_guard lock(state_->mu);
    if (!state_->active.load()) return r;
    RecordingRuntime::State::OptionalFields f;
    f.buffer = state_->buffer_ref(&destination);
    f.session = ordinal_;
    f.offset_bytes = destination_offset_bytes;
    if (blob) f.payload = to_fb(*blob);
    f.payload_bytes = payload.size();
    if (!r) f.error = build_error(state_->fbb, r.error());
    state_->emit_optional_locked("static_weight_import.import_component", f);
    return r;
  }

  rt::Result<void> seal() override {
    const std::lock_guard in_order(state_->order);
    auto r = inner_->seal();
    std::lock_guard lock(state_->mu);
    if (!state_->active.load()) return r;
    RecordingRuntime::State::OptionalFields f;
    f.session = ordinal_;
    if (!r) f.error = build_error(state_->fbb, r.error());
    state_->emit_optional_locked("static_weight_import.seal", f);
    return r;
  }

 private:
  RecordingRuntime::State* state_;
  std::uint64_t ordinal_;
  std::unique_ptr<rt::StaticWeightImportSession> inner_;
};

rt::RuntimeError trace_failure(const schema::TraceError& e) {
  return rt::RuntimeError(rt::ErrorKind::kInternal,
                          fmt::format("cannot record a trace: {}: {}",
                                      schema::trace_error_kind_name(e.kind), e.message));
}

}  // namespace

// ---- construction and closing --------------------------------------------------------------------

RecordingRuntime::RecordingRuntime(std::unique_ptr<State> state) : state_(std::move(state)) {}

rt::Result<std::unique_ptr<RecordingRuntime>> RecordingRuntime::create(
    std::unique_ptr<rt::DeviceRuntime> inner, std::string runtime_name,
    const std::filesystem::path& trace_path, RecorderOptions options) {
  auto sink = schema::open_file_sink(trace_path);
  if (!sink) return std::unexpected(trace_failure(sink.error()));
  return create(std::move(inner), std::move(runtime_name), std::move(*sink), std::move(options));
}

rt::Result<std::unique_ptr<RecordingRuntime>> RecordingRuntime::create(
    std::unique_ptr<rt::DeviceRuntime> inner, std::string runtime_name,
    std::unique_ptr<schema::ByteSink> sink, RecorderOptions options) {
  return wrap(inner, std::move(runtime_name), std::move(sink), std::move(options));
}

rt::Result<std::unique_ptr<RecordingRuntime>> RecordingRuntime::wrap(
    std::unique_ptr<rt::DeviceRuntime>& inner, std::string runtime_name,
    std::unique_ptr<schema::ByteSink> sink, RecorderOptions options) {
  if (!inner) {
    return std::unexpected(
        rt::RuntimeError(rt::ErrorKind::kInternal, "cannot record a trace: no runtime to wrap"));
  }
  if (!sink) {
    return std::unexpected(
        rt::RuntimeError(rt::ErrorKind::kInternal, "cannot record a trace: no byte sink"));
  }
  // Header metadata: what the runtime said about itself, and how it is being recorded.
  flatbuffers::FlatBufferBuilder mb(1024);
  {
    auto name = mb.CreateString(runtime_name);
    auto descriptor = schema::build_descriptor(mb, inner->descriptor());
    auto rec = fb::CreateRecorderOptionsRecord(mb, options.writer.zstd_level,
                                               options.writer.frame_target_bytes,
                                               options.writer.flush_interval_ms,
                                               options.writer.byte_planes_for_16bit);
    auto workload = mb.CreateString(options.workload_description);
    mb.Finish(fb::CreateTraceMetadata(mb, name, descriptor,
                                      to_fb(inner->attention_execution_policy()), rec, workload));
  }
  schema::TraceHeaderInfo header;
  header.producer = "vtrace-recorder";
  header.producer_version = "0.1.0";
  header.metadata.assign(mb.GetBufferPointer(), mb.GetBufferPointer() + mb.GetSize());
  auto writer = schema::TraceWriter::create(std::move(sink), std::move(header), options.writer);
  if (!writer) return std::unexpected(trace_failure(writer.error()));

  auto state = std::make_unique<State>();
  state->inner = std::move(inner);
  state->writer = std::move(*writer);
  state->options = std::move(options);
  state->runtime_name = std::move(runtime_name);
  {
    State& s = *state;
    std::lock_guard lock(s.mu);
    auto name = s.fbb.CreateString(s.runtime_name);
    auto descriptor = schema::build_descriptor(s.fbb, s.inner->descriptor());
    auto opened = fb::CreateRuntimeOpened(s.fbb, name, descriptor,
                                          to_fb(s.inner->attention_execution_policy()));
    s.emit_locked(fb::EventBody::RuntimeOpened, opened.Union());
  }
  return std::unique_ptr<RecordingRuntime>(new RecordingRuntime(std::move(state)));
}

RecordingRuntime::~RecordingRuntime() { (void)close(); }

RecorderCloseResult RecordingRuntime::close() {
  State& s = *state_;
  const std::lock_guard in_order(s.order);
  std::lock_guard lock(s.mu);
  if (s.close_result) return *s.close_result;
  const bool was_active = s.active.exchange(false);
  auto summary = s.build_summary_locked();
  auto closed = s.writer->close(summary);
  // The writer reports the original sink error; the recorder may only have seen the
  // kWriterFailed of a later call.
  if (!closed) {
    if (!s.first_error) s.first_error = closed.error();
    s.close_result = std::unexpected(closed.error());
  } else if (!was_active && s.first_error) {
    s.close_result = std::unexpected(*s.first_error);
  } else {
    s.close_result = *closed;
  }
  return *s.close_result;
}

const rt::DeviceRuntime& RecordingRuntime::inner() const { return *state_->inner; }
rt::DeviceRuntime& RecordingRuntime::inner() { return *state_->inner; }

bool RecordingRuntime::recording_failed() const {
  std::lock_guard lock(state_->mu);
  return state_->first_error.has_value();
}

std::uint64_t RecordingRuntime::events_recorded() const {
  std::lock_guard lock(state_->mu);
  return state_->seq;
}

// ---- required methods ------------------------------------------------------------------------------

const rt::DeviceDescriptor& RecordingRuntime::descriptor() const {
  return state_->inner->descriptor();
}

rt::AttentionExecutionPolicy RecordingRuntime::attention_execution_policy() const {
  return state_->inner->attention_execution_policy();
}

std::optional<rt::CounterSnapshot> RecordingRuntime::counter_snapshot() const {
  return state_->inner->counter_snapshot();
}

rt::Result<rt::AllocationPermit> RecordingRuntime::admit(const rt::BufferRequest& request) {
  State& s = *state_;
  const std::lock_guard in_order(s.order);
  auto r = s.inner->admit(request);
  std::lock_guard lock(s.mu);
  if (!s.active.load()) return r;
  auto req = schema::build_buffer_request(s.fbb, request);
  flatbuffers::Offset<fb::Error> err;
  if (!r) err = build_error(s.fbb, r.error());
  fb::AdmitBuilder b(s.fbb);
  b.add_request(req);
  if (r) b.add_permit_generation(r->generation());
  b.add_error(err);
  s.emit_locked(fb::EventBody::Admit, b.Finish().Union());
  return r;
}

rt::Result<rt::BufferPtr> RecordingRuntime::allocate(rt::AllocationPermit permit) {
  State& s = *state_;
  const std::lock_guard in_order(s.order);
  const std::uint64_t generation = permit.generation();
  std::optional<rt::BufferRequest> request;
  if (!permit.consumed()) request = permit.request();
  auto r = s.inner->allocate(std::move(permit));
  std::optional<rt::BufferDescriptor> descriptor;
  if (r) descriptor = s.inner->buffer_descriptor(**r);
  std::lock_guard lock(s.mu);
  std::uint64_t ordinal = 0;
  if (r) ordinal = s.next_locked(kBuffer);
  if (s.active.load()) {
    flatbuffers::Offset<fb::BufferRequest> req;
    if (request) req = schema::build_buffer_request(s.fbb, *request);
    flatbuffers::Offset<fb::BufferDescriptor> desc;
    if (descriptor) desc = schema::build_buffer_descriptor(s.fbb, *descriptor);
    flatbuffers::Offset<fb::Error> err;
    if (!r) err = build_error(s.fbb, r.error());
    fb::AllocateBuilder b(s.fbb);
    b.add_permit_generation(generation);
    b.add_request(req);
    if (r) b.add_buffer(ordinal);
    b.add_descriptor(desc);
    b.add_error(err);
    s.emit_locked(fb::EventBody::Allocate, b.Finish().Union());
  }
  if (!r) return std::unexpected(std::move(r.error()));
  return rt::BufferPtr(std::make_unique<RecordedBuffer>(&s, ordinal, std::move(*r)));
}

rt::BufferDescriptor RecordingRuntime::buffer_descriptor(const rt::Buffer& buffer) const {
  State& s = *state_;
  const std::lock_guard in_order(s.order);
  auto d = s.inner->buffer_descriptor(*unwrap(&buffer));
  std::lock_guard lock(s.mu);
  if (!s.active.load()) return d;
  const auto ref = s.buffer_ref(&buffer);
  auto desc = schema::build_buffer_descriptor(s.fbb, d);
  s.emit_locked(fb::EventBody::BufferDescriptorQueried,
                fb::CreateBufferDescriptorQueried(s.fbb, &ref, desc).Union());
  return d;
}

rt::Result<rt::StreamPtr> RecordingRuntime::create_stream() {
  State& s = *state_;
  const std::lock_guard in_order(s.order);
  auto r = s.inner->create_stream();
  std::lock_guard lock(s.mu);
  std::uint64_t ordinal = 0;
  if (r) ordinal = s.next_locked(kStream);
  if (s.active.load()) {
    flatbuffers::Offset<fb::Error> err;
    if (!r) err = build_error(s.fbb, r.error());
    fb::StreamCreatedBuilder b(s.fbb);
    if (r) b.add_stream(ordinal);
    b.add_error(err);
    s.emit_locked(fb::EventBody::StreamCreated, b.Finish().Union());
  }
  if (!r) return std::unexpected(std::move(r.error()));
  return rt::StreamPtr(std::make_unique<RecordedStream>(&s, ordinal, std::move(*r)));
}

rt::StreamState RecordingRuntime::stream_state(const rt::Stream& stream) const {
  State& s = *state_;
  const std::lock_guard in_order(s.order);
  const auto state = s.inner->stream_state(unwrap(stream));
  std::lock_guard lock(s.mu);
  if (!s.active.load()) return state;
  const auto ref = s.stream_ref(&stream);
  s.emit_locked(fb::EventBody::StreamStateQueried,
                fb::CreateStreamStateQueried(s.fbb, &ref, to_fb(state)).Union());
  return state;
}

rt::Result<rt::CommandPtr> RecordingRuntime::encode_copy(const rt::Buffer& source,
                                                         const rt::Buffer& destination,
                                                         const rt::CopyRegion& region) {
  State& s = *state_;
  const std::lock_guard in_order(s.order);
  auto r = s.inner->encode_copy(*unwrap(&source), *unwrap(&destination), region);
  std::lock_guard lock(s.mu);
  std::uint64_t ordinal = 0;
  if (r) ordinal = s.next_locked(kCommand);
  if (s.active.load()) {
    const auto src = s.buffer_ref(&source);
    const auto dst = s.buffer_ref(&destination);
    const auto reg = to_fb(region);
    flatbuffers::Offset<fb::Error> err;
    if (!r) err = build_error(s.fbb, r.error());
    fb::EncodeCopyBuilder b(s.fbb);
    b.add_source(&src);
    b.add_destination(&dst);
    b.add_region(&reg);
    if (r) b.add_command(ordinal);
    b.add_error(err);
    s.emit_locked(fb::EventBody::EncodeCopy, b.Finish().Union());
  }
  if (!r) return std::unexpected(std::move(r.error()));
  return s.wrap_command(ordinal, std::move(*r));
}

rt::Result<rt::CommandPtr> RecordingRuntime::encode_upload(std::span<const std::uint8_t> source,
                                                           const rt::HostTransferLayout& layout,
                                                           const rt::Buffer& destination,
                                                           std::uint64_t destination_offset_bytes) {
  State& s = *state_;
  const std::lock_guard in_order(s.order);
  auto r = s.inner->encode_upload(source, layout, *unwrap(&destination), destination_offset_bytes);
  auto blob = s.put_blob(source, element_bytes_for(layout.element_type(), source.size()));
  std::lock_guard lock(s.mu);
  std::uint64_t ordinal = 0;
  if (r) ordinal = s.next_locked(kCommand);
  if (s.active.load()) {
    const auto dst = s.buffer_ref(&destination);
    const auto lay = to_fb(layout);
    std::optional<fb::BlobRef> payload;
    if (blob) payload = to_fb(*blob);
    flatbuffers::Offset<fb::Error> err;
    if (!r) err = build_error(s.fbb, r.error());
    fb::EncodeUploadBuilder b(s.fbb);
    if (payload) b.add_payload(&*payload);
    b.add_payload_bytes(source.size());
    b.add_layout(&lay);
    b.add_destination(&dst);
    b.add_destination_offset_bytes(destination_offset_bytes);
    if (r) b.add_command(ordinal);
    b.add_error(err);
    s.emit_locked(fb::EventBody::EncodeUpload, b.Finish().Union());
    s.upload_bytes += source.size();
  }
  if (!r) return std::unexpected(std::move(r.error()));
  return s.wrap_command(ordinal, std::move(*r));
}

rt::Result<rt::CommandPtr> RecordingRuntime::encode_zero(const rt::Buffer& destination,
                                                         std::uint64_t destination_offset_bytes,
                                                         std::uint64_t length_bytes) {
  State& s = *state_;
  const std::lock_guard in_order(s.order);
  auto r = s.inner->encode_zero(*unwrap(&destination), destination_offset_bytes, length_bytes);
  std::lock_guard lock(s.mu);
  std::uint64_t ordinal = 0;
  if (r) ordinal = s.next_locked(kCommand);
  if (s.active.load()) {
    const auto dst = s.buffer_ref(&destination);
    flatbuffers::Offset<fb::Error> err;
    if (!r) err = build_error(s.fbb, r.error());
    fb::EncodeZeroBuilder b(s.fbb);
    b.add_destination(&dst);
    b.add_destination_offset_bytes(destination_offset_bytes);
    b.add_length_bytes(length_bytes);
    if (r) b.add_command(ordinal);
    b.add_error(err);
    s.emit_locked(fb::EventBody::EncodeZero, b.Finish().Union());
  }
  if (!r) return std::unexpected(std::move(r.error()));
  return s.wrap_command(ordinal, std::move(*r));
}

rt::Result<rt::CommandPtr> RecordingRuntime::encode_dense_linear(
    const rt::DenseLinearRequest& request) {
  State& s = *state_;
  const std::lock_guard in_order(s.order);
  std::vector<rt::DenseLinearLaunch> launches(request.launches.begin(), request.launches.end());
  for (auto& l : launches) {
    l.input.buffer = unwrap(l.input.buffer);
    l.weight.buffer = unwrap(l.weight.buffer);
    l.output.buffer = unwrap(l.output.buffer);
  }
  auto r = s.inner->encode_dense_linear(
      rt::DenseLinearRequest{launches, request.participant_count, request.token_count});
  std::lock_guard lock(s.mu);
  std::uint64_t ordinal = 0;
  if (r) ordinal = s.next_locked(kCommand);
  if (s.active.load()) {
    std::vector<fb::DenseLinearLaunch> recorded;
    recorded.reserve(request.launches.size());
    auto region = [&s](const rt::BufferRegionRef& ref) {
      return fb::RegionRef(s.buffer_ref(ref.buffer), ref.offset_bytes, ref.length_bytes);
    };
    for (const auto& l : request.launches) {
      const auto in = region(l.input);
      const auto w = region(l.weight);
      const auto out = region(l.output);
      recorded.emplace_back(in, w, out, l.rows, l.in_features, l.out_features);
    }
    auto launches_v = s.fbb.CreateVectorOfStructs(recorded);
    flatbuffers::Offset<fb::Error> err;
    if (!r) err = build_error(s.fbb, r.error());
    fb::EncodeDenseLinearBuilder b(s.fbb);
    b.add_launches(launches_v);
    b.add_participant_count(request.participant_count);
    b.add_token_count(request.token_count);
    if (r) b.add_command(ordinal);
    b.add_error(err);
    s.emit_locked(fb::EventBody::EncodeDenseLinear, b.Finish().Union());
  }
  if (!r) return std::unexpected(std::move(r.error()));
  return s.wrap_command(ordinal, std::move(*r));
}

std::expected<rt::FencePtr, rt::DefinitelyNotSubmitted> RecordingRuntime::submit(
    rt::Stream& stream, rt::CommandBatch batch) {
  State& s = *state_;
  const std::lock_guard in_order(s.order);
  const std::uint64_t begin_seq = s.record_submit_begin(stream, batch, nullptr);
  if (s.options.flush_before_submit) s.flush();
  auto r = s.inner->submit(unwrap(stream), State::rebuild(std::move(batch)));
  const auto counters = s.inner->counter_snapshot();
  std::lock_guard lock(s.mu);
  std::uint64_t ordinal = 0;
  if (r) ordinal = s.next_locked(kFence);
  if (s.active.load()) {
    flatbuffers::Offset<fb::Error> err;
    if (!r) err = build_error(s.fbb, r.error().error());
    fb::SubmitEndBuilder b(s.fbb);
    b.add_begin_seq(begin_seq);
    if (r) b.add_fence(ordinal);
    b.add_not_submitted(err);
    const auto end_seq = s.emit_locked(fb::EventBody::SubmitEnd, b.Finish().Union());
    s.counters_locked(end_seq, counters);
  }
  if (!r) return std::unexpected(std::move(r.error()));
  return s.wrap_fence(ordinal, std::move(*r));
}

rt::FenceQuery RecordingRuntime::query_fence(const rt::Fence& fence) const {
  State& s = *state_;
  const std::lock_guard in_order(s.order);
  auto q = s.inner->query_fence(unwrap(fence));
  std::lock_guard lock(s.mu);
  if (!s.active.load()) return q;
  const auto ref = s.fence_ref(&fence);
  auto result = schema::build_fence_query(s.fbb, q);
  s.emit_locked(fb::EventBody::QueryFence, fb::CreateQueryFence(s.fbb, &ref, result).Union());
  return q;
}

std::expected<rt::TerminalReceipt, rt::FenceIndeterminate> RecordingRuntime::wait_fence(
    const rt::Fence& fence) {
  State& s = *state_;
  const std::lock_guard in_order(s.order);
  // Before the wait: a run that hangs or dies in it keeps everything recorded so far.
  s.flush();
  auto w = s.inner->wait_fence(unwrap(fence));
  std::lock_guard lock(s.mu);
  if (!s.active.load()) return w;
  const auto ref = s.fence_ref(&fence);
  auto result = schema::build_fence_wait(s.fbb, w);
  s.emit_locked(fb::EventBody::WaitFence, fb::CreateWaitFence(s.fbb, &ref, result).Union());
  return w;
}

rt::Result<void> RecordingRuntime::synchronize(rt::Stream& stream) {
  State& s = *state_;
  const std::lock_guard in_order(s.order);
  auto r = s.inner->synchronize(unwrap(stream));
  std::lock_guard lock(s.mu);
  if (!s.active.load()) return r;
  const auto ref = s.stream_ref(&stream);
  flatbuffers::Offset<fb::Error> err;
  if (!r) err = build_error(s.fbb, r.error());
  s.emit_locked(fb::EventBody::Synchronize, fb::CreateSynchronize(s.fbb, &ref, err).Union());
  return r;
}

rt::Result<std::vector<std::uint8_t>> RecordingRuntime::readback(
    rt::Stream& stream, const rt::Buffer& source, const rt::CopyRegion& region,
    const rt::HostTransferLayout& output_layout) {
  State& s = *state_;
  const std::lock_guard in_order(s.order);
  auto r = s.inner->readback(unwrap(stream), *unwrap(&source), region, output_layout);
  std::optional<schema::BlobId> blob;
  if (r) blob = s.put_blob(*r, element_bytes_for(output_layout.element_type(), r->size()));
  const auto counters = s.inner->counter_snapshot();
  std::lock_guard lock(s.mu);
  if (!s.active.load()) return r;
  const auto stream_r = s.stream_ref(&stream);
  const auto src = s.buffer_ref(&source);
  const auto reg = to_fb(region);
  const auto lay = to_fb(output_layout);
  std::optional<fb::BlobRef> payload;
  if (blob) payload = to_fb(*blob);
  flatbuffers::Offset<fb::Error> err;
  if (!r) err = build_error(s.fbb, r.error());
  fb::ReadbackBuilder b(s.fbb);
  b.add_stream(&stream_r);
  b.add_source(&src);
  b.add_region(&reg);
  b.add_layout(&lay);
  if (payload) b.add_payload(&*payload);
  b.add_payload_bytes(r ? r->size() : 0);
  b.add_error(err);
  const auto seq = s.emit_locked(fb::EventBody::Readback, b.Finish().Union());
  if (r) s.readback_bytes += r->size();
  s.counters_locked(seq, counters);
  return r;
}

rt::VNextResult<rt::DeviceErrorReport> RecordingRuntime::describe_error(
    const rt::RuntimeError& error) const {
  State& s = *state_;
  const std::lock_guard in_order(s.order);
  auto r = s.inner->describe_error(error);
  std::lock_guard lock(s.mu);
  if (!s.active.load()) return r;
  auto in = build_error(s.fbb, error);
  flatbuffers::Offset<fb::DeviceErrorReport> report;
  flatbuffers::Offset<fb::VNextErrorRecord> vnext;
  if (r) {
    report = schema::build_error_report(s.fbb, *r);
  } else {
    vnext = schema::build_vnext_error(s.fbb, r.error());
  }
  s.emit_locked(fb::EventBody::DescribeError,
                fb::CreateDescribeError(s.fbb, in, report, vnext).Union());
  return r;
}

// ---- optional methods ------------------------------------------------------------------------------

std::optional<rt::Result<std::unique_ptr<rt::StaticWeightImportSession>>>
RecordingRuntime::begin_static_weight_import() {
  State& s = *state_;
  const std::lock_guard in_order(s.order);
  auto r = s.inner->begin_static_weight_import();
  std::lock_guard lock(s.mu);
  std::uint64_t ordinal = 0;
  const bool ok = r && *r;
  if (ok) ordinal = s.next_locked(kSession);
  if (s.active.load()) {
    State::OptionalFields f;
    f.supported = r.has_value();
    if (ok) f.session = ordinal;
    if (r && !*r) f.error = build_error(s.fbb, r->error());
    s.emit_optional_locked("begin_static_weight_import", f);
  }
  if (!ok) return r;
  return rt::Result<std::unique_ptr<rt::StaticWeightImportSession>>(
      std::make_unique<RecordedImportSession>(&s, ordinal, std::move(**r)));
}

std::optional<rt::Result<rt::CommandPtr>> RecordingRuntime::encode_static_weight_transform(
    const rt::StaticWeightTransformRequest& request) {
  State& s = *state_;
  const std::lock_guard in_order(s.order);
  rt::StaticWeightTransformRequest forwarded{unwrap(request.source), unwrap(request.destination),
                                             request.transform_id};
  auto r = s.inner->encode_static_weight_transform(forwarded);
  std::lock_guard lock(s.mu);
  std::uint64_t ordinal = 0;
  const bool ok = r && *r;
  if (ok) ordinal = s.next_locked(kCommand);
  if (s.active.load()) {
    State::OptionalFields f;
    f.buffer = s.buffer_ref(request.source);
    f.destination = s.buffer_ref(request.destination);
    f.text = s.fbb.CreateString(request.transform_id);
    f.supported = r.has_value();
    if (ok) f.command = ordinal;
    if (r && !*r) f.error = build_error(s.fbb, r->error());
    s.emit_optional_locked("encode_static_weight_transform", f);
  }
  if (!ok) return r;
  return rt::Result<rt::CommandPtr>(s.wrap_command(ordinal, std::move(**r)));
}

rt::Result<rt::ReusableExecutionPreparation> RecordingRuntime::configure_reusable_executables(
    rt::Stream& stream, const rt::ReusableExecutionPlan& plan) {
  const std::lock_guard in_order(state_->order);
  auto r = state_->inner->configure_reusable_executables(unwrap(stream), plan);
  state_->record_preparation("configure_reusable_executables", stream, r, &plan);
  return r;
}

rt::Result<rt::ReusableExecutionPreparation> RecordingRuntime::seal_reusable_executables(
    rt::Stream& stream) {
  const std::lock_guard in_order(state_->order);
  auto r = state_->inner->seal_reusable_executables(unwrap(stream));
  state_->record_preparation("seal_reusable_executables", stream, r, nullptr);
  return r;
}

rt::Result<rt::ReusableExecutionPreparation> RecordingRuntime::reusable_executable_preparation(
    const rt::Stream& stream) const {
  const std::lock_guard in_order(state_->order);
  auto r = state_->inner->reusable_executable_preparation(unwrap(stream));
  state_->record_preparation("reusable_executable_preparation", stream, r, nullptr);
  return r;
}

rt::Result<std::vector<rt::ReusableExecutionProgram>> RecordingRuntime::reusable_execution_catalog(
    const rt::Stream& stream) const {
  State& s = *state_;
  const std::lock_guard in_order(s.order);
  auto r = s.inner->reusable_execution_catalog(unwrap(stream));
  std::lock_guard lock(s.mu);
  if (!s.active.load()) return r;
  State::OptionalFields f;
  f.stream = s.stream_ref(&stream);
  if (r) {
    std::vector<flatbuffers::Offset<fb::ReusableProgram>> programs;
    for (const auto& p : *r) {
      programs.push_back(
          fb::CreateReusableProgram(s.fbb, s.fbb.CreateString(p.program_id), p.node_count));
    }
    f.catalog = s.fbb.CreateVector(programs);
  } else {
    f.error = build_error(s.fbb, r.error());
  }
  s.emit_optional_locked("reusable_execution_catalog", f);
  return r;
}

rt::Result<std::optional<rt::CommandPtr>> RecordingRuntime::encode_reusable_execution(
    const rt::ReusableExecutionInvocation& invocation) {
  State& s = *state_;
  const std::lock_guard in_order(s.order);
  auto r = s.inner->encode_reusable_execution(invocation);
  std::lock_guard lock(s.mu);
  std::uint64_t ordinal = 0;
  const bool got = r && r->has_value();
  if (got) ordinal = s.next_locked(kCommand);
  if (s.active.load()) {
    State::OptionalFields f;
    f.text = s.fbb.CreateString(invocation.program_id);
    f.node_index = invocation.node_index;
    if (got) f.command = ordinal;
    if (!r) f.error = build_error(s.fbb, r.error());
    s.emit_optional_locked("encode_reusable_execution", f);
  }
  if (!got) return r;
  return std::optional<rt::CommandPtr>(s.wrap_command(ordinal, std::move(**r)));
}

rt::Result<rt::ReusableExecutionTrim> RecordingRuntime::trim_reusable_executables(
    rt::Stream& stream) {
  State& s = *state_;
  const std::lock_guard in_order(s.order);
  auto r = s.inner->trim_reusable_executables(unwrap(stream));
  std::lock_guard lock(s.mu);
  if (!s.active.load()) return r;
  State::OptionalFields f;
  f.stream = s.stream_ref(&stream);
  if (r) {
    f.released_executables = r->released_executables;
    f.released_rejections = r->released_rejections;
  } else {
    f.error = build_error(s.fbb, r.error());
  }
  s.emit_optional_locked("trim_reusable_executables", f);
  return r;
}

rt::Result<std::vector<rt::CommandPtr>> RecordingRuntime::coalesce_program_bindings(
    std::vector<rt::CommandPtr> commands) {
  State& s = *state_;
  const std::lock_guard in_order(s.order);
  std::vector<fb::ObjectRef> refs;
  {
    std::lock_guard lock(s.mu);
    if (s.active.load()) {
      for (const auto& c : commands) refs.push_back(s.command_ref(c.get()));
    }
  }
  std::vector<rt::CommandPtr> forwarded;
  forwarded.reserve(commands.size());
  for (auto& c : commands) forwarded.push_back(unwrap(std::move(c)));
  auto r = s.inner->coalesce_program_bindings(std::move(forwarded));
  std::lock_guard lock(s.mu);
  std::vector<std::uint64_t> ordinals;
  if (r) {
    for (std::size_t i = 0; i < r->size(); ++i) ordinals.push_back(s.next_locked(kCommand));
  }
  if (s.active.load()) {
    State::OptionalFields f;
    f.commands_in = s.fbb.CreateVectorOfStructs(refs);
    if (r) {
      f.commands_out = s.fbb.CreateVector(ordinals);
    } else {
      f.error = build_error(s.fbb, r.error());
    }
    s.emit_optional_locked("coalesce_program_bindings", f);
  }
  if (!r) return r;
  std::vector<rt::CommandPtr> out;
  out.reserve(r->size());
  for (std::size_t i = 0; i < r->size(); ++i) {
    out.push_back(s.wrap_command(ordinals[i], std::move((*r)[i])));
  }
  return out;
}

bool RecordingRuntime::supports_guarded_submission() const {
  State& s = *state_;
  const std::lock_guard in_order(s.order);
  const bool supported = s.inner->supports_guarded_submission();
  std::lock_guard lock(s.mu);
  if (!s.active.load()) return supported;
  State::OptionalFields f;
  f.flag = supported;
  s.emit_optional_locked("supports_guarded_submission", f);
  return supported;
}

std::expected<rt::FencePtr, rt::GuardedSubmissionError> RecordingRuntime::submit_guarded(
    rt::Stream& stream, rt::CommandBatch batch, const rt::SubmissionGuard& guard) {
  State& s = *state_;
  const std::lock_guard in_order(s.order);
  const std::uint64_t begin_seq = s.record_submit_begin(stream, batch, &guard);
  if (s.options.flush_before_submit) s.flush();
  auto r = s.inner->submit_guarded(unwrap(stream), State::rebuild(std::move(batch)), guard);
  const auto counters = s.inner->counter_snapshot();
  std::lock_guard lock(s.mu);
  std::uint64_t ordinal = 0;
  if (r) ordinal = s.next_locked(kFence);
  if (s.active.load()) {
    flatbuffers::Offset<fb::Error> err;
    if (!r && r.error().not_submitted) err = build_error(s.fbb, r.error().not_submitted->error());
    fb::SubmitEndBuilder b(s.fbb);
    b.add_begin_seq(begin_seq);
    if (r) b.add_fence(ordinal);
    b.add_not_submitted(err);
    if (!r && r.error().rejected) b.add_rejected(fb::GuardedRejection::AttributionUnavailable);
    const auto end_seq = s.emit_locked(fb::EventBody::SubmitEnd, b.Finish().Union());
    s.counters_locked(end_seq, counters);
  }
  if (!r) return std::unexpected(std::move(r.error()));
  return s.wrap_fence(ordinal, std::move(*r));
}

std::optional<rt::SubmissionAttribution> RecordingRuntime::submission_attribution(
    const rt::Fence& fence) const {
  State& s = *state_;
  const std::lock_guard in_order(s.order);
  auto a = s.inner->submission_attribution(unwrap(fence));
  std::lock_guard lock(s.mu);
  if (!s.active.load()) return a;
  const auto ref = s.fence_ref(&fence);
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::AttributionRow>>> rows;
  if (a) rows = schema::build_attribution_rows(s.fbb, *a);
  s.emit_locked(fb::EventBody::SubmissionAttribution,
                fb::CreateSubmissionAttribution(s.fbb, &ref, rows).Union());
  return a;
}

}  // namespace vtrace::recorder
