// The flight recorder (flight_recorder.h): tracking the live objects from the events, checkpoints,
// eviction and the window writer.
#include "flight_recorder.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "capture_names.h"
#include "vtrace/schema/byte_io.h"
#include "vtrace/schema/events.h"
#include "vtrace/schema/trace_summary.h"

namespace vtrace::recorder {

std::string_view flight_trigger_name(FlightTriggerKind kind) {
  switch (kind) {
    case FlightTriggerKind::kNonFiniteReadback:
      return "non_finite_readback";
    case FlightTriggerKind::kCounterThreshold:
      return "counter_threshold";
    case FlightTriggerKind::kCallError:
      return "call_error";
    case FlightTriggerKind::kSignal:
      return "signal";
    case FlightTriggerKind::kApi:
      return "api";
    case FlightTriggerKind::kWorkloadFailed:
      return "workload_failed";
    case FlightTriggerKind::kCaptureRange:
      return "capture_range";
    case FlightTriggerKind::kJournal:
      return "journal";
    case FlightTriggerKind::kCrash:
      return "crash";
  }
  return "unknown";
}

namespace detail {

namespace rt = vtrace::runtime;

HeldBlob::HeldBlob(FlightRecorder& o, schema::BlobId i, std::vector<std::uint8_t> b,
                   std::uint32_t e)
    : owner(o), id(i), bytes(std::move(b)), element_bytes(e) {
  owner.blob_bytes_ += bytes.size();
}

HeldBlob::~HeldBlob() {
  owner.blob_bytes_ -= bytes.size();
  owner.blobs_.erase(id);
}

namespace {

// The table under a generated accessor (generated tables derive privately from Table).
const flatbuffers::Table* table_of(const void* generated) {
  return reinterpret_cast<const flatbuffers::Table*>(generated);
}

// Overwrites the u64 field `field` of `table` (inside `bytes`); false when it is not stored.
bool patch_u64(std::vector<std::uint8_t>& bytes, const void* table, flatbuffers::voffset_t field,
               std::uint64_t value) {
  const std::uint8_t* at = table_of(table)->GetAddressOf(field);
  if (at == nullptr) return false;
  flatbuffers::WriteScalar<std::uint64_t>(bytes.data() + (at - bytes.data()), value);
  return true;
}

std::vector<std::uint8_t> finish_event(flatbuffers::FlatBufferBuilder& fbb, std::uint64_t seq,
                                       fb::EventBody type, flatbuffers::Offset<void> body) {
  fbb.Finish(fb::CreateEvent(fbb, seq, type, body));
  std::vector<std::uint8_t> out(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  fbb.Clear();
  return out;
}

OutEvent renumbered(const HeldEvent& held, std::uint64_t first_seq, std::uint64_t prologue) {
  const auto renumber = [&](std::uint64_t seq) { return seq - first_seq + prologue; };
  OutEvent o{held.bytes, held.blobs, held.type};
  const auto* event = flatbuffers::GetRoot<fb::Event>(o.bytes.data());
  // Every scalar is stored (ForceDefaults), so the patches cannot miss.
  (void)patch_u64(o.bytes, event, fb::Event::VT_SEQ, renumber(held.seq));
  if (held.type == fb::EventBody::SubmitEnd) {
    const auto* e = event->body_as_SubmitEnd();
    (void)patch_u64(o.bytes, e, fb::SubmitEnd::VT_BEGIN_SEQ, renumber(e->begin_seq()));
  } else if (held.type == fb::EventBody::CounterSnapshot) {
    const auto* e = event->body_as_CounterSnapshot();
    (void)patch_u64(o.bytes, e, fb::CounterSnapshot::VT_AFTER_SEQ, renumber(e->after_seq()));
  }
  return o;
}

schema::TraceResult<void> put_event(schema::TraceWriter& writer, const OutEvent& o) {
  for (const auto& blob : o.blobs) {
    if (auto put = writer.put_blob(blob->bytes, blob->element_bytes); !put) {
      return std::unexpected(put.error());
    }
  }
  if (auto appended = writer.append_event(o.bytes); !appended) {
    return std::unexpected(appended.error());
  }
  return {};
}

}  // namespace

namespace {
// The windows' base resolved once, at creation: a product that changes its working directory
// later still gets its windows (and journals) beside the path it named.
std::filesystem::path absolute_or_given(const std::filesystem::path& path) {
  std::error_code ec;
  auto absolute = std::filesystem::absolute(path, ec);
  return ec ? path : absolute.lexically_normal();
}
}  // namespace

FlightRecorder::FlightRecorder(FlightOptions options, std::filesystem::path base_path,
                               std::vector<std::uint8_t> metadata_source,
                               schema::TraceWriterOptions writer_options,
                               std::optional<rt::CounterSnapshot> counters_at_start)
    : options_(std::move(options)),
      base_path_(absolute_or_given(base_path)),
      metadata_source_(std::move(metadata_source)),
      writer_options_(writer_options) {
  Segment first;
  first.start.counters = counters_at_start;
  ring_.push_back(std::move(first));
  // A capture that starts at the run's start is an ordinary capture held in memory.
  capturing_ = !options_.start || options_.start->count == 0;
  if (options_.journal && !options_.start) start_journal(ring_.back().start, {});
}

FlightRecorder::~FlightRecorder() {
  end_journals();
  // Everything that holds payloads goes before the payload index.
  ring_.clear();
  pending_blobs_.clear();
  buffers_.clear();
  commands_.clear();
  permits_.clear();
  streams_.clear();
  foreign_.clear();
  opened_.reset();
}

schema::BlobId FlightRecorder::put_blob(std::span<const std::uint8_t> bytes,
                                        std::uint32_t element_bytes) {
  const auto id = schema::blob_id_of(bytes.data(), bytes.size());
  BlobPtr held;
  if (auto it = blobs_.find(id); it != blobs_.end()) held = it->second.lock();
  if (!held) {
    held = std::make_shared<const HeldBlob>(
        *this, id, std::vector<std::uint8_t>(bytes.begin(), bytes.end()), element_bytes);
    blobs_[id] = held;
  }
  pending_blobs_.push_back(std::move(held));
  peak_bytes_ = std::max(peak_bytes_, held_bytes());
  return id;
}

void FlightRecorder::note_buffer(std::uint64_t ordinal, const rt::Buffer* inner) {
  if (auto it = buffers_.find(ordinal); it != buffers_.end()) it->second.inner = inner;
}

void FlightRecorder::on_event(std::uint64_t seq, fb::EventBody type,
                              std::span<const std::uint8_t> bytes) {
  auto event = std::make_shared<HeldEvent>();
  event->seq = seq;
  event->type = type;
  event->bytes.assign(bytes.begin(), bytes.end());
  event->blobs = std::move(pending_blobs_);
  pending_blobs_.clear();
  const EventPtr held = event;
  next_seq_ = seq + 1;
  track(held);
  for (auto& journal : journals_) {
    if (!journal.writer) continue;
    if (auto put =
            put_event(*journal.writer, renumbered(*held, journal.first_seq, journal.prologue));
        !put) {
      journal_failed(journal, put.error());  // the journal is given up, not the run
      continue;
    }
    if (type == fb::EventBody::SubmitBegin) ++journal.submits;
  }
  if (!capturing_) return;  // before a mid-run capture's start: only the live objects count
  Segment& open = ring_.back();
  open.events.push_back(held);
  open.event_bytes += held->bytes.size();
  event_bytes_ += held->bytes.size();
  peak_bytes_ = std::max(peak_bytes_, held_bytes());
  evict();
}

void FlightRecorder::mark_written(const LiveCommand& command) {
  if (command.writes_unknown) {
    for (auto& [ordinal, buffer] : buffers_) buffer.dirty = true;
    return;
  }
  for (const auto ordinal : command.writes) {
    if (auto it = buffers_.find(ordinal); it != buffers_.end()) it->second.dirty = true;
  }
}

void FlightRecorder::track(const EventPtr& held) {
  const auto* event = flatbuffers::GetRoot<fb::Event>(held->bytes.data());
  const auto own = [](const fb::ObjectRef* ref) -> std::optional<std::uint64_t> {
    if (ref == nullptr || ref->space() != fb::RefSpace::Own) return std::nullopt;
    return ref->ordinal();
  };
  const auto add_command = [&](std::optional<std::uint64_t> ordinal, LiveCommand command) {
    if (ordinal) commands_[*ordinal] = std::move(command);
  };
  const auto drop_command = [&](std::uint64_t ordinal) {
    auto it = commands_.find(ordinal);
    if (it == commands_.end()) return;
    if (!it->second.encode) --unrecreatable_commands_;
    commands_.erase(it);
  };
  using B = fb::EventBody;
  switch (held->type) {
    case B::RuntimeOpened:
      opened_ = held;
      break;
    case B::ForeignObjectSeen:
      foreign_.push_back(held);
      break;
    case B::Admit: {
      const auto* e = event->body_as_Admit();
      if (e->permit_generation() && e->error() == nullptr) permits_[*e->permit_generation()] = held;
      break;
    }
    case B::Allocate: {
      const auto* e = event->body_as_Allocate();
      if (!e->buffer()) break;
      LiveBuffer buffer;
      if (auto it = permits_.find(e->permit_generation()); it != permits_.end()) {
        buffer.admit = it->second;
        permits_.erase(it);
      }
      buffer.allocate = held;
      if (const auto* d = e->descriptor()) {
        buffer.size_bytes = d->size_bytes();
        buffer.element_type = schema::from_fb(d->element_type()).value_or(rt::ElementType::kU8);
      }
      buffers_[*e->buffer()] = std::move(buffer);
      break;
    }
    case B::BufferReleased:
      buffers_.erase(event->body_as_BufferReleased()->buffer());
      break;
    case B::StreamCreated: {
      const auto* e = event->body_as_StreamCreated();
      if (e->stream()) streams_[*e->stream()] = {held};
      break;
    }
    case B::StreamReleased:
      streams_.erase(event->body_as_StreamReleased()->stream());
      break;
    case B::ConfigureReusableExecutables:
    case B::SealReusableExecutables: {
      const auto* ref = held->type == B::ConfigureReusableExecutables
                            ? event->body_as_ConfigureReusableExecutables()->stream()
                            : event->body_as_SealReusableExecutables()->stream();
      if (auto s = own(ref); s && streams_.contains(*s)) streams_[*s].push_back(held);
      break;
    }
    case B::EncodeCopy: {
      const auto* e = event->body_as_EncodeCopy();
      LiveCommand c{held, {}, false};
      if (auto d = own(e->destination())) c.writes.push_back(*d);
      add_command(e->command(), std::move(c));
      break;
    }
    case B::EncodeUpload: {
      const auto* e = event->body_as_EncodeUpload();
      LiveCommand c{held, {}, false};
      if (auto d = own(e->destination())) c.writes.push_back(*d);
      add_command(e->command(), std::move(c));
      break;
    }
    case B::EncodeZero: {
      const auto* e = event->body_as_EncodeZero();
      LiveCommand c{held, {}, false};
      if (auto d = own(e->destination())) c.writes.push_back(*d);
      add_command(e->command(), std::move(c));
      break;
    }
    case B::EncodeDenseLinear: {
      const auto* e = event->body_as_EncodeDenseLinear();
      LiveCommand c{held, {}, false};
      if (e->launches() != nullptr) {
        for (const auto* l : *e->launches()) {
          if (auto d = own(&l->output().buffer())) c.writes.push_back(*d);
        }
      }
      add_command(e->command(), std::move(c));
      break;
    }
    case B::EncodeStaticWeightTransform: {
      const auto* e = event->body_as_EncodeStaticWeightTransform();
      LiveCommand c{held, {}, false};
      if (auto d = own(e->destination())) c.writes.push_back(*d);
      add_command(e->command(), std::move(c));
      break;
    }
    case B::EncodeReusableExecution:
      add_command(event->body_as_EncodeReusableExecution()->command(), {held, {}, true});
      break;
    case B::CoalesceProgramBindings: {
      const auto* e = event->body_as_CoalesceProgramBindings();
      if (e->commands_in() != nullptr) {
        for (const auto* in : *e->commands_in()) {
          if (auto c = own(in)) drop_command(*c);
        }
      }
      if (e->commands_out() != nullptr) {
        for (const auto out : *e->commands_out()) {
          commands_[out] = {nullptr, {}, true};
          ++unrecreatable_commands_;
        }
      }
      break;
    }
    case B::CommandReleased:
      drop_command(event->body_as_CommandReleased()->command());
      break;
    case B::ImportComponent: {
      const auto* e = event->body_as_ImportComponent();
      if (auto d = own(e->destination()); d && buffers_.contains(*d)) buffers_[*d].dirty = true;
      break;
    }
    case B::BeginStaticWeightImport:
      if (const auto session = event->body_as_BeginStaticWeightImport()->session();
          session.has_value()) {
        open_sessions_.insert(*session);
      }
      break;
    case B::SealStaticWeightImport: {
      const auto* e = event->body_as_SealStaticWeightImport();
      if (e->error() == nullptr && e->session().has_value()) open_sessions_.erase(*e->session());
      break;
    }
    case B::SubmitBegin: {
      const auto* e = event->body_as_SubmitBegin();
      if (e->entries() != nullptr) {
        for (const auto* entry : *e->entries()) {
          auto c = own(entry->command());
          if (!c) continue;
          if (auto it = commands_.find(*c); it != commands_.end()) mark_written(it->second);
          drop_command(*c);
        }
      }
      ++submits_;
      ++ring_.back().submits;
      break;
    }
    case B::SubmitEnd: {
      const auto* e = event->body_as_SubmitEnd();
      if (e->fence()) fences_[*e->fence()] = 1;
      checkpoint_due_ = true;
      break;
    }
    case B::FenceReleased:
      fences_.erase(event->body_as_FenceReleased()->fence());
      break;
    default:
      break;
  }
}

void FlightRecorder::evict() {
  if (options_.start) {
    // A mid-run capture keeps everything from its start, and nothing before.
    if (!capturing_) {
      while (ring_.size() > 1) ring_.pop_front();
    }
    return;
  }
  std::uint64_t in_ring = 0;
  for (const auto& segment : ring_) in_ring += segment.submits;
  while (ring_.size() > 1) {
    const Segment& oldest = ring_.front();
    const bool enough_batches = in_ring - oldest.submits >= options_.window_batches;
    if (!enough_batches && held_bytes() <= options_.window_bytes) break;
    in_ring -= oldest.submits;
    event_bytes_ -= oldest.event_bytes;
    ring_.pop_front();
  }
}

bool FlightRecorder::checkpoint_ready() const {
  // A mid-run capture needs one checkpoint only: at its start.
  if (options_.start && (capturing_ || !start_reached_)) return false;
  return (checkpoint_due_ || options_.start.has_value()) && quiescent();
}

bool FlightRecorder::quiescent() const {
  return fences_.empty() && open_sessions_.empty() && unrecreatable_commands_ == 0;
}

rt::Result<void> FlightRecorder::checkpoint(rt::DeviceRuntime& inner, rt::Stream& stream,
                                            const std::optional<rt::CounterSnapshot>& counters,
                                            const Ordinals& next) {
  // Read first, commit after: a failed read changes nothing.
  std::vector<std::pair<std::uint64_t, std::vector<std::uint8_t>>> reads;
  for (const auto& [ordinal, buffer] : buffers_) {
    if (!buffer.dirty && buffer.content) continue;
    // Readback and upload take whole elements of the buffer's own type: of a buffer whose size
    // is not whole elements, the last size % element bytes can be neither read nor restored, so
    // a checkpoint holds its whole elements (docs/FLIGHT.md).
    const std::uint64_t element = rt::element_size_bytes(buffer.element_type);
    const std::uint64_t elements = element == 0 ? 0 : buffer.size_bytes / element;
    if (elements == 0) continue;
    if (buffer.inner == nullptr) {
      return std::unexpected(
          rt::RuntimeError(rt::ErrorKind::kInternal,
                           fmt::format("flight recorder: buffer {} has no handle", ordinal)));
    }
    auto layout = rt::HostTransferLayout::create(buffer.element_type, elements);
    auto region = rt::CopyRegion::create(0, 0, elements * element);
    if (!layout || !region) {
      return std::unexpected(rt::RuntimeError(
          rt::ErrorKind::kInternal,
          fmt::format("flight recorder: buffer {} has no readable layout", ordinal)));
    }
    auto bytes = inner.readback(stream, *buffer.inner, *region, *layout);
    if (!bytes) return std::unexpected(bytes.error());
    checkpoint_bytes_read_ += bytes->size();
    reads.emplace_back(ordinal, std::move(*bytes));
  }
  for (auto& [ordinal, bytes] : reads) {
    LiveBuffer& buffer = buffers_[ordinal];
    const auto element = static_cast<std::uint32_t>(rt::element_size_bytes(buffer.element_type));
    put_blob(bytes, element == 2 || element == 4 ? element : 1);
    buffer.content = std::move(pending_blobs_.back());
    pending_blobs_.pop_back();
    buffer.dirty = false;
  }

  Segment segment;
  Checkpoint& c = segment.start;
  c.first_seq = next_seq_;
  c.submits_before = submits_;
  c.counters = counters;
  if (opened_) c.creation.push_back(opened_);
  c.creation.insert(c.creation.end(), foreign_.begin(), foreign_.end());
  for (const auto& [generation, admit] : permits_) c.creation.push_back(admit);
  for (const auto& [ordinal, buffer] : buffers_) {
    if (buffer.admit) c.creation.push_back(buffer.admit);
    c.creation.push_back(buffer.allocate);
    if (buffer.content) c.contents.push_back({ordinal, buffer.element_type, buffer.content});
  }
  for (const auto& [ordinal, events] : streams_) {
    c.creation.insert(c.creation.end(), events.begin(), events.end());
  }
  for (const auto& [ordinal, command] : commands_) c.creation.push_back(command.encode);
  std::sort(c.creation.begin(), c.creation.end(),
            [](const EventPtr& a, const EventPtr& b) { return a->seq < b->seq; });
  if (options_.start && !capturing_) {
    // The capture starts here: the ring is this checkpoint alone.
    ring_.clear();
    event_bytes_ = 0;
    capturing_ = true;
  }
  ring_.push_back(std::move(segment));
  checkpoint_due_ = false;
  ++checkpoints_;
  evict();
  if (options_.journal && !options_.start) {
    if (journals_.empty() || journals_.back().submits >= 2 * options_.window_batches) {
      start_journal(ring_.back().start, next);
    }
    while (journals_.size() > 1 && journals_.back().submits >= options_.window_batches) {
      drop_journal();
    }
  }
  return {};
}

void FlightRecorder::start_journal(const Checkpoint& start, const Ordinals& next) {
  Journal journal;
  // This recorder's pair of journal names, taken once (capture_names.h): a journal never
  // overwrites another recorder's.
  if (!journal_names_) journal_names_ = take_journal_names(base_path_);
  ++journal_files_;
  journal.path = journal_files_ % 2 == 1 ? journal_names_->first : journal_names_->second;
  std::optional<std::uint64_t> baseline;
  const auto events = prologue(start, next, baseline);
  journal.first_seq = start.first_seq;
  journal.prologue = events.size();
  WindowRecordValues w;
  w.trigger = std::string(flight_trigger_name(FlightTriggerKind::kJournal));
  w.detail = "the window as recorded, on disk until close()";
  w.trigger_event = start.first_seq;
  w.trigger_batch = start.submits_before;
  w.first_event = start.first_seq;
  w.prologue_events = events.size();
  w.baseline_event = baseline;
  schema::TraceHeaderInfo header;
  header.producer = "vtrace-recorder";
  header.producer_version = VTRACE_VERSION;
  header.metadata = window_metadata(metadata_source_, w);
  auto sink = schema::open_file_sink(journal.path);
  if (!sink) return journal_failed(journal, sink.error());
  auto writer = schema::TraceWriter::create(std::move(*sink), std::move(header), writer_options_);
  if (!writer) return journal_failed(journal, writer.error());
  journal.writer = std::move(*writer);
  for (const auto& o : events) {
    if (auto put = put_event(*journal.writer, o); !put) return journal_failed(journal, put.error());
  }
  if (auto flushed = journal.writer->flush(); !flushed) {
    return journal_failed(journal, flushed.error());
  }
  journals_.push_back(std::move(journal));
}

void FlightRecorder::drop_journal() {
  Journal& oldest = journals_.front();
  if (oldest.writer) (void)oldest.writer->close({});
  oldest.writer.reset();
  std::error_code ignored;
  std::filesystem::remove(oldest.path, ignored);
  std::filesystem::remove(oldest.path.string() + ".partial", ignored);
  journals_.pop_front();
}

void FlightRecorder::end_journals() {
  while (!journals_.empty()) drop_journal();
}

void FlightRecorder::flush() {
  for (auto& journal : journals_) {
    if (!journal.writer) continue;
    if (auto flushed = journal.writer->flush(); !flushed) journal_failed(journal, flushed.error());
  }
}

void FlightRecorder::journal_failed(Journal& journal, const schema::TraceError& error) {
  journal.writer.reset();
  if (!journal_error_) {
    journal_error_ = fmt::format("the journal {} cannot be written: {}", journal.path.string(),
                                 error.message);
  }
}

std::optional<std::string> FlightRecorder::take_journal_error() {
  return std::exchange(journal_error_, std::nullopt);
}

bool FlightRecorder::may_write_window() {
  if (windows_written_ < options_.max_windows) return true;
  ++windows_not_written_;
  return false;
}

FlightStats FlightRecorder::stats() const {
  FlightStats s;
  s.held_bytes = held_bytes();
  s.peak_held_bytes = peak_bytes_;
  for (const auto& segment : ring_) s.held_batches += segment.submits;
  s.checkpoints = checkpoints_;
  s.checkpoint_bytes_read = checkpoint_bytes_read_;
  s.windows_written = windows_written_;
  s.windows_not_written = windows_not_written_;
  s.windows = written_;
  return s;
}

std::vector<std::uint8_t> window_metadata(std::span<const std::uint8_t> run_metadata,
                                          const WindowRecordValues& w) {
  flatbuffers::FlatBufferBuilder mb(1024);
  const fb::TraceMetadata* run = schema::read_trace_metadata(run_metadata);
  flatbuffers::Offset<flatbuffers::String> name, workload;
  flatbuffers::Offset<fb::DeviceDescriptor> descriptor;
  flatbuffers::Offset<fb::RecorderOptionsRecord> options;
  fb::AttentionExecutionPolicy policy = fb::AttentionExecutionPolicy::Auto;
  if (run != nullptr) {
    if (run->runtime_name() != nullptr) name = mb.CreateString(run->runtime_name()->str());
    if (auto d = schema::read_descriptor(run->descriptor())) {
      descriptor = schema::build_descriptor(mb, *d);
    }
    policy = run->attention_policy();
    if (const auto* r = run->recorder()) {
      options = fb::CreateRecorderOptionsRecord(mb, r->zstd_level(), r->frame_target_bytes(),
                                                r->flush_interval_ms(), r->byte_planes_for_16bit());
    }
    if (run->workload_description() != nullptr) {
      workload = mb.CreateString(run->workload_description()->str());
    }
  }
  const auto trigger = mb.CreateString(w.trigger);
  const auto detail = mb.CreateString(w.detail);
  fb::CaptureWindowRecordBuilder wb(mb);
  wb.add_trigger(trigger);
  wb.add_detail(detail);
  wb.add_trigger_event(w.trigger_event);
  wb.add_trigger_batch(w.trigger_batch);
  wb.add_first_event(w.first_event);
  wb.add_batches(w.batches);
  wb.add_prologue_events(w.prologue_events);
  if (w.baseline_event) wb.add_baseline_event(*w.baseline_event);
  wb.add_window_number(w.window_number);
  const auto window = wb.Finish();
  mb.Finish(fb::CreateTraceMetadata(mb, name, descriptor, policy, options, workload, window));
  return {mb.GetBufferPointer(), mb.GetBufferPointer() + mb.GetSize()};
}

std::vector<OutEvent> FlightRecorder::prologue(const Checkpoint& start, const Ordinals& next,
                                               std::optional<std::uint64_t>& baseline) const {
  std::vector<OutEvent> out;
  flatbuffers::FlatBufferBuilder fbb(1024);
  baseline.reset();
  if (start.first_seq == 0) return out;  // a window that starts with the run needs none
  for (const auto& created : start.creation) {
    OutEvent o{created->bytes, created->blobs, created->type};
    // Every event is built with its seq stored (ForceDefaults), so this cannot fail.
    (void)patch_u64(o.bytes, flatbuffers::GetRoot<fb::Event>(o.bytes.data()), fb::Event::VT_SEQ,
                    out.size());
    out.push_back(std::move(o));
  }
  const auto emit = [&](fb::EventBody type, flatbuffers::Offset<void> body,
                        std::vector<BlobPtr> blobs = {}) {
    const std::uint64_t seq = out.size();
    out.push_back({finish_event(fbb, seq, type, body), std::move(blobs), type});
    return seq;
  };
  if (!start.contents.empty()) {
    const std::uint64_t stream = next.stream;
    emit(fb::EventBody::StreamCreated, fb::CreateStreamCreated(fbb, stream).Union());
    std::vector<std::uint64_t> commands;
    for (const auto& content : start.contents) {
      const std::uint64_t command = next.command + commands.size();
      commands.push_back(command);
      const auto payload = schema::to_fb(content.blob->id);
      // Whole elements of the buffer's type, as checkpoint() read them.
      const fb::HostTransferLayout layout(
          schema::to_fb(content.element_type),
          content.blob->bytes.size() / rt::element_size_bytes(content.element_type));
      const fb::ObjectRef destination(content.ordinal, fb::RefSpace::Own);
      fb::EncodeUploadBuilder b(fbb);
      b.add_payload(&payload);
      b.add_payload_bytes(content.blob->bytes.size());
      b.add_layout(&layout);
      b.add_destination(&destination);
      b.add_destination_offset_bytes(0);
      b.add_command(command);
      emit(fb::EventBody::EncodeUpload, b.Finish().Union(), {content.blob});
    }
    const fb::ObjectRef stream_ref(stream, fb::RefSpace::Own);
    std::vector<flatbuffers::Offset<fb::CommandEntry>> entries;
    for (const auto command : commands) {
      const fb::ObjectRef ref(command, fb::RefSpace::Own);
      fb::CommandEntryBuilder eb(fbb);
      eb.add_phase(fb::CommandPhase::DynamicBinding);
      eb.add_command(&ref);
      entries.push_back(eb.Finish());
    }
    const auto entries_v = fbb.CreateVector(entries);
    fb::SubmitBeginBuilder sb(fbb);
    sb.add_stream(&stream_ref);
    sb.add_entries(entries_v);
    const auto begin = emit(fb::EventBody::SubmitBegin, sb.Finish().Union());
    fb::SubmitEndBuilder eb(fbb);
    eb.add_begin_seq(begin);
    eb.add_fence(next.fence);
    emit(fb::EventBody::SubmitEnd, eb.Finish().Union());
    const fb::ObjectRef fence_ref(next.fence, fb::RefSpace::Own);
    const auto result =
        schema::build_fence_wait(fbb, std::expected<rt::TerminalReceipt, rt::FenceIndeterminate>(
                                          rt::TerminalReceipt::unprofiled(rt::DeviceTerminal{})));
    emit(fb::EventBody::WaitFence, fb::CreateWaitFence(fbb, &fence_ref, result).Union());
    emit(fb::EventBody::FenceReleased, fb::CreateFenceReleased(fbb, next.fence).Union());
    emit(fb::EventBody::StreamReleased, fb::CreateStreamReleased(fbb, stream).Union());
  }
  if (start.counters) {
    const auto counters = schema::to_fb(*start.counters);
    const std::uint64_t after = out.empty() ? 0 : out.size() - 1;
    baseline = emit(fb::EventBody::CounterSnapshot,
                    fb::CreateCounterSnapshot(fbb, after, &counters).Union());
  }
  return out;
}

schema::TraceResult<std::filesystem::path> FlightRecorder::write_window(
    const WindowTrigger& trigger, std::uint64_t trigger_seq, const Ordinals& next) {
  const auto refuse = [&](schema::TraceError e) -> schema::TraceResult<std::filesystem::path> {
    ++windows_not_written_;
    return std::unexpected(std::move(e));
  };
  const Checkpoint& start = ring_.front().start;
  std::optional<std::uint64_t> baseline;
  std::vector<OutEvent> out = prologue(start, next, baseline);
  const std::uint64_t prologue_events = out.size();
  // The window's calls as recorded, renumbered after the prologue.
  std::uint64_t batches = 0;
  for (const auto& segment : ring_) {
    batches += segment.submits;
    for (const auto& held : segment.events) {
      out.push_back(renumbered(*held, start.first_seq, prologue_events));
    }
  }
  const std::uint32_t number = windows_written_ + 1;
  WindowRecordValues w;
  w.trigger = std::string(flight_trigger_name(trigger.kind));
  w.detail = trigger.detail;
  w.trigger_event = trigger_seq;
  w.trigger_batch = submits_;
  w.first_event = start.first_seq;
  w.batches = batches;
  w.prologue_events = prologue_events;
  w.baseline_event = baseline;
  w.window_number = number;
  schema::TraceHeaderInfo header;
  header.producer = "vtrace-recorder";
  header.producer_version = VTRACE_VERSION;
  header.metadata = window_metadata(metadata_source_, w);

  // The next free name of the base path's family, process-wide (capture_names.h): another
  // recorder's windows or captures never take the same file. The crash window is written in the
  // forked child of a dying process, where another thread may have held the allocator's lock.
  const auto path = trigger.kind == FlightTriggerKind::kCrash
                        ? take_capture_name_in_crash_child(base_path_)
                        : take_capture_name(base_path_);
  auto sink = schema::open_file_sink(path);
  if (!sink) return refuse(sink.error());
  auto writer = schema::TraceWriter::create(std::move(*sink), std::move(header), writer_options_);
  if (!writer) return refuse(writer.error());

  // The summary, from the window's own events.
  schema::SummaryTally summary;
  for (const auto& o : out) {
    if (auto put = put_event(**writer, o); !put) return refuse(put.error());
    summary.add(*flatbuffers::GetRoot<fb::Event>(o.bytes.data()));
  }
  if (auto closed = (*writer)->close(summary.finish((*writer)->stats())); !closed) {
    return refuse(closed.error());
  }
  ++windows_written_;
  written_.push_back({path, out.size(), w.trigger});
  return path;
}

}  // namespace detail
}  // namespace vtrace::recorder
