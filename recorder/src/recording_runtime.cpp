// RecordingRuntime: construction, closing and the required DeviceRuntime methods; the optional
// methods are in recording_optional.cpp. Every recorded method is one bracket (call_bracket.h):
// the wrapped call, then the fields of its event; references first, as the bracket enforces.
#include "vtrace/recorder/recording_runtime.h"

#include <fmt/format.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "call_bracket.h"
#include "capture_names.h"
#include "recorder_state.h"
#include "signal_flag.h"
#include "vtrace/schema/events.h"

namespace vtrace::recorder {

namespace {

// The trace layer's sentence names the file and the reason; its kind name would only repeat it.
rt::RuntimeError trace_failure(const schema::TraceError& e) {
  return rt::RuntimeError(rt::ErrorKind::kInternal,
                          fmt::format("cannot record a trace: {}", e.message));
}

}  // namespace

// ---- construction and closing ------------------------------------------------------------------

RecordingRuntime::RecordingRuntime(std::unique_ptr<State> state) : state_(std::move(state)) {}

rt::Result<std::unique_ptr<RecordingRuntime>> RecordingRuntime::create(
    std::unique_ptr<rt::DeviceRuntime> inner, std::string runtime_name,
    const std::filesystem::path& trace_path, RecorderOptions options) {
  return wrap(inner, std::move(runtime_name), trace_path, std::move(options));
}

rt::Result<std::unique_ptr<RecordingRuntime>> RecordingRuntime::wrap(
    std::unique_ptr<rt::DeviceRuntime>& inner, std::string runtime_name,
    const std::filesystem::path& trace_path, RecorderOptions options) {
  if (options.mode == CaptureMode::kFlight) {
    // Nothing is written until a trigger fires: a path that cannot work is refused now, as the
    // full mode's open_file_sink refuses it, not when the first window is lost.
    if (auto usable = detail::check_capture_path(trace_path); !usable) {
      return std::unexpected(trace_failure(usable.error()));
    }
    return wrap_recording(inner, std::move(runtime_name), nullptr, &trace_path, std::move(options));
  }
  // No other recording or window of this process writes the same file while this one does.
  auto claim = detail::claim_capture_path(trace_path);
  if (!claim) {
    return std::unexpected(rt::RuntimeError(
        rt::ErrorKind::kInternal,
        fmt::format("cannot record a trace: {} is being written by another recording of this "
                    "process",
                    trace_path.string())));
  }
  auto sink = schema::open_file_sink(trace_path);
  if (!sink) return std::unexpected(trace_failure(sink.error()));
  auto recording = wrap(inner, std::move(runtime_name), std::move(*sink), std::move(options));
  if (recording) {
    (*recording)->state_->trace_path = trace_path;
    (*recording)->state_->trace_path_claim = std::move(*claim);
  }
  return recording;
}

rt::Result<std::unique_ptr<RecordingRuntime>> RecordingRuntime::create(
    std::unique_ptr<rt::DeviceRuntime> inner, std::string runtime_name,
    std::unique_ptr<schema::ByteSink> sink, RecorderOptions options) {
  return wrap(inner, std::move(runtime_name), std::move(sink), std::move(options));
}

rt::Result<std::unique_ptr<RecordingRuntime>> RecordingRuntime::wrap(
    std::unique_ptr<rt::DeviceRuntime>& inner, std::string runtime_name,
    std::unique_ptr<schema::ByteSink> sink, RecorderOptions options) {
  if (options.mode == CaptureMode::kFlight) {
    return std::unexpected(rt::RuntimeError(
        rt::ErrorKind::kInternal,
        "cannot record in flight mode to a byte sink: its windows are files beside a trace path"));
  }
  return wrap_recording(inner, std::move(runtime_name), std::move(sink), nullptr,
                        std::move(options));
}

rt::Result<std::unique_ptr<RecordingRuntime>> RecordingRuntime::wrap_recording(
    std::unique_ptr<rt::DeviceRuntime>& inner, std::string runtime_name,
    std::unique_ptr<schema::ByteSink> sink, const std::filesystem::path* flight_path,
    RecorderOptions options) {
  if (!inner) {
    return std::unexpected(
        rt::RuntimeError(rt::ErrorKind::kInternal, "cannot record a trace: no runtime to wrap"));
  }
  if (!sink && flight_path == nullptr) {
    return std::unexpected(
        rt::RuntimeError(rt::ErrorKind::kInternal, "cannot record a trace: no byte sink"));
  }
  // Header metadata: what the runtime said about itself, and how it is being recorded.
  flatbuffers::FlatBufferBuilder mb(1024);
  {
    auto name = mb.CreateString(runtime_name);
    auto descriptor = schema::build_descriptor(mb, inner->descriptor());
    auto rec = fb::CreateRecorderOptionsRecord(
        mb, options.writer.zstd_level, options.writer.frame_target_bytes,
        options.writer.flush_interval_ms, options.writer.byte_planes_for_16bit);
    auto workload = mb.CreateString(options.workload_description);
    mb.Finish(fb::CreateTraceMetadata(mb, name, descriptor,
                                      to_fb(inner->attention_execution_policy()), rec, workload));
  }
  schema::TraceHeaderInfo header;
  header.producer = "vtrace-recorder";
  header.producer_version = VTRACE_VERSION;  // the project() VERSION (recorder/CMakeLists.txt)
  header.metadata.assign(mb.GetBufferPointer(), mb.GetBufferPointer() + mb.GetSize());
  auto state = std::make_unique<State>();
  state->options = std::move(options);
  const RecorderOptions& o = state->options;
  if (flight_path != nullptr) {
    state->flight = std::make_unique<detail::FlightRecorder>(
        o.flight, *flight_path, header.metadata, o.writer, inner->counter_snapshot());
    // Every scalar stored, so a window's events can be renumbered in place.
    state->force_defaults();
    state->start_signal_handlers();
  } else {
    auto writer = schema::TraceWriter::create(std::move(sink), std::move(header), o.writer);
    if (!writer) return std::unexpected(trace_failure(writer.error()));
    state->writer = std::move(*writer);
  }
  state->inner = std::move(inner);
  state->runtime_name = std::move(runtime_name);
  state->record_opened();
  if (state->flight) {
    std::lock_guard lock(state->mu);
    state->notice_journal_failure();  // the first journal starts with the recorder
  }
  return std::unique_ptr<RecordingRuntime>(new RecordingRuntime(std::move(state)));
}

RecordingRuntime::~RecordingRuntime() { (void)close(); }

RecorderCloseResult RecordingRuntime::close() { return close(CloseReason{}); }

RecorderCloseResult RecordingRuntime::close(const CloseReason& reason) {
  State& s = *state_;
  const std::lock_guard in_order(s.order);
  std::lock_guard lock(s.mu);
  return s.close_locked(reason);
}

const rt::DeviceRuntime& RecordingRuntime::inner() const { return *state_->inner; }
rt::DeviceRuntime& RecordingRuntime::inner() { return *state_->inner; }

bool RecordingRuntime::recording_failed() const {
  std::lock_guard lock(state_->mu);
  return state_->first_error.has_value();
}

std::uint64_t RecordingRuntime::events_recorded() const { return state_->events_recorded(); }

schema::TraceResult<std::filesystem::path> RecordingRuntime::dump_window(FlightTriggerKind kind,
                                                                         std::string detail) {
  State& s = *state_;
  const std::lock_guard in_order(s.order);
  return s.write_window(kind, std::move(detail), std::nullopt);
}

std::optional<FlightStats> RecordingRuntime::flight_stats() const { return state_->flight_stats(); }

// ---- required methods ---------------------------------------------------------------------------

const rt::DeviceDescriptor& RecordingRuntime::descriptor() const {
  return state_->inner->descriptor();
}

rt::AttentionExecutionPolicy RecordingRuntime::attention_execution_policy() const {
  return state_->inner->attention_execution_policy();
}

std::optional<rt::CounterSnapshot> RecordingRuntime::counter_snapshot() const {
  return state_->product_counters();
}

rt::Result<rt::AllocationPermit> RecordingRuntime::admit(const rt::BufferRequest& request) {
  Call call(*state_);
  auto r = call.inner().admit(request);
  call.record([&](Event& e) {
    auto req = schema::build_buffer_request(e.fbb(), request);
    auto err = e.error_of(r);
    fb::AdmitBuilder b(e.fbb());
    b.add_request(req);
    if (r) b.add_permit_generation(r->generation());
    b.add_error(err);
    return b.Finish();
  });
  return r;
}

rt::Result<rt::BufferPtr> RecordingRuntime::allocate(rt::AllocationPermit permit) {
  Call call(*state_);
  const std::uint64_t generation = permit.generation();
  std::optional<rt::BufferRequest> request;
  if (!permit.consumed()) request = permit.request();
  auto r = call.inner().allocate(std::move(permit));
  std::optional<rt::BufferDescriptor> descriptor;
  if (r) descriptor = call.inner().buffer_descriptor(**r);
  const auto ordinal = call.mint(detail::kBuffer, r.has_value());
  const rt::Buffer* inner_buffer = r ? r->get() : nullptr;
  call.record([&](Event& e) {
    flatbuffers::Offset<fb::BufferRequest> req;
    if (request) req = schema::build_buffer_request(e.fbb(), *request);
    flatbuffers::Offset<fb::BufferDescriptor> desc;
    if (descriptor) desc = schema::build_buffer_descriptor(e.fbb(), *descriptor);
    auto err = e.error_of(r);
    fb::AllocateBuilder b(e.fbb());
    b.add_permit_generation(generation);
    b.add_request(req);
    if (ordinal) b.add_buffer(*ordinal);
    b.add_descriptor(desc);
    b.add_error(err);
    return b.Finish();
  });
  if (inner_buffer != nullptr) call.note_buffer(ordinal, inner_buffer);
  return call.wrap<detail::RecordedBuffer>(std::move(r), ordinal);
}

rt::BufferDescriptor RecordingRuntime::buffer_descriptor(const rt::Buffer& buffer) const {
  Call call(*state_);
  auto d = call.inner().buffer_descriptor(*unwrap(&buffer));
  call.record([&](Refs& refs) { return refs.buffer(&buffer); },
              [&](Event& e, const fb::ObjectRef& ref) {
                auto desc = schema::build_buffer_descriptor(e.fbb(), d);
                return fb::CreateBufferDescriptorQueried(e.fbb(), &ref, desc);
              });
  return d;
}

rt::Result<rt::StreamPtr> RecordingRuntime::create_stream() {
  Call call(*state_);
  auto r = call.inner().create_stream();
  const auto ordinal = call.mint(detail::kStream, r.has_value());
  call.record([&](Event& e) {
    auto err = e.error_of(r);
    fb::StreamCreatedBuilder b(e.fbb());
    if (ordinal) b.add_stream(*ordinal);
    b.add_error(err);
    return b.Finish();
  });
  return call.wrap<detail::RecordedStream>(std::move(r), ordinal);
}

rt::StreamState RecordingRuntime::stream_state(const rt::Stream& stream) const {
  Call call(*state_);
  const auto state = call.inner().stream_state(unwrap(stream));
  call.record([&](Refs& refs) { return refs.stream(&stream); },
              [&](Event& e, const fb::ObjectRef& ref) {
                return fb::CreateStreamStateQueried(e.fbb(), &ref, to_fb(state));
              });
  return state;
}

rt::Result<rt::CommandPtr> RecordingRuntime::encode_copy(const rt::Buffer& source,
                                                         const rt::Buffer& destination,
                                                         const rt::CopyRegion& region) {
  Call call(*state_);
  auto r = call.inner().encode_copy(*unwrap(&source), *unwrap(&destination), region);
  const auto ordinal = call.mint(detail::kCommand, r.has_value());
  call.record(
      // Braces: the references are resolved left to right (ForeignObjectSeen order).
      [&](Refs& refs) {
        return std::pair{refs.buffer(&source), refs.buffer(&destination)};
      },
      [&](Event& e, const auto& buffers) {
        const auto reg = to_fb(region);
        auto err = e.error_of(r);
        fb::EncodeCopyBuilder b(e.fbb());
        b.add_source(&buffers.first);
        b.add_destination(&buffers.second);
        b.add_region(&reg);
        if (ordinal) b.add_command(*ordinal);
        b.add_error(err);
        return b.Finish();
      });
  return call.wrap<detail::RecordedCommand>(std::move(r), ordinal);
}

rt::Result<rt::CommandPtr> RecordingRuntime::encode_upload(std::span<const std::uint8_t> source,
                                                           const rt::HostTransferLayout& layout,
                                                           const rt::Buffer& destination,
                                                           std::uint64_t destination_offset_bytes) {
  Call call(*state_);
  auto r =
      call.inner().encode_upload(source, layout, *unwrap(&destination), destination_offset_bytes);
  auto blob =
      call.put_blob(source, detail::element_bytes_for(layout.element_type(), source.size()));
  const auto ordinal = call.mint(detail::kCommand, r.has_value());
  call.record([&](Refs& refs) { return refs.buffer(&destination); },
              [&](Event& e, const fb::ObjectRef& dst) {
                const auto lay = to_fb(layout);
                std::optional<fb::BlobRef> payload;
                if (blob) payload = to_fb(*blob);
                auto err = e.error_of(r);
                fb::EncodeUploadBuilder b(e.fbb());
                if (payload) b.add_payload(&*payload);
                b.add_payload_bytes(source.size());
                b.add_layout(&lay);
                b.add_destination(&dst);
                b.add_destination_offset_bytes(destination_offset_bytes);
                if (ordinal) b.add_command(*ordinal);
                b.add_error(err);
                return b.Finish();
              });
  return call.wrap<detail::RecordedCommand>(std::move(r), ordinal);
}

rt::Result<rt::CommandPtr> RecordingRuntime::encode_zero(const rt::Buffer& destination,
                                                         std::uint64_t destination_offset_bytes,
                                                         std::uint64_t length_bytes) {
  Call call(*state_);
  auto r = call.inner().encode_zero(*unwrap(&destination), destination_offset_bytes, length_bytes);
  const auto ordinal = call.mint(detail::kCommand, r.has_value());
  call.record([&](Refs& refs) { return refs.buffer(&destination); },
              [&](Event& e, const fb::ObjectRef& dst) {
                auto err = e.error_of(r);
                fb::EncodeZeroBuilder b(e.fbb());
                b.add_destination(&dst);
                b.add_destination_offset_bytes(destination_offset_bytes);
                b.add_length_bytes(length_bytes);
                if (ordinal) b.add_command(*ordinal);
                b.add_error(err);
                return b.Finish();
              });
  return call.wrap<detail::RecordedCommand>(std::move(r), ordinal);
}

rt::Result<rt::CommandPtr> RecordingRuntime::encode_dense_linear(
    const rt::DenseLinearRequest& request) {
  Call call(*state_);
  std::vector<rt::DenseLinearLaunch> launches(request.launches.begin(), request.launches.end());
  for (auto& l : launches) {
    l.input.buffer = unwrap(l.input.buffer);
    l.weight.buffer = unwrap(l.weight.buffer);
    l.output.buffer = unwrap(l.output.buffer);
  }
  auto r = call.inner().encode_dense_linear(
      rt::DenseLinearRequest{launches, request.participant_count, request.token_count});
  const auto ordinal = call.mint(detail::kCommand, r.has_value());
  call.record(
      [&](Refs& refs) {
        std::vector<fb::DenseLinearLaunch> recorded;
        recorded.reserve(request.launches.size());
        for (const auto& l : request.launches) {
          const auto in = refs.region(l.input);
          const auto w = refs.region(l.weight);
          const auto out = refs.region(l.output);
          recorded.emplace_back(in, w, out, l.rows, l.in_features, l.out_features);
        }
        return recorded;
      },
      [&](Event& e, const std::vector<fb::DenseLinearLaunch>& recorded) {
        auto launches_v = e.fbb().CreateVectorOfStructs(recorded);
        auto err = e.error_of(r);
        fb::EncodeDenseLinearBuilder b(e.fbb());
        b.add_launches(launches_v);
        b.add_participant_count(request.participant_count);
        b.add_token_count(request.token_count);
        if (ordinal) b.add_command(*ordinal);
        b.add_error(err);
        return b.Finish();
      });
  return call.wrap<detail::RecordedCommand>(std::move(r), ordinal);
}

// ---- submit and submit_guarded -----------------------------------------------------------------

namespace {

// SubmitBegin, the intent recorded before the wrapped submit runs; its sequence number (0 when
// not recording). Then the flush before submit, when the options ask for it.
std::uint64_t submit_begin(Call& call, const rt::Stream& stream, const rt::CommandBatch& batch,
                           const rt::SubmissionGuard* guard) {
  struct Named {
    fb::ObjectRef stream;
    std::vector<fb::ObjectRef> commands;
  };
  const auto seq = call.record(
      [&](Refs& refs) {
        Named named{refs.stream(&stream), {}};
        named.commands.reserve(batch.size());
        for (const auto& entry : batch.entries()) {
          named.commands.push_back(refs.command(entry.command.get()));
        }
        return named;
      },
      [&](Event& e, const Named& named) {
        std::vector<flatbuffers::Offset<fb::CommandEntry>> entries;
        entries.reserve(batch.size());
        for (std::size_t i = 0; i < batch.size(); ++i) {
          const auto& entry = batch.entries()[i];
          fb::CommandEntryBuilder eb(e.fbb());
          eb.add_phase(to_fb(entry.phase));
          if (entry.node_index) eb.add_node_index(*entry.node_index);
          std::optional<fb::LogicalWork> work;
          if (entry.logical_work) work = to_fb(*entry.logical_work);
          if (work) eb.add_logical_work(&*work);
          eb.add_command(&named.commands[i]);
          entries.push_back(eb.Finish());
        }
        auto entries_v = e.fbb().CreateVector(entries);
        auto eager = e.fbb().CreateVector(batch.declared_eager_compute_node_indices());
        flatbuffers::Offset<fb::ReusableCapture> capture;
        if (batch.reusable_execution_capture()) {
          capture = schema::build_reusable_capture(e.fbb(), *batch.reusable_execution_capture());
        }
        fb::SubmitBeginBuilder b(e.fbb());
        b.add_stream(&named.stream);
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
        return b.Finish();
      });
  if (call.options().flush_before_submit) call.flush();
  return seq.value_or(0);
}

}  // namespace

std::expected<rt::FencePtr, rt::DefinitelyNotSubmitted> RecordingRuntime::submit(
    rt::Stream& stream, rt::CommandBatch batch) {
  Call call(*state_);
  const std::uint64_t begin_seq = submit_begin(call, stream, batch, nullptr);
  auto r = call.inner().submit(unwrap(stream), unwrap(std::move(batch)));
  const auto counters = call.counters_now();
  const auto ordinal = call.mint(detail::kFence, r.has_value());
  const auto end_seq = call.record([&](Event& e) {
    flatbuffers::Offset<fb::Error> err;
    if (!r) {
      e.failed(r.error().error());
      err = e.error(r.error().error());
    }
    fb::SubmitEndBuilder b(e.fbb());
    b.add_begin_seq(begin_seq);
    if (ordinal) b.add_fence(*ordinal);
    b.add_not_submitted(err);
    return b.Finish();
  });
  call.counters(end_seq, counters);
  return call.wrap<detail::RecordedFence>(std::move(r), ordinal);
}

std::expected<rt::FencePtr, rt::GuardedSubmissionError> RecordingRuntime::submit_guarded(
    rt::Stream& stream, rt::CommandBatch batch, const rt::SubmissionGuard& guard) {
  Call call(*state_);
  const std::uint64_t begin_seq = submit_begin(call, stream, batch, &guard);
  auto r = call.inner().submit_guarded(unwrap(stream), unwrap(std::move(batch)), guard);
  const auto counters = call.counters_now();
  const auto ordinal = call.mint(detail::kFence, r.has_value());
  const auto end_seq = call.record([&](Event& e) {
    flatbuffers::Offset<fb::Error> err;
    if (!r && r.error().not_submitted) {
      e.failed(r.error().not_submitted->error());
      err = e.error(r.error().not_submitted->error());
    }
    fb::SubmitEndBuilder b(e.fbb());
    b.add_begin_seq(begin_seq);
    if (ordinal) b.add_fence(*ordinal);
    b.add_not_submitted(err);
    if (!r && r.error().rejected) b.add_rejected(fb::GuardedRejection::AttributionUnavailable);
    return b.Finish();
  });
  call.counters(end_seq, counters);
  return call.wrap<detail::RecordedFence>(std::move(r), ordinal);
}

// ---- fences, synchronize, readback, errors ----------------------------------------------------

rt::FenceQuery RecordingRuntime::query_fence(const rt::Fence& fence) const {
  Call call(*state_);
  auto q = call.inner().query_fence(unwrap(fence));
  call.record([&](Refs& refs) { return refs.fence(&fence); },
              [&](Event& e, const fb::ObjectRef& ref) {
                auto result = schema::build_fence_query(e.fbb(), q);
                return fb::CreateQueryFence(e.fbb(), &ref, result);
              });
  return q;
}

std::expected<rt::TerminalReceipt, rt::FenceIndeterminate> RecordingRuntime::wait_fence(
    const rt::Fence& fence) {
  Call call(*state_);
  // Before the wait: a run that hangs or dies in it keeps everything recorded so far.
  call.flush();
  auto w = call.inner().wait_fence(unwrap(fence));
  call.record([&](Refs& refs) { return refs.fence(&fence); },
              [&](Event& e, const fb::ObjectRef& ref) {
                auto result = schema::build_fence_wait(e.fbb(), w);
                return fb::CreateWaitFence(e.fbb(), &ref, result);
              });
  return w;
}

rt::Result<void> RecordingRuntime::synchronize(rt::Stream& stream) {
  Call call(*state_);
  auto r = call.inner().synchronize(unwrap(stream));
  call.record([&](Refs& refs) { return refs.stream(&stream); },
              [&](Event& e, const fb::ObjectRef& ref) {
                auto err = e.error_of(r);
                return fb::CreateSynchronize(e.fbb(), &ref, err);
              });
  return r;
}

rt::Result<std::vector<std::uint8_t>> RecordingRuntime::readback(
    rt::Stream& stream, const rt::Buffer& source, const rt::CopyRegion& region,
    const rt::HostTransferLayout& output_layout) {
  Call call(*state_);
  auto r = call.inner().readback(unwrap(stream), *unwrap(&source), region, output_layout);
  std::optional<schema::BlobId> blob;
  if (r) {
    blob = call.put_blob(*r, detail::element_bytes_for(output_layout.element_type(), r->size()));
  }
  const auto counters = call.counters_now();
  const auto seq = call.record(
      [&](Refs& refs) {
        return std::pair{refs.stream(&stream), refs.buffer(&source)};
      },
      [&](Event& e, const auto& refs) {
        const auto reg = to_fb(region);
        const auto lay = to_fb(output_layout);
        std::optional<fb::BlobRef> payload;
        if (blob) payload = to_fb(*blob);
        auto err = e.error_of(r);
        fb::ReadbackBuilder b(e.fbb());
        b.add_stream(&refs.first);
        b.add_source(&refs.second);
        b.add_region(&reg);
        b.add_layout(&lay);
        if (payload) b.add_payload(&*payload);
        b.add_payload_bytes(r ? r->size() : 0);
        b.add_error(err);
        return b.Finish();
      });
  call.counters(seq, counters);
  if (r) call.check_readback(seq, *r, output_layout.element_type());
  return r;
}

rt::VNextResult<rt::DeviceErrorReport> RecordingRuntime::describe_error(
    const rt::RuntimeError& error) const {
  Call call(*state_);
  auto r = call.inner().describe_error(error);
  call.record([&](Event& e) {
    auto in = e.error(error);
    flatbuffers::Offset<fb::DeviceErrorReport> report;
    flatbuffers::Offset<fb::VNextErrorRecord> vnext;
    if (r) {
      report = schema::build_error_report(e.fbb(), *r);
    } else {
      vnext = schema::build_vnext_error(e.fbb(), r.error());
    }
    return fb::CreateDescribeError(e.fbb(), in, report, vnext);
  });
  return r;
}

}  // namespace vtrace::recorder
