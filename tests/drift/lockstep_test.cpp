// The lockstep comparison (vtrace/drift/lockstep.h) on real traces: bit-exact runtimes match,
// cpu-splitk drifts and is named, --deep finds the first divergent dense linear without turning
// its reads into counter differences, a runtime that answers differently is structural, and the
// usage errors say what is wrong.
#include "vtrace/drift/lockstep.h"

#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <functional>
#include <random>

#include "support/flaky_runtime.h"
#include "vtrace/drift/command_effects.h"
#include "vtrace/runtime/f16.h"
#include "vtrace/runtime/immediate.h"
#include "trace_fixtures.h"
#include "vtrace/recorder/recording_runtime.h"
#include "vtrace/runtime/forwarding_runtime.h"
#include "vtrace/runtime/registry.h"

namespace dr = vtrace::drift;
namespace rp = vtrace::replayer;
namespace rt = vtrace::runtime;
namespace wl = vtrace::workloads;
using vtrace::test::f16_buffer;
using vtrace::test::record_calls;
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
                          const rt::RuntimeRegistry& registry = rt::default_registry(),
                          bool resync = false) {
  dr::CompareOptions options;
  options.runtimes = std::move(runtimes);
  options.deep = deep;
  options.resync = resync;
  options.check = *dr::parse_drift_check(check);
  auto report = dr::compare_trace(trace, options, registry);
  INFO((report ? std::string() : report.error().message));
  REQUIRE(report.has_value());
  return std::move(*report);
}

void submit_and_wait(rt::DeviceRuntime& r, rt::Stream& stream, rt::CommandBatch batch) {
  auto fence = r.submit(stream, std::move(batch));
  REQUIRE(fence.has_value());
  REQUIRE(r.wait_fence(**fence).has_value());
}

// Runtimes whose static weight transform is a copy of the whole source: a command --deep cannot
// encode again (its effects are the runtime's), so a batch holding one is compared as a whole,
// after it ran. "reference" and "cpu", transforming so.
rt::RuntimeRegistry transforming_registry() {
  class Transforming final : public rt::ForwardingRuntime {
   public:
    using ForwardingRuntime::ForwardingRuntime;
    std::optional<rt::Result<rt::CommandPtr>> encode_static_weight_transform(
        const rt::StaticWeightTransformRequest& request) override {
      const auto bytes = buffer_descriptor(*request.destination).size_bytes;
      auto region = rt::CopyRegion::create(0, 0, bytes);
      return encode_copy(*request.source, *request.destination, *region);
    }
  };
  rt::RuntimeRegistry registry;
  for (const char* name : {"reference", "cpu"}) {
    registry.add(
        name, "transforming", [name](const rt::RuntimeOpenOptions& o)
                                  -> rt::Result<std::unique_ptr<rt::DeviceRuntime>> {
          auto inner = rt::default_registry().open(name, o);
          if (!inner) return std::unexpected(inner.error());
          return std::unique_ptr<rt::DeviceRuntime>(
              std::make_unique<Transforming>(std::move(*inner)));
        });
  }
  return registry;
}

}  // namespace

TEST_CASE("reference and cpu match in lockstep on every golden trace, deep or not", "[drift]") {
  for (const char* name : {"decode-short-v1.2.vtrace", "contract-v1.2.vtrace", "tiny.vtrace"}) {
    for (const int mode : {0, 1, 2}) {
      const bool deep = mode > 0;
      const bool resync = mode == 2;
      INFO(name << (deep ? " --deep" : "") << (resync ? " --resync" : ""));
      const auto r =
          compare(golden(name), {"reference", "cpu"}, deep, "bits", rt::default_registry(), resync);
      // Every batch of these traces runs command by command.
      CHECK(r.batches_after_submit == 0);
      CHECK(r.deep_regions_overwritten == 0);
      CHECK_FALSE(r.first_introduced.has_value());
      CHECK(r.verdict() == "match");
      CHECK(r.structural.empty());
      CHECK_FALSE(r.first_divergence.has_value());
      CHECK(r.commands.size() > 0);
      for (const auto& c : r.commands) {
        REQUIRE(c.results.size() == 1);
        CHECK(c.results[0].cls == dr::DriftClass::kBitwise);
        CHECK(c.introduced.size() == (resync && c.command ? 1U : 0U));
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
  // The decode's dense linears carry their logical work: 3 participants.
  CHECK(std::any_of(deep.commands.begin(), deep.commands.end(),
                    [](const dr::CommandComparison& c) { return c.participants == 3; }));
  // Command by command: the first down projection of the first step already differs, although
  // the batch's second layer overwrites the region it wrote (the activations ping-pong).
  for (const auto& c : deep.commands) {
    if (c.order >= first->order) break;
    CHECK(c.shapes.find("x1024x") == std::string::npos);
  }
  CHECK(deep.batches_after_submit == 0);
  CHECK(deep.deep_regions_overwritten == 0);
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

TEST_CASE(
    "the first divergence names the region that diverged when one command is compared as "
    "several",
    "[drift]") {
  // Two participants of different token counts: the head projection (k = 272, past one 256-long
  // split-k block) is one command with a launch per participant, compared as one region each.
  // The first participant's rows agree and the second's drift.
  ScratchDir dir("drift-regions");
  wl::WorkloadSpec spec = vtrace::test::small_decode_spec();
  spec.seed = 2;
  spec.decode.hidden = 272;
  spec.decode.ffn = 16;
  spec.decode.layers = 1;
  spec.decode.participants = 2;
  spec.decode.steps = 4;
  const auto trace = dir / "regions.vtrace";
  (void)vtrace::test::record_workload(spec, trace, "reference");
  const auto deep = compare(trace, {"reference", "cpu-splitk"}, true);
  REQUIRE(deep.first_divergence.has_value());
  const auto& f = *deep.first_divergence;
  const auto first = std::find_if(deep.commands.begin(), deep.commands.end(),
                                  [](const dr::CommandComparison& c) { return !c.agrees; });
  REQUIRE(first != deep.commands.end());
  // The case this guards: an earlier entry of the same event and command that agrees.
  const auto same_command = std::find_if(deep.commands.begin(), first, [&](const auto& c) {
    return c.event == first->event && c.command == first->command;
  });
  REQUIRE(same_command != first);
  CHECK(same_command->region != first->region);
  CHECK(f.event == first->event);
  CHECK(f.order == first->order);
  CHECK(deep.command_of(f) == &*first);
  CHECK(deep.to_json()["first_divergence"]["ordinal"] == first->order);
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

  // Three runtimes, the middle one answering no readback: every compared readback still has one
  // result per runtime after the baseline, in order (the HTML report's columns are by position).
  registry.add("cpu", "cpu", [](const rt::RuntimeOpenOptions& o) {
    return rt::default_registry().open("cpu", o);
  });
  const auto three = compare(golden("decode-short-v1.2.vtrace"), {"reference", "refusing", "cpu"},
                             false, "bits", registry);
  REQUIRE_FALSE(three.commands.empty());
  bool refused = false;
  for (const auto& c : three.commands) {
    INFO("event " << c.event);
    REQUIRE(c.results.size() == 2);
    CHECK(c.results[0].runtime == "refusing");
    CHECK(c.results[1].runtime == "cpu");
    CHECK(c.results[1].cls == dr::DriftClass::kBitwise);  // cpu matches reference
    if (c.results[0].cls == dr::DriftClass::kStructural) {
      refused = true;
      CHECK_FALSE(c.results[0].agrees);
      CHECK(c.results[0].note.find("no readback") != std::string::npos);
    }
  }
  CHECK(refused);
  CHECK(three.to_json()["commands"][0]["runtimes"].size() == 2);
}

TEST_CASE("compare refuses fewer than two runtimes, an unknown runtime and an unreadable trace",
          "[drift]") {
  dr::CompareOptions options;
  options.runtimes = {"reference"};
  auto one = dr::compare_trace(golden("tiny.vtrace"), options, rt::default_registry());
  REQUIRE_FALSE(one.has_value());
  CHECK(one.error().kind == rp::ReplayFailure::Kind::kUsage);
  // Worded for a library caller, who has no --runtimes option.
  CHECK(one.error().message ==
        "compare needs at least two runtimes (the first is the baseline); got 1");
  options.runtimes = {"reference", "no-such-runtime"};
  auto unknown = dr::compare_trace(golden("tiny.vtrace"), options, rt::default_registry());
  REQUIRE_FALSE(unknown.has_value());
  CHECK(unknown.error().kind == rp::ReplayFailure::Kind::kRuntimeUnavailable);
  CHECK(unknown.error().message.find("no-such-runtime") != std::string::npos);
  auto missing = dr::compare_trace("/nonexistent/x.vtrace", options, rt::default_registry());
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error().kind == rp::ReplayFailure::Kind::kTrace);
  // A runtime named twice: the report keys results by runtime, one answer would be lost.
  options.runtimes = {"cpu", "cpu", "reference"};
  auto twice = dr::compare_trace(golden("tiny.vtrace"), options, rt::default_registry());
  REQUIRE_FALSE(twice.has_value());
  CHECK(twice.error().kind == rp::ReplayFailure::Kind::kUsage);
  CHECK(twice.error().message.find("names cpu twice") != std::string::npos);
  // Labels tell runs of one runtime apart (replay --repeat).
  options.runtimes = {"cpu", "cpu"};
  options.labels = {"cpu#1", "cpu#2"};
  CHECK(dr::compare_trace(golden("tiny.vtrace"), options, rt::default_registry()).has_value());
}

TEST_CASE(
    "replay --repeat: runs of a deterministic runtime are identical, and a runtime made "
    "nondeterministic on purpose is caught at its first event",
    "[drift]") {
  const auto trace = golden("decode-short-v1.2.vtrace");
  auto once = dr::repeat_trace(trace, "cpu", 1, {}, rt::default_registry());
  REQUIRE_FALSE(once.has_value());
  CHECK(once.error().kind == rp::ReplayFailure::Kind::kUsage);
  CHECK(once.error().message == "a repeat comparison needs at least 2 runs; got 1");
  auto same = dr::repeat_trace(trace, "cpu", 3, {}, rt::default_registry());
  REQUIRE(same.has_value());
  CHECK(same->matched());
  CHECK(same->runtimes == std::vector<std::string>{"cpu#1", "cpu#2", "cpu#3"});
  CHECK(same->deep);

  // cpu, except that every second readback in the process (one counter for all instances)
  // comes back with its lowest bit flipped.
  auto calls = std::make_shared<unsigned>(0);
  rt::RuntimeRegistry registry;
  registry.add(
      "flaky", "cpu, flipping a bit of every second readback",
      [calls](const rt::RuntimeOpenOptions& o) -> rt::Result<std::unique_ptr<rt::DeviceRuntime>> {
        auto inner = rt::default_registry().open("cpu", o);
        if (!inner) return std::unexpected(inner.error());
        return std::unique_ptr<rt::DeviceRuntime>(
            std::make_unique<vtrace::test::FlakyRuntime>(std::move(*inner), calls));
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
    "diff: two recordings of one workload align event by event, drift and structural "
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
  // Each command's worst class is its one result's; the first divergence's is not bit-exact.
  REQUIRE(drifted.first_divergence->order.has_value());
  for (const auto& c : drifted.commands) {
    REQUIRE(c.results.size() == 1);
    CHECK(c.worst == c.results[0].cls);
  }
  CHECK(drifted.commands[*drifted.first_divergence->order].worst ==
        drifted.first_divergence->cls);
  CHECK(drifted.first_divergence->cls != dr::DriftClass::kBitwise);
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
  // Each entry's ordinal is its index in its own list, with structural differences between
  // them (the JSON's first_divergence.ordinal names an entry of `commands`): the workload split
  // among 2 participants instead of 3 differs in its calls but reads back the same shapes.
  wl::WorkloadSpec three = spec;
  three.decode.participants = 2;
  (void)vtrace::test::record_workload(three, dir / "three.vtrace", "reference");
  const auto split = diff(dir / "reference.vtrace", dir / "three.vtrace", bits);
  REQUIRE_FALSE(split.structural.empty());
  REQUIRE(split.commands.size() > 1);
  for (std::size_t i = 0; i < split.commands.size(); ++i) CHECK(split.commands[i].order == i);
  for (std::size_t i = 0; i < split.structural.size(); ++i) CHECK(split.structural[i].order == i);

  // Calls of other kinds at the same place: the kinds are named, not their arguments.
  const auto stream_first = [](rt::DeviceRuntime& r) {
    REQUIRE(r.create_stream().has_value());
    (void)vtrace::test::f16_buffer(r, "resource.test.kinds", 64);
  };
  const auto buffer_first = [](rt::DeviceRuntime& r) {
    (void)vtrace::test::f16_buffer(r, "resource.test.kinds", 64);
    REQUIRE(r.create_stream().has_value());
  };
  vtrace::test::record_calls(rt::default_registry(), "reference", dir / "stream-first.vtrace",
                             stream_first);
  vtrace::test::record_calls(rt::default_registry(), "reference", dir / "buffer-first.vtrace",
                             buffer_first);
  const auto kinds = diff(dir / "stream-first.vtrace", dir / "buffer-first.vtrace", bits);
  REQUIRE_FALSE(kinds.structural.empty());
  CHECK(kinds.structural[0].event == 1);
  CHECK(kinds.structural[0].kind == "event_kind");
  CHECK(kinds.structural[0].expected == "StreamCreated");
  CHECK(kinds.structural[0].actual == "Admit");

  auto missing = dr::diff_traces(golden("tiny.vtrace"), dir / "none.vtrace", bits, "a", "b");
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error().kind == rp::ReplayFailure::Kind::kTrace);
}

TEST_CASE("a report counts commands per batch, not per compared region", "[drift]") {
  // Entries as compare --resync makes them: command 4 wrote two regions in the batch at event 10
  // (one introduces error) and ran again in the batch at event 20 (it only carries error in
  // there); command 5 agrees; one readback disagrees.
  const auto entry = [](std::optional<std::uint64_t> command, std::uint64_t submit, bool agrees,
                        bool introduces) {
    dr::CommandComparison c;
    c.command = command;
    if (command) c.submit_event = submit;
    c.agrees = agrees;
    c.results.push_back({"b", agrees ? dr::DriftClass::kBitwise : dr::DriftClass::kDrift, agrees,
                         {}, {}});
    if (command) {
      c.introduced.push_back({"b",
                              introduces ? dr::DriftClass::kDrift : dr::DriftClass::kBitwise,
                              !introduces, {}, {}});
    }
    return c;
  };
  dr::CompareReport r;
  r.commands = {entry(4, 10, false, true),  entry(4, 10, false, false),
                entry(5, 10, true, false),  entry(4, 20, false, false),
                entry(std::nullopt, 0, false, false)};
  const auto n = r.counts();
  CHECK(n.results == 5);
  CHECK(n.readbacks == 1);
  CHECK(n.regions == 4);
  CHECK(n.commands == 3);  // (10, 4), (10, 5), (20, 4)
  CHECK(n.commands_disagreeing == 2);
  CHECK(n.commands_introducing == 1);
  CHECK(n.commands_carrying_only == 1);
  const auto json = r.to_json()["counts"];
  CHECK(json["commands"] == 3);
  CHECK(json["regions"] == 4);
  CHECK(json["commands_introducing"] == 1);
  CHECK(json["commands_carrying_only"] == 1);
}

TEST_CASE(
    "compare --resync tells the commands that introduce error from those that only carry it in",
    "[drift]") {
  // cpu-splitk differs from the reference only on reductions longer than one block: the down
  // projections (k = 1024) introduce error, the up projections (k = 48) only carry it.
  ScratchDir dir("drift-resync");
  const auto trace = record_long_decode(dir);
  const auto r = compare(trace, {"reference", "cpu-splitk"}, true, "bits", rt::default_registry(),
                         true);
  CHECK(r.resync);
  CHECK(r.structural.empty());  // the resync writes move no product counter either
  REQUIRE(r.first_introduced.has_value());
  REQUIRE(r.first_divergence.has_value());
  CHECK(r.first_introduced->event == r.first_divergence->event);
  std::uint64_t up_carrying = 0, down_introducing = 0;
  for (const auto& c : r.commands) {
    if (!c.command) {
      CHECK(c.introduced.empty());  // the product's readbacks are not resynced
      continue;
    }
    REQUIRE(c.introduced.size() == 1);
    const auto& introduced = c.introduced[0];
    const auto& carried = c.results[0];
    INFO("event " << c.event << " " << c.shapes);
    if (c.shapes.find("x48x1024") != std::string::npos) {
      CHECK(introduced.cls == dr::DriftClass::kBitwise);
      if (!carried.agrees) ++up_carrying;
    } else if (c.shapes.find("x1024x48") != std::string::npos) {
      if (!introduced.agrees) ++down_introducing;
    } else {
      CHECK(introduced.cls == dr::DriftClass::kBitwise);  // uploads and zeros
    }
  }
  CHECK(up_carrying > 0);
  CHECK(down_introducing > 0);
  const auto json = r.to_json();
  CHECK(json["resync"] == true);
  CHECK(json["deep"] == true);
  for (const char* key :
       {"batches_after_submit", "deep_regions_skipped", "deep_regions_overwritten"}) {
    INFO(key);
    CHECK(json[key] == 0);
  }
  CHECK(json["first_introduced"]["event"] == r.first_introduced->event);
  bool keyed = false;
  for (const auto& c : json["commands"]) {
    if (c["command"].is_null()) {
      CHECK_FALSE(c.contains("introduced"));
      continue;
    }
    REQUIRE(c.contains("introduced"));
    REQUIRE(c.contains("inherited"));
    CHECK(c.contains("introduced_class"));
    CHECK(c["inherited"] == c["runtimes"]);
    keyed = keyed || c["introduced"]["cpu-splitk"]["class"] != c["inherited"]["cpu-splitk"]["class"];
  }
  CHECK(keyed);
  // Without --resync there is nothing introduced.
  const auto plain = compare(trace, {"reference", "cpu-splitk"}, true);
  CHECK_FALSE(plain.first_introduced.has_value());
  CHECK(plain.to_json()["first_introduced"].is_null());
  // The resync writes are put back: every product batch ran on the state it has without them, so
  // each region and readback carries the same drift as under --deep alone.
  REQUIRE(plain.commands.size() == r.commands.size());
  for (std::size_t i = 0; i < r.commands.size(); ++i) {
    INFO("entry " << i << ": event " << r.commands[i].event);
    CHECK(r.commands[i].event == plain.commands[i].event);
    REQUIRE(r.commands[i].results.size() == 1);
    CHECK(r.commands[i].results[0].stats.differing == plain.commands[i].results[0].stats.differing);
    CHECK(r.commands[i].results[0].stats.max_ulp == plain.commands[i].results[0].stats.max_ulp);
  }
}

TEST_CASE(
    "a batch with a command that cannot be run again alone is compared after it ran",
    "[drift]") {
  // A runtime whose static weight transform is a copy of the whole source: a command --deep
  // cannot encode again (its effects are the runtime's), so its batch is compared as a whole.
  const rt::RuntimeRegistry registry = transforming_registry();
  ScratchDir dir("drift-fallback");
  const auto path = dir / "transform.vtrace";
  record_calls(registry, "reference", path, [](rt::DeviceRuntime& r) {
    auto stream = r.create_stream();
    REQUIRE(stream.has_value());
    auto source = f16_buffer(r, "weight.test.source", 64);
    auto target = f16_buffer(r, "weight.test.target", 64);
    std::vector<std::uint8_t> bytes(64);
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::uint8_t>(i + 1);
    auto layout = rt::HostTransferLayout::create(rt::ElementType::kF16, 32);
    auto upload = r.encode_upload(bytes, *layout, *source, 0);
    REQUIRE(upload.has_value());
    auto transform = r.encode_static_weight_transform({source.get(), target.get(), "copy"});
    REQUIRE(transform.has_value());
    REQUIRE(transform->has_value());
    rt::CommandBatch batch;
    batch.push(std::move(*upload));
    batch.push(std::move(**transform));
    submit_and_wait(r, **stream, std::move(batch));
    auto region = rt::CopyRegion::create(0, 0, 64);
    auto read = r.readback(**stream, *target, *region, *layout);
    REQUIRE(read.has_value());
    CHECK(*read == bytes);
  });
  for (const bool resync : {false, true}) {
    INFO((resync ? "--resync" : "--deep"));
    const auto report = compare(path, {"reference", "cpu"}, true, "bits", registry, resync);
    CHECK(report.verdict() == "match");
    CHECK(report.structural.empty());
    CHECK(report.vs_recording.empty());
    CHECK(report.batches_after_submit == 1);
    // The upload's region, compared after the batch; then the product's readback.
    REQUIRE(report.commands.size() == 2);
    CHECK(report.commands[0].kind == "EncodeUpload");
    CHECK(report.commands[0].introduced.empty());
    CHECK(report.commands[1].kind == "Readback");
  }
}

TEST_CASE(
    "compare --deep and --resync put back what they ran: a batch that overwrites its own input "
    "replays "
    "as recorded",
    "[drift]") {
  // Batch 1 uploads A; batch 2 copies A to B, then zeroes A. Run command by command, batch 2
  // leaves A zero: unless A is put back before the product's batch runs, its copy copies zeros.
  ScratchDir dir("drift-restore");
  const auto path = dir / "overwrite.vtrace";
  record_calls(rt::default_registry(), "reference", path, [](rt::DeviceRuntime& r) {
    auto stream = r.create_stream();
    REQUIRE(stream.has_value());
    auto a = f16_buffer(r, "resource.test.a", 64);
    auto b = f16_buffer(r, "resource.test.b", 64);
    std::vector<std::uint8_t> bytes(64);
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::uint8_t>(3 * i + 1);
    auto layout = rt::HostTransferLayout::create(rt::ElementType::kF16, 32);
    auto upload = r.encode_upload(bytes, *layout, *a, 0);
    REQUIRE(upload.has_value());
    submit_and_wait(r, **stream, rt::CommandBatch::singleton(std::move(*upload)));
    auto region = rt::CopyRegion::create(0, 0, 64);
    auto copy = r.encode_copy(*a, *b, *region);
    auto zero = r.encode_zero(*a, 0, 64);
    REQUIRE(copy.has_value());
    REQUIRE(zero.has_value());
    rt::CommandBatch batch;
    batch.push(std::move(*copy));
    batch.push(std::move(*zero));
    submit_and_wait(r, **stream, std::move(batch));
    auto read = r.readback(**stream, *b, *region, *layout);
    REQUIRE(read.has_value());
    CHECK(*read == bytes);
  });
  for (const bool resync : {false, true}) {
    INFO((resync ? "--resync" : "--deep"));
    const auto report = compare(path, {"reference", "cpu"}, true, "bits", rt::default_registry(),
                                resync);
    CHECK(report.verdict() == "match");
    CHECK(report.vs_recording.empty());
    CHECK(report.structural.empty());
    CHECK(report.batches_after_submit == 0);
    // upload; copy and zero (each compared right after it ran); the readback.
    REQUIRE(report.commands.size() == 4);
    CHECK(report.commands[1].kind == "EncodeCopy");
    CHECK(report.commands[2].kind == "EncodeZero");
    CHECK(report.commands[3].kind == "Readback");
    for (const auto& c : report.commands) CHECK(c.vs_recording.size() <= 2);
    for (const auto& p : report.commands[3].vs_recording) CHECK(p.agrees);
  }
}

TEST_CASE("command effects: coalesced outputs take their inputs' effects only when the counts "
          "agree, and a foreign command has none",
          "[drift]") {
  const auto own = [](std::uint64_t ordinal) {
    return rp::ObjectRef{ordinal, rp::ObjectRef::Space::kOwn};
  };
  const std::vector<rp::ReplayStep> steps = {
      {0, "EncodeZero", rp::step::EncodeZero{own(4), 8, 16, 1, {}}},
      {1, "CoalesceProgramBindings", rp::step::CoalesceProgramBindings{{own(1)}, {5, 6}, {}}},
      {2, "CoalesceProgramBindings", rp::step::CoalesceProgramBindings{{own(1)}, {7}, {}}},
      {3, "EncodeUpload",
       rp::step::EncodeUpload{{},
                              24,
                              *rt::HostTransferLayout::create(rt::ElementType::kF16, 12),
                              own(9),
                              40,
                              8,
                              {}}},
  };
  dr::CommandEffectsMap map;
  for (const auto& s : steps) map.visit(s);
  const dr::CommandEffects* zero = map.find(own(1));
  REQUIRE(zero != nullptr);
  REQUIRE(zero->writes.size() == 1);
  CHECK(zero->writes[0].buffer == 4);
  CHECK(zero->writes[0].offset_bytes == 8);
  CHECK(zero->writes[0].length_bytes == 16);
  // One input, two outputs: which output is the input's is unknown, so neither has effects.
  CHECK(map.find(own(5)) == nullptr);
  CHECK(map.find(own(6)) == nullptr);
  const dr::CommandEffects* coalesced = map.find(own(7));
  REQUIRE(coalesced != nullptr);
  CHECK(coalesced->event == 0);
  CHECK(coalesced->writes.size() == 1);
  // An upload writes its payload's bytes at its offset.
  const dr::CommandEffects* upload = map.find(own(8));
  REQUIRE(upload != nullptr);
  REQUIRE(upload->writes.size() == 1);
  CHECK(upload->writes[0].buffer == 9);
  CHECK(upload->writes[0].offset_bytes == 40);
  CHECK(upload->writes[0].length_bytes == 24);
  CHECK(upload->reads.empty());
  // Another runtime's command #1 is not this runtime's.
  CHECK(map.find(rp::ObjectRef{1, rp::ObjectRef::Space::kForeign}) == nullptr);
}

TEST_CASE("command effects: a foreign buffer marks its command foreign and is listed nowhere, an "
          "empty region is not listed",
          "[drift]") {
  const rp::ObjectRef own{4, rp::ObjectRef::Space::kOwn};
  const rp::ObjectRef foreign{0, rp::ObjectRef::Space::kForeign};
  dr::CommandEffectsMap map;
  map.visit({0, "EncodeCopy", rp::step::EncodeCopy{foreign, own, *rt::CopyRegion::create(0, 8, 16),
                                                    1, {}}});
  map.visit({1, "EncodeCopy", rp::step::EncodeCopy{own, own, *rt::CopyRegion::create(0, 16, 8),
                                                    2, {}}});
  map.visit({2, "EncodeZero", rp::step::EncodeZero{own, 8, 0, 3, {}}});
  const auto* from_foreign = map.find({1, rp::ObjectRef::Space::kOwn});
  REQUIRE(from_foreign != nullptr);
  CHECK(from_foreign->foreign);
  CHECK(from_foreign->reads.empty());
  REQUIRE(from_foreign->writes.size() == 1);
  CHECK(from_foreign->writes[0].buffer == 4);
  const auto* within = map.find({2, rp::ObjectRef::Space::kOwn});
  REQUIRE(within != nullptr);
  CHECK_FALSE(within->foreign);
  CHECK(within->reads.size() == 1);
  CHECK(within->writes.size() == 1);
  const auto* empty = map.find({3, rp::ObjectRef::Space::kOwn});
  REQUIRE(empty != nullptr);
  CHECK(empty->writes.empty());
  CHECK_FALSE(empty->foreign);
}

TEST_CASE("compare --resync puts back the inputs it overwrote: later batches carry the drift",
          "[drift]") {
  // Batch 1: y = x W1^T over k = 1024 (cpu-splitk drifts); batch 2: z = y W2^T reads y. The
  // resync of batch 2 writes the baseline's y into cpu-splitk's lane; unless it is put back, the
  // product's batch 2 and the readback of y see the baseline's y there.
  ScratchDir dir("drift-resync-restore");
  const auto path = dir / "chain.vtrace";
  record_calls(rt::default_registry(), "reference", path, [](rt::DeviceRuntime& r) {
    auto stream = r.create_stream();
    REQUIRE(stream.has_value());
    const std::uint64_t k = 1024, n = 256;
    auto x = f16_buffer(r, "resource.test.x", 2 * k);
    auto w1 = f16_buffer(r, "resource.test.w1", 2 * n * k);
    auto w2 = f16_buffer(r, "resource.test.w2", 2 * n * n);
    auto y = f16_buffer(r, "resource.test.y", 2 * n);
    auto z = f16_buffer(r, "resource.test.z", 2 * n);
    const auto values = [](std::size_t count, std::uint32_t seed) {
      std::mt19937 rng(seed);
      std::normal_distribution<float> normal(0.0f, 1.0f);
      std::vector<float> v(count);
      for (auto& e : v) e = normal(rng);
      return rt::to_f16_bytes(v);
    };
    namespace im = rt::immediate;
    REQUIRE(im::upload(r, **stream, *x, values(k, 1)).has_value());
    REQUIRE(im::upload(r, **stream, *w1, values(n * k, 2)).has_value());
    REQUIRE(im::upload(r, **stream, *w2, values(n * n, 3)).has_value());
    REQUIRE(im::dense_linear(r, **stream, *x, *w1, *y, {1, k, n}).has_value());
    REQUIRE(im::dense_linear(r, **stream, *y, *w2, *z, {1, n, n}).has_value());
    REQUIRE(im::readback(r, **stream, *y).has_value());
    REQUIRE(im::readback(r, **stream, *z).has_value());
  });
  const auto deep = compare(path, {"reference", "cpu-splitk"}, true);
  const auto resync =
      compare(path, {"reference", "cpu-splitk"}, true, "bits", rt::default_registry(), true);
  std::vector<const dr::CommandComparison*> deep_readbacks, resync_readbacks;
  for (const auto& c : deep.commands) {
    if (!c.command) deep_readbacks.push_back(&c);
  }
  for (const auto& c : resync.commands) {
    if (!c.command) resync_readbacks.push_back(&c);
  }
  REQUIRE(deep_readbacks.size() == 2);
  REQUIRE(resync_readbacks.size() == 2);
  CHECK_FALSE(deep_readbacks[0]->agrees);  // y drifts
  for (std::size_t i = 0; i < 2; ++i) {
    INFO("readback " << i);
    CHECK(resync_readbacks[i]->agrees == deep_readbacks[i]->agrees);
    CHECK(resync_readbacks[i]->results[0].stats.differing ==
          deep_readbacks[i]->results[0].stats.differing);
    CHECK(resync_readbacks[i]->results[0].stats.max_ulp ==
          deep_readbacks[i]->results[0].stats.max_ulp);
  }
  // And batch 2's dense linear only carries the error in.
  const auto second = std::find_if(resync.commands.begin(), resync.commands.end(),
                                   [](const dr::CommandComparison& c) {
                                     return c.kind == "EncodeDenseLinear" && c.shapes == "1x256x256";
                                   });
  REQUIRE(second != resync.commands.end());
  REQUIRE(second->introduced.size() == 1);
  CHECK(second->introduced[0].agrees);
}

TEST_CASE("compare --deep: a region that is not whole elements is skipped once, and a command "
          "a runtime cannot run alone is said so",
          "[drift]") {
  ScratchDir dir("drift-alone");
  // A zero of 3 bytes of an f16 buffer: its region cannot be read as elements.
  const auto odd = dir / "odd.vtrace";
  record_calls(rt::default_registry(), "reference", odd, [](rt::DeviceRuntime& r) {
    auto stream = r.create_stream();
    REQUIRE(stream.has_value());
    auto a = f16_buffer(r, "resource.test.a", 8);
    auto zero = r.encode_zero(*a, 0, 3);
    REQUIRE(zero.has_value());
    submit_and_wait(r, **stream, rt::CommandBatch::singleton(std::move(*zero)));
  });
  for (const bool resync : {false, true}) {
    INFO((resync ? "--resync" : "--deep"));
    const auto report =
        compare(odd, {"reference", "cpu"}, true, "bits", rt::default_registry(), resync);
    // It cannot be saved before the private runs either: the batch is compared after it ran.
    CHECK(report.batches_after_submit == 1);
    CHECK(report.deep_regions_skipped == 1);
    CHECK(report.commands.empty());
    CHECK(report.verdict() == "match");
  }

  // The reference runtime, except that only its first encode_zero succeeds: run alone again,
  // the recorded zero is refused.
  class OnceZero final : public rt::ForwardingRuntime {
   public:
    using ForwardingRuntime::ForwardingRuntime;
    rt::Result<rt::CommandPtr> encode_zero(const rt::Buffer& destination, std::uint64_t offset,
                                           std::uint64_t length) override {
      if (++zeros_ > 1) {
        return std::unexpected(
            rt::RuntimeError(rt::ErrorKind::kUnsupportedOperation, "one zero only"));
      }
      return ForwardingRuntime::encode_zero(destination, offset, length);
    }

   private:
    unsigned zeros_ = 0;
  };
  rt::RuntimeRegistry registry;
  registry.add("reference", "reference", [](const rt::RuntimeOpenOptions& o) {
    return rt::default_registry().open("reference", o);
  });
  registry.add(
      "once-zero", "reference, one encode_zero",
      [](const rt::RuntimeOpenOptions& o) -> rt::Result<std::unique_ptr<rt::DeviceRuntime>> {
        auto inner = rt::default_registry().open("reference", o);
        if (!inner) return std::unexpected(inner.error());
        return std::unique_ptr<rt::DeviceRuntime>(std::make_unique<OnceZero>(std::move(*inner)));
      });
  const auto once = dir / "once.vtrace";
  record_calls(rt::default_registry(), "reference", once, [](rt::DeviceRuntime& r) {
    auto stream = r.create_stream();
    REQUIRE(stream.has_value());
    auto a = f16_buffer(r, "resource.test.a", 8);
    auto zero = r.encode_zero(*a, 2, 4);
    REQUIRE(zero.has_value());
    submit_and_wait(r, **stream, rt::CommandBatch::singleton(std::move(*zero)));
  });
  {
    // The baseline cannot run it alone: the batch is compared after it ran.
    const auto report = compare(once, {"once-zero", "reference"}, true, "bits", registry);
    CHECK(report.batches_after_submit == 1);
    REQUIRE(report.commands.size() == 1);
    CHECK(report.commands[0].kind == "EncodeZero");
    CHECK(report.commands[0].agrees);
  }
  {
    // Another runtime cannot: its answer for the command is structural, and says why.
    const auto report = compare(once, {"reference", "once-zero"}, true, "bits", registry);
    CHECK(report.batches_after_submit == 0);
    REQUIRE(report.commands.size() == 1);
    REQUIRE(report.commands[0].results.size() == 1);
    const auto& p = report.commands[0].results[0];
    CHECK(p.cls == dr::DriftClass::kStructural);
    CHECK_FALSE(p.agrees);
    CHECK_THAT(p.note, Catch::Contains("running it alone failed") && Catch::Contains("one zero"));
  }
}

TEST_CASE("a batch compared after it ran compares each region for the last command that wrote it",
          "[drift]") {
  // One batch: a transform (it cannot be run alone: the batch falls back), two zeros of the two
  // adjacent halves of A (neither overwrites the other), an upload of B and a zero inside B
  // (which hides the upload's result).
  const rt::RuntimeRegistry registry = transforming_registry();
  ScratchDir dir("drift-overwritten");
  const auto path = dir / "overwritten.vtrace";
  record_calls(registry, "reference", path, [](rt::DeviceRuntime& r) {
    auto stream = r.create_stream();
    REQUIRE(stream.has_value());
    auto source = f16_buffer(r, "weight.test.source", 64);
    auto target = f16_buffer(r, "weight.test.target", 64);
    auto a = f16_buffer(r, "resource.test.a", 64);
    auto b = f16_buffer(r, "resource.test.b", 64);
    auto transform = r.encode_static_weight_transform({source.get(), target.get(), "copy"});
    REQUIRE(transform.has_value());
    REQUIRE(transform->has_value());
    auto low = r.encode_zero(*a, 0, 32);
    auto high = r.encode_zero(*a, 32, 32);
    std::vector<std::uint8_t> bytes(64, 0x3C);
    auto layout = rt::HostTransferLayout::create(rt::ElementType::kF16, 32);
    auto upload = r.encode_upload(bytes, *layout, *b, 0);
    auto inside = r.encode_zero(*b, 16, 16);
    REQUIRE((low && high && upload && inside));
    rt::CommandBatch batch;
    batch.push(std::move(**transform));
    batch.push(std::move(*low));
    batch.push(std::move(*high));
    batch.push(std::move(*upload));
    batch.push(std::move(*inside));
    submit_and_wait(r, **stream, std::move(batch));
  });
  const auto report = compare(path, {"reference", "cpu"}, true, "bits", registry);
  CHECK(report.verdict() == "match");
  CHECK(report.batches_after_submit == 1);
  CHECK(report.deep_regions_overwritten == 1);
  std::vector<std::string> compared;
  for (const auto& c : report.commands) compared.push_back(c.kind + " " + c.region);
  CHECK(compared == std::vector<std::string>{"EncodeZero buffer#2 [0, 32)",
                                             "EncodeZero buffer#2 [32, 64)",
                                             "EncodeZero buffer#3 [16, 32)"});
}

TEST_CASE("every runtime's readback is compared with the recording's, the baseline's included",
          "[drift]") {
  ScratchDir dir("drift-vs-recording");
  const auto altered = dir / "altered.vtrace";
  const auto at = vtrace::test::rewrite_with_altered_readback(
      golden("decode-short-v1.2.vtrace"), altered,
      [](std::uint16_t bits) { return static_cast<std::uint16_t>(bits ^ 0x0400); });
  const auto report = compare(altered, {"reference", "cpu"});
  CHECK(report.verdict() == "match");  // the runtimes agree with each other
  const auto c = std::find_if(report.commands.begin(), report.commands.end(),
                              [&](const dr::CommandComparison& x) { return x.event == at.event; });
  REQUIRE(c != report.commands.end());
  REQUIRE(c->vs_recording.size() == 2);
  CHECK(c->vs_recording[0].runtime == "reference");
  CHECK(c->vs_recording[1].runtime == "cpu");
  for (const auto& p : c->vs_recording) CHECK_FALSE(p.agrees);
}
