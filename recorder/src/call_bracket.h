// Private to vtrace_recorder: the bracket every recorded call goes through (after IREE's
// hal/replay recorder, which brackets each call with one begin/end pair).
//
//   Call call(state);                                   // the order lock, until `call` dies
//   auto r = call.inner().encode_copy(...);             // the wrapped call
//   const auto ordinal = call.mint(kCommand, r.has_value());   // handle ordinal (even when idle)
//   call.record([&](Refs& refs) { return ...; },        // phase 1: object references -> values
//               [&](Event& e, const auto& refs) { ... return b.Finish(); });  // phase 2: fields
//   return call.wrap<RecordedCommand>(std::move(r), ordinal);
//
// What a method keeps is its own: the wrapped call and the fields of its event. The bracket does
// the rest: the locks, the `active` check, the event type (from the body's table type, so the
// two cannot disagree), the sequence number, the append, the counter snapshot, the wrappers.
//
// Why two phases: resolving a reference may emit a ForeignObjectSeen event, which is built in the
// same FlatBufferBuilder as the event that uses the reference. So every reference must be
// resolved before the event's first fbb.Create*. The types make any other order unwritable: a
// Refs (the only way to resolve a reference: State::ref_locked is private) exists only inside
// record()'s first phase, while the builder is empty, and has no access to the builder; an Event
// (the only way to reach the builder: State::fbb is private) exists only in the second phase and
// resolves nothing. The first phase returns plain values (fb::ObjectRef structs and vectors of
// them), which the second phase writes.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <expected>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "recorder_state.h"

namespace vtrace::recorder::detail {

// Phase 1 of an event: object references, resolved into plain values (with `mu` held, the event
// builder empty).
class Refs {
 public:
  Refs(const Refs&) = delete;
  Refs& operator=(const Refs&) = delete;

  fb::ObjectRef buffer(const rt::Buffer* b) { return s_.ref_locked<RecordedBuffer>(kBuffer, b); }
  fb::ObjectRef stream(const rt::Stream* s) { return s_.ref_locked<RecordedStream>(kStream, s); }
  fb::ObjectRef command(const rt::Command* c) {
    return s_.ref_locked<RecordedCommand>(kCommand, c);
  }
  fb::ObjectRef fence(const rt::Fence* f) { return s_.ref_locked<RecordedFence>(kFence, f); }
  fb::RegionRef region(const rt::BufferRegionRef& ref) {
    return fb::RegionRef(buffer(ref.buffer), ref.offset_bytes, ref.length_bytes);
  }

 private:
  friend class Call;
  explicit Refs(RecordingRuntime::State& s) : s_(s) {}
  RecordingRuntime::State& s_;
};

// Phase 2 of an event: its builder, and the summary statistics the event adds to (with `mu` held).
class Event {
 public:
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  flatbuffers::FlatBufferBuilder& fbb() { return s_.fbb; }
  flatbuffers::Offset<fb::Error> error(const rt::RuntimeError& e) {
    return schema::build_error(s_.fbb, e);
  }
  // The error of a failed result; none (a null offset, nothing built) for a success.
  template <typename T>
  flatbuffers::Offset<fb::Error> error_of(const rt::Result<T>& r) {
    if (r) return {};
    failed(r.error());
    return error(r.error());
  }
  // A call that failed with `e` (flight mode: the call-error trigger).
  void failed(const rt::RuntimeError& e) {
    if (s_.flight && s_.options.flight.trigger_on_errors.contains(e.kind())) {
      s_.fire_locked(FlightTriggerKind::kCallError,
                     fmt::format("{}: {}", rt::error_kind_name(e.kind()), e.message()));
    }
  }

 private:
  friend class Call;
  explicit Event(RecordingRuntime::State& s) : s_(s) {}
  RecordingRuntime::State& s_;
};

template <typename T>
struct BodyTable;
template <typename T>
struct BodyTable<flatbuffers::Offset<T>> {
  using type = T;
};

// One recorded call: holds the order lock from construction to destruction.
class Call {
 public:
  explicit Call(RecordingRuntime::State& s) : s_(s), order_(s.order) { s_.at_call_start(); }
  ~Call() { s_.at_call_end(); }
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  rt::DeviceRuntime& inner() const { return *s_.inner; }
  // The product's counters (the wrapped runtime's less the recorder's own checkpoint traffic).
  std::optional<rt::CounterSnapshot> counters_now() const { return s_.product_counters(); }
  // Flight mode: import session `ordinal` was dropped by the product.
  void session_dropped(std::uint64_t ordinal) {
    if (!s_.flight || nested()) return;
    const std::lock_guard lock(s_.mu);
    s_.flight->session_dropped(ordinal);
  }
  // Flight mode: the wrapped handle of a new own buffer, for checkpoints.
  void note_buffer(const std::optional<std::uint64_t>& ordinal, const rt::Buffer* inner_buffer) {
    if (!ordinal || !s_.flight || nested()) return;
    const std::lock_guard lock(s_.mu);
    s_.flight->note_buffer(*ordinal, inner_buffer);
  }
  // Flight mode: a readback that returned a NaN or an Inf fires the trigger (after event `seq`).
  void check_readback(std::optional<std::uint64_t> seq, std::span<const std::uint8_t> bytes,
                      rt::ElementType type) {
    if (!seq || !s_.flight || !s_.options.flight.trigger_on_non_finite_readback || nested()) {
      return;
    }
    const auto at = first_non_finite(bytes, type);
    if (!at) return;
    const std::lock_guard lock(s_.mu);
    s_.fire_locked(FlightTriggerKind::kNonFiniteReadback,
                   fmt::format("element {} of the readback at event {} is not finite", *at, *seq),
                   *seq);
  }
  const RecorderOptions& options() const { return s_.options; }
  // Payloads and flushes, outside an event (they take `mu` only when the trace fails).
  std::optional<schema::BlobId> put_blob(std::span<const std::uint8_t> bytes,
                                         std::uint32_t element_bytes) {
    if (nested()) return std::nullopt;
    return s_.put_blob(bytes, element_bytes);
  }
  void flush() {
    if (!nested()) s_.flush();
  }

  // The ordinal of a handle the wrapped call returned (nullopt when it returned none); assigned
  // whether or not the trace is recording, so wrappers stay unique.
  std::optional<std::uint64_t> mint(Kind kind, bool returned) {
    if (!returned || nested()) return std::nullopt;
    const std::lock_guard lock(s_.mu);
    return s_.next_own[schema::index_of(kind)]++;
  }
  std::vector<std::uint64_t> mint_each(Kind kind, std::size_t count) {
    std::vector<std::uint64_t> ordinals;
    if (nested()) return ordinals;
    const std::lock_guard lock(s_.mu);
    for (std::size_t i = 0; i < count; ++i) ordinals.push_back(s_.next_own[schema::index_of(kind)]++);
    return ordinals;
  }

  // Records one event when the trace is recording: resolve(Refs&) gives the references as values,
  // then build(Event&, values) builds the body and returns its offset. Returns the event's
  // sequence number, nullopt when not recording (neither phase runs).
  template <typename Resolve, typename Build>
  std::optional<std::uint64_t> record(Resolve&& resolve, Build&& build) {
    if (nested()) return std::nullopt;
    const std::lock_guard lock(s_.mu);
    if (!s_.active.load()) return std::nullopt;
    in_event_ = true;
    Refs refs(s_);
    const auto values = std::forward<Resolve>(resolve)(refs);
    Event event(s_);
    const auto body = std::forward<Build>(build)(event, values);
    using Table = typename BodyTable<std::remove_cv_t<decltype(body)>>::type;
    static_assert(fb::EventBodyTraits<Table>::enum_value != fb::EventBody::NONE,
                  "an event body is one of vtrace.fbs's EventBody tables");
    const auto seq = s_.emit_locked(fb::EventBodyTraits<Table>::enum_value, body.Union());
    in_event_ = false;
    return seq;
  }
  // References resolved ahead of their event (a call whose wrapped call consumes its handles):
  // the values, or an empty T when not recording. Its ForeignObjectSeen events come first.
  template <typename Resolve>
  auto resolve(Resolve&& resolve_refs) -> std::invoke_result_t<Resolve, Refs&> {
    if (nested()) return {};
    const std::lock_guard lock(s_.mu);
    if (!s_.active.load()) return {};
    in_event_ = true;
    Refs refs(s_);
    auto values = std::forward<Resolve>(resolve_refs)(refs);
    in_event_ = false;
    return values;
  }
  // An event that names no object.
  template <typename Build>
  std::optional<std::uint64_t> record(Build&& build) {
    return record([](Refs&) { return nullptr; },
                  [&build](Event& e, std::nullptr_t) { return std::forward<Build>(build)(e); });
  }

  // A CounterSnapshot after the event `after_seq` (nothing when that was not recorded or the
  // runtime has no counters).
  void counters(std::optional<std::uint64_t> after_seq,
                const std::optional<rt::CounterSnapshot>& c) {
    if (!after_seq || !c) return;
    threshold(*c);
    record([&](Event& e) {
      const auto counters = schema::to_fb(*c);
      return fb::CreateCounterSnapshot(e.fbb(), *after_seq, &counters);
    });
  }

  // The handle a successful wrapped call returned, wrapped with its ordinal.
  template <typename Wrapper, typename Ptr>
  Ptr own(const std::optional<std::uint64_t>& ordinal, Ptr inner_handle) {
    return std::make_unique<Wrapper>(&s_, ordinal.value_or(0), std::move(inner_handle));
  }
  // A wrapped call's result with its handle wrapped (a failure passes through unchanged).
  template <typename Wrapper, typename Ptr, typename E>
  std::expected<Ptr, E> wrap(std::expected<Ptr, E> r, const std::optional<std::uint64_t>& ordinal) {
    if (r) *r = own<Wrapper>(ordinal, std::move(*r));
    return r;
  }

 private:
  // Flight mode: the counter threshold, once, at the snapshot about to be recorded.
  void threshold(const rt::CounterSnapshot& c) {
    const auto& t = s_.options.flight.counter_threshold;
    if (!s_.flight || !t || nested()) return;
    const std::lock_guard lock(s_.mu);
    if (s_.threshold_fired) return;
    const auto value = counter_value(c, t->counter);
    if (!value || *value < t->at_least) return;
    s_.threshold_fired = true;
    s_.fire_locked(FlightTriggerKind::kCounterThreshold,
                   fmt::format("{} = {} (threshold {})", t->counter, *value, t->at_least));
  }

  // A bracket call made from inside an event's phases (a bug: it would interleave two events in
  // one builder, or re-lock `mu`) is refused, and recording stops; `mu` is held by this thread.
  bool nested() {
    if (!in_event_) return false;
    s_.fail_locked(schema::TraceError{schema::TraceErrorKind::kWriterFailed,
                                      "recorder: a call recorded from inside an event"});
    return true;
  }

  RecordingRuntime::State& s_;
  const std::lock_guard<std::mutex> order_;
  bool in_event_ = false;  // inside record()'s or resolve()'s phases
};

template <typename Handle, Kind kKind>
Recorded<Handle, kKind>::~Recorded() {
  if (!inner) return;
  Call call(*owner);
  inner.reset();
  const std::uint64_t released = ordinal;
  call.record([released](Event& e) {
    if constexpr (kKind == kBuffer) {
      return fb::CreateBufferReleased(e.fbb(), released);
    } else if constexpr (kKind == kStream) {
      return fb::CreateStreamReleased(e.fbb(), released);
    } else if constexpr (kKind == kCommand) {
      return fb::CreateCommandReleased(e.fbb(), released);
    } else {
      static_assert(kKind == kFence, "a handle kind with a release event");
      return fb::CreateFenceReleased(e.fbb(), released);
    }
  });
}

}  // namespace vtrace::recorder::detail

namespace vtrace::recorder {

// The names the recorded methods (recording_runtime.cpp, recording_optional.cpp) are written in.
namespace rt = vtrace::runtime;
namespace fb = vtrace::fb;
using detail::Call;
using detail::Event;
using detail::Refs;
using detail::unwrap;
using schema::to_fb;

}  // namespace vtrace::recorder
