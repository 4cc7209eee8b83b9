// Chrome trace-event JSON of a plan or of a trace read event by event (timeline.h).
#include "vtrace/report/timeline.h"

#include <fmt/format.h>

#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "vtrace/drift/command_effects.h"
#include "vtrace/replayer/json_text.h"
#include "vtrace/replayer/step_text.h"
#include "vtrace/schema/events.h"

namespace vtrace::report {

namespace rp = vtrace::replayer;
namespace rt = vtrace::runtime;
using nlohmann::json;

namespace {

constexpr int kPid = 1;
// Thread ids start at 1: Perfetto UI versions before mid-2025 merged a thread 0 into thread 1.
constexpr std::uint64_t kHostTrack = 1;

std::uint64_t track_of(const rp::ObjectRef& stream) {
  return stream.space == rp::ObjectRef::Space::kOwn ? stream.ordinal + 2 : kHostTrack;
}

std::uint64_t bytes_written(const drift::CommandEffects& e) {
  std::uint64_t n = 0;
  for (const auto& w : e.writes) n += w.length_bytes;
  return n;
}

// Nanoseconds as the format's microseconds: the double nearest to ns / 1000, which prints as
// that decimal (at most three decimals) and converts back to exactly `ns`.
double us(std::uint64_t ns) { return static_cast<double>(ns) / 1e3; }

std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
  constexpr auto kMax = std::numeric_limits<std::uint64_t>::max();
  return b > kMax - a ? kMax : a + b;
}

// floor(length * i / n) for i <= n, without overflow (n * n fits: a batch's entries are a
// FlatBuffers vector, fewer than 2^32).
std::uint64_t share(std::uint64_t length, std::uint64_t i, std::uint64_t n) {
  return length / n * i + length % n * i / n;
}

// What the writing pass needs ahead of the step it writes, taken by a first pass over the steps
// laid out: each command's effects, each batch's SubmitEnd (only one laid out counts: a batch
// whose SubmitEnd is past the measured steps is unfinished) and each fence's batch.
struct Lookahead {
  struct Answer {
    std::uint64_t ordinal = 0;  // the SubmitEnd step
    rp::step::SubmitEnd end;
  };
  drift::CommandEffectsMap effects;
  std::map<std::uint64_t, Answer> submit_ends;         // SubmitBegin -> its SubmitEnd
  std::map<std::uint64_t, std::uint64_t> fence_batch;  // fence ordinal -> SubmitBegin

  void visit(const rp::ReplayStep& s) {
    effects.visit(s);
    if (const auto* end = std::get_if<rp::step::SubmitEnd>(&s.body)) {
      submit_ends[end->begin_seq] = Answer{s.ordinal, *end};
      if (end->fence) fence_batch[*end->fence] = end->begin_seq;
    }
  }
};

bool timed(const TimelineOptions& options, std::uint64_t k) {
  return options.measured.empty() || k < options.measured.size();
}

class Timeline {
 public:
  Timeline(const Lookahead& ahead, std::ostream& out, const TimelineOptions& options)
      : ahead_(ahead), out_(out), options_(options) {}

  void begin() {
    out_ << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
    emit({{"ph", "M"},
          {"name", "process_name"},
          {"pid", kPid},
          {"args", {{"name", "vtrace " + options_.trace_label}}}});
    track(kHostTrack, "host");
  }

  void step(const rp::ReplayStep& s) {
    if (const auto* b = std::get_if<rp::step::SubmitBegin>(&s.body)) return batch(s, *b);
    if (std::holds_alternative<rp::step::SubmitEnd>(s.body)) return;  // part of its batch
    if (const auto* r = std::get_if<rp::step::Readback>(&s.body)) return readback(s, *r);
    if (const auto* c = std::get_if<rp::step::CounterSnapshot>(&s.body)) return counters(s, *c);
    slice(kHostTrack, s.kind, start_ns(s.ordinal), length_ns(s.ordinal),
          {{"event", s.ordinal}, {"call", rp::describe_step(s)}});
    const rp::ObjectRef* fence = nullptr;
    if (const auto* w = std::get_if<rp::step::WaitFence>(&s.body)) fence = &w->fence;
    if (const auto* q = std::get_if<rp::step::QueryFence>(&s.body)) fence = &q->fence;
    if (fence != nullptr && fence->space == rp::ObjectRef::Space::kOwn) {
      auto it = ahead_.fence_batch.find(fence->ordinal);
      auto drawn = it == ahead_.fence_batch.end() ? batches_.end() : batches_.find(it->second);
      if (drawn != batches_.end()) {
        const auto& [tid, start] = drawn->second;
        flow(tid, start, kHostTrack, start_ns(s.ordinal), "fence");
      }
    }
  }

  TimelineStats end() {
    out_ << "\n]}\n";
    return stats_;
  }

 private:
  std::uint64_t start_ns(std::uint64_t k) const {
    return options_.measured.empty() ? k * 1000 : options_.measured[k].start_ns;
  }
  std::uint64_t length_ns(std::uint64_t k) const {
    return options_.measured.empty() ? 1000 : options_.measured[k].duration_ns;
  }

  void emit(const json& event) {
    out_ << (first_ ? "" : ",\n") << replayer::json_text(event);
    first_ = false;
  }
  void track(std::uint64_t tid, const std::string& name) {
    if (!tracks_.insert(tid).second) return;
    ++stats_.tracks;
    emit({{"ph", "M"},
          {"name", "thread_name"},
          {"pid", kPid},
          {"tid", tid},
          {"args", {{"name", name}}}});
  }
  void slice(std::uint64_t tid, const std::string& name, std::uint64_t start, std::uint64_t length,
             json args) {
    ++stats_.slices;
    emit({{"ph", "X"},
          {"name", name},
          {"cat", "vtrace"},
          {"pid", kPid},
          {"tid", tid},
          {"ts", us(start)},
          {"dur", us(length)},
          {"args", std::move(args)}});
  }
  void flow(std::uint64_t from_tid, std::uint64_t from, std::uint64_t to_tid, std::uint64_t to,
            const char* name) {
    const std::uint64_t id = ++stats_.flows;
    emit({{"ph", "s"},
          {"name", name},
          {"cat", "flow"},
          {"id", id},
          {"pid", kPid},
          {"tid", from_tid},
          {"ts", us(from)}});
    emit({{"ph", "f"},
          {"bp", "e"},
          {"name", name},
          {"cat", "flow"},
          {"id", id},
          {"pid", kPid},
          {"tid", to_tid},
          {"ts", us(to)}});
  }

  void batch(const rp::ReplayStep& s, const rp::step::SubmitBegin& b) {
    const std::uint64_t tid = track_of(b.stream);
    track(tid, tid == kHostTrack ? "host" : fmt::format("stream#{}", b.stream.ordinal));
    const std::uint64_t start = start_ns(s.ordinal);
    // What the submit answered: a fence (submitted), DefinitelyNotSubmitted, a rejection for
    // attribution, or nothing laid out (the trace ends inside the submit, or the measured replay
    // stopped before its end): unfinished.
    const auto answer = ahead_.submit_ends.find(s.ordinal);
    const Lookahead::Answer* ended = answer == ahead_.submit_ends.end() ? nullptr : &answer->second;
    const std::uint64_t stop =
        ended != nullptr ? saturating_add(start_ns(ended->ordinal), length_ns(ended->ordinal))
                         : saturating_add(start, length_ns(s.ordinal));
    const std::uint64_t length = stop > start ? stop - start : 0;
    ++stats_.batches;
    const bool submitted = ended != nullptr && ended->end.fence.has_value();
    const char* outcome = ended == nullptr      ? "unfinished"
                          : submitted           ? "submitted"
                          : ended->end.rejected ? "rejected"
                                                : "not submitted";
    // A foreign stream (another runtime's, on the host track) is not this runtime's stream#N.
    const bool own = b.stream.space == rp::ObjectRef::Space::kOwn;
    json batch_args = {{"event", s.ordinal},
                       {"commands", b.entries.size()},
                       {"stream", own ? json(b.stream.ordinal) : json(nullptr)},
                       {"completed", submitted},
                       {"outcome", outcome}};
    if (!own) batch_args["foreign_stream"] = b.stream.ordinal;
    if (ended != nullptr && ended->end.not_submitted) {
      batch_args["error"] = rp::outcome_text(ended->end.not_submitted);
    } else if (ended != nullptr && ended->end.rejected) {
      batch_args["error"] = "attribution unavailable";
    }
    slice(tid,
          submitted ? fmt::format("batch ({} commands)", b.entries.size())
                    : fmt::format("batch ({} commands, {})", b.entries.size(), outcome),
          start, length, std::move(batch_args));
    batches_[s.ordinal] = {tid, start};
    if (submitted) last_batch_[tid] = s.ordinal;  // a batch that never ran feeds no readback
    // The entries tile their batch: no per-command time is recorded or measured. Integer
    // boundaries, so neighbours neither overlap nor leave the batch.
    const std::uint64_t n = b.entries.size();
    for (std::uint64_t i = 0; i < n; ++i) {
      const auto& entry = b.entries[i];
      const drift::CommandEffects* e = ahead_.effects.find(entry.command);
      json args = {
          {"command", entry.command.ordinal},
          {"phase", rt::command_phase_name(entry.phase)},
          {"node_index", entry.node_index ? json(*entry.node_index) : json(nullptr)},
          {"participants", entry.logical_work ? entry.logical_work->participant_count() : 0U}};
      if (e != nullptr) {
        args["kind"] = e->kind;
        args["shapes"] = e->shapes;
        args["bytes"] = bytes_written(*e);
        args["encode_event"] = e->event;
      }
      ++stats_.commands;
      const std::uint64_t from = share(length, i, n);
      const std::uint64_t to = share(length, i + 1, n);
      slice(tid, e != nullptr ? fmt::format("{} {}", e->kind, e->shapes) : "command", start + from,
            to - from, std::move(args));
    }
  }

  void readback(const rp::ReplayStep& s, const rp::step::Readback& r) {
    const std::uint64_t tid = track_of(r.stream);
    track(tid, tid == kHostTrack ? "host" : fmt::format("stream#{}", r.stream.ordinal));
    slice(tid, "Readback", start_ns(s.ordinal), length_ns(s.ordinal),
          {{"event", s.ordinal},
           {"call", rp::describe_step(s)},
           {"bytes", r.region.length_bytes()},
           {"element_type", rt::element_type_name(r.layout.element_type())}});
    auto last = last_batch_.find(tid);
    if (tid != kHostTrack && last != last_batch_.end()) {
      flow(tid, batches_.at(last->second).second, tid, start_ns(s.ordinal), "readback");
    }
  }

  void counters(const rp::ReplayStep& s, const rp::step::CounterSnapshot& c) {
    const auto& v = c.counters;
    for (const auto& [name, value] : {std::pair{"submissions", v.submissions},
                                      {"commands", v.commands},
                                      {"allocations", v.allocations},
                                      {"live_allocations", v.live_allocations},
                                      {"uploaded_bytes", v.uploaded_bytes},
                                      {"dense_linear_launches", v.dense_linear_launches},
                                      {"readback_bytes", v.readback_bytes}}) {
      ++stats_.counters;
      emit({{"ph", "C"},
            {"name", fmt::format("counter.{}", name)},
            {"pid", kPid},
            {"ts", us(start_ns(s.ordinal))},
            {"args", {{"value", value}}}});
    }
  }

  const Lookahead& ahead_;
  std::ostream& out_;
  const TimelineOptions& options_;
  std::map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> batches_;  // begin -> track,
                                                                              // start
  std::map<std::uint64_t, std::uint64_t> last_batch_;                         // track -> begin
  std::set<std::uint64_t> tracks_;
  TimelineStats stats_;
  bool first_ = true;
};

std::expected<TimelineStats, std::string> finished(std::ostream& out, TimelineStats stats) {
  out.flush();
  if (out.fail()) return std::unexpected(std::string("writing the timeline failed"));
  return stats;
}

// Calls `visit` with each event of `reader` laid out (those measured, with `measured`), decoded
// into its step; stops early when `visit` returns false.
schema::TraceResult<void> visit_steps(schema::TraceReader& reader, const TimelineOptions& options,
                                      const std::function<void(const rp::ReplayStep&)>& visit) {
  std::optional<schema::TraceError> failure;
  auto visited = reader.visit_events(
      0, reader.event_count(), [&](std::uint64_t ordinal, std::span<const std::uint8_t> bytes) {
        if (!timed(options, ordinal)) return false;
        const fb::Event* event = schema::event_of(bytes);
        if (event->seq() != ordinal) {
          failure = schema::TraceError{schema::TraceErrorKind::kCorrupt,
                                       fmt::format("event {} ({}): has sequence number {}", ordinal,
                                                   schema::event_kind_name(*event), event->seq())};
          return false;
        }
        auto step = rp::decode_step(ordinal, *event);
        if (!step) {
          failure = step.error();
          return false;
        }
        visit(*step);
        return true;
      });
  if (!visited) return std::unexpected(visited.error());
  if (failure) return std::unexpected(*failure);
  return {};
}

}  // namespace

std::expected<TimelineStats, std::string> write_timeline(const rp::ReplayPlan& plan,
                                                         std::ostream& out,
                                                         const TimelineOptions& options) {
  Lookahead ahead;
  for (const auto& s : plan.steps()) {
    if (!timed(options, s.ordinal)) break;
    ahead.visit(s);
  }
  Timeline timeline(ahead, out, options);
  timeline.begin();
  for (const auto& s : plan.steps()) {
    if (!timed(options, s.ordinal)) break;
    timeline.step(s);
  }
  return finished(out, timeline.end());
}

struct TraceTimeline::State {
  schema::TraceReader* reader = nullptr;
  TimelineOptions options;
  Lookahead ahead;
  std::uint64_t events = 0;
};

TraceTimeline::TraceTimeline(std::unique_ptr<State> state) : state_(std::move(state)) {}
TraceTimeline::TraceTimeline(TraceTimeline&&) noexcept = default;
TraceTimeline& TraceTimeline::operator=(TraceTimeline&&) noexcept = default;
TraceTimeline::~TraceTimeline() = default;

std::expected<TraceTimeline, std::string> TraceTimeline::prepare(schema::TraceReader& reader,
                                                                 TimelineOptions options) {
  auto state = std::make_unique<State>();
  state->reader = &reader;
  state->options = std::move(options);
  auto visited = visit_steps(reader, state->options, [&](const rp::ReplayStep& s) {
    state->ahead.visit(s);
    ++state->events;
  });
  if (!visited) return std::unexpected(visited.error().message);
  return TraceTimeline(std::move(state));
}

std::uint64_t TraceTimeline::events() const { return state_->events; }

std::expected<TimelineStats, std::string> TraceTimeline::write(std::ostream& out) {
  Timeline timeline(state_->ahead, out, state_->options);
  timeline.begin();
  auto visited = visit_steps(*state_->reader, state_->options,
                             [&](const rp::ReplayStep& s) { timeline.step(s); });
  if (!visited) return std::unexpected(visited.error().message);
  return finished(out, timeline.end());
}

}  // namespace vtrace::report
