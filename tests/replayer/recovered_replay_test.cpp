// Replay of recovered traces (no footer: the recording died or the file was cut): the plan keeps
// every recovered event it can, an unfinished submit is re-executed and reported, and a payload
// the cut lost stops the plan at the event that names it.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <fstream>
#include <iterator>

#include "trace_fixtures.h"
#include "vtrace/replayer/replay_plan.h"
#include "vtrace/replayer/replay_trace.h"
#include "vtrace/runtime/registry.h"
#include "vtrace/schema/trace_reader.h"

namespace rp = vtrace::replayer;
using vtrace::test::ScratchDir;

namespace {
std::filesystem::path golden(const char* name) {
  return std::filesystem::path(VTRACE_SOURCE_DIR) / "traces" / fmt::format("{}.vtrace", name);
}
rp::ReplayReport replay(const std::filesystem::path& trace, rp::ReplayOptions options = {}) {
  auto report = rp::replay_trace(trace, {"", options}, vtrace::runtime::default_registry());
  INFO((report ? std::string() : report.error().message));
  REQUIRE(report.has_value());
  return *report;
}
}  // namespace

TEST_CASE("a recovered trace ending inside a submit replays every event and reports that submit",
          "[replayer][recovered]") {
  ScratchDir dir("replayer-recovered-submit");
  const std::uint64_t begin = vtrace::test::first_event_of_kind(golden("tiny"), "SubmitBegin");
  vtrace::test::write_cut_copy(golden("tiny"), dir / "cut.vtrace", {begin + 1, std::nullopt, false});

  auto reader = vtrace::schema::TraceReader::open(dir / "cut.vtrace");
  REQUIRE(reader.has_value());
  REQUIRE_FALSE((*reader)->complete());
  auto plan = rp::ReplayPlan::build(**reader);
  INFO((plan ? std::string() : plan.error().message));
  REQUIRE(plan.has_value());
  CHECK(plan->steps().size() == begin + 1);
  CHECK(plan->unfinished_submits() == std::vector<std::uint64_t>{begin});
  CHECK_FALSE(plan->recovery().stopped_at.has_value());
  CHECK(plan->recovery().events_recovered == begin + 1);

  const auto report = replay(dir / "cut.vtrace");
  CHECK(report.matched());
  CHECK_FALSE(report.complete);
  CHECK(report.executed == begin + 1);
  CHECK(report.unfinished_submits == std::vector<std::uint64_t>{begin});
  CHECK(report.recovery_note.find("cut.vtrace") != std::string::npos);
  CHECK(report.recovery_note.find(fmt::format("{} events", begin + 1)) != std::string::npos);
  const auto json = report.to_json();
  CHECK(json["complete"] == false);
  CHECK(json["unfinished_submits"] == nlohmann::json::array({begin}));
  CHECK(json["recovery"]["stopped_at"].is_null());
}

TEST_CASE("a recovered trace whose cut lost a payload is replayed up to the event naming it",
          "[replayer][recovered]") {
  ScratchDir dir("replayer-recovered-payload");
  const std::uint64_t upload = vtrace::test::first_event_of_kind(golden("tiny"), "EncodeUpload");
  auto reader = vtrace::schema::TraceReader::open(golden("tiny"));
  REQUIRE(reader.has_value());
  const std::uint64_t all = (*reader)->event_count();
  vtrace::test::write_cut_copy(golden("tiny"), dir / "cut.vtrace", {all, upload, false});

  const auto report = replay(dir / "cut.vtrace");
  CHECK(report.matched());
  CHECK_FALSE(report.complete);
  CHECK(report.executed == upload);
  REQUIRE(report.stopped_at.has_value());
  CHECK(*report.stopped_at == upload);
  CHECK(report.stop_reason.find(fmt::format("event {} (EncodeUpload)", upload)) !=
        std::string::npos);
  CHECK(report.to_json()["recovery"]["stopped_at"] == upload);
}

TEST_CASE("a complete trace that lacks a payload is refused naming the event and the file",
          "[replayer][recovered]") {
  ScratchDir dir("replayer-missing-payload");
  const std::uint64_t upload = vtrace::test::first_event_of_kind(golden("tiny"), "EncodeUpload");
  auto reader = vtrace::schema::TraceReader::open(golden("tiny"));
  REQUIRE(reader.has_value());
  vtrace::test::write_cut_copy(golden("tiny"), dir / "lacking.vtrace",
                               {(*reader)->event_count(), upload, true});
  auto report = rp::replay_trace(dir / "lacking.vtrace", {}, vtrace::runtime::default_registry());
  REQUIRE_FALSE(report.has_value());
  CHECK(report.error().kind == rp::ReplayFailure::Kind::kTrace);
  const auto& message = report.error().message;
  CHECK(message.find(fmt::format("event {} (EncodeUpload)", upload)) != std::string::npos);
  const std::string file = (dir / "lacking.vtrace").string();
  const auto first = message.find(file);
  CHECK(first != std::string::npos);
  CHECK(message.find(file, first + 1) == std::string::npos);
}

TEST_CASE("an event range past the recovered events of a cut trace is a usage failure",
          "[replayer][recovered]") {
  ScratchDir dir("replayer-recovered-range");
  const std::uint64_t begin = vtrace::test::first_event_of_kind(golden("tiny"), "SubmitBegin");
  vtrace::test::write_cut_copy(golden("tiny"), dir / "cut.vtrace", {begin + 1, std::nullopt, false});
  rp::ReplayOptions options;
  options.first_event = begin + 1;
  auto report =
      rp::replay_trace(dir / "cut.vtrace", {"", options}, vtrace::runtime::default_registry());
  REQUIRE_FALSE(report.has_value());
  CHECK(report.error().kind == rp::ReplayFailure::Kind::kUsage);
  CHECK(report.error().message.find(fmt::format("{} replayable recovered events", begin + 1)) !=
        std::string::npos);
}

TEST_CASE("every prefix of a golden trace replays its recovered events or is refused, never crashes",
          "[replayer][recovered]") {
  ScratchDir dir("replayer-prefixes");
  std::ifstream in(golden("tiny"), std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::uint64_t replayed = 0;
  for (std::size_t n = 0; n < bytes.size(); n += 7) {
    INFO(n);
    std::ofstream(dir / "prefix.vtrace", std::ios::binary | std::ios::trunc)
        << bytes.substr(0, n);
    auto report =
        rp::replay_trace(dir / "prefix.vtrace", {}, vtrace::runtime::default_registry());
    if (!report) {
      CHECK(report.error().kind == rp::ReplayFailure::Kind::kTrace);
      CHECK_FALSE(report.error().message.empty());
      continue;
    }
    ++replayed;
    CHECK_FALSE(report->complete);
    CHECK(report->matched());
  }
  CHECK(replayed > 0);
}
