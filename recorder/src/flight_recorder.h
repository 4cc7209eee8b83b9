// Private to vtrace_recorder: the flight recorder's ring, its object tracking, its checkpoints and
// the writer of a window (docs/FLIGHT.md). RecordingRuntime::State owns one in flight mode and
// hands it every event it emits and every payload it stores, with `mu` held; nothing here locks.
//
// The ring is a deque of segments. A segment starts at a checkpoint (the live objects' creation
// events and the contents of every live own buffer at that point) and holds the events recorded
// after it. A checkpoint is taken at the first quiescent call boundary after each submit (no live
// fence, no import session open, no live command the recorder cannot re-create), so in a product
// that waits for each batch before the next one every segment holds one batch. Eviction drops the
// oldest segment while the newer ones still hold window_batches submits, or while the ring holds
// more than window_bytes. A window is the ring from its oldest segment's checkpoint on.
#pragma once

#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <set>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vtrace/recorder/flight.h"
#include "vtrace/runtime/device_runtime.h"
#include "vtrace/schema/format.h"
#include "vtrace/schema/trace_error.h"
#include "vtrace/schema/trace_writer.h"
#include "vtrace_generated.h"

namespace vtrace::recorder::detail {

class FlightRecorder;

// A payload held by the ring; shared by the events (and checkpoints) that name it, so one held
// payload is stored once whatever references it. Its destructor gives its bytes back to the
// recorder's count.
struct HeldBlob {
  HeldBlob(FlightRecorder& owner, schema::BlobId id, std::vector<std::uint8_t> bytes,
           std::uint32_t element_bytes);
  ~HeldBlob();
  HeldBlob(const HeldBlob&) = delete;
  HeldBlob& operator=(const HeldBlob&) = delete;
  FlightRecorder& owner;
  schema::BlobId id;
  std::vector<std::uint8_t> bytes;
  std::uint32_t element_bytes;
};
using BlobPtr = std::shared_ptr<const HeldBlob>;

// One recorded event: its finished `vtrace.Event` bytes (built with every scalar present, so the
// window writer can renumber seq, begin_seq and after_seq in place) and the payloads it names.
struct HeldEvent {
  std::uint64_t seq = 0;
  fb::EventBody type = fb::EventBody::NONE;
  std::vector<std::uint8_t> bytes;
  std::vector<BlobPtr> blobs;
};
using EventPtr = std::shared_ptr<const HeldEvent>;

// The contents of one own buffer at a checkpoint.
struct BufferContent {
  std::uint64_t ordinal = 0;
  runtime::ElementType element_type = runtime::ElementType::kU8;
  BlobPtr blob;
};

struct Checkpoint {
  std::uint64_t first_seq = 0;          // the run's ordinal of the first event after it
  std::uint64_t submits_before = 0;     // submits recorded before it
  std::vector<EventPtr> creation;       // the live objects' creation events, in run order
  std::vector<BufferContent> contents;  // by buffer ordinal
  std::optional<runtime::CounterSnapshot> counters;  // the product's counters at that point
};

struct Segment {
  Checkpoint start;
  std::vector<EventPtr> events;
  std::uint64_t event_bytes = 0;
  std::uint64_t submits = 0;
};

// The index of the first NaN or Inf in `bytes` read as `type` (f16, bf16, f32); nullopt when
// there is none or the type has no such values.
std::optional<std::uint64_t> first_non_finite(std::span<const std::uint8_t> bytes,
                                              runtime::ElementType type);
// A counter of spec 7.6 by its name; nullopt for an unknown name.
std::optional<std::uint64_t> counter_value(const runtime::CounterSnapshot& c,
                                           std::string_view name);

// An event of a window being written, renumbered, with the payloads it names.
struct OutEvent {
  std::vector<std::uint8_t> bytes;
  std::vector<BlobPtr> blobs;
  fb::EventBody type = fb::EventBody::NONE;
};

// Object ordinals no event of the run has used (the prologue's own stream, commands and fence).
struct Ordinals {
  std::uint64_t stream = 0;
  std::uint64_t command = 0;
  std::uint64_t fence = 0;
};

// What fired a window.
struct WindowTrigger {
  FlightTriggerKind kind = FlightTriggerKind::kApi;
  std::string detail;
};

// The window's CaptureWindowRecord (schema/vtrace.fbs), as values.
struct WindowRecordValues {
  std::string trigger;
  std::string detail;
  std::uint64_t trigger_event = 0;
  std::uint64_t trigger_batch = 0;
  std::uint64_t first_event = 0;
  std::uint64_t batches = 0;
  std::uint64_t prologue_events = 0;
  std::optional<std::uint64_t> baseline_event;
  std::uint32_t window_number = 0;
};

// The run's TraceMetadata with `window` added.
std::vector<std::uint8_t> window_metadata(std::span<const std::uint8_t> run_metadata,
                                          const WindowRecordValues& window);

class FlightRecorder {
 public:
  FlightRecorder(FlightOptions options, std::filesystem::path base_path,
                 std::vector<std::uint8_t> metadata_fields_source,
                 schema::TraceWriterOptions writer_options,
                 std::optional<runtime::CounterSnapshot> counters_at_start);
  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;
  ~FlightRecorder();

  // A payload about to be named by the next event; its id.
  schema::BlobId put_blob(std::span<const std::uint8_t> bytes, std::uint32_t element_bytes);
  // Every event the recorder emits, in order (built with ForceDefaults).
  void on_event(std::uint64_t seq, fb::EventBody type, std::span<const std::uint8_t> bytes);
  // The wrapped runtime's handle of own buffer `ordinal` (recorded by allocate()).
  void note_buffer(std::uint64_t ordinal, const runtime::Buffer* inner);

  // At a call boundary: whether a checkpoint is due and can be taken now.
  bool checkpoint_ready() const;
  // No live fence, no open import session, no live command the recorder cannot re-create.
  bool quiescent() const;
  // Reads every live own buffer written since the last checkpoint through `stream` (a stream of
  // the recorder's own on `inner`) and starts a segment. `counters`: the product's counters now.
  // A buffer that cannot be read leaves no checkpoint (the ring keeps growing from the previous
  // one, bounded by eviction): the error is returned and nothing else changes.
  // `next`: ordinals for a journal's prologue (FlightOptions::journal).
  runtime::Result<void> checkpoint(runtime::DeviceRuntime& inner, runtime::Stream& stream,
                                   const std::optional<runtime::CounterSnapshot>& counters,
                                   const Ordinals& next);
  // The journals (FlightOptions::journal): what is appended reaches the files; deleted at the
  // end of a clean recording.
  void flush();
  void end_journals();
  // Why a journal was given up since the last call (a journal that cannot be written is closed
  // and the run goes on); nullopt when none was. Clears it.
  std::optional<std::string> take_journal_error();

  // Writes the window as a trace: the path it went to, or the error.
  schema::TraceResult<std::filesystem::path> write_window(const WindowTrigger& trigger,
                                                          std::uint64_t trigger_seq,
                                                          const Ordinals& next);
  // Whether a window may still be written (max_windows); counts the refusal when not.
  bool may_write_window();
  // A checkpoint that could not be taken: the next one is due after the next submit.
  void checkpoint_skipped() { checkpoint_due_ = false; }

  const FlightOptions& options() const { return options_; }
  // A mid-run capture: its start point was passed (the checkpoint follows at the first quiescent
  // boundary); whether the capture has started.
  void start_reached() { start_reached_ = true; }
  bool start_was_reached() const { return start_reached_; }
  bool capturing() const { return capturing_; }
  FlightStats stats() const;
  std::uint64_t submits() const { return submits_; }
  bool checkpoint_failed() const { return checkpoint_failed_; }
  // The product dropped import session `ordinal` (sealed or not); the format has no event for it.
  void session_dropped(std::uint64_t ordinal) { open_sessions_.erase(ordinal); }

 private:
  friend struct HeldBlob;
  struct LiveBuffer {
    EventPtr admit;
    EventPtr allocate;
    const runtime::Buffer* inner = nullptr;
    runtime::ElementType element_type = runtime::ElementType::kU8;
    std::uint64_t size_bytes = 0;
    bool dirty = true;
    BlobPtr content;
  };
  struct LiveCommand {
    EventPtr encode;
    std::vector<std::uint64_t> writes;  // own buffers it writes
    bool writes_unknown = false;        // may write any buffer (reusable execution)
  };

  // The events that re-create `start`'s state in a fresh runtime, and the baseline snapshot's
  // ordinal among them (none for a checkpoint at the run's start).
  std::vector<OutEvent> prologue(const Checkpoint& start, const Ordinals& next,
                                 std::optional<std::uint64_t>& baseline) const;
  void track(const EventPtr& event);
  void start_journal(const Checkpoint& start, const Ordinals& next);
  void drop_journal();
  void mark_written(const LiveCommand& command);
  void evict();
  std::uint64_t held_bytes() const { return event_bytes_ + blob_bytes_; }

  FlightOptions options_;
  std::filesystem::path base_path_;
  std::vector<std::uint8_t> metadata_source_;  // the run's TraceMetadata
  schema::TraceWriterOptions writer_options_;

  std::map<schema::BlobId, std::weak_ptr<const HeldBlob>> blobs_;
  std::vector<BlobPtr> pending_blobs_;  // put since the last event
  std::uint64_t blob_bytes_ = 0;
  std::uint64_t event_bytes_ = 0;
  std::uint64_t peak_bytes_ = 0;

  // Live objects (own ordinals) and what re-creates them.
  EventPtr opened_;
  std::vector<EventPtr> foreign_;
  std::map<std::uint64_t, EventPtr> permits_;  // by generation
  std::map<std::uint64_t, LiveBuffer> buffers_;
  std::map<std::uint64_t, std::vector<EventPtr>> streams_;  // creation, then configuration
  std::map<std::uint64_t, LiveCommand> commands_;
  std::map<std::uint64_t, int> fences_;
  // Static-weight import sessions begun and not yet sealed (a failed seal leaves one open) or
  // dropped: no checkpoint while one is open, since a window could not re-create it.
  std::set<std::uint64_t> open_sessions_;
  std::uint64_t unrecreatable_commands_ = 0;  // live commands made by coalesce

  struct Journal {
    std::unique_ptr<schema::TraceWriter> writer;  // null once a write failed
    std::filesystem::path path;
    std::uint64_t first_seq = 0;
    std::uint64_t prologue = 0;
    std::uint64_t submits = 0;
  };
  // Gives `journal` up (its writer closed) and notes why, for take_journal_error().
  void journal_failed(Journal& journal, const schema::TraceError& error);
  std::deque<Journal> journals_;
  std::optional<std::string> journal_error_;
  std::uint32_t journal_files_ = 0;
  // The two names this recorder's journals alternate between (taken at the first journal).
  std::optional<std::pair<std::filesystem::path, std::filesystem::path>> journal_names_;

  std::deque<Segment> ring_;
  std::uint64_t submits_ = 0;
  std::uint64_t next_seq_ = 0;  // the ordinal of the next event
  bool checkpoint_due_ = false;
  bool start_reached_ = false;
  bool capturing_ = true;
  bool checkpoint_failed_ = false;
  std::uint64_t checkpoints_ = 0;
  std::uint64_t checkpoint_bytes_read_ = 0;
  std::uint32_t windows_written_ = 0;
  std::uint32_t windows_not_written_ = 0;
  std::vector<WrittenWindow> written_;
};

}  // namespace vtrace::recorder::detail
