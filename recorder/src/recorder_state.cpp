#include "recorder_state.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string_view>
#include <utility>

#include "signal_flag.h"
#include "vtrace/schema/trace_repair.h"

namespace vtrace::recorder {

namespace rt = vtrace::runtime;
using schema::to_fb;

namespace detail {

std::optional<std::uint64_t> first_non_finite(std::span<const std::uint8_t> bytes,
                                              rt::ElementType type) {
  const auto scan = [&](std::size_t width, auto non_finite) -> std::optional<std::uint64_t> {
    for (std::size_t i = 0; i + width <= bytes.size(); i += width) {
      std::uint32_t v = 0;
      for (std::size_t b = 0; b < width; ++b) v |= std::uint32_t{bytes[i + b]} << (8 * b);
      if (non_finite(v)) return i / width;
    }
    return std::nullopt;
  };
  switch (type) {
    case rt::ElementType::kF16:
      return scan(2, [](std::uint32_t v) { return (v & 0x7c00u) == 0x7c00u; });
    case rt::ElementType::kBf16:
      return scan(2, [](std::uint32_t v) { return (v & 0x7f80u) == 0x7f80u; });
    case rt::ElementType::kF32:
      return scan(4, [](std::uint32_t v) { return (v & 0x7f800000u) == 0x7f800000u; });
    default:
      return std::nullopt;
  }
}

std::optional<std::uint64_t> counter_value(const rt::CounterSnapshot& c, std::string_view name) {
  if (name == "allocations") return c.allocations;
  if (name == "live_allocations") return c.live_allocations;
  if (name == "submissions") return c.submissions;
  if (name == "commands") return c.commands;
  if (name == "uploaded_bytes") return c.uploaded_bytes;
  if (name == "dense_linear_launches") return c.dense_linear_launches;
  if (name == "readback_bytes") return c.readback_bytes;
  return std::nullopt;
}

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
  if (flight) {
    std::lock_guard lock(mu);
    return flight->put_blob(bytes, element_bytes);
  }
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
  if (flight) {
    std::lock_guard lock(mu);
    flight->flush();
    return;
  }
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
  if (flight) {
    flight->on_event(this_seq, type, std::span(fbb.GetBufferPointer(), fbb.GetSize()));
    fbb.Clear();
    ++seq;
    return this_seq;
  }
  auto appended = writer->append_event(std::span(fbb.GetBufferPointer(), fbb.GetSize()));
  if (appended) tally.add(*flatbuffers::GetRoot<fb::Event>(fbb.GetBufferPointer()));
  fbb.Clear();
  if (!appended) {
    fail_locked(appended.error());
    return this_seq;
  }
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
  if (flight) {
    if (was_active && options.flight.start && flight->capturing()) {
      // A mid-run capture without a stop point ends here.
      active.store(true);
      (void)write_window_locked(FlightTriggerKind::kCaptureRange, range_detail(), std::nullopt);
      active.store(false);
    } else if (was_active && options.flight.start) {
      // Its start never came: say so, or the missing trace looks like a failure to write it.
      notice(fmt::format("the capture {} never started: the run ended after {} submits and {} "
                         "events, so nothing was written",
                         range_detail(), flight->submits(), seq));
    }
    if (listens_for_signal()) detail::release_window_signal();
    if (crash_window_registered) detail::release_crash_window(this);
    flight->end_journals();
    schema::TraceWriteStats stats;
    stats.events = seq;
    if (!was_active && first_error) {
      close_result = std::unexpected(*first_error);
    } else {
      close_result = stats;
    }
    return *close_result;
  }
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
  // A trace that is complete at its path lets go of it: a later recording may write there. One
  // that failed keeps it (its .partial holds the events) until the recorder is destroyed.
  if (*close_result) trace_path_claim = detail::CapturePathClaim{};
  if (!*close_result) {
    std::string left;
    if (!trace_path.empty()) {
      if (const auto partial = schema::recoverable_partial(trace_path)) {
        left = fmt::format(
            "; the events recorded so far are in {} (`vtrace repair {} -o {}` finishes it)",
            partial->string(), partial->string(), schema::repair_output_for(trace_path).string());
      } else {
        left = "; nothing had reached the file, and none is left";
      }
    }
    notice(fmt::format("writing the trace failed: {}{}", close_result->error().message, left));
  }
  return *close_result;
}

void RecordingRuntime::State::notice(std::string_view sentence) const {
  if (options.failure_notice.empty()) return;
  std::fputs(fmt::format("vtrace: {}: {}\n", options.failure_notice, sentence).c_str(), stderr);
}

void RecordingRuntime::State::notice_journal_failure() {
  if (!flight) return;
  const auto failed = flight->take_journal_error();
  if (!failed || journal_failure_noticed) return;
  journal_failure_noticed = true;
  notice(fmt::format("{}; the product goes on, without that crash safety until a later journal "
                     "starts (later journal failures are not reported)",
                     *failed));
}

std::vector<std::uint8_t> RecordingRuntime::State::build_summary_locked(const CloseReason& reason) {
  std::optional<fb::Counters> final_counters;
  if (const auto c = product_counters()) final_counters = to_fb(*c);
  return tally.finish(writer->stats(), final_counters, reason.interrupted_by);
}

}  // namespace vtrace::recorder

namespace vtrace::recorder {

namespace {

rt::CounterSnapshot counters_minus(const rt::CounterSnapshot& a, const rt::CounterSnapshot& b) {
  return {a.allocations - b.allocations,       a.live_allocations - b.live_allocations,
          a.submissions - b.submissions,       a.commands - b.commands,
          a.uploaded_bytes - b.uploaded_bytes, a.dense_linear_launches - b.dense_linear_launches,
          a.readback_bytes - b.readback_bytes};
}

rt::CounterSnapshot counters_plus(const rt::CounterSnapshot& a, const rt::CounterSnapshot& b) {
  return {a.allocations + b.allocations,       a.live_allocations + b.live_allocations,
          a.submissions + b.submissions,       a.commands + b.commands,
          a.uploaded_bytes + b.uploaded_bytes, a.dense_linear_launches + b.dense_linear_launches,
          a.readback_bytes + b.readback_bytes};
}

}  // namespace

std::optional<rt::CounterSnapshot> RecordingRuntime::State::product_counters() const {
  auto c = inner->counter_snapshot();
  // Only flight mode's checkpoints move private_traffic (under `mu`); full mode has nothing to
  // subtract, and its summary asks with `mu` held.
  if (c && flight) {
    std::lock_guard lock(mu);
    *c = counters_minus(*c, private_traffic);
  }
  return c;
}

std::string RecordingRuntime::State::range_detail() const {
  const auto point = [](const std::optional<CapturePoint>& p, std::string_view signal_origin) {
    if (!p) return std::string("close");
    switch (p->unit) {
      case CapturePoint::Unit::kEvent:
        return fmt::format("event {}", p->count);
      case CapturePoint::Unit::kSubmit:
        return fmt::format("submit {}", p->count);
      case CapturePoint::Unit::kSignal:
        break;
    }
    return fmt::format("SIGUSR1 {} {}", p->count, signal_origin);
  };
  return fmt::format("from {} to {}", point(options.flight.start, "of the run"),
                     point(options.flight.stop, "of the capture"));
}

void RecordingRuntime::State::at_call_start() {
  if (!flight || !active.load()) return;
  if (const auto& start = options.flight.start) {
    const std::uint64_t signals = listens_for_signal() ? detail::window_signals() : 0;
    const auto reached = [&](const CapturePoint& p, std::uint64_t signal_base) {
      switch (p.unit) {
        case CapturePoint::Unit::kEvent:
          return seq >= p.count;
        case CapturePoint::Unit::kSubmit:
          return flight->submits() >= p.count;
        case CapturePoint::Unit::kSignal:
          break;
      }
      return signals - signal_base >= p.count;
    };
    // The capture ends, as it starts, at a quiescent boundary: its last batch is complete.
    if (flight->capturing() && options.flight.stop &&
        reached(*options.flight.stop, signals_at_start) && flight->quiescent()) {
      std::lock_guard lock(mu);
      (void)write_window_locked(FlightTriggerKind::kCaptureRange, range_detail(), std::nullopt);
      active.store(false);  // the capture is over; the product goes on unrecorded
      return;
    }
    if (!flight->capturing() && reached(*start, signals_seen)) {
      std::lock_guard lock(mu);
      if (!flight->start_was_reached()) signals_at_start = signals;
      flight->start_reached();
    }
  }
  if (options.flight.trigger_on_signal && !options.flight.start) {
    const std::uint64_t signals = detail::window_signals();
    if (signals != signals_seen) {
      signals_seen = signals;
      (void)write_window(FlightTriggerKind::kSignal, "SIGUSR1", std::nullopt);
    }
  }
  std::lock_guard lock(mu);
  if (!flight->checkpoint_ready()) return;
  // Everything the checkpoint does on the wrapped runtime is hidden from the product's counters.
  const auto before = inner->counter_snapshot();
  if (!flight_stream) {
    auto stream = inner->create_stream();
    if (stream) flight_stream = std::move(*stream);
  }
  rt::Result<void> taken = std::unexpected(
      rt::RuntimeError(rt::ErrorKind::kInternal, "flight recorder: no stream of its own"));
  if (flight_stream) {
    const auto product =
        before ? std::optional(counters_minus(*before, private_traffic)) : std::nullopt;
    taken = flight->checkpoint(*inner, *flight_stream, product, unused_ordinals_locked());
  }
  if (const auto after = inner->counter_snapshot(); before && after) {
    private_traffic = counters_plus(private_traffic, counters_minus(*after, *before));
  }
  if (!taken) {
    flight->checkpoint_skipped();
    last_window_error = fmt::format("checkpoint not taken: {}", taken.error().message());
  }
}

void RecordingRuntime::State::fire_locked(FlightTriggerKind kind, std::string detail,
                                          std::optional<std::uint64_t> at) {
  if (!flight || pending_trigger || options.flight.start) return;
  pending_trigger.emplace(kind, std::move(detail));
  pending_trigger_seq = at.value_or(seq);
}

void RecordingRuntime::State::at_call_end() {
  if (!flight) return;
  std::optional<std::pair<FlightTriggerKind, std::string>> fired;
  std::uint64_t at = 0;
  {
    std::lock_guard lock(mu);
    fired = std::exchange(pending_trigger, std::nullopt);
    at = pending_trigger_seq;
  }
  if (fired) (void)write_window(fired->first, std::move(fired->second), at);
  std::lock_guard lock(mu);
  notice_journal_failure();
}

schema::TraceResult<std::filesystem::path> RecordingRuntime::State::write_window(
    FlightTriggerKind kind, std::string detail, std::optional<std::uint64_t> trigger_seq) {
  std::lock_guard lock(mu);
  return write_window_locked(kind, std::move(detail), trigger_seq);
}

schema::TraceResult<std::filesystem::path> RecordingRuntime::State::write_window_locked(
    FlightTriggerKind kind, std::string detail, std::optional<std::uint64_t> trigger_seq) {
  const auto refused = [&](std::string why) -> schema::TraceResult<std::filesystem::path> {
    last_window_error = why;
    return std::unexpected(schema::TraceError{schema::TraceErrorKind::kWriterFailed, why});
  };
  if (!flight) return refused("not in flight mode: there is no window to write");
  if (!active.load()) return refused("the recording is closed or failed: no window written");
  if (!flight->may_write_window()) {
    return refused(
        fmt::format("{} windows already written (the maximum): this {} trigger wrote "
                    "none",
                    options.flight.max_windows, flight_trigger_name(kind)));
  }
  auto written =
      flight->write_window({kind, std::move(detail)}, trigger_seq.value_or(seq == 0 ? 0 : seq - 1),
                           unused_ordinals_locked());
  if (!written) {
    last_window_error = written.error().message;
    if (!window_failure_noticed) {
      window_failure_noticed = true;
      notice(fmt::format("the flight window of trigger `{}` could not be written: {}; the "
                         "product goes on (later window failures are not reported)",
                         flight_trigger_name(kind), last_window_error));
    }
  }
  return written;
}

bool RecordingRuntime::State::listens_for_signal() const {
  const auto signal = [](const std::optional<CapturePoint>& p) {
    return p && p->unit == CapturePoint::Unit::kSignal;
  };
  return options.flight.trigger_on_signal || signal(options.flight.start) ||
         signal(options.flight.stop);
}

void RecordingRuntime::State::start_signal_handlers() {
  if (options.flight.window_on_crash) {
    crash_window_registered = detail::acquire_crash_window(this, &State::write_crash_window);
    if (!crash_window_registered) {
      notice(fmt::format("no crash window for this recording: at most {} flight recorders of a "
                         "process hold one at once; its other triggers and its journal work",
                         detail::kCrashWriters));
    }
  }
  if (!listens_for_signal()) return;
  detail::acquire_window_signal();
  signals_seen = detail::window_signals();
}

void RecordingRuntime::State::write_crash_window(void* state, int signal) {
  auto& s = *static_cast<State*>(state);
  if (!s.flight || (s.options.flight.start && !s.flight->capturing())) return;
  (void)s.write_window_locked(FlightTriggerKind::kCrash,
                              std::string(detail::fatal_signal_name(signal)), std::nullopt);
}

detail::Ordinals RecordingRuntime::State::unused_ordinals_locked() const {
  return {next_own[schema::index_of(detail::kStream)], next_own[schema::index_of(detail::kCommand)],
          next_own[schema::index_of(detail::kFence)]};
}

std::optional<FlightStats> RecordingRuntime::State::flight_stats() const {
  std::lock_guard lock(mu);
  if (!flight) return std::nullopt;
  auto s = flight->stats();
  s.last_error = last_window_error;
  s.crash_window_armed = crash_window_registered;
  return s;
}

}  // namespace vtrace::recorder
