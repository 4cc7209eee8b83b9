// Traces across runtimes: recorded on one runtime, replayed on another. Everything the contract
// fixes must match between reference and cpu; cpu-splitk drifts and replay names where; what may
// differ between runtimes is reported as information; a trace that needs more device memory than
// the target has is refused before it runs.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <fstream>
#include <iterator>

#include "trace_fixtures.h"
#include "vtrace/replayer/replay_target.h"
#include "vtrace/replayer/replay_trace.h"
#include "vtrace/runtime/registry.h"
#include "vtrace/schema/trace_reader.h"
#include "vtrace/workloads/decode_workload.h"

namespace rp = vtrace::replayer;
namespace rt = vtrace::runtime;
namespace wl = vtrace::workloads;
using vtrace::test::ScratchDir;

namespace {

std::expected<rp::ReplayReport, rp::ReplayFailure> try_replay(
    const std::filesystem::path& trace, const std::string& runtime,
    rt::RuntimeOpenOptions open = {}) {
  rp::ReplayTraceOptions options;
  options.runtime = runtime;
  options.open = std::move(open);
  return rp::replay_trace(trace, options, rt::default_registry());
}

rp::ReplayReport replay_on(const std::filesystem::path& trace, const std::string& runtime) {
  auto report = try_replay(trace, runtime);
  INFO((report ? std::string() : report.error().message));
  REQUIRE(report.has_value());
  return *report;
}

// A decode whose reductions are longer than one split-k block (in = 1024, four blocks, for the
// down projection).
wl::WorkloadSpec long_decode_spec() {
  wl::WorkloadSpec spec = vtrace::test::small_decode_spec();
  spec.decode.hidden = 48;
  spec.decode.ffn = 1024;
  return spec;
}

std::vector<char> file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("every workload recorded on reference or cpu replays bit for bit on reference and cpu",
          "[replayer][cross-runtime]") {
  ScratchDir dir("cross-runtime");
  for (const std::string recorded_on : {"reference", "cpu"}) {
    for (auto kind : wl::all_workload_kinds()) {
      wl::WorkloadSpec spec = kind == wl::WorkloadKind::kDecode ? long_decode_spec()
                                                                : wl::WorkloadSpec{};
      spec.kind = kind;
      const auto path =
          dir / fmt::format("{}-{}.vtrace", wl::workload_name(kind), recorded_on);
      const auto recorded = vtrace::test::record_workload(spec, path, recorded_on);
      for (const std::string replayed_on : {"reference", "cpu"}) {
        INFO(wl::workload_name(kind) << " recorded on " << recorded_on << ", replayed on "
                                     << replayed_on);
        const auto report = replay_on(path, replayed_on);
        CHECK(report.matched());
        CHECK(report.runtime == replayed_on);
        CHECK(report.checked.readbacks == recorded.readbacks);
        CHECK(report.checked.counter_snapshots > 0);
        // The legitimate differences are information, said once, and only across runtimes.
        if (recorded_on == replayed_on) {
          CHECK(report.runtime_differences.empty());
        } else {
          REQUIRE_FALSE(report.runtime_differences.empty());
          CHECK(report.runtime_differences.front() ==
                fmt::format("recorded on runtime `{}`, replayed on `{}`", recorded_on,
                            replayed_on));
          CHECK(report.to_json().at("runtime_differences").size() ==
                report.runtime_differences.size());
        }
      }
    }
  }
}

TEST_CASE("a decode trace replays on cpu-splitk as a named readback mismatch", "[replayer][cross-runtime]") {
  ScratchDir dir("cross-runtime-splitk");
  for (const std::string recorded_on : {"reference", "cpu"}) {
    const auto path = dir / (recorded_on + ".vtrace");
    vtrace::test::record_workload(long_decode_spec(), path, recorded_on);
    const auto report = replay_on(path, "cpu-splitk");
    INFO("recorded on " << recorded_on);
    CHECK_FALSE(report.matched());
    REQUIRE_FALSE(report.mismatches.empty());
    const auto& first = report.mismatches.front();
    // Only outputs drift: every call outcome, attribution row and counter still agrees.
    CHECK(first.call.starts_with("readback("));
    CHECK(first.actual.find("differ") != std::string::npos);
    CHECK(first.reproduce.find("--runtime cpu-splitk") != std::string::npos);
    for (const auto& m : report.mismatches) CHECK(m.call.starts_with("readback("));
  }
}

TEST_CASE("a short-reduction trace replays on cpu-splitk bit for bit (one block is the reference order)",
          "[replayer][cross-runtime]") {
  ScratchDir dir("cross-runtime-short");
  const auto path = dir / "short.vtrace";
  vtrace::test::record_workload(vtrace::test::small_decode_spec(), path, "reference");
  CHECK(replay_on(path, "cpu-splitk").matched());
}

TEST_CASE("the same workload recorded twice on cpu gives identical bytes", "[replayer][cross-runtime]") {
  ScratchDir dir("cross-runtime-determinism");
  wl::WorkloadSpec spec = long_decode_spec();
  vtrace::test::record_workload(spec, dir / "a.vtrace", "cpu");
  vtrace::test::record_workload(spec, dir / "b.vtrace", "cpu");
  const auto a = file_bytes(dir / "a.vtrace");
  CHECK(a.size() > 0);
  CHECK(a == file_bytes(dir / "b.vtrace"));
}

TEST_CASE("replay gives the runtime the recorded capacity unless told otherwise, and refuses a target too small",
          "[replayer][cross-runtime]") {
  ScratchDir dir("cross-runtime-capacity");
  const auto path = dir / "decode.vtrace";
  const wl::WorkloadSpec spec = vtrace::test::small_decode_spec();
  vtrace::test::record_workload(spec, path, "reference");

  auto reader = vtrace::schema::TraceReader::open(path);
  REQUIRE(reader.has_value());
  auto plan = rp::ReplayPlan::build(**reader);
  REQUIRE(plan.has_value());
  // Every buffer of the decode workload is alive at the end: the peak is all of them.
  const rp::CapacityNeed need = rp::peak_admitted_bytes(*plan);
  CHECK(need.bytes == wl::decode_device_bytes(spec.decode));
  REQUIRE(rp::recorded_device(*plan) != nullptr);
  CHECK(rp::recorded_device(*plan)->descriptor.total_memory_bytes ==
        64ull * 1024 * 1024);

  // The workload itself refuses a shape its device cannot hold, before generating weights.
  {
    auto small = rt::default_registry().open("reference", {.device_memory_bytes = need.bytes - 1});
    REQUIRE(small.has_value());
    auto refused = wl::run_workload(spec, **small, nullptr);
    REQUIRE_FALSE(refused.has_value());
    CHECK_THAT(refused.error().message,
               Catch::Contains(fmt::format("pass --device-memory {} or more", need.bytes)));
  }
  // cpu defaults to 4 GiB, but replay opens it with the recorded 64 MiB: nothing to report.
  const auto on_cpu = replay_on(path, "cpu");
  CHECK(on_cpu.matched());
  for (const auto& note : on_cpu.runtime_differences) {
    CHECK(note.find("device memory") == std::string::npos);
  }
  // An explicit capacity is used and reported as a difference.
  auto bigger = try_replay(path, "cpu", {.device_memory_bytes = 128ull * 1024 * 1024});
  REQUIRE(bigger.has_value());
  CHECK(bigger->matched());
  bool said = false;
  for (const auto& note : bigger->runtime_differences) {
    said = said || note.starts_with("device memory: recorded 67108864 bytes");
  }
  CHECK(said);
  // One byte less than the peak: refused before anything runs, in one sentence.
  for (const std::string target : {"reference", "cpu"}) {
    auto refused = try_replay(path, target, {.device_memory_bytes = need.bytes - 1});
    REQUIRE_FALSE(refused.has_value());
    CHECK(refused.error().kind == rp::ReplayFailure::Kind::kRuntimeUnavailable);
    CHECK_THAT(refused.error().message,
               Catch::Contains(fmt::format("holds {} bytes", need.bytes)) &&
                   Catch::Contains(fmt::format("(event {})", need.event)) &&
                   Catch::Contains("--device-memory") && Catch::Contains(path.string()));
    // Exactly the peak is enough.
    auto exact = try_replay(path, target, {.device_memory_bytes = need.bytes});
    REQUIRE(exact.has_value());
    CHECK(exact->matched());
  }
}
