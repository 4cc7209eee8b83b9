// The lockstep comparison (vtrace/drift/lockstep.h) on real traces: bit-exact runtimes match,
// cpu-splitk drifts and is named, --deep finds the first divergent dense linear without turning
// its reads into counter differences, a runtime that answers differently is structural, and the
// usage errors say what is wrong.
#include "vtrace/drift/lockstep.h"

#include <fmt/format.h>

#include <catch2/catch.hpp>

#include "trace_fixtures.h"
#include "vtrace/runtime/forwarding_runtime.h"
#include "vtrace/runtime/registry.h"

namespace dr = vtrace::drift;
namespace rp = vtrace::replayer;
namespace rt = vtrace::runtime;
namespace wl = vtrace::workloads;
using vtrace::test::ScratchDir;

namespace {

std::filesystem::path golden(const char* name) {
  return std::filesystem::path(VTRACE_SOURCE_DIR) / "traces" / name;
}

// A decode whose reductions are longer than one 256-long split-k block (ffn 1024).
std::filesystem::path record_long_decode(const ScratchDir& dir) {
  wl::WorkloadSpec spec = vtrace::test::small_decode_spec();
  spec.decode.hidden = 48;
  spec.decode.ffn = 1024;
  const auto path = dir / "decode.vtrace";
  (void)vtrace::test::record_workload(spec, path, "reference");
  return path;
}

dr::CompareReport compare(const std::filesystem::path& trace, std::vector<std::string> runtimes,
                          bool deep = false, const char* check = "bits",
                          const rt::RuntimeRegistry& registry = rt::default_registry()) {
  dr::CompareOptions options;
  options.runtimes = std::move(runtimes);
  options.deep = deep;
  options.check = *dr::parse_drift_check(check);
  auto report = dr::compare_trace(trace, options, registry);
  INFO((report ? std::string() : report.error().message));
  REQUIRE(report.has_value());
  return std::move(*report);
}

}  // namespace

TEST_CASE("reference and cpu match in lockstep on every golden trace, deep or not", "[drift]") {
  for (const char* name : {"decode-short-v1.2.vtrace", "contract-v1.2.vtrace", "tiny.vtrace"}) {
    for (const bool deep : {false, true}) {
      INFO(name << (deep ? " --deep" : ""));
      const auto r = compare(golden(name), {"reference", "cpu"}, deep);
      CHECK(r.verdict() == "match");
      CHECK(r.structural.empty());
      CHECK_FALSE(r.first_divergence.has_value());
      CHECK(r.commands.size() > 0);
      for (const auto& c : r.commands) {
        REQUIRE(c.results.size() == 1);
        CHECK(c.results[0].cls == dr::DriftClass::kBitwise);
      }
      // And the baseline agrees with the recording (recorded on reference).
      CHECK(r.vs_recording.empty());
    }
  }
}

TEST_CASE(
    "cpu-splitk drifts on a long reduction: the first divergent readback, then with --deep "
    "the first divergent dense linear",
    "[drift]") {
  ScratchDir dir("drift-splitk");
  const auto trace = record_long_decode(dir);
  const auto shallow = compare(trace, {"reference", "cpu-splitk"});
  CHECK(shallow.verdict() == "drift");
  CHECK(shallow.structural.empty());
  REQUIRE(shallow.first_divergence.has_value());
  CHECK(shallow.first_divergence->kind == "Readback");
  CHECK(shallow.first_divergence->runtime == "cpu-splitk");
  CHECK_FALSE(shallow.first_divergence->command.has_value());

  const auto deep = compare(trace, {"reference", "cpu-splitk"}, true);
  CHECK(deep.verdict() == "drift");
  // The private reads of --deep move no counter the product's snapshots are compared on.
  CHECK(deep.structural.empty());
  REQUIRE(deep.first_divergence.has_value());
  CHECK(deep.first_divergence->kind == "EncodeDenseLinear");
  REQUIRE(deep.first_divergence->command.has_value());
  CHECK(deep.first_divergence->event < shallow.first_divergence->event);
  CHECK(deep.commands.size() > shallow.commands.size());
  // The divergent command's entry: a dense linear over k = 1024, with its node and statistics.
  const dr::CommandComparison* first = nullptr;
  for (const auto& c : deep.commands) {
    if (!c.agrees) {
      first = &c;
      break;
    }
  }
  REQUIRE(first != nullptr);
  CHECK(first->event == deep.first_divergence->event);
  CHECK(first->node_index.has_value());
  CHECK(first->shapes.find("x1024x") != std::string::npos);
  CHECK(first->results[0].stats.differing > 0);
  CHECK(first->results[0].stats.max_ulp > 0);
  // Every command before it agrees, and uploads are bitwise everywhere.
  for (const auto& c : deep.commands) {
    if (c.order >= first->order) break;
    CHECK(c.agrees);
  }
  // Under a loose tolerance the same drift agrees.
  const auto loose = compare(trace, {"reference", "cpu-splitk"}, true, "tol:1,1");
  CHECK(loose.verdict() == "match");

  // Three runtimes: the bit-exact one agrees everywhere, the drifting one is named.
  const auto three = compare(trace, {"reference", "cpu", "cpu-splitk"}, true);
  REQUIRE(three.first_divergence.has_value());
  CHECK(three.first_divergence->runtime == "cpu-splitk");
  for (const auto& c : three.commands) {
    REQUIRE(c.results.size() == 2);
    CHECK(c.results[0].runtime == "cpu");
    CHECK(c.results[0].agrees);
  }
  const auto json = deep.to_json();
  for (const char* key :
       {"trace", "runtimes", "check", "events", "commands_compared", "first_divergence", "commands",
        "verdict", "structural", "vs_recording"}) {
    INFO(key);
    CHECK(json.contains(key));
  }
  CHECK(json["first_divergence"]["kind"] == "EncodeDenseLinear");
  CHECK(json["commands_compared"] == deep.commands.size());
  CHECK(json["commands"][0].contains("runtimes"));
}

TEST_CASE("a runtime that answers a call differently is a structural difference", "[drift]") {
  // cpu, except that every readback of more than 4 bytes fails.
  class Refusing final : public rt::ForwardingRuntime {
   public:
    using ForwardingRuntime::ForwardingRuntime;
    rt::Result<std::vector<std::uint8_t>> readback(rt::Stream& stream, const rt::Buffer& source,
                                                   const rt::CopyRegion& region,
                                                   const rt::HostTransferLayout& layout) override {
      if (region.length_bytes() > 4) {
        return std::unexpected(rt::RuntimeError(rt::ErrorKind::kUnsupportedOperation, "refused"));
      }
      return ForwardingRuntime::readback(stream, source, region, layout);
    }
  };
  rt::RuntimeRegistry registry;
  registry.add("reference", "reference", [](const rt::RuntimeOpenOptions& o) {
    return rt::default_registry().open("reference", o);
  });
  registry.add(
      "refusing", "cpu, refusing readbacks",
      [](const rt::RuntimeOpenOptions& o) -> rt::Result<std::unique_ptr<rt::DeviceRuntime>> {
        auto inner = rt::default_registry().open("cpu", o);
        if (!inner) return std::unexpected(inner.error());
        return std::unique_ptr<rt::DeviceRuntime>(std::make_unique<Refusing>(std::move(*inner)));
      });
  const auto r = compare(golden("decode-short-v1.2.vtrace"), {"reference", "refusing"}, false,
                         "bits", registry);
  CHECK(r.verdict() == "structural");
  REQUIRE_FALSE(r.structural.empty());
  CHECK(r.structural[0].kind == "outcome");
  CHECK(r.structural[0].runtime == "refusing");
  CHECK(r.structural[0].against == "reference");
  REQUIRE(r.first_divergence.has_value());
  CHECK(r.first_divergence->cls == dr::DriftClass::kStructural);
  CHECK(r.first_divergence->kind == "Readback");
}

TEST_CASE("compare refuses fewer than two runtimes, an unknown runtime and an unreadable trace",
          "[drift]") {
  dr::CompareOptions options;
  options.runtimes = {"reference"};
  auto one = dr::compare_trace(golden("tiny.vtrace"), options, rt::default_registry());
  REQUIRE_FALSE(one.has_value());
  CHECK(one.error().kind == rp::ReplayFailure::Kind::kUsage);
  CHECK(one.error().message.find("at least two runtimes") != std::string::npos);
  options.runtimes = {"reference", "no-such-runtime"};
  auto unknown = dr::compare_trace(golden("tiny.vtrace"), options, rt::default_registry());
  REQUIRE_FALSE(unknown.has_value());
  CHECK(unknown.error().kind == rp::ReplayFailure::Kind::kRuntimeUnavailable);
  CHECK(unknown.error().message.find("no-such-runtime") != std::string::npos);
  auto missing = dr::compare_trace("/nonexistent/x.vtrace", options, rt::default_registry());
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error().kind == rp::ReplayFailure::Kind::kTrace);
}

TEST_CASE(
    "replay --repeat: runs of a deterministic runtime are identical, and a runtime made "
    "nondeterministic on purpose is caught at its first event",
    "[drift]") {
  const auto trace = golden("decode-short-v1.2.vtrace");
  auto same = dr::repeat_trace(trace, "cpu", 3, {}, rt::default_registry());
  REQUIRE(same.has_value());
  CHECK(same->matched());
  CHECK(same->runtimes == std::vector<std::string>{"cpu#1", "cpu#2", "cpu#3"});
  CHECK(same->deep);

  // cpu, except that every second readback in the process (a counter shared by all instances,
  // like a reduction order that depends on timing) comes back with its lowest bit flipped.
  class Flaky final : public rt::ForwardingRuntime {
   public:
    using ForwardingRuntime::ForwardingRuntime;
    rt::Result<std::vector<std::uint8_t>> readback(rt::Stream& stream, const rt::Buffer& source,
                                                   const rt::CopyRegion& region,
                                                   const rt::HostTransferLayout& layout) override {
      auto bytes = ForwardingRuntime::readback(stream, source, region, layout);
      static unsigned calls = 0;
      if (bytes && !bytes->empty() && (++calls % 2) == 0) (*bytes)[0] ^= 1;
      return bytes;
    }
  };
  rt::RuntimeRegistry registry;
  registry.add(
      "flaky", "cpu, flipping a bit of every second readback",
      [](const rt::RuntimeOpenOptions& o) -> rt::Result<std::unique_ptr<rt::DeviceRuntime>> {
        auto inner = rt::default_registry().open("cpu", o);
        if (!inner) return std::unexpected(inner.error());
        return std::unique_ptr<rt::DeviceRuntime>(std::make_unique<Flaky>(std::move(*inner)));
      });
  auto flaky = dr::repeat_trace(trace, "flaky", 2, {}, registry);
  REQUIRE(flaky.has_value());
  CHECK_FALSE(flaky->matched());
  REQUIRE(flaky->first_divergence.has_value());
  CHECK(flaky->first_divergence->runtime == "flaky#2");
  // The first region compared (--deep) already differs: the first upload of the first batch.
  REQUIRE_FALSE(flaky->commands.empty());
  CHECK(flaky->first_divergence->event == flaky->commands.front().event);

  auto one = dr::repeat_trace(trace, "cpu", 1, {}, rt::default_registry());
  REQUIRE_FALSE(one.has_value());
  CHECK(one.error().kind == rp::ReplayFailure::Kind::kUsage);
}

TEST_CASE(
    "diff: two recordings of one workload align event by event; drift and structural "
    "differences are named",
    "[drift]") {
  ScratchDir dir("drift-diff");
  wl::WorkloadSpec spec = vtrace::test::small_decode_spec();
  spec.decode.hidden = 48;
  spec.decode.ffn = 1024;
  for (const char* runtime : {"reference", "cpu", "cpu-splitk"}) {
    (void)vtrace::test::record_workload(spec, dir / fmt::format("{}.vtrace", runtime), runtime);
  }
  const auto bits = *dr::parse_drift_check("bits");
  auto diff = [&](const std::filesystem::path& a, const std::filesystem::path& b,
                  const dr::DriftCheck& check) {
    auto r = dr::diff_traces(a, b, check, "a", "b");
    INFO((r ? std::string() : r.error().message));
    REQUIRE(r.has_value());
    return std::move(*r);
  };
  const auto same = diff(dir / "reference.vtrace", dir / "cpu.vtrace", bits);
  CHECK(same.verdict() == "match");
  CHECK(same.commands.size() == spec.decode.steps);

  const auto drifted = diff(dir / "reference.vtrace", dir / "cpu-splitk.vtrace", bits);
  CHECK(drifted.verdict() == "drift");
  CHECK(drifted.structural.empty());
  REQUIRE(drifted.first_divergence.has_value());
  CHECK(drifted.first_divergence->kind == "Readback");
  CHECK(drifted.first_divergence->runtime == "b");
  CHECK(diff(dir / "reference.vtrace", dir / "cpu-splitk.vtrace", *dr::parse_drift_check("tol:1,1"))
            .verdict() == "match");

  // The same calls in formats 1.1 (OptionalCall) and 1.2 (one kind per method) are the same.
  CHECK(diff(golden("contract-optional-v1.1.vtrace"), golden("contract-v1.2.vtrace"), bits)
            .verdict() == "match");

  // Different workloads: structural, first at the first call with other arguments.
  const auto other = diff(golden("tiny.vtrace"), golden("decode-short.vtrace"), bits);
  CHECK(other.verdict() == "structural");
  REQUIRE(other.first_divergence.has_value());
  CHECK(other.first_divergence->cls == dr::DriftClass::kStructural);
  CHECK(other.first_divergence->kind == "Admit");
  REQUIRE_FALSE(other.structural.empty());
  CHECK(other.structural[0].kind == "call");

  auto missing = dr::diff_traces(golden("tiny.vtrace"), dir / "none.vtrace", bits, "a", "b");
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error().kind == rp::ReplayFailure::Kind::kTrace);
}
