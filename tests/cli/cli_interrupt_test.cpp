// `vtrace record` and `vtrace demo` interrupted: SIGINT and SIGTERM stop at a call boundary and
// leave a complete trace marked interrupted (exit 130, 143); a second signal kills at once and
// leaves a recoverable .partial; SIGKILL at many moments leaves a .partial that recovers every
// event up to the last flush and replays.
#include <fmt/format.h>
#include <sys/syscall.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <csignal>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>

#include "run_vtrace.h"
#include "support/test_support.h"
#include "trace_fixtures.h"
#include "vtrace/recorder/recording_runtime.h"
#include "vtrace/runtime/registry.h"
#include "vtrace/schema/events.h"
#include "vtrace/schema/trace_reader.h"
#include "vtrace/workloads/workload.h"

namespace {

using vtrace::test::run_vtrace;
using vtrace::test::ScratchDir;
using vtrace::test::Spawned;
using vtrace::test::wait_for_size;
namespace fs = std::filesystem;
namespace schema = vtrace::schema;
using Bytes = std::vector<std::uint8_t>;

// A decode small enough to make steps quick, with steps enough to run far longer than the test
// waits: it only ends when signalled.
const std::vector<std::string> kLongDecode = {"record", "--workload", "decode", "--hidden",
                                              "64",     "--ffn",      "128",    "--layers",
                                              "2",      "--steps",    "1000000"};

std::vector<std::string> with_output(std::vector<std::string> words, const fs::path& out) {
  words.push_back("-o");
  words.push_back(out.string());
  return words;
}

Bytes read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Every event record of `reader`, in order.
std::vector<Bytes> events_of(schema::TraceReader& reader) {
  std::vector<Bytes> out;
  auto visited = reader.visit_events(0, reader.event_count(),
                                     [&](std::uint64_t, std::span<const std::uint8_t> record) {
                                       out.emplace_back(record.begin(), record.end());
                                       return true;
                                     });
  REQUIRE(visited.has_value());
  return out;
}

// Starts a long recording, waits until its .partial holds the weights and some steps, sends
// `signal`, and checks the documented outcome: exit 128 + signal, one sentence, OUT complete,
// verified, marked interrupted, and replaying with exit 0.
void check_stopped_by(int signal, const std::string& name) {
  ScratchDir dir("cli-interrupt");
  const auto out = dir / "long.vtrace";
  const fs::path partial = out.string() + ".partial";
  Spawned vtrace(with_output(kLongDecode, out), dir / "log.txt",
                 {fmt::format("TMPDIR={}", (dir / "").string())});
  REQUIRE(wait_for_size(partial, 256u << 10, vtrace));
  vtrace.signal(signal);
  const int status = vtrace.wait();
  const std::string log = vtrace.log();
  INFO(log);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 128 + signal);
  CHECK(count_of(log, "vtrace: ") == 1);
  CHECK(count_of(log, fmt::format("vtrace: interrupted by {}: the workload stopped at a call "
                                  "boundary; {} is a complete trace of the ",
                                  name, out.string())) == 1);
  CHECK(log.find("events recorded so far, marked interrupted") != std::string::npos);
  CHECK(fs::exists(out));
  CHECK_FALSE(fs::exists(partial));
  auto verify = run_vtrace(fmt::format("verify {}", out.string()));
  INFO(verify.output);
  CHECK(verify.code == 0);
  auto info = run_vtrace(fmt::format("info {}", out.string()));
  INFO(info.output);
  CHECK(info.code == 0);
  CHECK(info.output.find(fmt::format("interrupted: by {}: the recording stopped at a call "
                                     "boundary",
                                     name)) != std::string::npos);
  CHECK(info.output.find("status:      complete") != std::string::npos);
  auto summary = run_vtrace(fmt::format("dump --summary --json {}", out.string()));
  INFO(summary.output);
  CHECK(summary.code == 0);
  CHECK(nlohmann::json::parse(summary.output)["summary"]["interrupted_by"] == name);
  auto replay = run_vtrace(fmt::format("replay {}", out.string()));
  INFO(replay.output);
  CHECK(replay.code == 0);
  CHECK(replay.output.find("verdict: match") != std::string::npos);
}

}  // namespace

TEST_CASE("vtrace record stopped by SIGINT closes a valid trace marked interrupted and exits 130",
          "[cli][interrupt]") {
  check_stopped_by(SIGINT, "SIGINT");
}

TEST_CASE("vtrace record stopped by SIGTERM closes a valid trace marked interrupted and exits 143",
          "[cli][interrupt]") {
  check_stopped_by(SIGTERM, "SIGTERM");
}

// Two SIGINTs that arrive together: the process is stopped (SIGSTOP), each of two of its
// threads gets a SIGINT of its own (thread signals do not merge), and it is continued. One
// handler takes the first as the request to stop; the other sees the second and dies by it.
TEST_CASE(
    "a second SIGINT kills vtrace record at once and leaves a .partial that recovers and replays",
    "[cli][interrupt]") {
  ScratchDir dir("cli-interrupt-twice");
  const auto out = dir / "long.vtrace";
  const fs::path partial = out.string() + ".partial";
  Spawned vtrace(with_output(kLongDecode, out), dir / "log.txt",
                 {fmt::format("TMPDIR={}", (dir / "").string())});
  REQUIRE(wait_for_size(partial, 256u << 10, vtrace));
  vtrace.signal(SIGSTOP);
  const auto threads = vtrace.threads();
  REQUIRE(threads.size() >= 2);  // the workload's and the trace writer's
  for (std::size_t i = 0; i < 2; ++i) {
    REQUIRE(::syscall(SYS_tgkill, vtrace.pid(), threads[i], SIGINT) == 0);
  }
  vtrace.signal(SIGCONT);
  const int status = vtrace.wait();
  INFO(vtrace.log());
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGINT);
  CHECK_FALSE(fs::exists(out));
  REQUIRE(fs::exists(partial));
  auto reader = schema::TraceReader::open(partial);
  REQUIRE(reader.has_value());
  CHECK_FALSE((*reader)->complete());
  CHECK((*reader)->event_count() > 0);
  auto replay = run_vtrace(fmt::format("replay {}", partial.string()));
  INFO(replay.output);
  CHECK(replay.code == 0);
}

// The demo records decode into DIR/decode.vtrace: a SIGINT while it records stops the recording
// at a call boundary, and the demo stops there too.
TEST_CASE(
    "vtrace demo stopped by SIGINT while it records leaves decode.vtrace marked interrupted and "
    "exits 130",
    "[cli][interrupt]") {
  ScratchDir dir("cli-interrupt-demo");
  const auto out_dir = dir / "demo";
  const auto trace = out_dir / "decode.vtrace";
  const fs::path partial = trace.string() + ".partial";
  Spawned vtrace({"demo", "--out", out_dir.string()}, dir / "log.txt",
                 {fmt::format("TMPDIR={}", (dir / "").string())});
  // The first weights are on disk: the recording runs (its weights are 16.5 MiB).
  REQUIRE(wait_for_size(partial, 64u << 10, vtrace));
  vtrace.signal(SIGSTOP);
  REQUIRE(fs::exists(partial));  // still recording while it is stopped
  vtrace.signal(SIGINT);
  vtrace.signal(SIGCONT);
  const int status = vtrace.wait();
  const std::string log = vtrace.log();
  INFO(log);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);
  CHECK(count_of(log, fmt::format("vtrace: interrupted by SIGINT: the workload stopped at a call "
                                  "boundary; {} is a complete trace of the ",
                                  trace.string())) == 1);
  CHECK(log.find("vtrace demo:") == std::string::npos);  // no table: nothing was replayed
  CHECK_FALSE(fs::exists(partial));
  auto info = run_vtrace(fmt::format("info {}", trace.string()));
  INFO(info.output);
  CHECK(info.output.find("interrupted: by SIGINT") != std::string::npos);
  auto replay = run_vtrace(fmt::format("replay {}", trace.string()));
  INFO(replay.output);
  CHECK(replay.code == 0);
}

namespace {

// Collects the bytes in memory and, at every flush() the trace writer makes, how many bytes were
// written by then: the offsets at which a reader of a cut file finds everything appended before.
class FlushLogSink final : public schema::ByteSink {
 public:
  FlushLogSink(Bytes& bytes, std::vector<std::uint64_t>& flushes)
      : bytes_(bytes), flushes_(flushes) {}
  schema::TraceResult<void> write(std::span<const std::uint8_t> data) override {
    bytes_.insert(bytes_.end(), data.begin(), data.end());
    return {};
  }
  schema::TraceResult<void> flush() override {
    flushes_.push_back(bytes_.size());
    return {};
  }
  schema::TraceResult<void> commit() override { return {}; }
  std::uint64_t bytes_written() const override { return bytes_.size(); }
  std::string describe() const override { return "memory.vtrace"; }

 private:
  Bytes& bytes_;
  std::vector<std::uint64_t>& flushes_;
};

std::uint64_t recovered_events(const Bytes& bytes) {
  auto reader = schema::TraceReader::open(schema::memory_source(bytes, "cut.vtrace"));
  if (!reader) return 0;
  return (*reader)->event_count();
}

}  // namespace

// The trace of `vtrace record` is deterministic, so the one recorded here in memory (same spec,
// same runtime, same options) is byte for byte the file the killed process was writing: each
// .partial must be a byte prefix of it, recover a prefix of its events, and lose none that a
// flush before the cut had written (the recorder flushes after every SubmitBegin and before
// every wait).
TEST_CASE(
    "vtrace record killed with SIGKILL at 24 moments leaves a .partial recovering every flushed "
    "event, and it replays",
    "[cli][interrupt][sigkill]") {
  namespace wl = vtrace::workloads;
  ScratchDir dir("cli-sigkill");
  wl::WorkloadSpec spec;
  spec.kind = wl::WorkloadKind::kDecode;
  spec.decode.hidden = 64;
  spec.decode.ffn = 128;
  spec.decode.layers = 2;
  spec.decode.steps = 400;
  const std::vector<std::string> record = {"record", "--workload", "decode", "--hidden",
                                           "64",     "--ffn",      "128",    "--layers",
                                           "2",      "--steps",    "400"};

  // The complete recording, by the CLI and in memory with the flush offsets.
  const auto full_path = dir / "full.vtrace";
  std::string words;
  for (const auto& w : with_output(record, full_path)) words += " " + w;
  auto complete = run_vtrace(words);
  INFO(complete.output);
  REQUIRE(complete.code == 0);
  const Bytes full = read_bytes(full_path);
  Bytes memory;
  std::vector<std::uint64_t> flushes;
  {
    vtrace::runtime::RuntimeOpenOptions open;
    open.device_id = "device.vtrace.0";  // as `vtrace record` opens it
    auto inner = vtrace::runtime::default_registry().open("reference", open);
    REQUIRE(inner.has_value());
    vtrace::recorder::RecorderOptions options;
    options.workload_description = spec.describe();
    auto rec = vtrace::recorder::RecordingRuntime::create(
        std::move(*inner), "reference", std::make_unique<FlushLogSink>(memory, flushes), options);
    REQUIRE(rec.has_value());
    REQUIRE(wl::run_workload(spec, **rec, nullptr).has_value());
    REQUIRE((*rec)->close().has_value());
  }
  REQUIRE(memory == full);
  auto full_reader = schema::TraceReader::open(schema::memory_source(full, "full.vtrace"));
  REQUIRE(full_reader.has_value());
  const auto full_events = events_of(**full_reader);

  // What a cut at each flush offset recovers; every SubmitBegin is the last event of one.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> flushed;  // (offset, events recovered)
  std::set<std::uint64_t> recovered_at_flush;
  for (const auto offset : flushes) {
    const auto n =
        recovered_events(Bytes(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(offset)));
    flushed.emplace_back(offset, n);
    recovered_at_flush.insert(n);
  }
  std::uint64_t submit_begins = 0;
  for (std::size_t i = 0; i < full_events.size(); ++i) {
    if (schema::event_of(full_events[i])->body_type() != vtrace::fb::EventBody::SubmitBegin) {
      continue;
    }
    ++submit_begins;
    INFO("SubmitBegin at event " << i);
    CHECK(recovered_at_flush.contains(i + 1));
  }
  REQUIRE(submit_begins > 400);

  // 24 kills, when the .partial reaches 24 sizes spread over the first half of the data.
  const std::uint64_t data_end = flushes.back();
  std::vector<std::uint64_t> recovered;
  for (int trial = 0; trial < 24; ++trial) {
    const std::uint64_t threshold = 1 + data_end * static_cast<std::uint64_t>(trial) / 48;
    const auto out = dir / fmt::format("killed{}.vtrace", trial);
    const fs::path partial = out.string() + ".partial";
    const auto tmp = dir / fmt::format("tmp{}", trial);
    fs::create_directories(tmp);
    Spawned vtrace(with_output(record, out), dir / fmt::format("log{}.txt", trial),
                   {fmt::format("TMPDIR={}", tmp.string())});
    REQUIRE(wait_for_size(partial, threshold, vtrace));
    vtrace.signal(SIGKILL);
    const int status = vtrace.wait();
    INFO("trial " << trial << ", killed at " << threshold << " bytes or more");
    REQUIRE(WIFSIGNALED(status));
    REQUIRE(WTERMSIG(status) == SIGKILL);
    const Bytes cut = read_bytes(partial);
    REQUIRE(cut.size() >= threshold);
    REQUIRE(cut.size() <= full.size());
    CHECK(std::equal(cut.begin(), cut.end(), full.begin()));
    auto reader = schema::TraceReader::open(partial);
    REQUIRE(reader.has_value());
    const auto events = events_of(**reader);
    REQUIRE(events.size() <= full_events.size());
    CHECK(std::equal(events.begin(), events.end(), full_events.begin()));
    // Nothing a flush wrote before the cut is lost.
    std::uint64_t flushed_before = 0;
    for (const auto& [offset, n] : flushed) {
      if (offset <= cut.size()) flushed_before = std::max(flushed_before, n);
    }
    CHECK(events.size() >= flushed_before);
    recovered.push_back(events.size());
    auto replay = run_vtrace(fmt::format("replay {}", partial.string()));
    INFO(replay.output);
    if (events.empty()) {
      // Killed before its first flush (a slow run: the sanitizers): nothing to replay is no match.
      CHECK(replay.code == 2);
      CHECK_THAT(replay.output, Catch::Contains("no event could be recovered"));
    } else {
      CHECK(replay.code == 0);
    }
    fs::remove_all(tmp);
  }
  std::sort(recovered.begin(), recovered.end());
  WARN(fmt::format("24 SIGKILL trials of {} events: recovered min {}, median {}, max {}",
                   full_events.size(), recovered.front(), recovered[recovered.size() / 2],
                   recovered.back()));
  CHECK(std::set<std::uint64_t>(recovered.begin(), recovered.end()).size() > 12);
}

// A real full disk: a 128 KiB tmpfs, mounted in a private user and mount namespace (unshare -rm)
// so the test needs no privilege; skipped where namespaces are not allowed.
TEST_CASE(
    "vtrace record onto a full tmpfs says so in one sentence, exits 2, and the .partial recovers "
    "and replays",
    "[cli][faults]") {
  if (vtrace::test::run_shell("unshare -rm true").code != 0) {
    VTRACE_SKIP("unshare -rm (a private user and mount namespace) is not allowed here");
  }
  ScratchDir dir("cli-tmpfs");
  const auto mount_point = dir / "small";
  fs::create_directories(mount_point);
  const auto out = mount_point / "t.vtrace";
  const auto copy = dir / "copy.vtrace.partial";
  auto run = vtrace::test::run_shell(fmt::format(
      "unshare -rm sh -c 'mount -t tmpfs -o size=128k tmpfs {0} || exit 99; "
      "TMPDIR={1} {2} record --workload decode --hidden 64 --ffn 128 --layers 2 --steps 400 -o "
      "{3}; "
      "code=$?; cp {3}.partial {4}; exit $code'",
      mount_point.string(), (dir / "").string(), VTRACE_CLI_PATH, out.string(), copy.string()));
  INFO(run.output);
  if (run.code == 99) VTRACE_SKIP("a tmpfs cannot be mounted here");
  CHECK(run.code == 2);
  CHECK(count_of(run.output, "vtrace: ") == 1);
  CHECK(run.output.find(fmt::format("writing the trace failed: cannot write {}.partial: No space "
                                    "left on device",
                                    out.string())) != std::string::npos);
  CHECK(run.output.find(fmt::format("the events recorded so far are in {}.partial",
                                    out.string())) != std::string::npos);
  REQUIRE(fs::exists(copy));
  CHECK(fs::file_size(copy) > 64u << 10);
  auto reader = schema::TraceReader::open(copy);
  REQUIRE(reader.has_value());
  CHECK_FALSE((*reader)->complete());
  CHECK((*reader)->event_count() > 0);
  auto replay = run_vtrace(fmt::format("replay {}", copy.string()));
  INFO(replay.output);
  CHECK(replay.code == 0);
}
