// vtrace extract (vtrace/drift/extract.h): a repro of one command or a window replays to a match
// on its baseline and shows the drifting runtime's mismatch; it starts from the state the
// original run had just before the command (its last command's result is the product's recorded
// readback); it is deterministic; a runtime whose results depend on more than the inputs is told;
// and each bad request says what is wrong.
#include "vtrace/drift/extract.h"

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <set>
#include <iterator>

#include "support/flaky_runtime.h"
#include "support/importing_runtime.h"
#include "trace_fixtures.h"
#include "vtrace/drift/lockstep.h"
#include "vtrace/runtime/forwarding_runtime.h"
#include "vtrace/runtime/immediate.h"
#include "vtrace/schema/events.h"
#include "vtrace/schema/trace_reader.h"

namespace dr = vtrace::drift;
namespace rp = vtrace::replayer;
namespace rt = vtrace::runtime;
using vtrace::test::ScratchDir;

namespace {

// The decode of lockstep_test: cpu-splitk drifts on its down projections (k = 1024).
std::filesystem::path record_long_decode(const ScratchDir& dir) {
  auto spec = vtrace::test::small_decode_spec();
  spec.decode.hidden = 48;
  spec.decode.ffn = 1024;
  const auto path = dir / "decode.vtrace";
  (void)vtrace::test::record_workload(spec, path, "reference");
  return path;
}

dr::ExtractReport extract(const std::filesystem::path& trace, const std::filesystem::path& out,
                          std::uint64_t first, std::uint64_t last,
                          const rt::RuntimeRegistry& registry = rt::default_registry(),
                          const std::string& runtime = "reference") {
  dr::ExtractOptions options;
  options.first_event = first;
  options.last_event = last;
  options.runtime = runtime;
  auto report = dr::extract_commands(trace, out, options, registry);
  INFO((report ? std::string() : report.error().message));
  REQUIRE(report.has_value());
  return std::move(*report);
}

// The event of `trace`'s last EncodeDenseLinear.
std::uint64_t last_dense_linear(const std::filesystem::path& trace) {
  auto plan = rp::open_plan(trace);
  REQUIRE(plan.has_value());
  std::uint64_t dense = 0;
  for (const auto& s : plan->steps()) {
    if (std::holds_alternative<rp::step::EncodeDenseLinear>(s.body)) dense = s.ordinal;
  }
  REQUIRE(dense > 0);
  return dense;
}

rp::ReplayReport replay(const std::filesystem::path& trace, const char* runtime) {
  rp::ReplayTraceOptions options;
  options.runtime = runtime;
  auto report = rp::replay_trace(trace, options, rt::default_registry());
  INFO((report ? std::string() : report.error().message));
  REQUIRE(report.has_value());
  return std::move(*report);
}

// The recorded bytes of a trace's readbacks, in order.
std::vector<std::vector<std::uint8_t>> readbacks(const std::filesystem::path& trace) {
  auto plan = rp::open_plan(trace);
  REQUIRE(plan.has_value());
  std::vector<std::vector<std::uint8_t>> out;
  for (const auto& s : plan->steps()) {
    if (const auto* r = std::get_if<rp::step::Readback>(&s.body); r && r->payload) {
      out.push_back(*plan->payload(*r->payload));
    }
  }
  return out;
}

std::filesystem::path golden(const char* name) {
  return std::filesystem::path(VTRACE_SOURCE_DIR) / "traces" / name;
}

// The workload description in a trace's metadata ("" when it has none).
std::string workload_of(const std::filesystem::path& trace) {
  auto reader = vtrace::schema::TraceReader::open(trace);
  REQUIRE(reader.has_value());
  const auto* m = vtrace::schema::read_trace_metadata((*reader)->header().metadata);
  REQUIRE(m != nullptr);
  return m->workload_description() != nullptr ? m->workload_description()->str() : "";
}

std::string bytes_of(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Where cpu-splitk first diverges from reference on `trace`, command by command (--deep).
dr::FirstDivergence first_splitk_divergence(const std::filesystem::path& trace) {
  dr::CompareOptions options;
  options.runtimes = {"reference", "cpu-splitk"};
  options.deep = true;
  auto compared = dr::compare_trace(trace, options, rt::default_registry());
  REQUIRE(compared.has_value());
  REQUIRE(compared->first_divergence.has_value());
  return *compared->first_divergence;
}

}  // namespace

TEST_CASE(
    "extract: the first divergent command alone replays to a match on reference and a mismatch "
    "on cpu-splitk",
    "[drift]") {
  ScratchDir dir("extract-first");
  const auto trace = record_long_decode(dir);
  const auto divergence = first_splitk_divergence(trace);
  const auto event = divergence.event;

  const auto repro = dir / "repro.vtrace";
  const auto r = extract(trace, repro, event, event);
  REQUIRE(r.commands.size() == 1);
  CHECK(r.commands[0].event == event);
  CHECK(r.commands[0].kind == "EncodeDenseLinear");
  CHECK(r.commands[0].command == *divergence.command);
  CHECK(r.buffers.size() == 3);  // its input, weight and output
  CHECK(r.readbacks == 1);
  CHECK(r.reproduces_baseline);
  CHECK(r.runtime == "reference");
  CHECK(r.events > 0);
  const auto on_reference = replay(repro, "reference");
  CHECK(on_reference.matched());
  CHECK(on_reference.checked.readbacks == 1);
  CHECK(replay(repro, "cpu").matched());
  const auto on_splitk = replay(repro, "cpu-splitk");
  CHECK_FALSE(on_splitk.matched());
  REQUIRE_FALSE(on_splitk.mismatches.empty());
  CHECK(on_splitk.mismatches.front().call.find("readback") != std::string::npos);

  // The same extraction twice gives the same bytes.
  const auto again = dir / "again.vtrace";
  (void)extract(trace, again, event, event);
  CHECK(bytes_of(repro) == bytes_of(again));
  const auto json = r.to_json();
  for (const char* key : {"trace", "output", "runtime", "events", "commands", "buffers",
                          "uploaded_bytes", "readbacks", "reproduces_baseline", "difference"}) {
    INFO(key);
    CHECK(json.contains(key));
  }
  CHECK(json["commands"][0]["event"] == event);
  // The repro names its window in the half-open A:B notation of --events.
  CHECK(workload_of(repro) == fmt::format("vtrace extract of events {}:{} of decode.vtrace on "
                                          "reference",
                                          event, event + 1));
}

TEST_CASE(
    "extract starts from the state just before the command: the last command of a step "
    "reproduces the product's recorded readback, alone or as a window",
    "[drift]") {
  ScratchDir dir("extract-state");
  const auto trace = record_long_decode(dir);
  auto plan = rp::open_plan(trace);
  REQUIRE(plan.has_value());
  // The commands the first readback reads: the dense linears encoded after the first upload of
  // the step's input and before that readback (the last of them writes what it reads).
  std::uint64_t first_readback = 0;
  std::vector<std::uint64_t> dense;
  for (const auto& s : plan->steps()) {
    if (std::holds_alternative<rp::step::Readback>(s.body)) {
      first_readback = s.ordinal;
      break;
    }
    if (std::holds_alternative<rp::step::EncodeDenseLinear>(s.body)) dense.push_back(s.ordinal);
  }
  REQUIRE(dense.size() >= 3);
  const auto recorded = readbacks(trace);
  REQUIRE_FALSE(recorded.empty());

  // The step's last command alone: everything before it in its batch was run to get its input.
  const auto last = dir / "last.vtrace";
  const auto one = extract(trace, last, dense.back(), dense.back());
  REQUIRE(one.commands.size() == 1);
  const auto alone = readbacks(last);
  REQUIRE(alone.size() == 1);
  CHECK(alone[0] == recorded[0]);

  // The step's commands as a window: the same bytes, one readback per region written.
  const auto window = dir / "window.vtrace";
  const auto many = extract(trace, window, dense.front(), first_readback);
  CHECK(many.commands.size() >= dense.size());
  for (std::size_t i = 1; i < many.commands.size(); ++i) {
    CHECK(many.commands[i - 1].submit_event <= many.commands[i].submit_event);
  }
  const auto read = readbacks(window);
  CHECK(std::find(read.begin(), read.end(), recorded[0]) != read.end());
  CHECK(replay(window, "reference").matched());
  CHECK_FALSE(replay(window, "cpu-splitk").matched());
}

TEST_CASE(
    "extract starts from the state the recording had: earlier batches are not run a second time",
    "[drift]") {
  // W gets p by a static weight import (not a command). Batch 1 copies W to Y; batch 2 uploads q
  // to W; batch 3, the window, copies Y to Z, read back: p. A baseline that ran batches 1 and 2
  // again on top of the replayed state would copy q to Y and record a repro of q.
  rt::RuntimeRegistry registry;
  registry.add("importing", "reference with a static weight import session",
               [](const rt::RuntimeOpenOptions& o)
                   -> rt::Result<std::unique_ptr<rt::DeviceRuntime>> {
                 auto inner = rt::default_registry().open("reference", o);
                 if (!inner) return std::unexpected(inner.error());
                 return std::unique_ptr<rt::DeviceRuntime>(
                     std::make_unique<vtrace::test::ImportingRuntime>(std::move(*inner)));
               });
  namespace im = rt::immediate;
  std::vector<std::uint8_t> p(64), q(64);
  for (std::size_t i = 0; i < p.size(); ++i) {
    p[i] = static_cast<std::uint8_t>(i + 1);
    q[i] = static_cast<std::uint8_t>(200 - i);
  }
  ScratchDir dir("extract-before");
  const auto trace = dir / "import.vtrace";
  vtrace::test::record_calls(registry, "importing", trace, [&](rt::DeviceRuntime& r) {
    auto stream = r.create_stream();
    REQUIRE(stream.has_value());
    std::vector<rt::BufferPtr> b;
    for (const char* id : {"weight.test.w", "resource.test.y", "resource.test.z"}) {
      auto buffer = im::allocate_buffer(r, id, rt::ElementType::kF16, 32, rt::BufferUsage::kWeights);
      REQUIRE(buffer.has_value());
      b.push_back(std::move(*buffer));
    }
    auto session = r.begin_static_weight_import();
    REQUIRE((session && session->has_value()));
    REQUIRE((**session)->import_component(p, *b[0], 0).has_value());
    REQUIRE((**session)->seal().has_value());
    const auto region = rt::CopyRegion::create(0, 0, 64);
    auto w_to_y = r.encode_copy(*b[0], *b[1], *region);
    REQUIRE(w_to_y.has_value());
    REQUIRE(im::submit_and_wait(r, **stream, rt::CommandBatch::singleton(std::move(*w_to_y))));
    REQUIRE(im::upload(r, **stream, *b[0], q).has_value());
    auto y_to_z = r.encode_copy(*b[1], *b[2], *region);
    REQUIRE(y_to_z.has_value());
    REQUIRE(im::submit_and_wait(r, **stream, rt::CommandBatch::singleton(std::move(*y_to_z))));
    CHECK(im::readback(r, **stream, *b[2]) == p);
  });
  auto plan = rp::open_plan(trace);
  REQUIRE(plan.has_value());
  std::uint64_t last_copy = 0;
  for (const auto& s : plan->steps()) {
    if (std::holds_alternative<rp::step::EncodeCopy>(s.body)) last_copy = s.ordinal;
  }
  REQUIRE(last_copy > 0);
  const auto repro = dir / "repro.vtrace";
  const auto r = extract(trace, repro, last_copy, last_copy, registry, "importing");
  REQUIRE(r.commands.size() == 1);
  CHECK(r.reproduces_baseline);
  const auto read = readbacks(repro);
  REQUIRE(read.size() == 1);
  CHECK(read[0] == p);
  CHECK(read[0] == readbacks(trace).back());
  CHECK(replay(repro, "reference").matched());
}

TEST_CASE("a window across batches keeps them: each batch's drift is read back before the next",
          "[drift]") {
  // Step 1's batch drifts on cpu-splitk; step 2's batch writes the same buffers and (its inputs
  // being the reference's, uploaded) does not. One merged batch read back at the end showed
  // step 2's results only: no mismatch.
  ScratchDir dir("extract-batches");
  auto spec = vtrace::test::small_decode_spec();
  spec.seed = 1;
  spec.decode.hidden = 48;
  spec.decode.ffn = 1024;
  spec.decode.participants = 2;
  spec.decode.steps = 2;
  const auto trace = dir / "decode.vtrace";
  (void)vtrace::test::record_workload(spec, trace, "reference");
  auto plan = rp::open_plan(trace);
  REQUIRE(plan.has_value());
  const auto repro = dir / "window.vtrace";
  const auto r =
      extract(trace, repro, first_splitk_divergence(trace).event, plan->steps().size() - 1);
  std::set<std::uint64_t> batches;
  for (const auto& c : r.commands) batches.insert(c.submit_event);
  REQUIRE(batches.size() > 1);
  CHECK(r.reproduces_baseline);
  CHECK(replay(repro, "reference").matched());
  CHECK(replay(repro, "cpu").matched());
  CHECK_FALSE(replay(repro, "cpu-splitk").matched());
}

TEST_CASE("extract says when a runtime's results depend on more than the command's inputs",
          "[drift]") {
  // reference, except that every second readback an instance answers has its lowest bit flipped.
  rt::RuntimeRegistry registry;
  registry.add(
      "flaky", "reference, flipping a bit of every second readback",
      [](const rt::RuntimeOpenOptions& o) -> rt::Result<std::unique_ptr<rt::DeviceRuntime>> {
        auto inner = rt::default_registry().open("reference", o);
        if (!inner) return std::unexpected(inner.error());
        return std::unique_ptr<rt::DeviceRuntime>(std::make_unique<vtrace::test::FlakyRuntime>(
            std::move(*inner), std::make_shared<unsigned>(0)));
      });
  ScratchDir dir("extract-flaky");
  const auto trace = golden("tiny.vtrace");
  const std::uint64_t dense = last_dense_linear(trace);
  CHECK(extract(trace, dir / "steady.vtrace", dense, dense).reproduces_baseline);
  const auto flaky = extract(trace, dir / "flaky.vtrace", dense, dense, registry, "flaky");
  CHECK_FALSE(flaky.reproduces_baseline);
  CHECK(flaky.difference.find("reads back differently") != std::string::npos);
  CHECK(std::filesystem::exists(dir / "flaky.vtrace"));  // written all the same
}

TEST_CASE("a repro that cannot be recorded whole is not left behind", "[drift]") {
  // reference, except that every dense linear is refused at encode, by every runtime opened after
  // the first (the first runs the original window, which extract needs whole; the repro is
  // recorded on a later one).
  class Refusing final : public rt::ForwardingRuntime {
   public:
    using ForwardingRuntime::ForwardingRuntime;
    rt::Result<rt::CommandPtr> encode_dense_linear(const rt::DenseLinearRequest&) override {
      return std::unexpected(rt::RuntimeError(rt::ErrorKind::kUnsupportedOperation, "refused"));
    }
  };
  rt::RuntimeRegistry registry;
  auto opened = std::make_shared<unsigned>(0);
  registry.add("refusing", "reference, refusing every dense linear after its first open",
               [opened](const rt::RuntimeOpenOptions& o)
                   -> rt::Result<std::unique_ptr<rt::DeviceRuntime>> {
                 auto inner = rt::default_registry().open("reference", o);
                 if (!inner || (*opened)++ == 0) return inner;
                 return std::unique_ptr<rt::DeviceRuntime>(
                     std::make_unique<Refusing>(std::move(*inner)));
               });
  ScratchDir dir("extract-refused");
  const auto trace = golden("tiny.vtrace");
  const std::uint64_t dense = last_dense_linear(trace);
  dr::ExtractOptions options;
  options.first_event = options.last_event = dense;
  options.runtime = "refusing";
  const auto out = dir / "repro.vtrace";
  const auto report = dr::extract_commands(trace, out, options, registry);
  REQUIRE_FALSE(report.has_value());
  CHECK_THAT(report.error().message, Catch::Contains("the repro could not be recorded on refusing"));
  CHECK_FALSE(std::filesystem::exists(out));
  CHECK_FALSE(std::filesystem::exists(dir / "repro.vtrace.partial"));
}

TEST_CASE("extract refuses what it cannot extract, in one sentence", "[drift]") {
  ScratchDir dir("extract-errors");
  const auto trace = golden("tiny.vtrace");
  auto plan = rp::open_plan(trace);
  REQUIRE(plan.has_value());
  std::uint64_t readback = 0;
  for (const auto& s : plan->steps()) {
    if (std::holds_alternative<rp::step::Readback>(s.body)) readback = s.ordinal;
  }
  auto fails = [&](std::uint64_t first, std::uint64_t last, const std::string& runtime,
                   const std::filesystem::path& out) {
    dr::ExtractOptions options;
    options.first_event = first;
    options.last_event = last;
    options.runtime = runtime;
    auto r = dr::extract_commands(trace, out, options, rt::default_registry());
    REQUIRE_FALSE(r.has_value());
    return r.error();
  };
  const auto out = dir / "repro.vtrace";
  auto not_command = fails(readback, readback, "reference", out);
  CHECK(not_command.kind == rp::ReplayFailure::Kind::kUsage);
  CHECK(not_command.message.find(fmt::format("event {} is a Readback", readback)) !=
        std::string::npos);
  auto past = fails(plan->steps().size(), plan->steps().size(), "reference", out);
  CHECK(past.message.find("past the trace's last event") != std::string::npos);
  CHECK(fails(5, 3, "reference", out).message.find("is empty") != std::string::npos);
  // Windows are named as --events A:B names them: events A to B-1.
  CHECK(fails(0, 1, "reference", out).message ==
        "events 0:2 encode no command that a successful submit ran");
  CHECK(fails(5, 3, "reference", out).message.find("--events 5:4 is empty") != std::string::npos);
  // "an" before a vowel (event 2 of tiny is an Admit), "a" otherwise (event 1, a StreamCreated).
  REQUIRE(plan->steps()[2].kind == "Admit");
  CHECK(fails(2, 2, "reference", out).message.find("event 2 is an Admit, ") != std::string::npos);
  CHECK(fails(1, 1, "reference", out).message.find("event 1 is a StreamCreated, ") !=
        std::string::npos);
  CHECK(fails(0, plan->steps().size() - 1, "no-such", out).kind ==
        rp::ReplayFailure::Kind::kRuntimeUnavailable);
  // The contract trace's event 25 encodes a zero whose one submit (event 26) was refused.
  {
    dr::ExtractOptions options;
    options.first_event = 25;
    options.last_event = 25;
    auto refused = dr::extract_commands(golden("contract-v1.2.vtrace"), out, options,
                                        rt::default_registry());
    REQUIRE_FALSE(refused.has_value());
    CHECK(refused.error().message ==
          "event 25 (EncodeZero) encodes a command that no successful submit ran");
  }
  auto unwritable = fails(0, plan->steps().size() - 1, "reference", dir / "none" / "repro.vtrace");
  CHECK(unwritable.message.find("cannot write the repro") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(out));
}
