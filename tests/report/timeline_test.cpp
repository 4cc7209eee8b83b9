// The timeline (vtrace/report/timeline.h) of golden traces: valid trace-event JSON with a track per
// stream, a slice per batch holding one slice per command, flows from each batch to its fence's
// waits and to the readbacks of its stream, a counter track per counter; the measured layout; a
// stream that fails.
#include "vtrace/report/timeline.h"

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "vtrace/replayer/replay_trace.h"

namespace rp = vtrace::replayer;
namespace rep = vtrace::report;
using nlohmann::json;

namespace {

rp::ReplayPlan plan_of(const char* name) {
  auto plan = rp::open_plan(std::filesystem::path(VTRACE_SOURCE_DIR) / "traces" / name);
  REQUIRE(plan.has_value());
  return std::move(*plan);
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

}  // namespace

TEST_CASE("a timeline has a track per stream, batches holding their commands, flows and counters",
          "[report]") {
  for (const char* name : {"decode-short-v1.2.vtrace", "contract-v1.2.vtrace", "tiny.vtrace"}) {
    INFO(name);
    const auto plan = plan_of(name);
    std::uint64_t submits = 0, entries = 0, snapshots = 0, readbacks = 0, after_batch = 0;
    std::set<std::uint64_t> streams, ran_on;  // streams with a batch; with a submitted batch
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
    CHECK(tracks.at(0) == "host");
    for (const auto s : streams) CHECK(tracks.at(s + 1) == fmt::format("stream#{}", s));
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

TEST_CASE("a timeline written to a stream that fails says so", "[report]") {
  const auto plan = plan_of("tiny.vtrace");
  std::ostringstream out;
  out.setstate(std::ios::badbit);
  auto written = rep::write_timeline(plan, out, {});
  REQUIRE_FALSE(written.has_value());
  CHECK(written.error() == "writing the timeline failed");
}
