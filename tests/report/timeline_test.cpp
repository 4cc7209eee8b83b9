// The timeline (vtrace/report/timeline.h) of golden traces: valid trace-event JSON with a track per
// stream, a slice per batch holding one slice per command, flows from each batch to its fence's
// waits and to the readbacks of its stream, a counter track per counter; the measured layout;
// whole-nanosecond times with command slices that tile their batch; a measured replay cut inside
// a submit; the timeline read from the file (TraceTimeline), which needs no payload; a stream
// that fails.
#include "vtrace/report/timeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "trace_fixtures.h"
#include "vtrace/replayer/replay_trace.h"
#include "vtrace/schema/trace_reader.h"

namespace rp = vtrace::replayer;
namespace rep = vtrace::report;
using nlohmann::json;

namespace {

rp::ReplayPlan plan_of(const char* name) {
  auto plan = rp::open_plan(std::filesystem::path(VTRACE_SOURCE_DIR) / "traces" / name);
  REQUIRE(plan.has_value());
  return std::move(*plan);
}

std::filesystem::path golden(const std::string& name) {
  return std::filesystem::path(VTRACE_SOURCE_DIR) / "traces" / name;
}

// Every golden trace, in name order.
std::vector<std::string> golden_traces() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(golden(""))) {
    if (entry.path().extension() == ".vtrace") names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  REQUIRE(names.size() >= 10);
  return names;
}

// The timeline TraceTimeline reads from the file, as text.
std::string file_timeline_text(const std::filesystem::path& trace,
                               const rep::TimelineOptions& options) {
  auto reader = vtrace::schema::TraceReader::open(trace);
  REQUIRE(reader.has_value());
  auto prepared = rep::TraceTimeline::prepare(**reader, options);
  INFO((prepared ? std::string() : prepared.error()));
  REQUIRE(prepared.has_value());
  std::ostringstream out;
  auto written = prepared->write(out);
  REQUIRE(written.has_value());
  return out.str();
}

json timeline(const rp::ReplayPlan& plan, const rep::TimelineOptions& options,
              rep::TimelineStats* stats = nullptr) {
  std::ostringstream out;
  auto written = rep::write_timeline(plan, out, options);
  REQUIRE(written.has_value());
  if (stats != nullptr) *stats = *written;
  return json::parse(out.str());
}

std::vector<json> of_phase(const json& t, const char* ph) {
  std::vector<json> out;
  for (const auto& e : t["traceEvents"]) {
    if (e["ph"] == ph) out.push_back(e);
  }
  return out;
}

// A time of the file ("ts", "dur", microseconds) as integer nanoseconds, as Perfetto reads it;
// CHECKs that it is a whole number of nanoseconds, so that reading is exact.
std::int64_t ns(const json& value) {
  const double us = value.get<double>();
  const auto n = std::llround(us * 1000.0);
  CHECK(std::abs(us * 1000.0 - static_cast<double>(n)) < 1e-6);
  return n;
}

// The layout rules every timeline keeps (timeline.h): whole nanoseconds everywhere; on each track
// the slices nest properly (a slice that starts inside another ends inside it); each batch's
// command slices follow it in the file and tile it: the first starts where the batch starts, each
// next one where the previous one ends, the last ends where the batch ends.
void check_layout(const json& t) {
  struct Slice {
    std::int64_t start = 0, end = 0;
    bool command = false;
    std::string name;
  };
  std::map<std::uint64_t, std::vector<Slice>> tracks;
  std::optional<Slice> batch;
  std::uint64_t expected = 0, seen = 0;
  std::int64_t next = 0;
  auto close_batch = [&] {
    if (!batch) return;
    INFO(batch->name);
    CHECK(seen == expected);
    if (expected > 0) CHECK(next == batch->end);
    batch.reset();
  };
  for (const auto& e : t["traceEvents"]) {
    if (e.contains("ts")) ns(e["ts"]);
    if (e["ph"] != "X") continue;
    const Slice s{ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), e["args"].contains("command"),
                  e["name"].get<std::string>()};
    tracks[e["tid"].get<std::uint64_t>()].push_back(s);
    if (s.command) {
      REQUIRE(batch.has_value());
      INFO(batch->name << " > " << s.name);
      CHECK(s.start == next);  // no gap, no overlap with the previous command
      next = s.end;
      ++seen;
      continue;
    }
    close_batch();
    if (s.name.starts_with("batch (")) {
      batch = s;
      expected = e["args"]["commands"].get<std::uint64_t>();
      seen = 0;
      next = s.start;
    }
  }
  close_batch();
  for (auto& [tid, slices] : tracks) {
    // A batch before its first command (same start, longer or as long).
    std::stable_sort(slices.begin(), slices.end(), [](const Slice& a, const Slice& b) {
      if (a.start != b.start) return a.start < b.start;
      if (a.end != b.end) return a.end > b.end;
      return !a.command && b.command;
    });
    std::vector<const Slice*> open;
    for (const auto& s : slices) {
      while (!open.empty() && open.back()->end <= s.start) open.pop_back();
      INFO("track " << tid << ": " << s.name << " [" << s.start << ", " << s.end << ")");
      CHECK(s.start <= s.end);
      if (!open.empty()) CHECK(s.end <= open.back()->end);
      open.push_back(&s);
    }
  }
}

// Irregular measured times for every step of `plan`: odd durations and gaps, the way a replay's
// steady clock gives them (deterministic).
std::vector<rep::StepTime> irregular_times(std::size_t steps) {
  std::vector<rep::StepTime> times;
  std::uint64_t state = 12345, at = 7;
  for (std::size_t k = 0; k < steps; ++k) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    const std::uint64_t duration = 1 + (state >> 33) % 99991;
    times.push_back({at, duration});
    at += duration + (state >> 20) % 7;
  }
  return times;
}

}  // namespace

TEST_CASE("a timeline has a track per stream, batches holding their commands, flows and counters",
          "[report]") {
  for (const char* name : {"decode-short-v1.2.vtrace", "contract-v1.2.vtrace", "tiny.vtrace"}) {
    INFO(name);
    const auto plan = plan_of(name);
    std::uint64_t submits = 0, entries = 0, snapshots = 0, readbacks = 0, after_batch = 0;
    std::set<std::uint64_t> streams, ran_on;       // streams with a batch; with a submitted batch
    std::map<std::uint64_t, std::string> outcome;  // SubmitBegin event -> what its submit said
    std::set<std::uint64_t> foreign;               // SubmitBegin events on a foreign stream
    for (const auto& s : plan.steps()) {
      if (const auto* b = std::get_if<rp::step::SubmitBegin>(&s.body)) {
        ++submits;
        entries += b->entries.size();
        streams.insert(b->stream.ordinal);
        const auto* end = plan.submit_end(s.ordinal);
        const auto& e = std::get<rp::step::SubmitEnd>(end->body);
        outcome[s.ordinal] = e.fence ? "submitted" : e.rejected ? "rejected" : "not submitted";
        if (b->stream.space != rp::ObjectRef::Space::kOwn) foreign.insert(s.ordinal);
        if (e.fence) ran_on.insert(b->stream.ordinal);
      }
      if (std::holds_alternative<rp::step::CounterSnapshot>(s.body)) ++snapshots;
      if (const auto* r = std::get_if<rp::step::Readback>(&s.body)) {
        ++readbacks;
        // A readback on an own stream some batch ran on before it.
        if (r->stream.space == rp::ObjectRef::Space::kOwn && ran_on.count(r->stream.ordinal)) {
          ++after_batch;
        }
      }
    }
    rep::TimelineStats stats;
    rep::TimelineOptions options;
    options.trace_label = name;
    const json t = timeline(plan, options, &stats);
    CHECK(t["displayTimeUnit"] == "ns");
    // Tracks: "host" and one per stream a batch ran on.
    std::map<std::uint64_t, std::string> tracks;
    for (const auto& m : of_phase(t, "M")) {
      if (m["name"] == "thread_name") tracks[m["tid"]] = m["args"]["name"];
      if (m["name"] == "process_name") CHECK(m["args"]["name"] == fmt::format("vtrace {}", name));
    }
    // Thread ids start at 1 (Perfetto UI versions before mid-2025 merged a thread 0 into 1).
    CHECK(tracks.at(1) == "host");
    for (const auto s : streams) CHECK(tracks.at(s + 2) == fmt::format("stream#{}", s));
    for (const auto& e : t["traceEvents"]) {
      if (e.contains("tid")) CHECK(e["tid"].get<std::uint64_t>() >= 1);
    }
    // Batches and their commands: every command inside its batch, on its track.
    std::vector<json> batches, commands, reads;
    for (const auto& x : of_phase(t, "X")) {
      const std::string n = x["name"];
      if (n.starts_with("batch (")) batches.push_back(x);
      if (x["args"].contains("command")) commands.push_back(x);
      if (n == "Readback") reads.push_back(x);
    }
    CHECK(batches.size() == submits);
    CHECK(stats.batches == submits);
    // Each batch says what its submit answered; one that was not submitted says why, in its name
    // and its args (the contract traces hold such submits).
    std::uint64_t not_submitted = 0;
    for (const auto& b : batches) {
      const std::string want = outcome.at(b["args"]["event"].get<std::uint64_t>());
      CHECK(b["args"]["outcome"] == want);
      CHECK(b["args"]["completed"] == (want == "submitted"));
      CHECK(b["args"].contains("error") == (want != "submitted"));
      CHECK((std::string(b["name"]).find(want) != std::string::npos) == (want != "submitted"));
      not_submitted += want == "submitted" ? 0U : 1U;
      // A batch on another runtime's stream names no stream#N of this one.
      const bool on_foreign = foreign.count(b["args"]["event"].get<std::uint64_t>()) == 1;
      CHECK(b["args"]["stream"].is_null() == on_foreign);
      CHECK(b["args"].contains("foreign_stream") == on_foreign);
    }
    if (std::string(name).starts_with("contract")) CHECK_FALSE(foreign.empty());
    if (std::string(name).starts_with("contract")) CHECK(not_submitted > 0);
    CHECK(commands.size() == entries);
    CHECK(reads.size() == readbacks);
    for (const auto& c : commands) {
      const double ts = c["ts"];
      const bool inside = std::any_of(batches.begin(), batches.end(), [&](const json& b) {
        const double start = b["ts"], dur = b["dur"];
        return b["tid"] == c["tid"] && ts >= start && ts + double(c["dur"]) <= start + dur + 1e-9;
      });
      CHECK(inside);
      CHECK(c["args"].contains("phase"));
      CHECK(c["args"].contains("node_index"));
      CHECK(c["args"].contains("participants"));
    }
    if (std::string(name).starts_with("decode")) {
      bool dense = false;
      for (const auto& c : commands) {
        if (c["args"].value("kind", "") == "EncodeDenseLinear") {
          dense = true;
          CHECK(c["args"]["bytes"] > 0);
          CHECK(std::string(c["args"]["shapes"]).find('x') != std::string::npos);
        }
      }
      CHECK(dense);
    }
    // Flows: pairs with one id, starting on a batch's track at its start.
    const auto starts = of_phase(t, "s");
    const auto finishes = of_phase(t, "f");
    CHECK(starts.size() == finishes.size());
    CHECK(starts.size() == stats.flows);
    CHECK(stats.flows > 0);
    std::set<std::uint64_t> ids;
    for (const auto& s : starts) {
      ids.insert(s["id"].get<std::uint64_t>());
      const bool at_batch = std::any_of(batches.begin(), batches.end(), [&](const json& b) {
        return b["tid"] == s["tid"] && b["ts"] == s["ts"];
      });
      CHECK(at_batch);
    }
    for (const auto& f : finishes) {
      CHECK(ids.count(f["id"].get<std::uint64_t>()) == 1);
      CHECK(f["bp"] == "e");
    }
    // Every readback on a stream a batch ran on before it has its flow.
    std::uint64_t readback_flows = 0;
    for (const auto& s : starts) readback_flows += s["name"] == "readback" ? 1U : 0U;
    CHECK(readback_flows == after_batch);
    CHECK(after_batch > 0);
    // Counters: seven per snapshot, each its own track.
    const auto counters = of_phase(t, "C");
    CHECK(counters.size() == 7 * snapshots);
    std::set<std::string> names;
    for (const auto& c : counters) names.insert(c["name"]);
    if (snapshots > 0) CHECK(names.count("counter.submissions") == 1);
  }
}

TEST_CASE("a measured timeline puts every step where the replay ran it", "[report]") {
  const auto plan = plan_of("tiny.vtrace");
  rep::TimelineOptions options;
  // Step k started at 1000k + 7 ns and took 500 ns; the last step was not reached.
  for (std::size_t k = 0; k + 1 < plan.steps().size(); ++k) {
    options.measured.push_back({1000 * k + 7, 500});
  }
  const json t = timeline(plan, options);
  std::uint64_t slices = 0;
  for (const auto& x : of_phase(t, "X")) {
    const std::uint64_t event = x["args"].value("event", std::uint64_t{0});
    if (x["args"].contains("command")) continue;  // inside its batch
    ++slices;
    REQUIRE(event < options.measured.size());
    CHECK(double(x["ts"]) == Approx(static_cast<double>(1000 * event + 7) / 1e3));
    if (!std::string(x["name"]).starts_with("batch (")) CHECK(double(x["dur"]) == Approx(0.5));
  }
  CHECK(slices > 0);
  for (const auto& x : of_phase(t, "X")) {
    if (!x["args"].contains("event")) continue;
    CHECK(x["args"]["event"] < plan.steps().size() - 1);  // the step not reached is left out
  }
}

TEST_CASE(
    "every golden trace's timeline is in whole nanoseconds, properly nested, each batch tiled by "
    "its commands, in event order and measured",
    "[report]") {
  for (const auto& name : golden_traces()) {
    INFO(name);
    auto plan = rp::open_plan(golden(name));
    REQUIRE(plan.has_value());
    rep::TimelineOptions options;
    options.trace_label = name;
    check_layout(timeline(*plan, options));
    // A profile: measured times that are no multiple of anything.
    options.measured = irregular_times(plan->steps().size());
    check_layout(timeline(*plan, options));
  }
}

TEST_CASE("a measured replay that stopped inside a submit draws that batch unfinished",
          "[report]") {
  // tiny: SubmitBegin at event 12, SubmitEnd at 13 (submitted, fence 0, waited at 15).
  const auto plan = plan_of("tiny.vtrace");
  REQUIRE(std::holds_alternative<rp::step::SubmitBegin>(plan.steps().at(12).body));
  REQUIRE(std::holds_alternative<rp::step::SubmitEnd>(plan.steps().at(13).body));
  rep::TimelineOptions options;
  options.measured = irregular_times(13);  // `replay --profile --events 0:13`: 0 to 12 ran
  for (const bool from_file : {false, true}) {
    INFO((from_file ? "TraceTimeline" : "write_timeline"));
    const json t = from_file ? json::parse(file_timeline_text(golden("tiny.vtrace"), options))
                             : timeline(plan, options);
    std::vector<json> batches;
    for (const auto& x : of_phase(t, "X")) {
      if (std::string(x["name"]).starts_with("batch (")) batches.push_back(x);
    }
    REQUIRE(batches.size() == 1);
    const auto& b = batches.front();
    CHECK(b["args"]["event"] == 12);
    CHECK(b["args"]["outcome"] == "unfinished");
    CHECK(b["args"]["completed"] == false);
    CHECK_FALSE(b["args"].contains("error"));
    CHECK(b["name"] == "batch (2 commands, unfinished)");
    // As long as its SubmitBegin step took: nothing after it was measured.
    CHECK(ns(b["dur"]) == static_cast<std::int64_t>(options.measured[12].duration_ns));
    check_layout(t);
  }
}

TEST_CASE("the timeline read from the file is the plan's byte for byte, and reads no payload",
          "[report]") {
  for (const auto& name : golden_traces()) {
    INFO(name);
    auto plan = rp::open_plan(golden(name));
    REQUIRE(plan.has_value());
    rep::TimelineOptions options;
    options.trace_label = name;
    std::ostringstream from_plan;
    REQUIRE(rep::write_timeline(*plan, from_plan, options).has_value());
    CHECK(file_timeline_text(golden(name), options) == from_plan.str());
    options.measured = irregular_times(plan->steps().size() / 2);
    std::ostringstream measured;
    REQUIRE(rep::write_timeline(*plan, measured, options).has_value());
    CHECK(file_timeline_text(golden(name), options) == measured.str());
  }
  // A complete trace that lacks the payload of its first upload: no plan can be built (replay
  // needs that payload), but the timeline needs none, so it is written all the same.
  vtrace::test::ScratchDir dir("timeline-no-payload");
  const auto lacking = dir / "lacking.vtrace";
  vtrace::test::CutCopyOptions cut;
  cut.events = 30;
  cut.drop_payload_of = vtrace::test::first_event_of_kind(golden("tiny.vtrace"), "EncodeUpload");
  cut.keep_footer = true;
  vtrace::test::write_cut_copy(golden("tiny.vtrace"), lacking, cut);
  REQUIRE_FALSE(rp::open_plan(lacking).has_value());
  rep::TimelineOptions options;
  options.trace_label = "tiny.vtrace";
  std::ostringstream whole;
  REQUIRE(rep::write_timeline(plan_of("tiny.vtrace"), whole, options).has_value());
  CHECK(file_timeline_text(lacking, options) == whole.str());
}

TEST_CASE("a trace whose event does not decode is refused before any timeline is written",
          "[report]") {
  vtrace::test::ScratchDir dir("timeline-unknown");
  const auto trace = dir / "unknown.vtrace";
  const auto unknown = vtrace::test::write_tiny_with_unknown_event(trace, true);
  auto reader = vtrace::schema::TraceReader::open(trace);
  REQUIRE(reader.has_value());
  auto prepared = rep::TraceTimeline::prepare(**reader, {});
  REQUIRE_FALSE(prepared.has_value());
  CHECK_THAT(prepared.error(), Catch::Contains(fmt::format("event {}", unknown)));
}

TEST_CASE("a timeline written to a stream that fails says so", "[report]") {
  const auto plan = plan_of("tiny.vtrace");
  std::ostringstream out;
  out.setstate(std::ios::badbit);
  auto written = rep::write_timeline(plan, out, {});
  REQUIRE_FALSE(written.has_value());
  CHECK(written.error() == "writing the timeline failed");
  auto reader = vtrace::schema::TraceReader::open(golden("tiny.vtrace"));
  REQUIRE(reader.has_value());
  auto prepared = rep::TraceTimeline::prepare(**reader, {});
  REQUIRE(prepared.has_value());
  std::ostringstream bad;
  bad.setstate(std::ios::badbit);
  auto failed = prepared->write(bad);
  REQUIRE_FALSE(failed.has_value());
  CHECK(failed.error() == "writing the timeline failed");
}
