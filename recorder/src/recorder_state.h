// Private to vtrace_recorder: the recorder's state (RecordingRuntime::State), the handle wrappers
// and unwrapping. The calls themselves record through the bracket of call_bracket.h, the only code
// (with State's own members) that may touch the event builder, the ordinals and the trace writer.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "capture_names.h"
#include "flight_recorder.h"
#include "vtrace/recorder/recording_runtime.h"
#include "vtrace/schema/events.h"
#include "vtrace/schema/objects.h"
#include "vtrace/schema/trace_summary.h"

namespace vtrace::recorder {

namespace detail {

namespace rt = vtrace::runtime;
namespace fb = vtrace::fb;

// The schema's object kinds (vtrace/schema/objects.h), under the short names this file uses.
using Kind = schema::ObjectKind;
inline constexpr Kind kBuffer = Kind::kBuffer;
inline constexpr Kind kStream = Kind::kStream;
inline constexpr Kind kCommand = Kind::kCommand;
inline constexpr Kind kFence = Kind::kFence;
inline constexpr Kind kSession = Kind::kImportSession;
inline constexpr std::size_t kKindCount = schema::kObjectKindCount;

// The blob encoding hint: the element size when the bytes are whole elements of 1, 2 or 4 bytes.
inline std::uint32_t element_bytes_for(rt::ElementType type, std::size_t bytes) {
  const std::uint64_t size = rt::element_size_bytes(type);
  if ((size == 2 || size == 4) && bytes % size == 0) return static_cast<std::uint32_t>(size);
  return 1;
}

// Handle wrappers: each owns the wrapped runtime's handle and remembers its recorder and ordinal.
// Dropping one records the release of its kind; a command whose inner handle was consumed (by
// submit or coalesce) was not dropped and records nothing. The destructor is defined in
// call_bracket.h: a release is recorded through the bracket like any call.
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

// Unwrapping ignores the owner on purpose: a wrapper of another recorder forwards that recorder's
// wrapped handle, so the wrapped runtime answers exactly as it would without recorders.
inline const rt::Buffer* unwrap(const rt::Buffer* b) {
  if (const auto* w = dynamic_cast<const RecordedBuffer*>(b)) return w->inner.get();
  return b;
}
inline rt::Stream& unwrap(rt::Stream& s) {
  if (auto* w = dynamic_cast<RecordedStream*>(&s)) return *w->inner;
  return s;
}
inline const rt::Stream& unwrap(const rt::Stream& s) {
  if (const auto* w = dynamic_cast<const RecordedStream*>(&s)) return *w->inner;
  return s;
}
inline const rt::Fence& unwrap(const rt::Fence& f) {
  if (const auto* w = dynamic_cast<const RecordedFence*>(&f)) return *w->inner;
  return f;
}
inline rt::CommandPtr unwrap(rt::CommandPtr c) {
  if (auto* w = dynamic_cast<RecordedCommand*>(c.get())) return std::move(w->inner);
  return c;
}

// The batch handed to the wrapped runtime: same settings, entries with unwrapped commands.
rt::CommandBatch unwrap(rt::CommandBatch batch);

class Call;
class Refs;
class Event;

}  // namespace detail

struct RecordingRuntime::State {
  // Declared first so it is destroyed last: the writer and the wrappers go before the runtime.
  std::unique_ptr<runtime::DeviceRuntime> inner;
  std::unique_ptr<schema::TraceWriter> writer;  // null in flight mode
  // Flight mode (docs/FLIGHT.md): the ring instead of the writer, and the recorder's own stream
  // on `inner` for checkpoints (created at the first one, destroyed before `inner`).
  std::unique_ptr<detail::FlightRecorder> flight;
  runtime::StreamPtr flight_stream;
  RecorderOptions options;
  std::string runtime_name;
  // Full mode recording to a file (the path form of create() and wrap()): the trace's path, for
  // the failure notice; empty for a sink. The claim keeps every other recording and window of
  // the process off that path while this one lives (capture_names.h).
  std::filesystem::path trace_path;
  detail::CapturePathClaim trace_path_claim;

  // The order lock: every recorded call (and every wrapper release) holds it from its first event
  // through the wrapped call to its last event (SubmitBegin, the flush before submit, the submit,
  // SubmitEnd and its CounterSnapshot are one unit), so the trace order is the order the wrapped
  // runtime ran the calls in and a replay sees the same device state at every step. Recording
  // therefore serializes calls to the wrapped runtime, waits and flushes included. A plain mutex,
  // not a recursive one: no wrapper with a live inner handle dies while it is held (submit and
  // coalesce move the inner handles out of the wrappers before the emptied wrappers die, and an
  // emptied wrapper's destructor returns before locking), so a re-entry would be a bug, and
  // deadlocking on it in tests beats recording a release in the middle of another call's event.
  // Taken by detail::Call (call_bracket.h) and close(). Lock order: `order`, then `mu`.
  mutable std::mutex order;
  // Guards the recording state below (short sections; taken alone by the queries that do not
  // forward: events_recorded, recording_failed).
  mutable std::mutex mu;
  std::atomic<bool> active{true};  // false once closed or failed
  std::optional<schema::TraceError> first_error;
  std::optional<RecorderCloseResult> close_result;

  // With `mu` held.
  void fail_locked(const schema::TraceError& error) {
    if (!first_error) first_error = error;
    active.store(false);
  }
  // Without `mu`: stores a payload (the writer serializes itself); nullopt when not recording.
  std::optional<schema::BlobId> put_blob(std::span<const std::uint8_t> bytes,
                                         std::uint32_t element_bytes);
  // Without `mu`.
  void flush();

  // The wrapped runtime's counters less what the recorder's own checkpoint reads moved: what the
  // product's calls moved (RecordingRuntime::counter_snapshot and every recorded snapshot).
  // Without `mu` in flight mode (it takes it).
  std::optional<runtime::CounterSnapshot> product_counters() const;

  // Flight mode, with `order` held and `mu` not: at the start of every recorded call (a SIGUSR1
  // seen since the last call writes a window; a due checkpoint is taken), and at its end (a
  // trigger fired during the call writes a window).
  void at_call_start();
  void at_call_end();
  // With `mu` held: a trigger fired by the event about to be emitted (the first of a call wins).
  // `at`: the triggering event's ordinal (default: the event about to be emitted).
  void fire_locked(FlightTriggerKind kind, std::string detail,
                   std::optional<std::uint64_t> at = std::nullopt);
  // With `order` held: writes the window now.
  // trigger_seq: the triggering event (nullopt: the last event recorded).
  schema::TraceResult<std::filesystem::path> write_window(FlightTriggerKind kind,
                                                          std::string detail,
                                                          std::optional<std::uint64_t> trigger_seq);
  // With `order` and `mu` held.
  schema::TraceResult<std::filesystem::path> write_window_locked(
      FlightTriggerKind kind, std::string detail, std::optional<std::uint64_t> trigger_seq);
  // Flight mode: installs the SIGUSR1 handler when the options use it (trigger_on_signal or a
  // capture point in signal units; only signals from now on count) and registers the crash
  // window (window_on_crash). close_locked() undoes both.
  void start_signal_handlers();
  bool listens_for_signal() const;
  // The crash window, called in the forked child of a dying process (signal_flag.h): writes the
  // window without taking `mu` (the child has one thread; the dying one was not inside `mu` when
  // it crashed in a wrapped call).
  static void write_crash_window(void* state, int signal);
  // Flight mode: events built with every scalar stored, so a window can renumber them in place.
  void force_defaults() { fbb.ForceDefaults(true); }
  std::optional<FlightStats> flight_stats() const;
  // With `mu` held: the next ordinals of the kinds a window's prologue creates.
  detail::Ordinals unused_ordinals_locked() const;
  // A mid-run capture's CaptureWindowRecord detail ("from submit 1000 to submit 1010").
  std::string range_detail() const;

  // RecorderOptions::failure_notice: writes "vtrace: <failure_notice>: <sentence>" on stderr
  // (nothing when it is empty).
  void notice(std::string_view sentence) const;
  // Flight mode: a journal given up since the last call is noticed (the first of the recording).
  void notice_journal_failure();

  // The RuntimeOpened event (from wrap(), before the recorder is handed out).
  void record_opened();
  // With `order` and `mu` held: the summary (with `reason`) and footer, once.
  RecorderCloseResult close_locked(const CloseReason& reason);
  std::uint64_t events_recorded() const;

 private:
  // Only the bracket builds events, and only State itself emits (ForeignObjectSeen, the summary).
  friend class detail::Call;
  friend class detail::Refs;
  friend class detail::Event;

  flatbuffers::FlatBufferBuilder fbb{4096};
  std::uint64_t seq = 0;
  std::array<std::uint64_t, detail::kKindCount> next_own{};
  std::array<std::uint64_t, detail::kKindCount> next_foreign{};
  std::array<std::unordered_map<const void*, std::uint64_t>, detail::kKindCount> foreign;
  schema::SummaryTally tally;  // full mode: the summary of the events written

  // Flight mode: what the checkpoints moved on the wrapped runtime's counters; the trigger fired
  // during the current call; the SIGUSR1 count already acted on; the counter threshold, once.
  runtime::CounterSnapshot private_traffic{};
  std::optional<std::pair<FlightTriggerKind, std::string>> pending_trigger;
  std::uint64_t pending_trigger_seq = 0;
  std::uint64_t signals_seen = 0;
  // SIGUSR1 deliveries when the capture's start point was reached (a kSignal stop counts from it).
  std::uint64_t signals_at_start = 0;
  bool crash_window_registered = false;
  bool threshold_fired = false;
  std::string last_window_error;
  // The failure notices already written (one for windows, one for journals).
  bool window_failure_noticed = false;
  bool journal_failure_noticed = false;

  // ---- with `mu` held ----

  // Wraps `body` (built in fbb) in an Event with the next sequence number and appends it.
  std::uint64_t emit_locked(fb::EventBody type, flatbuffers::Offset<void> body);

  // The reference to a handle; a foreign one is introduced by a ForeignObjectSeen event first,
  // built in fbb: so only detail::Refs calls it, and the bracket hands out a Refs only while fbb
  // is empty (before the event that uses the reference is started).
  template <typename Wrapper, typename Base>
  fb::ObjectRef ref_locked(detail::Kind kind, const Base* handle) {
    if (handle == nullptr) return fb::ObjectRef(0, fb::RefSpace::Null);
    if (const auto* w = dynamic_cast<const Wrapper*>(handle); w != nullptr && w->owner == this) {
      return fb::ObjectRef(w->ordinal, fb::RefSpace::Own);
    }
    const std::size_t k = schema::index_of(kind);
    auto [it, inserted] = foreign[k].try_emplace(handle, next_foreign[k]);
    if (inserted) {
      ++next_foreign[k];
      flatbuffers::Offset<fb::BufferDescriptor> descriptor;
      if constexpr (std::is_same_v<Base, runtime::Buffer>) {
        descriptor =
            schema::build_buffer_descriptor(fbb, inner->buffer_descriptor(*detail::unwrap(handle)));
      }
      fb::ForeignObjectSeenBuilder b(fbb);
      b.add_object(schema::to_fb(kind));
      b.add_ordinal(it->second);
      b.add_buffer_descriptor(descriptor);
      emit_locked(fb::EventBody::ForeignObjectSeen, b.Finish().Union());
    }
    return fb::ObjectRef(it->second, fb::RefSpace::Foreign);
  }

  std::vector<std::uint8_t> build_summary_locked(const CloseReason& reason);
};

}  // namespace vtrace::recorder
