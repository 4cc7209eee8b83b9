// Smoke tests of the `vtrace` executable: real output content and documented exit codes.
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <tuple>
#include <nlohmann/json.hpp>
#include <sstream>

#include "run_vtrace.h"
#include "trace_fixtures.h"

namespace {
using vtrace::test::golden;
using vtrace::test::run_vtrace;

// The first half of decode-short's bytes, written to DIR/cut.vtrace (a trace cut mid-frame: no
// footer); answers its path.
std::string half_of_decode_short(const vtrace::test::ScratchDir& dir) {
  std::ifstream in(golden("decode-short"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto cut = dir / "cut.vtrace";
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  return cut.string();
}
}  // namespace

TEST_CASE("vtrace record then replay of the tiny workload matches and exits 0", "[cli]") {
  vtrace::test::ScratchDir dir("cli-record");
  const auto trace = (dir / "tiny.vtrace").string();
  auto record = run_vtrace(fmt::format("record --workload tiny -o {}", trace));
  INFO(record.output);
  REQUIRE(record.code == 0);
  CHECK(record.output.find("recorded tiny on reference") != std::string::npos);
  auto replay = run_vtrace(fmt::format("replay {} --json {}", trace, (dir / "r.json").string()));
  INFO(replay.output);
  CHECK(replay.code == 0);
  CHECK(replay.output.find("verdict: match") != std::string::npos);
  std::ifstream in(dir / "r.json");
  const auto report = nlohmann::json::parse(in);
  for (const char* key : {"trace", "runtime", "events", "checked", "mismatches", "first_mismatch",
                          "verdict"}) {
    CHECK(report.contains(key));
  }
  for (const char* key : {"calls", "readbacks", "readback_bytes", "attribution_rows", "fences",
                          "counter_snapshots"}) {
    CHECK(report["checked"].contains(key));
  }
  CHECK(report["verdict"] == "match");
  CHECK(report["first_mismatch"].is_null());
  CHECK(report["checked"]["readbacks"] == 1);
}

TEST_CASE("vtrace replay exits 1 on an altered readback and names the event", "[cli]") {
  vtrace::test::ScratchDir dir("cli-altered");
  vtrace::test::record_workload(vtrace::test::small_decode_spec(), dir / "decode.vtrace");
  const auto altered = vtrace::test::rewrite_with_altered_readback(
      dir / "decode.vtrace", dir / "altered.vtrace",
      [](std::uint16_t v) { return static_cast<std::uint16_t>(v ^ 0x0400); }, 2);
  auto run = run_vtrace(fmt::format("replay {}", (dir / "altered.vtrace").string()));
  INFO(run.output);
  CHECK(run.code == 1);
  CHECK(run.output.find(fmt::format("MISMATCH at event {}: readback(", altered.event)) !=
        std::string::npos);
  CHECK(run.output.find(fmt::format("--events {}:{}", altered.event, altered.event + 1)) !=
        std::string::npos);
  CHECK(run.output.find("verdict: mismatch (1 mismatches)") != std::string::npos);
  auto outside = run_vtrace(fmt::format("replay {} --events 0:{}", (dir / "altered.vtrace").string(),
                                    altered.event));
  CHECK(outside.code == 0);
}

TEST_CASE("vtrace replay of an unreadable trace exits 2 naming the file", "[cli]") {
  vtrace::test::ScratchDir dir("cli-unreadable");
  std::ofstream(dir / "junk.vtrace") << "not a trace at all";
  auto run = run_vtrace(fmt::format("replay {}", (dir / "junk.vtrace").string()));
  CHECK(run.code == 2);
  CHECK(run.output.find("junk.vtrace") != std::string::npos);
  CHECK(run_vtrace(fmt::format("replay {}", (dir / "absent.vtrace").string())).code == 2);
  CHECK(run_vtrace(fmt::format("replay {} --check fuzzy", golden("tiny"))).code == 2);
  CHECK(run_vtrace(fmt::format("replay {} --events 9:3", golden("tiny"))).code == 2);
  CHECK(run_vtrace(fmt::format("replay {} --events 100000:", golden("tiny"))).code == 2);
  CHECK(run_vtrace("replay").code == 2);
}

TEST_CASE("vtrace replay on an unknown runtime exits 3, or the --exit-skip code", "[cli]") {
  auto run = run_vtrace(fmt::format("replay {} --runtime no-such-runtime", golden("tiny")));
  CHECK(run.code == 3);
  CHECK(run.output.find("no-such-runtime") != std::string::npos);
  CHECK(run_vtrace(fmt::format("replay {} --runtime no-such-runtime --exit-skip=125", golden("tiny")))
            .code == 125);
}

TEST_CASE(
    "every JSON vtrace writes stays valid when a path is not UTF-8 (U+FFFD in its place), exit 0",
    "[cli]") {
  // A file name may hold any byte but '/' and NUL; JSON strings are UTF-8. nlohmann's dump()
  // throws on such a string: every report, timeline and dump line goes through json_text.
  vtrace::test::ScratchDir dir("cli-utf8");
  const auto trace = dir / "t\xff.vtrace";
  std::filesystem::copy_file(golden("tiny"), trace);
  const std::string t = "'" + trace.string() + "'";
  const auto out = [&](const char* name) { return (dir / name).string(); };
  for (const auto& [arguments, file] : {
           std::pair{fmt::format("replay {} --json {}", t, out("r.json")), out("r.json")},
           std::pair{fmt::format("compare {} --runtimes reference,cpu --json {}", t, out("c.json")),
                     out("c.json")},
           std::pair{fmt::format("diff {} {} --json {}", t, t, out("d.json")), out("d.json")},
           std::pair{fmt::format("extract {} --event 18 -o {} --json {}", t, out("x.vtrace"),
                                 out("x.json")),
                     out("x.json")},
           std::pair{fmt::format("export {} --format chrome -o {}", t, out("tl.json")),
                     out("tl.json")},
       }) {
    INFO(arguments);
    const auto run = run_vtrace(arguments);
    INFO(run.output);
    CHECK(run.code == 0);
    std::ifstream in(file);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(nlohmann::json::accept(text));
    CHECK(text.find("t\xef\xbf\xbd.vtrace") != std::string::npos);
  }
  // dump --json: one object per line, the extracted trace names its source in its metadata.
  const auto dump = run_vtrace(fmt::format("dump {} --json --events 0:3", out("x.vtrace")));
  INFO(dump.output);
  CHECK(dump.code == 0);
  std::istringstream lines(dump.output);
  std::size_t objects = 0;
  for (std::string line; std::getline(lines, line); ++objects) CHECK(nlohmann::json::accept(line));
  CHECK(objects == 3);
}

TEST_CASE("vtrace info shows the runtime, event counts by kind and sizes", "[cli]") {
  auto run = run_vtrace(fmt::format("info {}", golden("contract")));
  INFO(run.output);
  REQUIRE(run.code == 0);
  CHECK(run.output.find("runtime:     reference") != std::string::npos);
  CHECK(run.output.find("events:      309") != std::string::npos);
  CHECK(run.output.find("SubmitBegin") != std::string::npos);
  CHECK(run.output.find("Readback") != std::string::npos);
  CHECK(run.output.find("ratio") != std::string::npos);
  CHECK(run.output.find("status:      complete (header and footer; data frames not verified: run "
                        "vtrace verify)") != std::string::npos);
}

TEST_CASE("vtrace dump --json prints one JSON object per event with the documented keys",
          "[cli]") {
  auto run = run_vtrace(fmt::format("dump --json --payloads {}", golden("tiny")));
  REQUIRE(run.code == 0);
  std::istringstream lines(run.output);
  std::string line;
  std::uint64_t expected_event = 0;
  bool saw_payload = false;
  while (std::getline(lines, line)) {
    const auto j = nlohmann::json::parse(line);
    CHECK(j["event"] == expected_event++);
    CHECK(j["kind"].is_string());
    CHECK(j["fields"]["seq"] == j["event"]);
    CHECK(j["fields"]["body_type"] == j["kind"]);
    CHECK(j["payloads"].is_object());
    REQUIRE(j.contains("call"));
    if (j["kind"] == "RuntimeOpened") CHECK(j["call"].is_null());
    if (j["kind"] == "EncodeZero") CHECK(j["call"] == "encode_zero(buffer#0, offset 0, length 8)");
    saw_payload = saw_payload || !j["payloads"].empty();
  }
  CHECK(expected_event == 30);
  CHECK(saw_payload);
  auto ranged = run_vtrace(fmt::format("dump {} --events 2:4", golden("tiny")));
  CHECK(ranged.code == 0);
  CHECK(ranged.output.starts_with("#2 Admit admit(weight.reference.linear, 8 bytes) {"));
  CHECK(ranged.output.find("#3 ") != std::string::npos);
  CHECK(ranged.output.find("#4 ") == std::string::npos);
}

TEST_CASE("vtrace dump --summary prints every field of the footer's summary, or says it is missing",
          "[cli]") {
  // decode-short's footer, as the recorder tallied it (the summary tally test rebuilds it from
  // the events): 129 events, its counts by kind summing to that.
  auto json = run_vtrace(fmt::format("dump --summary --json {}", golden("decode-short")));
  INFO(json.output);
  REQUIRE(json.code == 0);
  REQUIRE(std::count(json.output.begin(), json.output.end(), '\n') == 1);
  const auto j = nlohmann::json::parse(json.output)["summary"];
  CHECK(j["events"] == 129);
  std::uint64_t by_kind = 0;
  for (const auto& count : j["event_counts"]) by_kind += count["count"].get<std::uint64_t>();
  CHECK(by_kind == 129);
  for (const char* field :
       {"blobs", "blob_references", "payload_raw_bytes", "payload_referenced_bytes", "submits",
        "readback_bytes", "upload_bytes", "final_counters"}) {
    INFO(field);
    CHECK(j.contains(field));
  }
  CHECK(j["submits"].get<std::uint64_t>() > 0);
  CHECK_FALSE(j.contains("interrupted_by"));  // the recording ran to its end
  auto text = run_vtrace(fmt::format("dump --summary {}", golden("decode-short")));
  CHECK(text.code == 0);
  CHECK(text.output.starts_with("summary {event_counts: [{kind: \"Admit\""));
  CHECK(text.output.find("events: 129,") != std::string::npos);
  // Not with the event options: it replaces the event listing.
  auto both = run_vtrace(fmt::format("dump --summary --events 1:3 {}", golden("tiny")));
  CHECK(both.code == 2);
  CHECK(both.output.find("--events excludes --summary") != std::string::npos);
  // A cut trace has no footer: the summary is missing, and the reader's note says why.
  vtrace::test::ScratchDir dir("cli-dump-summary");
  const auto cut = half_of_decode_short(dir);
  auto missing = run_vtrace(fmt::format("dump --summary {}", cut));
  INFO(missing.output);
  CHECK(missing.code == 0);
  CHECK(missing.output.starts_with("summary: none ("));
  auto missing_json = run_vtrace(fmt::format("dump --summary --json {}", cut));
  CHECK(missing_json.code == 0);
  const auto m = nlohmann::json::parse(missing_json.output);
  CHECK(m["summary"].is_null());
  CHECK_FALSE(m["note"].get<std::string>().empty());
}

TEST_CASE("vtrace verify accepts a golden trace and rejects a cut one", "[cli]") {
  auto ok = run_vtrace(fmt::format("verify {}", golden("decode-short")));
  CHECK(ok.code == 0);
  CHECK(ok.output.find("OK: 129 events") != std::string::npos);
  vtrace::test::ScratchDir dir("cli-verify");
  CHECK(run_vtrace(fmt::format("verify {}", half_of_decode_short(dir))).code != 0);
}

TEST_CASE("vtrace list-runtimes names reference, cpu and cpu-splitk and what each is here", "[cli]") {
  auto run = run_vtrace("list-runtimes");
  CHECK(run.code == 0);
  for (const char* name : {"reference ", "cpu ", "cpu-splitk "}) {
    INFO(name);
    CHECK((run.output.find(std::string("\n") + name) != std::string::npos ||
           run.output.starts_with(name)));
  }
  // The cpu runtimes say which instruction path and how many threads they run with.
  CHECK(run.output.find(" threads)") != std::string::npos);
  CHECK(run.output.find("(reference, 64.00 MiB)") != std::string::npos);
}

TEST_CASE("every vtrace subcommand has --help", "[cli]") {
  for (const char* sub : {"record", "replay", "compare", "diff", "extract", "info", "dump",
                          "verify", "repair", "demo", "list-runtimes"}) {
    INFO(sub);
    auto run = run_vtrace(fmt::format("{} --help", sub));
    CHECK(run.code == 0);
    CHECK(run.output.find("Usage") != std::string::npos);
  }
}

namespace {
std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t count = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}
}  // namespace

TEST_CASE("vtrace replay shows the first 10 mismatches and counts the rest, from 11 on",
          "[cli][cross-runtime]") {
  // 16 steps recorded on cpu: cpu-splitk differs at each step's readback (one mismatch a step);
  // --events cuts the checked range after 10, 11 and 16 of them.
  vtrace::test::ScratchDir dir("cli-many-mismatches");
  const auto trace = (dir / "decode.vtrace").string();
  REQUIRE(run_vtrace(fmt::format("record --workload decode --runtime cpu --hidden 64 --ffn 4096 "
                                 "--layers 2 --steps 16 -o {}",
                                 trace))
              .code == 0);
  const auto json = (dir / "all.json").string();
  auto all = run_vtrace(fmt::format("replay {} --runtime cpu-splitk --json {}", trace, json));
  INFO(all.output);
  REQUIRE(all.code == 1);
  std::ifstream in(json);
  const auto report = nlohmann::json::parse(in);
  REQUIRE(report["mismatch_count"] == 16);
  REQUIRE(report["mismatches"].size() == 16);
  CHECK(occurrences(all.output, "MISMATCH at event") == 10);
  CHECK(all.output.find("... and 6 more mismatches") != std::string::npos);
  for (const std::uint64_t shown : {10u, 11u}) {
    INFO("mismatches in range: " << shown);
    // Up to the event of the next mismatch (exclusive): exactly `shown` mismatches.
    const std::uint64_t end = report["mismatches"][shown]["event"];
    auto run = run_vtrace(
        fmt::format("replay {} --runtime cpu-splitk --events 0:{}", trace, end));
    INFO(run.output);
    CHECK(run.code == 1);
    CHECK(run.output.find(fmt::format("verdict: mismatch ({} mismatches)", shown)) !=
          std::string::npos);
    CHECK(occurrences(run.output, "MISMATCH at event") == 10);
    CHECK(occurrences(run.output, "more mismatches") == (shown == 11 ? 1u : 0u));
    if (shown == 11) CHECK(run.output.find("... and 1 more mismatches") != std::string::npos);
  }
}

TEST_CASE("vtrace errors about a damaged trace name the file once, in one line", "[cli]") {
  vtrace::test::ScratchDir dir("cli-flip");
  const auto flipped = (dir / "flip.vtrace").string();
  {
    std::ifstream in(golden("decode-short"), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x10);
    std::ofstream(flipped, std::ios::binary) << bytes;
  }
  for (const char* sub : {"replay", "verify", "dump"}) {
    INFO(sub);
    auto run = run_vtrace(fmt::format("{} {}", sub, flipped));
    INFO(run.output);
    CHECK(run.code == (std::string(sub) == "verify" ? 1 : 2));
    CHECK(run.output.starts_with("vtrace: "));
    CHECK(occurrences(run.output, flipped) == 1);
    CHECK(run.output.find("checksum") != std::string::npos);
  }
  auto directory = run_vtrace(fmt::format("replay {}", (dir / "").string()));
  CHECK(directory.code == 2);
  CHECK(directory.output.find("not a regular file") != std::string::npos);

  // verify: damage the reader finds when it opens (the header's checksum, the trailer) is an
  // integrity failure too (exit 1); a file that is no trace is a usage error (exit 2).
  std::string tiny;
  {
    std::ifstream in(golden("tiny-v1.2"), std::ios::binary);
    tiny.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::string header = tiny;
  header[24] = static_cast<char>(header[24] ^ 0x01);
  std::string trailer = tiny;
  trailer[trailer.size() - 30] = static_cast<char>(trailer[trailer.size() - 30] ^ 0x40);
  for (const auto& [name, bytes, code] : {std::tuple{"header.vtrace", header, 1},
                                          std::tuple{"trailer.vtrace", trailer, 1},
                                          std::tuple{"text.vtrace", std::string("hello\n"), 2}}) {
    const auto path = (dir / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    auto run = run_vtrace(fmt::format("verify {}", path));
    INFO(name << ": " << run.output);
    CHECK(run.code == code);
    CHECK((run.output.find("(integrity check failed)") != std::string::npos) == (code == 1));
    CHECK(occurrences(run.output, path) == 1);
  }
}

TEST_CASE("vtrace replay of a recovered trace warns, replays what was recovered and exits 0",
          "[cli]") {
  vtrace::test::ScratchDir dir("cli-recovered");
  const auto tiny = std::filesystem::path(golden("tiny"));
  const std::uint64_t begin = vtrace::test::first_event_of_kind(tiny, "SubmitBegin");
  vtrace::test::write_cut_copy(tiny, dir / "cut.vtrace", {begin + 1, std::nullopt, false});
  const auto cut = (dir / "cut.vtrace").string();
  auto run = run_vtrace(fmt::format("--quiet replay {} --json {}", cut, (dir / "r.json").string()));
  INFO(run.output);
  CHECK(run.code == 0);
  CHECK(run.output.find(fmt::format("vtrace: warning: {} has no footer", cut)) != std::string::npos);
  CHECK(run.output.find(fmt::format("event {} (SubmitBegin) has no SubmitEnd", begin)) !=
        std::string::npos);
  CHECK(run.output.find("verdict: match (incomplete trace") != std::string::npos);
  std::ifstream in(dir / "r.json");
  const auto report = nlohmann::json::parse(in);
  CHECK(report["verdict"] == "match");
  CHECK(report["complete"] == false);
  CHECK(report["executed"] == begin + 1);
  CHECK(report["unfinished_submits"] == nlohmann::json::array({begin}));
  for (const char* key : {"note", "events_recovered", "cut_offset", "file_bytes", "stopped_at",
                          "stop_reason"}) {
    CHECK(report["recovery"].contains(key));
  }

  const std::uint64_t upload = vtrace::test::first_event_of_kind(tiny, "EncodeUpload");
  vtrace::test::write_cut_copy(tiny, dir / "lost.vtrace", {begin + 1, upload, false});
  auto lost = run_vtrace(fmt::format("replay {}", (dir / "lost.vtrace").string()));
  INFO(lost.output);
  CHECK(lost.code == 0);
  CHECK(lost.output.find(fmt::format("replay stops before event {} because event {} (EncodeUpload)",
                                     upload, upload)) != std::string::npos);
  CHECK(run_vtrace(fmt::format("verify {}", cut)).code == 1);
}

TEST_CASE(
    "vtrace compare, diff and extract of a recovered trace warn as replay does and say so in "
    "their JSON",
    "[cli]") {
  vtrace::test::ScratchDir dir("cli-recovered-drift");
  const auto cut = half_of_decode_short(dir);
  const auto warning = fmt::format("vtrace: warning: {} has no footer", cut);
  const auto json_of = [&](const char* name) {
    std::ifstream in(dir / name);
    return nlohmann::json::parse(in);
  };
  const auto check_recovery = [](const nlohmann::json& recovery) {
    REQUIRE(recovery.is_object());
    for (const char* key : {"note", "events_recovered", "cut_offset", "file_bytes", "stopped_at",
                            "stop_reason"}) {
      INFO(key);
      CHECK(recovery.contains(key));
    }
  };
  // compare: the warning even with --quiet, the verdict qualified, `complete` and `recovery`.
  auto compare = run_vtrace(fmt::format("--quiet compare {} --runtimes reference,cpu --json {}",
                                        cut, (dir / "c.json").string()));
  INFO(compare.output);
  CHECK(compare.code == 0);
  CHECK(compare.output.find(warning) != std::string::npos);
  CHECK(compare.output.find("compare uses") != std::string::npos);
  const auto c = json_of("c.json");
  CHECK(c["complete"] == false);
  check_recovery(c["recovery"]);
  CHECK(c["unfinished_submits"].is_array());
  auto verbose = run_vtrace(fmt::format("compare {} --runtimes reference,cpu", cut));
  CHECK(verbose.output.find("verdict: match (incomplete trace: ") != std::string::npos);
  // A complete trace: no warning, complete, no recovery.
  auto whole = run_vtrace(fmt::format("compare {} --runtimes reference,cpu --json {}",
                                      golden("decode-short"), (dir / "w.json").string()));
  CHECK(whole.output.find("warning") == std::string::npos);
  CHECK(json_of("w.json")["complete"] == true);
  CHECK(json_of("w.json")["recovery"].is_null());
  // diff: the cut trace as `a`, the whole one as `b`.
  auto diff = run_vtrace(fmt::format("--quiet diff {} {} --json {}", cut, golden("decode-short"),
                                     (dir / "d.json").string()));
  INFO(diff.output);
  CHECK(diff.code == 1);  // b has more events
  CHECK(diff.output.find(warning) != std::string::npos);
  const auto d = json_of("d.json");
  CHECK(d["complete"] == false);
  check_recovery(d["recovery"]["a"]);
  CHECK(d["recovery"]["b"].is_null());
  // extract of a command the cut trace still holds.
  const auto upload = vtrace::test::first_event_of_kind(golden("decode-short"), "EncodeUpload");
  auto extract = run_vtrace(fmt::format("--quiet extract {} --event {} -o {} --json {}", cut, upload,
                                        (dir / "x.vtrace").string(), (dir / "x.json").string()));
  INFO(extract.output);
  CHECK(extract.code == 0);
  CHECK(extract.output.find(warning) != std::string::npos);
  CHECK(extract.output.find("extract uses") != std::string::npos);
  CHECK(json_of("x.json")["complete"] == false);
  check_recovery(json_of("x.json")["recovery"]);
}

TEST_CASE("vtrace replay --json on a mismatch writes the first mismatch and the verdict", "[cli]") {
  vtrace::test::ScratchDir dir("cli-json-mismatch");
  vtrace::test::record_workload(vtrace::test::small_decode_spec(), dir / "decode.vtrace");
  const auto altered = vtrace::test::rewrite_with_altered_readback(
      dir / "decode.vtrace", dir / "altered.vtrace",
      [](std::uint16_t v) { return static_cast<std::uint16_t>(v ^ 0x0001); });
  auto run = run_vtrace(fmt::format("replay {} --json {}", (dir / "altered.vtrace").string(),
                                    (dir / "r.json").string()));
  INFO(run.output);
  CHECK(run.code == 1);
  std::ifstream in(dir / "r.json");
  const auto report = nlohmann::json::parse(in);
  CHECK(report["verdict"] == "mismatch");
  CHECK(report["mismatch_count"] == 1);
  CHECK(report["complete"] == true);
  CHECK(report["recovery"].is_null());
  REQUIRE(report["first_mismatch"].is_object());
  CHECK(report["first_mismatch"]["event"] == altered.event);
  for (const char* key : {"call", "expected", "actual", "reproduce"}) {
    CHECK(report["first_mismatch"].contains(key));
  }
  CHECK(report["mismatches"].size() == 1);
  auto unwritable = run_vtrace(fmt::format("replay {} --json {}", (dir / "altered.vtrace").string(),
                                           (dir / "no-such-dir" / "r.json").string()));
  CHECK(unwritable.code == 2);
  CHECK(unwritable.output.find("does not exist") != std::string::npos);
}

TEST_CASE("vtrace record to an unusable output exits 2 before running and leaves no file", "[cli]") {
  vtrace::test::ScratchDir dir("cli-record-output");
  std::filesystem::create_directories(dir / "taken");
  const auto taken = (dir / "taken").string();
  auto into_directory = run_vtrace(fmt::format("record --workload tiny -o {}", taken));
  INFO(into_directory.output);
  CHECK(into_directory.code == 2);
  CHECK(into_directory.output.find(fmt::format("{} exists and is a directory", taken)) !=
        std::string::npos);
  CHECK_FALSE(std::filesystem::exists(taken + ".partial"));
  const auto nowhere = (dir / "missing" / "x.vtrace").string();
  auto missing_directory = run_vtrace(fmt::format("record --workload tiny -o {}", nowhere));
  INFO(missing_directory.output);
  CHECK(missing_directory.code == 2);
  CHECK(missing_directory.output.find("does not exist") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir / "missing"));
  // A directory that refuses a new file (/proc): found before the run, not after it.
  for (const std::string& command :
       {std::string("record --workload tiny -o /proc/vtrace-test.vtrace"),
        fmt::format("replay {} --json /proc/vtrace-test.json", golden("tiny")),
        fmt::format("compare {} --runtimes reference,cpu --html /proc/vtrace-test.html",
                    golden("tiny"))}) {
    INFO(command);
    auto refused = run_vtrace(command);
    INFO(refused.output);
    CHECK(refused.code == 2);
    CHECK_THAT(refused.output, Catch::Contains("cannot be created (No such file or directory): "
                                               "nothing was run"));
    CHECK(refused.output.find("verdict") == std::string::npos);
    CHECK(refused.output.find("recorded") == std::string::npos);
  }
  auto device = run_vtrace("record --workload tiny -o /dev/null");
  CHECK(device.code == 2);
  CHECK(device.output.find("/dev/null exists and is not a regular file") != std::string::npos);
  auto unknown = run_vtrace(fmt::format("record --workload nope -o {}", (dir / "x").string()));
  CHECK(unknown.code == 2);
  CHECK(unknown.output.find("unknown workload `nope`") != std::string::npos);
  auto runtime = run_vtrace(
      fmt::format("record --workload tiny --runtime nope -o {}", (dir / "x").string()));
  CHECK(runtime.code == 3);
  CHECK_FALSE(std::filesystem::exists(dir / "x"));
  CHECK_FALSE(std::filesystem::exists(dir / "x.partial"));
}

TEST_CASE("dump lists an event of a kind this build does not know and goes on", "[cli]") {
  vtrace::test::ScratchDir dir("cli-unknown-kind");
  const auto trace = dir / "unknown.vtrace";
  const std::uint64_t unknown = vtrace::test::write_tiny_with_unknown_event(trace, false);
  auto dump = run_vtrace(fmt::format("dump --json {}", trace.string()));
  REQUIRE(dump.code == 0);
  std::istringstream lines(dump.output);
  std::string line;
  std::uint64_t count = 0;
  bool saw_unknown = false;
  while (std::getline(lines, line)) {
    const auto json = nlohmann::json::parse(line);
    if (json.at("event").get<std::uint64_t>() == unknown) {
      saw_unknown = true;
      CHECK(json.at("kind") == "Unknown");
      CHECK(json.at("fields").at("required") == false);
      CHECK(json.at("fields").at("body_type").get<unsigned>() ==
            static_cast<unsigned>(vtrace::test::kUnknownBody));
    }
    ++count;
  }
  CHECK(saw_unknown);
  CHECK(count == unknown + 2);  // the event after the unknown one is printed too
  auto text = run_vtrace(fmt::format("dump {} --events {}", trace.string(), unknown));
  CHECK(text.code == 0);
  CHECK_THAT(text.output, Catch::Contains("Unknown {seq: " + std::to_string(unknown)));
}

TEST_CASE("vtrace record and replay across runtimes: cpu is bit-exact, cpu-splitk names its first drift",
          "[cli][cross-runtime]") {
  vtrace::test::ScratchDir dir("cli-cross");
  const auto trace = (dir / "decode.vtrace").string();
  // Reductions of 1024 (four split-k blocks) and 48.
  auto record = run_vtrace(fmt::format(
      "record --workload decode --runtime cpu --threads 2 --hidden 48 --ffn 1024 --layers 2 "
      "--steps 2 -o {}",
      trace));
  INFO(record.output);
  REQUIRE(record.code == 0);
  CHECK(record.output.find("on cpu:") != std::string::npos);
  auto on_reference = run_vtrace(fmt::format("replay {} --runtime reference", trace));
  INFO(on_reference.output);
  CHECK(on_reference.code == 0);
  CHECK(on_reference.output.find("verdict: match") != std::string::npos);
  // The legitimate differences are said once, as notes, not as mismatches.
  CHECK(occurrences(on_reference.output, "note: recorded on runtime `cpu`, replayed on `reference`") == 1);
  CHECK(occurrences(on_reference.output, "note: device class: recorded host, replayed reference") == 1);
  auto on_cpu = run_vtrace(fmt::format("replay {} --isa portable --threads 1", trace));
  INFO(on_cpu.output);
  CHECK(on_cpu.code == 0);
  CHECK(on_cpu.output.find("note:") == std::string::npos);
  auto drift = run_vtrace(fmt::format("replay {} --runtime cpu-splitk", trace));
  INFO(drift.output);
  CHECK(drift.code == 1);
  CHECK(drift.output.find("MISMATCH at event") != std::string::npos);
  CHECK(drift.output.find(": readback(") != std::string::npos);
  CHECK(drift.output.find("--runtime cpu-splitk") != std::string::npos);
  CHECK(drift.output.find("verdict: mismatch") != std::string::npos);
}

TEST_CASE("vtrace runtime options: bad values are usage errors, a missing path or too little memory says so",
          "[cli][cross-runtime]") {
  vtrace::test::ScratchDir dir("cli-runtime-options");
  const auto trace = (dir / "t.vtrace").string();
  auto bad_size = run_vtrace(fmt::format("record -w tiny --device-memory lots -o {}", trace));
  CHECK(bad_size.code == 2);
  CHECK(bad_size.output.find("--device-memory: `lots` is not a byte size") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(trace));
  auto bad_isa = run_vtrace(fmt::format("replay {} --runtime cpu --isa sse9", golden("tiny")));
  CHECK(bad_isa.code == 3);
  CHECK(bad_isa.output.find("no instruction path `sse9`") != std::string::npos);
  // --isa and --threads on runtimes that all ignore them are refused, not silently dropped
  // (replay's default runtime is the recorded one: reference for the golden tiny trace); one
  // runtime of a compare that takes them is enough.
  for (const auto& [command, option] :
       {std::pair{fmt::format("record -w tiny --isa avx2-f16c -o {}", trace), "--isa"},
        std::pair{fmt::format("record -w tiny --threads 2 -o {}", trace), "--threads"},
        std::pair{fmt::format("replay {} --isa portable", golden("tiny")), "--isa"},
        std::pair{fmt::format("extract {} --event 4 --threads 1 -o {}", golden("tiny"), trace),
                  "--threads"}}) {
    INFO(command);
    auto ignored = run_vtrace(command);
    CHECK(ignored.code == 2);
    CHECK(ignored.output == fmt::format("vtrace: {} applies only to the runtimes cpu, cpu-splitk; "
                                        "reference does not take it\n",
                                        option));
    CHECK_FALSE(std::filesystem::exists(trace));
  }
  CHECK(run_vtrace(
            fmt::format("compare {} --runtimes reference,cpu --isa portable", golden("tiny")))
            .code == 0);
  // A decode shape the device cannot hold: refused before any weight is generated, no trace left.
  auto too_big = run_vtrace(fmt::format(
      "record -w decode --hidden 4096 --ffn 16384 --layers 1 -o {}", trace));
  INFO(too_big.output);
  CHECK(too_big.code == 2);
  // 4096x16384 up, 16384x4096 down and a 4096x4096 head in f16, plus 3 tokens of activations.
  CHECK(too_big.output.find("runtime `reference`: decode with hidden 4096 and ffn 16384 over 1 "
                            "layers needs 288.16 MiB of device memory but the device has 64.00 "
                            "MiB: pass --device-memory 302161920 or more (nothing was recorded)") !=
        std::string::npos);
  CHECK_FALSE(std::filesystem::exists(trace));
  CHECK_FALSE(std::filesystem::exists(trace + ".partial"));
  // A target with less memory than the trace holds at its peak: exit 3, one sentence, nothing run.
  auto small = run_vtrace(fmt::format("replay {} --device-memory 1KiB", golden("decode-short")));
  INFO(small.output);
  CHECK(small.code == 3);
  CHECK(small.output.find("at its peak") != std::string::npos);
  CHECK(small.output.find("has 1024 bytes") != std::string::npos);
  CHECK(small.output.find("verdict") == std::string::npos);
  auto grown = run_vtrace(fmt::format("replay {} --runtime cpu --device-memory 1GiB", golden("decode-short")));
  INFO(grown.output);
  CHECK(grown.code == 0);
  CHECK(grown.output.find("note: device memory: recorded 67108864 bytes (64.0 MiB), replayed "
                          "1073741824 bytes (1024.0 MiB)") != std::string::npos);
}

TEST_CASE(
    "vtrace compare: a match exits 0, drift exits 1 naming the first divergent command, "
    "usage 2, an unknown runtime 3 or --exit-skip",
    "[cli]") {
  auto match =
      run_vtrace(fmt::format("compare {} --runtimes reference,cpu", golden("decode-short-v1.2")));
  INFO(match.output);
  CHECK(match.code == 0);
  CHECK(match.output.find("verdict: match") != std::string::npos);

  vtrace::test::ScratchDir dir("cli-compare");
  const auto trace = (dir / "long.vtrace").string();
  auto record = run_vtrace(fmt::format(
      "record --workload decode --hidden 48 --ffn 1024 --layers 2 --participants 2 --steps 2 -o {}",
      trace));
  REQUIRE(record.code == 0);
  const auto json = (dir / "compare.json").string();
  auto drift = run_vtrace(
      fmt::format("compare {} --runtimes reference,cpu-splitk --deep --json {}", trace, json));
  INFO(drift.output);
  CHECK(drift.code == 1);
  CHECK(drift.output.find("first divergence: event") != std::string::npos);
  CHECK(drift.output.find("(EncodeDenseLinear)") != std::string::npos);
  CHECK(drift.output.find("reproduce: vtrace compare") != std::string::npos);
  CHECK(drift.output.find("verdict: drift") != std::string::npos);
  std::ifstream in(json);
  const auto report = nlohmann::json::parse(in);
  for (const char* key : {"trace", "runtimes", "check", "events", "commands_compared",
                          "first_divergence", "commands", "verdict"}) {
    INFO(key);
    CHECK(report.contains(key));
  }
  CHECK(report["verdict"] == "drift");
  CHECK(report["runtimes"] == nlohmann::json::array({"reference", "cpu-splitk"}));
  for (const char* key : {"event", "command", "kind", "runtime", "class"}) {
    INFO(key);
    CHECK(report["first_divergence"].contains(key));
  }
  CHECK(report["first_divergence"]["class"] != "bitwise");  // within_1_ulp here: split-k rounding
  // The divergent command's extract line (reference, extract's default baseline, is not named),
  // which runs as printed but for where it writes.
  const auto first = report["first_divergence"]["event"].get<std::uint64_t>();
  const std::string extract_line =
      fmt::format("vtrace extract {} --event {} -o repro-{}.vtrace", trace, first, first);
  CHECK_THAT(drift.output, Catch::Contains(fmt::format("  extract: {}\n", extract_line)));
  const auto repro = (dir / "repro.vtrace").string();
  auto extracted = run_vtrace(fmt::format("extract {} --event {} -o {}", trace, first, repro));
  INFO(extracted.output);
  CHECK(extracted.code == 0);
  CHECK(run_vtrace(fmt::format("replay {} --runtime cpu-splitk", repro)).code == 1);
  const auto& command = report["commands"][0];
  for (const char* key : {"ordinal", "kind", "shapes", "runtimes"}) {
    INFO(key);
    CHECK(command.contains(key));
  }
  for (const char* key : {"max_abs_error", "mean_abs_error", "max_rel_error", "max_ulp",
                          "differing", "ulp_histogram", "magnitude_histogram"}) {
    INFO(key);
    CHECK(command["runtimes"]["cpu-splitk"]["stats"].contains(key));
  }
  // The same drift within a loose tolerance agrees.
  CHECK(run_vtrace(
            fmt::format("compare {} --runtimes reference,cpu-splitk --deep --check tol:1,1", trace))
            .code == 0);

  // One runtime: said of the option, not of the trace (which is not named, even missing).
  auto one = run_vtrace(
      fmt::format("compare {} --runtimes reference", (dir / "missing.vtrace").string()));
  CHECK(one.code == 2);
  CHECK(one.output == "vtrace: --runtimes `reference` names one runtime; compare needs at least "
                      "two (the first is the baseline)\n");
  for (const char* list : {"reference,", ",cpu", "reference,,cpu"}) {
    auto empty = run_vtrace(fmt::format("compare {} --runtimes {}", golden("tiny"), list));
    INFO(list);
    CHECK(empty.code == 2);
    CHECK(empty.output.find("names an empty runtime") != std::string::npos);
  }
  for (const char* list : {"cpu,cpu,reference", "reference,cpu,cpu", "cpu,reference,cpu"}) {
    INFO(list);
    auto twice = run_vtrace(fmt::format("compare {} --runtimes {}", golden("tiny"), list));
    INFO(twice.output);
    CHECK(twice.code == 2);
    CHECK(twice.output.find(fmt::format("vtrace: --runtimes `{}` names cpu twice", list)) !=
          std::string::npos);
    CHECK(twice.output.find("verdict") == std::string::npos);
  }
  CHECK(run_vtrace(fmt::format("compare {} --runtimes reference,cpu --check fuzzy", golden("tiny")))
            .code == 2);
  CHECK(run_vtrace(
            fmt::format("compare {} --runtimes reference,cpu", (dir / "missing.vtrace").string()))
            .code == 2);
  auto unknown = run_vtrace(fmt::format("compare {} --runtimes reference,no-such", golden("tiny")));
  CHECK(unknown.code == 3);
  CHECK(unknown.output.find("no-such") != std::string::npos);
  CHECK(run_vtrace(
            fmt::format("compare {} --runtimes reference,no-such --exit-skip 125", golden("tiny")))
            .code == 125);
}

TEST_CASE("reproduce lines carry how the runtimes were opened, and reproduce as printed",
          "[cli]") {
  vtrace::test::ScratchDir dir("cli-reproduce-open");
  const auto trace = (dir / "long.vtrace").string();
  auto record = run_vtrace(fmt::format(
      "record --workload decode --hidden 48 --ffn 1024 --layers 2 --participants 2 --steps 2 -o {}",
      trace));
  REQUIRE(record.code == 0);
  auto compared = run_vtrace(fmt::format(
      "compare {} --runtimes reference,cpu-splitk --threads 2 --isa portable --device-memory 1GiB",
      trace));
  INFO(compared.output);
  CHECK(compared.code == 1);
  CHECK_THAT(compared.output,
             Catch::Contains(fmt::format("reproduce: vtrace compare {} --runtimes "
                                         "reference,cpu-splitk --check bits --threads 2 --isa "
                                         "portable --device-memory 1073741824\n",
                                         trace)));
  // The HTML page's extract lines carry the flags the baseline takes.
  const auto html = (dir / "c.html").string();
  auto paged = run_vtrace(fmt::format(
      "compare {} --runtimes cpu,cpu-splitk --threads 2 --isa portable --device-memory 1GiB "
      "--deep --html {}",
      trace, html));
  CHECK(paged.code == 1);
  std::ifstream page_in(html);
  const std::string page{std::istreambuf_iterator<char>(page_in), {}};
  CHECK_THAT(page, Catch::Contains(" --runtime cpu --threads 2 --isa portable --device-memory "
                                   "1073741824</code>"));
  // So does the text report's extract line under the first divergence.
  CHECK_THAT(paged.output, Catch::Contains(" -o repro-") &&
                               Catch::Contains(".vtrace --runtime cpu --threads 2 --isa portable "
                                               "--device-memory 1073741824\n"));
  auto on_reference = run_vtrace(fmt::format(
      "compare {} --runtimes reference,cpu-splitk --threads 2 --deep --html {}", trace, html));
  CHECK(on_reference.code == 1);
  std::ifstream reference_in(html);
  const std::string reference_page{std::istreambuf_iterator<char>(reference_in), {}};
  // Each extract line (reference is the baseline: it ignores --threads) is refused by nothing.
  std::size_t extract_lines = 0;
  for (auto at = reference_page.find("vtrace extract "); at != std::string::npos;
       at = reference_page.find("vtrace extract ", at + 1)) {
    const auto line = reference_page.substr(at, reference_page.find("</code>", at) - at);
    INFO(line);
    CHECK(line.find("--threads") == std::string::npos);
    ++extract_lines;
  }
  CHECK(extract_lines > 0);
  auto replayed = run_vtrace(
      fmt::format("replay {} --runtime cpu-splitk --threads 3 --device-memory 64MiB", trace));
  INFO(replayed.output);
  CHECK(replayed.code == 1);
  const auto at = replayed.output.find("reproduce: vtrace replay ");
  REQUIRE(at != std::string::npos);
  const std::size_t from = at + std::string_view("reproduce: vtrace ").size();
  const auto line = replayed.output.substr(from, replayed.output.find('\n', at) - from);
  CHECK(line.ends_with(" --runtime cpu-splitk --check bits --threads 3 --device-memory 67108864"));
  // The line, run as printed, shows the same mismatch.
  auto again = run_vtrace(line);
  INFO(again.output);
  CHECK(again.code == 1);
  CHECK_THAT(again.output, Catch::Contains("verdict: mismatch"));
}

TEST_CASE("vtrace record: a workload that fails mid-run exits 1, says where its calls are, and "
          "keeps them",
          "[cli]") {
  // 256 bytes of device memory: the contract workload's allocations run out after a few calls.
  vtrace::test::ScratchDir dir("cli-record-failing");
  const auto full = (dir / "full.vtrace").string();
  auto run = run_vtrace(
      fmt::format("record --workload contract --device-memory 256 -o {}", full));
  INFO(run.output);
  CHECK(run.code == 1);
  CHECK(run.output.find("workload `contract` failed on runtime `reference`: ") !=
        std::string::npos);
  CHECK(run.output.find("admission_over_capacity") != std::string::npos);
  CHECK(run.output.find(fmt::format("(the trace {} holds the calls up to the failure)", full)) !=
        std::string::npos);
  CHECK(run_vtrace(fmt::format("verify {}", full)).code == 0);  // complete, not a cut file
  auto replayed = run_vtrace(fmt::format("replay {}", full));
  INFO(replayed.output);
  CHECK(replayed.code == 0);  // the failing admission is reproduced
  // Flight mode: the failure is a trigger, its window is written.
  const auto flight = (dir / "flight.vtrace").string();
  auto windowed = run_vtrace(
      fmt::format("record --workload contract --device-memory 256 --mode flight -o {}", flight));
  INFO(windowed.output);
  CHECK(windowed.code == 1);
  CHECK(windowed.output.find(fmt::format("(flight windows: 1 written beside {})", flight)) !=
        std::string::npos);
  auto info = run_vtrace(fmt::format("info {}", flight));
  INFO(info.output);
  CHECK(info.output.find("written by workload_failed (allocate_buffer(resource.contract.in) "
                         "failed: admission_over_capacity") != std::string::npos);
}

TEST_CASE("vtrace replay --repeat N compares the runs and says they are identical", "[cli]") {
  auto run =
      run_vtrace(fmt::format("replay {} --runtime cpu --repeat 3", golden("decode-short-v1.2")));
  INFO(run.output);
  CHECK(run.code == 0);
  CHECK(run.output.find("repeat: 3 runs on cpu identical") != std::string::npos);
  // 2 is the least that compares; 1 (the default) is the replay alone.
  auto two = run_vtrace(fmt::format("replay {} --repeat 2", golden("tiny")));
  CHECK(two.code == 0);
  CHECK(two.output.find("repeat: 2 runs on reference identical") != std::string::npos);
  auto one = run_vtrace(fmt::format("replay {} --repeat 1", golden("tiny")));
  CHECK(one.code == 0);
  CHECK(one.output.find("repeat:") == std::string::npos);
  CHECK(run_vtrace(fmt::format("replay {} --repeat 0", golden("tiny"))).code == 2);
}

TEST_CASE("vtrace diff: the same workload on two bit-exact runtimes matches, other traces differ",
          "[cli]") {
  CHECK(run_vtrace(fmt::format("diff {} {}", golden("tiny"), golden("tiny-v1.2"))).code == 0);
  auto other = run_vtrace(fmt::format("diff {} {}", golden("tiny"), golden("decode-short")));
  INFO(other.output);
  CHECK(other.code == 1);
  CHECK(other.output.find("first divergence: event 2 (Admit)") != std::string::npos);
  CHECK(other.output.find("verdict: structural") != std::string::npos);
  CHECK(other.output.find("reproduce: vtrace diff") != std::string::npos);
  // Two workloads: said as a warning, since their differences are not the runtimes'.
  CHECK(other.output.find("record different workloads") != std::string::npos);
  CHECK(run_vtrace(fmt::format("diff {} {}", golden("tiny"), golden("tiny-v1.2")))
            .output.find("different workloads") == std::string::npos);
  CHECK(run_vtrace(fmt::format("diff {} /nonexistent.vtrace", golden("tiny"))).code == 2);
  CHECK(run_vtrace(fmt::format("diff {} {} --check ulp", golden("tiny"), golden("tiny"))).code ==
        2);
}

TEST_CASE("vtrace demo tells the whole story and exits 0", "[cli]") {
  vtrace::test::ScratchDir dir("cli-demo");
  auto empty = run_vtrace("demo --out ''");
  CHECK(empty.code == 2);
  CHECK(empty.output == "vtrace: --out is empty; it names the directory for the demo trace and the "
                        "repro\n");
  auto demo = run_vtrace(fmt::format("demo --out {}", (dir / "out").string()));
  INFO(demo.output);
  CHECK(demo.code == 0);
  CHECK(demo.output.find("verdict                match (bit-exact)") != std::string::npos);
  CHECK(demo.output.find("replay on cpu          match (bit-exact)") != std::string::npos);
  CHECK(demo.output.find("x the reference replay") != std::string::npos);
  CHECK(demo.output.find("vs cpu-splitk          drift") != std::string::npos);
  CHECK(demo.output.find("first divergence       event") != std::string::npos);
  CHECK(demo.output.find("(EncodeDenseLinear)") != std::string::npos);
  CHECK(demo.output.find("vtrace compare") != std::string::npos);
  CHECK(demo.output.find("extracted repro") != std::string::npos);
  CHECK(demo.output.find("match on reference, mismatch on cpu-splitk") != std::string::npos);
  CHECK(std::filesystem::exists(dir / "out" / "repro.vtrace"));
  CHECK(run_vtrace(fmt::format("replay {}", (dir / "out" / "repro.vtrace").string())).code == 0);
}

TEST_CASE(
    "vtrace compare --resync and vtrace extract: introduced error per command, a repro that "
    "matches on reference and not on cpu-splitk",
    "[cli]") {
  vtrace::test::ScratchDir dir("cli-extract");
  const auto trace = (dir / "long.vtrace").string();
  REQUIRE(run_vtrace(fmt::format("record --workload decode --hidden 48 --ffn 1024 --layers 2 "
                                 "--participants 2 --steps 2 -o {}",
                                 trace))
              .code == 0);
  const auto json = (dir / "resync.json").string();
  auto resync = run_vtrace(
      fmt::format("compare {} --runtimes reference,cpu-splitk --resync --json {}", trace, json));
  INFO(resync.output);
  CHECK(resync.code == 1);
  CHECK(resync.output.find("deep, resync") != std::string::npos);
  CHECK(resync.output.find("introduced (on the baseline's inputs)") != std::string::npos);
  CHECK(resync.output.find("introduced error (--resync):") != std::string::npos);
  CHECK(resync.output.find("only carry it in") != std::string::npos);
  CHECK(resync.output.find("--resync\n") != std::string::npos);  // in the reproduce: line
  std::ifstream in(json);
  const auto report = nlohmann::json::parse(in);
  CHECK(report["resync"] == true);
  // The text counts commands, as the JSON's counts do: not the regions they wrote.
  const auto& counts = report["counts"];
  CHECK(resync.output.find(fmt::format(
            "introduced error (--resync): {} of {} commands introduce error, {} only carry it in",
            counts["commands_introducing"].get<std::uint64_t>(),
            counts["commands"].get<std::uint64_t>(),
            counts["commands_carrying_only"].get<std::uint64_t>())) != std::string::npos);
  CHECK(resync.output.find(fmt::format("results compared ({} regions written by {} commands",
                                       counts["regions"].get<std::uint64_t>(),
                                       counts["commands"].get<std::uint64_t>())) !=
        std::string::npos);
  REQUIRE(report["first_introduced"].is_object());
  const auto event = report["first_divergence"]["event"].get<std::uint64_t>();

  const auto repro = (dir / "repro.vtrace").string();
  const auto extract_json = (dir / "extract.json").string();
  auto extracted = run_vtrace(
      fmt::format("extract {} --event {} -o {} --json {}", trace, event, repro, extract_json));
  INFO(extracted.output);
  CHECK(extracted.code == 0);
  CHECK(extracted.output.find(fmt::format("extracted event {} of", event)) != std::string::npos);
  CHECK(extracted.output.find("replay it: vtrace replay") != std::string::npos);
  std::ifstream ein(extract_json);
  const auto what = nlohmann::json::parse(ein);
  CHECK(what["commands"].size() == 1);
  CHECK(what["reproduces_baseline"] == true);
  CHECK(run_vtrace(fmt::format("replay {}", repro)).code == 0);
  auto drifting = run_vtrace(fmt::format("replay {} --runtime cpu-splitk", repro));
  CHECK(drifting.code == 1);
  CHECK(drifting.output.find("MISMATCH at event") != std::string::npos);
  // --runtime: the repro is recorded on that runtime, with its results.
  const auto on_splitk = (dir / "splitk.vtrace").string();
  REQUIRE(run_vtrace(fmt::format("extract {} --event {} -o {} --runtime cpu-splitk", trace, event,
                                 on_splitk))
              .code == 0);
  CHECK(run_vtrace(fmt::format("replay {}", on_splitk)).code == 0);  // its recorded runtime
  CHECK(run_vtrace(fmt::format("replay {} --runtime reference", on_splitk)).code == 1);
  // --level: the same repro at level 19 is a smaller file than at the default 1.
  const auto packed = (dir / "packed.vtrace").string();
  REQUIRE(run_vtrace(fmt::format("extract {} --event {} -o {} --level 19", trace, event, packed))
              .code == 0);
  CHECK(std::filesystem::file_size(packed) < std::filesystem::file_size(repro));
  // A window: A:B as for dump.
  CHECK(run_vtrace(fmt::format("extract {} --events {}:{} -o {}", trace, event, event + 3,
                               (dir / "window.vtrace").string()))
            .code == 0);

  // Usage: exactly one of --event and --events; a readback event; a bad level or output;
  // an unknown runtime (3, or --exit-skip).
  const auto out = (dir / "bad.vtrace").string();
  CHECK(run_vtrace(fmt::format("extract {} -o {}", trace, out)).code == 2);
  CHECK(run_vtrace(fmt::format("extract {} --event 1 --events 1:2 -o {}", trace, out)).code == 2);
  CHECK(run_vtrace(fmt::format("extract {} --events 5:5 -o {}", trace, out)).code == 2);
  auto not_command = run_vtrace(fmt::format("extract {} --event 0 -o {}", trace, out));
  CHECK(not_command.code == 2);
  CHECK(not_command.output.find("event 0 is a RuntimeOpened, not an encoded command") !=
        std::string::npos);
  CHECK(run_vtrace(fmt::format("extract {} --event {} -o {} --level 0", trace, event, out)).code ==
        2);
  CHECK(run_vtrace(fmt::format("extract {} --event {} -o {}", trace, event,
                               (dir / "none" / "x.vtrace").string()))
            .code == 2);
  CHECK(run_vtrace(fmt::format("extract {} --event {} -o {} --runtime no-such", trace, event, out))
            .code == 3);
  CHECK(run_vtrace(fmt::format("extract {} --event {} -o {} --runtime no-such --exit-skip 125",
                               trace, event, out))
            .code == 125);
  CHECK_FALSE(std::filesystem::exists(out));
}

TEST_CASE(
    "vtrace export, replay --profile and compare --html write the timeline and the page, and "
    "refuse what they cannot do",
    "[cli]") {
  vtrace::test::ScratchDir dir("cli-report");
  const auto timeline = (dir / "t.json").string();
  auto exported = run_vtrace(
      fmt::format("export {} --format chrome -o {}", golden("decode-short-v1.2"), timeline));
  INFO(exported.output);
  CHECK(exported.code == 0);
  CHECK(exported.output.find("laid out by event order") != std::string::npos);
  std::ifstream in(timeline);
  const auto t = nlohmann::json::parse(in);
  CHECK(t["traceEvents"].size() > 0);
  CHECK(run_vtrace(fmt::format("export {} --format svg -o {}", golden("tiny"), timeline)).code ==
        2);
  CHECK(
      run_vtrace(fmt::format("export {} -o {}", golden("tiny"), (dir / "none" / "t.json").string()))
          .code == 2);
  CHECK(run_vtrace(fmt::format("export {} -o {}", (dir / "missing.vtrace").string(), timeline))
            .code == 2);

  const auto profile = (dir / "p.json").string();
  auto profiled =
      run_vtrace(fmt::format("replay {} --runtime cpu --profile {}", golden("tiny"), profile));
  INFO(profiled.output);
  CHECK(profiled.code == 0);
  CHECK(profiled.output.find("durations of this replay") != std::string::npos);
  std::ifstream pin(profile);
  const auto p = nlohmann::json::parse(pin);
  double last = -1;
  for (const auto& e : p["traceEvents"]) {
    if (e["ph"] == "X" && !e["args"].contains("command")) {
      CHECK(double(e["ts"]) >= last);  // in replay order, measured
      last = e["ts"];
    }
  }
  CHECK(last > 0);

  const auto html = (dir / "report.html").string();
  auto compared = run_vtrace(fmt::format("compare {} --runtimes reference,cpu --html {}",
                                         golden("decode-short-v1.2"), html));
  CHECK(compared.code == 0);
  std::ifstream hin(html);
  const std::string page{std::istreambuf_iterator<char>(hin), {}};
  CHECK(page.find("id=\"error-chart\"") != std::string::npos);
  CHECK(page.find("verdict-match") != std::string::npos);
  CHECK(run_vtrace(fmt::format("diff {} {} --html {}", golden("tiny"), golden("tiny-v1.2"), html))
            .code == 0);
  CHECK(run_vtrace(fmt::format("compare {} --runtimes reference,cpu --html {}", golden("tiny"),
                               (dir / "none" / "r.html").string()))
            .code == 2);
  // None of them writes over the trace it reads.
  const auto copy = (dir / "copy.vtrace").string();
  std::filesystem::copy_file(golden("tiny"), copy);
  const auto size = std::filesystem::file_size(copy);
  for (const auto& line : {fmt::format("export {0} -o {0}", copy),
                           fmt::format("replay {0} --profile {0}", copy),
                           fmt::format("compare {0} --runtimes reference,cpu --html {0}", copy),
                           fmt::format("diff {0} {1} --html {0}", copy, golden("tiny"))}) {
    INFO(line);
    CHECK(run_vtrace(line).code == 2);
    CHECK(std::filesystem::file_size(copy) == size);
  }
}
