// The report files of the `vtrace` executable: `export -o /dev/stdout` (one JSON document on
// stdout, the summary line on stderr), every other report written to standard output (the text
// report on stderr), export reading no payload, the layout of a real
// `replay --profile` (whole nanoseconds, commands tiling their batch), a profile cut inside a
// submit, and `compare --html` of a cut trace (its verdict qualified as the text's).
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "run_vtrace.h"
#include "trace_fixtures.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using vtrace::test::golden;
using vtrace::test::run_shell;
using vtrace::test::run_vtrace;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A time of the file (microseconds) as integer nanoseconds; CHECKs that it is a whole number.
std::int64_t ns(const json& value) {
  const double us = value.get<double>();
  const auto n = std::llround(us * 1000.0);
  CHECK(std::abs(us * 1000.0 - static_cast<double>(n)) < 1e-6);
  return n;
}

// Each batch's command slices (they follow it in the file) tile it: no gap, no overlap, none
// outside it. Returns how many batches had commands.
std::size_t check_tiling(const json& t) {
  std::size_t tiled = 0;
  const auto& events = t["traceEvents"];
  for (std::size_t i = 0; i < events.size(); ++i) {
    const auto& b = events[i];
    if (b["ph"] != "X" || !std::string(b["name"]).starts_with("batch (")) continue;
    const std::int64_t start = ns(b["ts"]), end = start + ns(b["dur"]);
    std::int64_t next = start;
    std::uint64_t commands = 0;
    for (std::size_t j = i + 1;
         j < events.size() && events[j]["ph"] == "X" && events[j]["args"].contains("command");
         ++j, ++commands) {
      INFO(b["name"] << " > " << events[j]["name"]);
      CHECK(ns(events[j]["ts"]) == next);
      next = ns(events[j]["ts"]) + ns(events[j]["dur"]);
    }
    CHECK(commands == b["args"]["commands"].get<std::uint64_t>());
    if (commands > 0) {
      CHECK(next == end);
      ++tiled;
    }
  }
  return tiled;
}

}  // namespace

TEST_CASE(
    "vtrace export -o /dev/stdout writes one JSON document on stdout and its summary on stderr",
    "[cli]") {
  vtrace::test::ScratchDir dir("cli-report-stdout");
  const auto err = (dir / "err.txt").string();
  const auto run = run_shell(
      fmt::format("{{ {} export {} -o /dev/stdout 2>{}; }}", VTRACE_CLI_PATH, golden("tiny"), err));
  CHECK(run.code == 0);
  INFO(run.output);
  REQUIRE(json::accept(run.output));
  CHECK(json::parse(run.output)["traceEvents"].size() > 0);
  CHECK_THAT(read_file(err), Catch::StartsWith("timeline: /dev/stdout (laid out by event order; "));
  // Standard output redirected to the file -o names: the file holds the JSON alone.
  const auto same = (dir / "t.json").string();
  const auto redirected = run_shell(fmt::format("{{ {} export {} -o {} >{} 2>{}; }}",
                                                VTRACE_CLI_PATH, golden("tiny"), same, same, err));
  CHECK(redirected.code == 0);
  CHECK(json::accept(read_file(same)));
  CHECK_THAT(read_file(err), Catch::StartsWith("timeline: " + same));
  // Another file: the line is on stdout, as for every other report.
  const auto other = (dir / "o.json").string();
  const auto plain = run_shell(
      fmt::format("{{ {} export {} -o {} 2>{}; }}", VTRACE_CLI_PATH, golden("tiny"), other, err));
  CHECK_THAT(plain.output, Catch::StartsWith("timeline: " + other));
  CHECK(read_file(err).empty());
  // --quiet: no line at all.
  const auto quiet = run_shell(fmt::format("{{ {} --quiet export {} -o /dev/stdout 2>{}; }}",
                                           VTRACE_CLI_PATH, golden("tiny"), err));
  CHECK(json::accept(quiet.output));
  CHECK(read_file(err).empty());
}

TEST_CASE(
    "a report written to standard output is all that stdout carries, the text going to stderr",
    "[cli]") {
  vtrace::test::ScratchDir dir("cli-report-stdout-any");
  const auto err = (dir / "err.txt").string();
  struct Case {
    std::string arguments;
    std::string said;  // a line of the text report, on stderr
    bool html = false;
  };
  const std::vector<Case> cases = {
      {fmt::format("replay {} --json /dev/stdout", golden("tiny")), "verdict: match"},
      {fmt::format("compare {} --runtimes reference,cpu --json /dev/stdout", golden("tiny")),
       "verdict: match"},
      {fmt::format("compare {} --runtimes reference,cpu --html /dev/fd/1", golden("tiny")),
       "verdict: match", true},
      {fmt::format("diff {} {} --json /dev/stdout", golden("tiny"), golden("tiny-v1.2")),
       "verdict: "},
      {fmt::format("repair {} -o {} --json /dev/stdout", golden("tiny"),
                   (dir / "r.vtrace").string()),
       "nothing to repair"},
  };
  for (const auto& c : cases) {
    INFO(c.arguments);
    const auto run =
        run_shell(fmt::format("{{ {} {} 2>{}; }}", VTRACE_CLI_PATH, c.arguments, err));
    INFO(run.output);
    CHECK((run.code == 0 || run.code == 1));
    if (c.html) {
      CHECK(run.output.starts_with("<!DOCTYPE html>"));
    } else {
      CHECK(json::accept(run.output));
    }
    CHECK_THAT(read_file(err), Catch::Contains(c.said));
  }
  // Standard output redirected to the file --json names: the file holds the JSON alone.
  const auto same = (dir / "r.json").string();
  const auto redirected = run_shell(fmt::format("{{ {} replay {} --json {} >{} 2>{}; }}",
                                                VTRACE_CLI_PATH, golden("tiny"), same, same, err));
  CHECK(redirected.code == 0);
  CHECK(json::accept(read_file(same)));
  CHECK_THAT(read_file(err), Catch::Contains("verdict: match"));
}

TEST_CASE("vtrace export reads no payload: a trace that lacks one is exported all the same",
          "[cli]") {
  vtrace::test::ScratchDir dir("cli-report-payload");
  const auto lacking = dir / "lacking.vtrace";
  vtrace::test::CutCopyOptions cut;
  cut.events = 30;
  cut.drop_payload_of = vtrace::test::first_event_of_kind(golden("tiny"), "EncodeUpload");
  cut.keep_footer = true;
  vtrace::test::write_cut_copy(golden("tiny"), lacking, cut);
  // Replay needs the payload, and refuses the trace.
  CHECK(run_vtrace(fmt::format("replay {}", lacking.string())).code == 2);
  const auto out = (dir / "t.json").string();
  const auto whole = (dir / "w.json").string();
  const auto run = run_vtrace(fmt::format("export {} -o {}", lacking.string(), out));
  INFO(run.output);
  CHECK(run.code == 0);
  REQUIRE(run_vtrace(fmt::format("export {} -o {}", golden("tiny"), whole)).code == 0);
  auto a = json::parse(read_file(out))["traceEvents"];
  auto b = json::parse(read_file(whole))["traceEvents"];
  a.erase(0);  // the process names differ: they are the traces' paths
  b.erase(0);
  CHECK(a == b);
}

TEST_CASE("vtrace replay --profile lays each batch's commands out in whole nanoseconds, tiled",
          "[cli]") {
  vtrace::test::ScratchDir dir("cli-report-profile");
  const auto profile = (dir / "p.json").string();
  for (const char* trace : {"decode-short", "contract"}) {
    INFO(trace);
    const auto run =
        run_vtrace(fmt::format("replay {} --runtime cpu --profile {}", golden(trace), profile));
    INFO(run.output);
    REQUIRE(run.code == 0);
    CHECK(check_tiling(json::parse(read_file(profile))) > 0);
    const auto exported = run_vtrace(fmt::format("export {} -o {}", golden(trace), profile));
    REQUIRE(exported.code == 0);
    CHECK(check_tiling(json::parse(read_file(profile))) > 0);
  }
}

TEST_CASE("vtrace replay --profile --events that stops inside a submit draws it unfinished",
          "[cli]") {
  // tiny: SubmitBegin at event 12, its SubmitEnd at 13.
  vtrace::test::ScratchDir dir("cli-report-profile-cut");
  const auto profile = (dir / "p.json").string();
  const auto run =
      run_vtrace(fmt::format("replay {} --events 0:13 --profile {}", golden("tiny"), profile));
  INFO(run.output);
  REQUIRE(run.code == 0);
  std::size_t batches = 0;
  const json t = json::parse(read_file(profile));
  for (const auto& e : t["traceEvents"]) {
    if (e["ph"] != "X" || !std::string(e["name"]).starts_with("batch (")) continue;
    ++batches;
    CHECK(e["args"]["event"] == 12);
    CHECK(e["args"]["outcome"] == "unfinished");
    CHECK(e["args"]["completed"] == false);
  }
  CHECK(batches == 1);
}

TEST_CASE("vtrace compare --html of a cut trace qualifies the verdict as the text does", "[cli]") {
  vtrace::test::ScratchDir dir("cli-report-html-cut");
  const auto cut = dir / "cut.vtrace";
  vtrace::test::CutCopyOptions thirteen;
  thirteen.events = 13;  // tiny up to its first SubmitBegin: no footer, no SubmitEnd
  vtrace::test::write_cut_copy(golden("tiny"), cut, thirteen);
  const auto html = dir / "r.html";
  const auto run = run_vtrace(
      fmt::format("compare {} --runtimes reference,cpu --html {}", cut.string(), html.string()));
  INFO(run.output);
  CHECK(run.code == 0);
  const std::string qualified = "match (incomplete trace: 13 recovered events compared)";
  CHECK_THAT(run.output, Catch::Contains("verdict: " + qualified));
  const std::string page = read_file(html);
  CHECK_THAT(page, Catch::Contains("<b class=\"verdict-match\">match</b> (incomplete trace: 13 "
                                   "recovered events compared)"));
  CHECK_THAT(page, Catch::Contains("<th>recovered</th>"));
  CHECK_THAT(page, Catch::Contains("<th>unfinished submits</th><td>SubmitBegin at event 12"));
}
