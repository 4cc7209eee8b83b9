#include "recorder_state.h"

#include <algorithm>
#include <string_view>
#include <utility>

namespace vtrace::recorder {

namespace rt = vtrace::runtime;
using schema::to_fb;

namespace detail {

rt::CommandBatch unwrap(rt::CommandBatch batch) {
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

}  // namespace detail

std::optional<schema::BlobId> RecordingRuntime::State::put_blob(std::span<const std::uint8_t> bytes,
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

void RecordingRuntime::State::flush() {
  if (!active.load()) return;
  auto flushed = writer->flush();
  if (!flushed) {
    std::lock_guard lock(mu);
    fail_locked(flushed.error());
  }
}

std::uint64_t RecordingRuntime::State::emit_locked(fb::EventBody type,
                                                   flatbuffers::Offset<void> body) {
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

void RecordingRuntime::State::record_opened() {
  std::lock_guard lock(mu);
  auto name = fbb.CreateString(runtime_name);
  auto descriptor = schema::build_descriptor(fbb, inner->descriptor());
  auto opened =
      fb::CreateRuntimeOpened(fbb, name, descriptor, to_fb(inner->attention_execution_policy()));
  emit_locked(fb::EventBody::RuntimeOpened, opened.Union());
}

std::uint64_t RecordingRuntime::State::events_recorded() const {
  std::lock_guard lock(mu);
  return seq;
}

RecorderCloseResult RecordingRuntime::State::close_locked(const CloseReason& reason) {
  if (close_result) return *close_result;
  const bool was_active = active.exchange(false);
  auto summary = build_summary_locked(reason);
  auto closed = writer->close(summary);
  // The writer reports the original sink error; the recorder may only have seen the
  // kWriterFailed of a later call.
  if (!closed) {
    if (!first_error) first_error = closed.error();
    close_result = std::unexpected(closed.error());
  } else if (!was_active && first_error) {
    close_result = std::unexpected(*first_error);
  } else {
    close_result = *closed;
  }
  return *close_result;
}

std::vector<std::uint8_t> RecordingRuntime::State::build_summary_locked(const CloseReason& reason) {
  fbb.Clear();
  std::vector<flatbuffers::Offset<fb::EventKindCount>> counts;
  std::vector<std::pair<std::string_view, std::uint64_t>> named;
  for (std::size_t i = 0; i < detail::kEventKinds; ++i) {
    if (event_counts[i] == 0) continue;
    named.emplace_back(schema::event_kind_name(static_cast<fb::EventBody>(i)), event_counts[i]);
  }
  std::sort(named.begin(), named.end());
  for (const auto& [name, count] : named) {
    counts.push_back(
        fb::CreateEventKindCount(fbb, fbb.CreateString(name.data(), name.size()), count));
  }
  auto counts_v = fbb.CreateVector(counts);
  const auto final_counters = inner->counter_snapshot();
  std::optional<fb::Counters> fc;
  if (final_counters) fc = to_fb(*final_counters);
  const auto stats = writer->stats();
  flatbuffers::Offset<flatbuffers::String> interrupted_by;
  if (!reason.interrupted_by.empty()) interrupted_by = fbb.CreateString(reason.interrupted_by);
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
  if (!interrupted_by.IsNull()) b.add_interrupted_by(interrupted_by);
  fbb.Finish(b.Finish());
  std::vector<std::uint8_t> out(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  fbb.Clear();
  return out;
}

}  // namespace vtrace::recorder
