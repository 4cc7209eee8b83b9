// Chrome trace-event JSON of a plan (timeline.h).
#include "vtrace/report/timeline.h"

#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "vtrace/drift/command_effects.h"
#include "vtrace/replayer/json_text.h"
#include "vtrace/replayer/step_text.h"

namespace vtrace::report {

namespace rp = vtrace::replayer;
namespace rt = vtrace::runtime;
using nlohmann::json;

namespace {

constexpr int kPid = 1;
constexpr std::uint64_t kHostTrack = 0;

std::uint64_t track_of(const rp::ObjectRef& stream) {
  return stream.space == rp::ObjectRef::Space::kOwn ? stream.ordinal + 1 : kHostTrack;
}

std::uint64_t bytes_written(const drift::CommandEffects& e) {
  std::uint64_t n = 0;
  for (const auto& w : e.writes) n += w.length_bytes;
  return n;
}

class Timeline {
 public:
  Timeline(const rp::ReplayPlan& plan, std::ostream& out, const TimelineOptions& options)
      : plan_(plan), out_(out), options_(options) {}

  TimelineStats run() {
    out_ << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
    emit({{"ph", "M"},
          {"name", "process_name"},
          {"pid", kPid},
          {"args", {{"name", "vtrace " + options_.trace_label}}}});
    track(kHostTrack, "host");
    for (const auto& s : plan_.steps()) {
      if (!timed(s.ordinal)) break;
      effects_.visit(s);
      if (const auto* end = std::get_if<rp::step::SubmitEnd>(&s.body); end && end->fence) {
        fence_batch_[*end->fence] = end->begin_seq;
      }
    }
    for (const auto& s : plan_.steps()) {
      if (!timed(s.ordinal)) break;
      step(s);
    }
    out_ << "\n]}\n";
    return stats_;
  }

 private:
  bool timed(std::uint64_t k) const {
    return options_.measured.empty() || k < options_.measured.size();
  }
  // Microseconds, as the format wants them.
  double ts(std::uint64_t k) const {
    return options_.measured.empty() ? static_cast<double>(k)
                                     : static_cast<double>(options_.measured[k].start_ns) / 1e3;
  }
  double dur(std::uint64_t k) const {
    return options_.measured.empty() ? 1.0
                                     : static_cast<double>(options_.measured[k].duration_ns) / 1e3;
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
  void slice(std::uint64_t tid, const std::string& name, double ts, double dur, json args) {
    ++stats_.slices;
    emit({{"ph", "X"},
          {"name", name},
          {"cat", "vtrace"},
          {"pid", kPid},
          {"tid", tid},
          {"ts", ts},
          {"dur", dur},
          {"args", std::move(args)}});
  }
  void flow(std::uint64_t from_tid, double from_ts, std::uint64_t to_tid, double to_ts,
            const char* name) {
    const std::uint64_t id = ++stats_.flows;
    emit({{"ph", "s"},
          {"name", name},
          {"cat", "flow"},
          {"id", id},
          {"pid", kPid},
          {"tid", from_tid},
          {"ts", from_ts}});
    emit({{"ph", "f"},
          {"bp", "e"},
          {"name", name},
          {"cat", "flow"},
          {"id", id},
          {"pid", kPid},
          {"tid", to_tid},
          {"ts", to_ts}});
  }

  void step(const rp::ReplayStep& s) {
    if (const auto* b = std::get_if<rp::step::SubmitBegin>(&s.body)) return batch(s, *b);
    if (std::holds_alternative<rp::step::SubmitEnd>(s.body)) return;  // part of its batch
    if (const auto* r = std::get_if<rp::step::Readback>(&s.body)) return readback(s, *r);
    if (const auto* c = std::get_if<rp::step::CounterSnapshot>(&s.body)) return counters(s, *c);
    slice(kHostTrack, s.kind, ts(s.ordinal), dur(s.ordinal),
          {{"event", s.ordinal}, {"call", rp::describe_step(s)}});
    const rp::ObjectRef* fence = nullptr;
    if (const auto* w = std::get_if<rp::step::WaitFence>(&s.body)) fence = &w->fence;
    if (const auto* q = std::get_if<rp::step::QueryFence>(&s.body)) fence = &q->fence;
    if (fence != nullptr && fence->space == rp::ObjectRef::Space::kOwn) {
      auto it = fence_batch_.find(fence->ordinal);
      if (it != fence_batch_.end()) {
        const auto& [tid, start] = batches_.at(it->second);
        flow(tid, start, kHostTrack, ts(s.ordinal), "fence");
      }
    }
  }

  void batch(const rp::ReplayStep& s, const rp::step::SubmitBegin& b) {
    const std::uint64_t tid = track_of(b.stream);
    track(tid, tid == kHostTrack ? "host" : fmt::format("stream#{}", b.stream.ordinal));
    const double start = ts(s.ordinal);
    const rp::ReplayStep* end = plan_.submit_end(s.ordinal);
    const double stop = end != nullptr && timed(end->ordinal) ? ts(end->ordinal) + dur(end->ordinal)
                                                              : start + dur(s.ordinal);
    const double length = std::max(stop - start, 0.0);
    ++stats_.batches;
    // What the submit answered: a fence (submitted), DefinitelyNotSubmitted, a rejection for
    // attribution, or nothing (the trace ends inside the submit).
    const auto* ended = end != nullptr ? std::get_if<rp::step::SubmitEnd>(&end->body) : nullptr;
    const bool submitted = ended != nullptr && ended->fence.has_value();
    const char* outcome = ended == nullptr ? "unfinished"
                          : submitted      ? "submitted"
                          : ended->rejected ? "rejected"
                                            : "not submitted";
    // A foreign stream (another runtime's, on the host track) is not this runtime's stream#N.
    const bool own = b.stream.space == rp::ObjectRef::Space::kOwn;
    json batch_args = {{"event", s.ordinal},
                       {"commands", b.entries.size()},
                       {"stream", own ? json(b.stream.ordinal) : json(nullptr)},
                       {"completed", submitted},
                       {"outcome", outcome}};
    if (!own) batch_args["foreign_stream"] = b.stream.ordinal;
    if (ended != nullptr && ended->not_submitted) {
      batch_args["error"] = rp::outcome_text(ended->not_submitted);
    } else if (ended != nullptr && ended->rejected) {
      batch_args["error"] = "attribution unavailable";
    }
    slice(tid,
          submitted ? fmt::format("batch ({} commands)", b.entries.size())
                    : fmt::format("batch ({} commands, {})", b.entries.size(), outcome),
          start, length, std::move(batch_args));
    batches_[s.ordinal] = {tid, start};
    if (submitted) last_batch_[tid] = s.ordinal;  // a batch that never ran feeds no readback
    // The entries divide their batch evenly: no per-command time is recorded or measured.
    const double each = b.entries.empty() ? 0.0 : length / static_cast<double>(b.entries.size());
    for (std::size_t i = 0; i < b.entries.size(); ++i) {
      const auto& entry = b.entries[i];
      const drift::CommandEffects* e = effects_.find(entry.command);
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
      slice(tid, e != nullptr ? fmt::format("{} {}", e->kind, e->shapes) : "command",
            start + each * static_cast<double>(i), each, std::move(args));
    }
  }

  void readback(const rp::ReplayStep& s, const rp::step::Readback& r) {
    const std::uint64_t tid = track_of(r.stream);
    track(tid, tid == kHostTrack ? "host" : fmt::format("stream#{}", r.stream.ordinal));
    slice(tid, "Readback", ts(s.ordinal), dur(s.ordinal),
          {{"event", s.ordinal},
           {"call", rp::describe_step(s)},
           {"bytes", r.region.length_bytes()},
           {"element_type", rt::element_type_name(r.layout.element_type())}});
    auto last = last_batch_.find(tid);
    if (tid != kHostTrack && last != last_batch_.end()) {
      flow(tid, batches_.at(last->second).second, tid, ts(s.ordinal), "readback");
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
            {"ts", ts(s.ordinal)},
            {"args", {{"value", value}}}});
    }
  }

  const rp::ReplayPlan& plan_;
  std::ostream& out_;
  const TimelineOptions& options_;
  drift::CommandEffectsMap effects_;
  std::map<std::uint64_t, std::uint64_t> fence_batch_;  // fence ordinal -> SubmitBegin
  std::map<std::uint64_t, std::pair<std::uint64_t, double>> batches_;  // begin -> track, start
  std::map<std::uint64_t, std::uint64_t> last_batch_;                  // track -> begin
  std::set<std::uint64_t> tracks_;
  TimelineStats stats_;
  bool first_ = true;
};

}  // namespace

std::expected<TimelineStats, std::string> write_timeline(const rp::ReplayPlan& plan,
                                                         std::ostream& out,
                                                         const TimelineOptions& options) {
  auto stats = Timeline(plan, out, options).run();
  out.flush();
  if (out.fail()) return std::unexpected(std::string("writing the timeline failed"));
  return stats;
}

}  // namespace vtrace::report
