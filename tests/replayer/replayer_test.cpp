#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "trace_fixtures.h"
#include "vtrace/schema/events.h"
#include "vtrace/schema/trace_writer.h"
#include "vtrace/replayer/replay_trace.h"
#include "vtrace/runtime/registry.h"

namespace rp = vtrace::replayer;
namespace wl = vtrace::workloads;
using vtrace::test::ScratchDir;

namespace {
rp::ReplayReport replay(const std::filesystem::path& trace, rp::ReplayOptions options = {}) {
  auto report = rp::replay_trace(trace, {"", options}, vtrace::runtime::default_registry());
  INFO((report ? std::string() : report.error().message));
  REQUIRE(report.has_value());
  return *report;
}
}  // namespace

TEST_CASE("every workload recorded on reference replays bit for bit", "[replayer]") {
  ScratchDir dir("replayer-roundtrip");
  for (auto kind : wl::all_workload_kinds()) {
    wl::WorkloadSpec spec = kind == wl::WorkloadKind::kDecode ? vtrace::test::small_decode_spec()
                                                              : wl::WorkloadSpec{};
    spec.kind = kind;
    const auto path = dir / (std::string(wl::workload_name(kind)) + ".vtrace");
    const auto recorded = vtrace::test::record_workload(spec, path);
    const auto report = replay(path);
    INFO(wl::workload_name(kind));
    CHECK(report.matched());
    CHECK(report.runtime == "reference");
    CHECK(report.checked.readbacks == recorded.readbacks);
    CHECK(report.checked.calls > 0);
    CHECK(report.checked.counter_snapshots > 0);
    CHECK(report.events == report.executed);
  }
}

TEST_CASE("the contract trace replays every recorded error as the same error", "[replayer]") {
  ScratchDir dir("replayer-contract");
  wl::WorkloadSpec spec;
  spec.kind = wl::WorkloadKind::kContract;
  spec.seed = 11;
  const auto recorded = vtrace::test::record_workload(spec, dir / "contract.vtrace");
  CHECK(recorded.error_kinds.size() >= 25);
  const auto report = replay(dir / "contract.vtrace");
  CHECK(report.checked.error_outcomes > 0);
  CHECK(report.checked.fences > 0);
  CHECK(report.matched());
  CHECK(report.mismatches.empty());
}

TEST_CASE("a trace with one altered readback byte replays to a mismatch naming that event",
          "[replayer]") {
  ScratchDir dir("replayer-altered");
  vtrace::test::record_workload(vtrace::test::small_decode_spec(), dir / "decode.vtrace");
  const auto altered = vtrace::test::rewrite_with_altered_readback(
      dir / "decode.vtrace", dir / "altered.vtrace",
      [](std::uint16_t v) { return static_cast<std::uint16_t>(v ^ 0x0100); }, 3);
  rp::ReplayOptions options;
  options.trace_label = "altered.vtrace";
  const auto report = replay(dir / "altered.vtrace", options);
  REQUIRE_FALSE(report.matched());
  REQUIRE(report.mismatch_count == 1);
  const auto& m = report.mismatches.front();
  CHECK(m.event == altered.event);
  CHECK(m.call.starts_with("readback("));
  CHECK(m.actual.find("first at element 3") != std::string::npos);
  CHECK(m.reproduce == fmt::format("vtrace replay altered.vtrace --events {}:{} --runtime "
                                   "reference --check bits",
                                   altered.event, altered.event + 1));
  CHECK(report.to_json()["first_mismatch"]["event"] == altered.event);
  CHECK(report.to_json()["verdict"] == "mismatch");
}

TEST_CASE("ulp:1 accepts a readback one ULP away and bits rejects it", "[replayer]") {
  ScratchDir dir("replayer-ulp");
  vtrace::test::record_workload(vtrace::test::small_decode_spec(), dir / "decode.vtrace");
  // Stepping the magnitude by one is one ULP for any finite, non-maximal value.
  vtrace::test::rewrite_with_altered_readback(
      dir / "decode.vtrace", dir / "ulp.vtrace",
      [](std::uint16_t v) { return static_cast<std::uint16_t>((v & 0x7FFF) == 0 ? v : v - 1); },
      1);
  rp::ReplayOptions ulp1;
  ulp1.check = rp::CheckMode::ulp(1);
  CHECK(replay(dir / "ulp.vtrace", ulp1).matched());
  rp::ReplayOptions ulp0;
  ulp0.check = rp::CheckMode::ulp(0);
  CHECK_FALSE(replay(dir / "ulp.vtrace", ulp0).matched());
  CHECK_FALSE(replay(dir / "ulp.vtrace").matched());
  rp::ReplayOptions none;
  none.check = rp::CheckMode::none();
  const auto unchecked = replay(dir / "ulp.vtrace", none);
  CHECK(unchecked.matched());
  CHECK(unchecked.checked.readbacks == 0);
}

TEST_CASE("an event range checks only its events but executes everything before them",
          "[replayer]") {
  ScratchDir dir("replayer-range");
  vtrace::test::record_workload(vtrace::test::small_decode_spec(), dir / "decode.vtrace");
  const auto altered = vtrace::test::rewrite_with_altered_readback(
      dir / "decode.vtrace", dir / "altered.vtrace",
      [](std::uint16_t v) { return static_cast<std::uint16_t>(v ^ 0x8000); });
  rp::ReplayOptions only;
  only.first_event = altered.event;
  only.end_event = altered.event + 1;
  const auto hit = replay(dir / "altered.vtrace", only);
  CHECK(hit.events == 1);
  CHECK(hit.executed == altered.event + 1);
  CHECK(hit.checked.readbacks == 1);
  CHECK(hit.mismatch_count == 1);
  rp::ReplayOptions before;
  before.end_event = altered.event;
  CHECK(replay(dir / "altered.vtrace", before).matched());
}

TEST_CASE("an unreadable trace is a trace failure, not a crash", "[replayer]") {
  ScratchDir dir("replayer-unreadable");
  {
    std::FILE* f = std::fopen((dir / "junk.vtrace").c_str(), "wb");
    REQUIRE(f != nullptr);
    std::fputs("this is not a trace", f);
    std::fclose(f);
  }
  auto report = rp::replay_trace(dir / "junk.vtrace", {}, vtrace::runtime::default_registry());
  REQUIRE_FALSE(report.has_value());
  CHECK(report.error().kind == rp::ReplayFailure::Kind::kTrace);
  auto missing = rp::replay_trace(dir / "absent.vtrace", {}, vtrace::runtime::default_registry());
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error().kind == rp::ReplayFailure::Kind::kTrace);
}

TEST_CASE("an unknown runtime is reported as unavailable", "[replayer]") {
  const auto trace = std::filesystem::path(VTRACE_SOURCE_DIR) / "traces" / "tiny.vtrace";
  auto report = rp::replay_trace(trace, {"no-such-runtime", {}}, vtrace::runtime::default_registry());
  REQUIRE_FALSE(report.has_value());
  CHECK(report.error().kind == rp::ReplayFailure::Kind::kRuntimeUnavailable);
  CHECK(report.error().message.find("no-such-runtime") != std::string::npos);
}

TEST_CASE("the golden traces replay on reference", "[replayer]") {
  for (const char* name : {"tiny", "decode-short", "contract"}) {
    INFO(name);
    const auto report =
        replay(std::filesystem::path(VTRACE_SOURCE_DIR) / "traces" / (std::string(name) + ".vtrace"));
    CHECK(report.matched());
    CHECK(report.checked.readbacks > 0);
  }
}

TEST_CASE("the replay plan refuses a trace that names a buffer before creating it",
          "[replayer]") {
  ScratchDir dir("replayer-plan");
  const auto golden = std::filesystem::path(VTRACE_SOURCE_DIR) / "traces" / "tiny.vtrace";
  auto reader = vtrace::schema::TraceReader::open(golden);
  REQUIRE(reader.has_value());
  auto sink = vtrace::schema::open_file_sink(dir / "broken.vtrace");
  REQUIRE(sink.has_value());
  auto writer = vtrace::schema::TraceWriter::create(std::move(*sink), (*reader)->header());
  REQUIRE(writer.has_value());
  std::optional<std::uint64_t> patched;
  REQUIRE((*reader)
              ->visit_events(0, (*reader)->event_count(),
                             [&](std::uint64_t ordinal, std::span<const std::uint8_t> bytes) {
                               std::vector<std::uint8_t> copy(bytes.begin(), bytes.end());
                               const auto* e = vtrace::schema::event_of(copy);
                               if (const auto* z = e->body_as_EncodeZero(); z && !patched) {
                                 // ObjectRef starts with its little-endian u64 ordinal.
                                 const auto at = static_cast<std::size_t>(
                                     reinterpret_cast<const std::uint8_t*>(z->destination()) -
                                     copy.data());
                                 copy[at] = 99;
                                 patched = ordinal;
                               }
                               if (const auto* u = e->body_as_EncodeUpload()) {
                                 auto blob = (*reader)->blob(vtrace::schema::from_fb(*u->payload()));
                                 REQUIRE(blob.has_value());
                                 REQUIRE((*writer)->put_blob(*blob, 1).has_value());
                               }
                               return (*writer)->append_event(copy).has_value();
                             })
              .has_value());
  REQUIRE(patched.has_value());
  REQUIRE((*writer)->close((*reader)->summary()).has_value());

  auto broken = vtrace::schema::TraceReader::open(dir / "broken.vtrace");
  REQUIRE(broken.has_value());
  auto plan = rp::ReplayPlan::build(**broken);
  REQUIRE_FALSE(plan.has_value());
  CHECK(plan.error().message.find(fmt::format("event {}", *patched)) != std::string::npos);
  CHECK(plan.error().message.find("buffer#99 before any event created it") != std::string::npos);
}
