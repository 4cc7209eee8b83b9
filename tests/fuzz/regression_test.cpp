// Every seed of the fuzz targets and every kept crasher through the targets' own bodies
// (fuzz/fuzz_bodies.h): the golden traces are read, planned and decoded to the end; the
// hand-made safetensors seeds are accepted or refused as their names say; each file under
// traces/corrupt/ comes back with the outcome its README line names. Under the sanitizers (the
// fuzz build runs this executable too) any out-of-bounds read or UB on the way fails the run.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <variant>

#include "fuzz_bodies.h"
#include "vtrace/schema/trace_reader.h"

namespace vs = vtrace::schema;
namespace vf = vtrace::fuzz;
namespace fs = std::filesystem;

namespace {

using Bytes = std::vector<std::uint8_t>;

Bytes read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::vector<fs::path> files_in(const fs::path& dir, const std::string& extension) {
  std::vector<fs::path> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().extension() == extension)
      out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

const fs::path kSource = VTRACE_SOURCE_DIR;

}  // namespace

TEST_CASE(
    "fuzz seeds: every golden trace is read, planned and decoded to the end by the fuzz bodies",
    "[fuzz]") {
  const auto traces = files_in(kSource / "traces", ".vtrace");
  REQUIRE(traces.size() >= 10);
  for (const auto& path : traces) {
    INFO(path.filename().string());
    const Bytes bytes = read_file(path);
    auto reader = vs::TraceReader::open(path);
    REQUIRE(reader.has_value());
    const std::uint64_t events = (*reader)->event_count();
    REQUIRE(events > 0);

    const vf::BodyOutcome read = vf::trace_file_body(bytes);
    CHECK(read.refused_at == "");
    CHECK(read.message == "");
    CHECK(read.events == events);

    const vf::BodyOutcome plan = vf::replay_plan_body(bytes);
    CHECK(plan.refused_at == "");
    CHECK(plan.message == "");
    CHECK(plan.events == events);

    const auto records = vf::event_records_of(bytes);
    CHECK(records.size() == events);
    std::uint64_t decoded = 0;
    for (const auto& record : records) {
      const vf::BodyOutcome one = vf::event_record_body(record);
      if (one.refused())
        FAIL_CHECK("an event record is refused at " << one.refused_at << ": " << one.message);
      decoded += one.events;
    }
    CHECK(decoded == events);
  }
}

TEST_CASE("fuzz seeds: the cut prefixes of a golden trace are recovered or refused, never more",
          "[fuzz]") {
  // What the fuzzer feeds the trace targets from decode-short (132 KiB) with -max_len 16384: a
  // cut file. A cut inside the header frame is refused by open(); any later cut is recovered:
  // the events recovered are exactly the first events of the full trace, byte for byte, their
  // number never falls as the cut moves on, all of them come back when only the footer or its
  // trailer is cut, and verify_all() (the body's last step) refuses the file as kTruncated.
  const Bytes full = read_file(kSource / "traces" / "decode-short-v1.2.vtrace");
  auto reader = vs::TraceReader::open(vs::memory_source(full, "decode-short-v1.2.vtrace"));
  REQUIRE(reader.has_value());
  const std::uint64_t events = (*reader)->event_count();
  const auto& frames = (*reader)->frames();
  REQUIRE(!frames.empty());
  const std::uint64_t header_end = frames.front().file_offset;
  const std::uint64_t data_end = frames.back().file_offset + frames.back().compressed_bytes;
  const auto all_records = vf::event_records_of(full);
  REQUIRE(all_records.size() == events);

  std::set<std::size_t> cuts = {1, 16, 100, 4096, 16384, full.size() / 2, full.size() - 1};
  for (std::size_t c = 0; c < full.size(); c += full.size() / 97) cuts.insert(c);
  for (const std::uint64_t at :
       {header_end - 1, header_end, header_end + 1, data_end - 1, data_end, data_end + 1}) {
    cuts.insert(at);
  }
  for (const auto& frame : frames) {  // every frame boundary and one byte either side of it
    for (const std::uint64_t at : {frame.file_offset - 1, frame.file_offset, frame.file_offset + 1})
      cuts.insert(at);
  }
  cuts.erase(0);
  std::uint64_t last_recovered = 0;
  std::size_t recovered_cuts = 0;
  for (const std::size_t cut : cuts) {
    INFO("cut at " << cut << " of " << full.size() << " (header ends at " << header_end
                   << ", data at " << data_end << ")");
    const Bytes prefix(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(cut));
    const vf::BodyOutcome read = vf::trace_file_body(prefix);
    const vf::BodyOutcome plan = vf::replay_plan_body(prefix);
    REQUIRE(read.refused());
    if (cut < header_end) {
      CHECK(read.refused_at == "open");
      CHECK(read.events == 0);
      CHECK(plan.refused_at == "open");
      continue;
    }
    ++recovered_cuts;
    CHECK(read.refused_at == "verify_all");
    CHECK(read.kind == vs::TraceErrorKind::kTruncated);
    CHECK(read.events <= events);
    CHECK(read.events >= last_recovered);
    last_recovered = read.events;
    if (cut >= data_end) CHECK(read.events == events);
    // The events recovered are the full trace's first ones, byte for byte.
    const auto records = vf::event_records_of(prefix);
    CHECK(records.size() == read.events);
    const bool same_prefix = records.size() <= all_records.size() &&
                             std::equal(records.begin(), records.end(), all_records.begin());
    CHECK(same_prefix);
    // The plan never has more steps than the whole trace's.
    CHECK(plan.events <= events);
  }
  CHECK(recovered_cuts > 100);
  CHECK(last_recovered == events);
}

TEST_CASE("fuzz seeds: the hand-made safetensors seeds are accepted or refused as their names say",
          "[fuzz]") {
  // name -> tensors it holds, or the words of its refusal.
  const std::map<std::string, std::variant<std::uint64_t, std::string>> expected = {
      {"empty-header", std::uint64_t{0}},
      {"f16-2x2", std::uint64_t{1}},
      {"every-dtype", std::uint64_t{7}},
      {"metadata", std::uint64_t{1}},
      {"scalar-and-empty", std::uint64_t{2}},
      {"overlap", std::string("tensors overlap at byte 2")},
      {"gap", std::string("data section has a gap at byte 0")},
      {"offsets-past-data", std::string("outside the data section of 4 bytes")},
      {"shape-overflow", std::string("needs more than 2^64 bytes")},
      {"unknown-dtype", std::string("unsupported dtype `F64`")},
      {"repeated-key", std::string("header names `a` twice")},
      {"not-json", std::string("header is not valid JSON")},
      {"header-length-2^63", std::string("header length 9223372036854775808 exceeds")},
  };
  const auto seeds = vf::safetensors_seeds();
  CHECK(seeds.size() == expected.size());
  for (const auto& [name, bytes] : seeds) {
    INFO(name);
    const auto want = expected.find(name);
    REQUIRE(want != expected.end());
    const vf::BodyOutcome outcome = vf::safetensors_body(bytes);
    if (const auto* tensors = std::get_if<std::uint64_t>(&want->second)) {
      CHECK(outcome.refused_at == "");
      CHECK(outcome.events == *tensors);
    } else {
      CHECK(outcome.refused_at == "parse");
      CHECK_THAT(outcome.message, Catch::Contains(std::get<std::string>(want->second)));
    }
  }
  const vf::BodyOutcome fixture =
      vf::safetensors_body(read_file(fs::path(VTRACE_TEST_DATA_DIR) / "tiny_linear.safetensors"));
  CHECK(fixture.refused_at == "");
  CHECK(fixture.events > 0);
}

namespace {

// What a kept input must come back with: the body that found it (by the file's extension:
// .vtrace through the trace and plan bodies, .event through the event body, .safetensors through
// the safetensors body) and the step that refuses it, with words of its sentence.
struct KeptOutcome {
  std::string refused_at;  // "" = accepted
  std::optional<vs::TraceErrorKind> kind;
  std::string words;
  // .vtrace only: the plan body's outcome when it differs from the trace body's.
  std::optional<std::string> plan_refused_at = std::nullopt;
};

// One entry per file under traces/corrupt/ (README.md there says what each exercises and which
// fix it guards).
const std::map<std::string, KeptOutcome>& kept_outcomes() {
  static const std::map<std::string, KeptOutcome> outcomes = {
      {"event-u64-vector-misaligned.event",
       {"verify_event_record", vs::TraceErrorKind::kVerifyFailed, "not a verified vtrace.Event"}},
      {"event-union-type-without-body.event",
       {"verify_event_record", vs::TraceErrorKind::kVerifyFailed, "not a verified vtrace.Event"}},
  };
  return outcomes;
}

vf::BodyOutcome run_body(const fs::path& path, const Bytes& bytes) {
  const std::string ext = path.extension().string();
  if (ext == ".vtrace") return vf::trace_file_body(bytes);
  if (ext == ".event") return vf::event_record_body(bytes);
  if (ext == ".safetensors") return vf::safetensors_body(bytes);
  FAIL("traces/corrupt/" << path.filename().string() << " has no fuzz body for its extension");
  return {};
}

}  // namespace

TEST_CASE("fuzz crashers: every kept input under traces/corrupt comes back with its named outcome",
          "[fuzz]") {
  const fs::path dir = kSource / "traces" / "corrupt";
  std::set<std::string> seen;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const fs::path& path = entry.path();
    if (!entry.is_regular_file() || path.filename() == "README.md") continue;
    const std::string name = path.filename().string();
    INFO(name);
    seen.insert(name);
    const auto want = kept_outcomes().find(name);
    if (want == kept_outcomes().end()) {
      FAIL_CHECK("traces/corrupt/" << name << " has no expected outcome in this test");
      continue;
    }
    const Bytes bytes = read_file(path);
    const vf::BodyOutcome got = run_body(path, bytes);
    CHECK(got.refused_at == want->second.refused_at);
    CHECK(got.kind == want->second.kind);
    CHECK_THAT(got.message, Catch::Contains(want->second.words));
    if (path.extension() == ".vtrace") {
      const vf::BodyOutcome plan = vf::replay_plan_body(bytes);
      CHECK(plan.refused_at == want->second.plan_refused_at.value_or(want->second.refused_at));
    }
  }
  for (const auto& [name, outcome] : kept_outcomes()) {
    if (!seen.contains(name)) FAIL_CHECK("traces/corrupt/" << name << " is missing");
  }
}
