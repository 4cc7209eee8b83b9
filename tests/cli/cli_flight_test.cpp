// `vtrace record --mode flight` (docs/FLIGHT.md): the command end to end, the window it
// writes replayed and compared like any trace, and the flight options' usage errors.
#include <fmt/format.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "run_vtrace.h"
#include "vtrace/schema/events.h"
#include "vtrace/schema/trace_reader.h"

using vtrace::test::run_vtrace;
using vtrace::test::Spawned;

namespace {

std::filesystem::path fresh_dir(const std::string& name) {
  const auto dir =
      std::filesystem::temp_directory_path() / (name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// The summary's submits of a trace.
std::uint64_t submits_of(const std::filesystem::path& path) {
  auto reader = vtrace::schema::TraceReader::open(path);
  REQUIRE(reader.has_value());
  const auto* summary = vtrace::schema::read_trace_summary((*reader)->summary());
  REQUIRE(summary != nullptr);
  return summary->submits();
}

// The window record of a flight window's metadata, as values (REQUIREd present).
struct WindowValues {
  std::string trigger;
  std::uint64_t batches = 0;
  std::uint64_t trigger_batch = 0;
  std::uint64_t prologue_events = 0;
};
WindowValues window_values(const std::filesystem::path& path) {
  auto reader = vtrace::schema::TraceReader::open(path);
  REQUIRE(reader.has_value());
  const auto* metadata = vtrace::schema::read_trace_metadata((*reader)->header().metadata);
  REQUIRE((metadata != nullptr && metadata->window() != nullptr));
  const auto* w = metadata->window();
  return {w->trigger() != nullptr ? w->trigger()->str() : "", w->batches(), w->trigger_batch(),
          w->prologue_events()};
}

// Whether process `pid` has a handler for `signal` (SigCgt of /proc/PID/status).
bool catches(pid_t pid, int signal) {
  std::ifstream in(fmt::format("/proc/{}/status", pid));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("SigCgt:", 0) != 0) continue;
    const std::uint64_t mask = std::stoull(line.substr(7), nullptr, 16);
    return ((mask >> (signal - 1)) & 1u) != 0;
  }
  return false;
}

// Waits until `vtrace record` runs its workload: its SIGINT handler (interrupt.h) is installed
// right before the workload's first call. A guard of ten minutes only stops a hung test.
void wait_until_recording(Spawned& vtrace) {
  const auto guard = std::chrono::steady_clock::now() + std::chrono::minutes(10);
  while (!catches(vtrace.pid(), SIGINT)) {
    REQUIRE(vtrace.running());
    REQUIRE(std::chrono::steady_clock::now() < guard);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// `vtrace record --mode flight` of a long decode run, stopped by SIGINT (after `usr1` SIGUSR1s,
// each waited for until its window is on disk): the exit code and the output.
struct Stopped {
  int code = -1;
  std::string log;
};
Stopped record_flight_until_sigint(const std::filesystem::path& dir, int usr1) {
  Spawned vtrace({"record", "-w", "decode", "--hidden", "64", "--ffn", "128", "--layers", "2",
                  "--steps", "200000", "--mode", "flight", "-o", (dir / "w.vtrace").string()},
                 dir / "log.txt");
  wait_until_recording(vtrace);
  for (int i = 1; i <= usr1; ++i) {
    vtrace.signal(SIGUSR1);
    const auto window = i == 1 ? dir / "w.vtrace" : dir / fmt::format("w.{}.vtrace", i);
    REQUIRE(vtrace::test::wait_for_size(window, 1, vtrace));
  }
  vtrace.signal(SIGINT);
  const int status = vtrace.wait();
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, vtrace.log()};
}

}  // namespace

TEST_CASE("vtrace record --mode flight stopped by SIGINT before any window says none was written",
          "[cli][interrupt]") {
  const auto dir = fresh_dir("vtrace_cli_flight_sigint_none_test");
  const auto run = record_flight_until_sigint(dir, 0);
  INFO(run.log);
  CHECK(run.code == 130);
  CHECK(run.log.find("vtrace: interrupted by SIGINT: the workload stopped at a call boundary; the "
                     "flight recorder wrote no window (no trigger fired), so no trace was "
                     "written\n") != std::string::npos);
  CHECK(run.log.find("complete trace") == std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir / "w.vtrace"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("vtrace record --mode flight stopped by SIGINT names the windows it wrote", "[cli][interrupt]") {
  const auto dir = fresh_dir("vtrace_cli_flight_sigint_windows_test");
  const auto run = record_flight_until_sigint(dir, 2);
  INFO(run.log);
  CHECK(run.code == 130);
  const auto events = [](const std::filesystem::path& path) {
    auto reader = vtrace::schema::TraceReader::open(path);
    REQUIRE(reader.has_value());
    return (*reader)->event_count();
  };
  CHECK(run.log.find(fmt::format(
            "vtrace: interrupted by SIGINT: the workload stopped at a call boundary; the flight "
            "recorder wrote 2 windows: {} ({} events, signal), {} ({} events, signal)\n",
            (dir / "w.vtrace").string(), events(dir / "w.vtrace"), (dir / "w.2.vtrace").string(),
            events(dir / "w.2.vtrace"))) != std::string::npos);
  CHECK(run.log.find("marked interrupted") == std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("vtrace record --mode flight with --nan-at-step writes one window ending at that step",
          "[cli]") {
  const auto dir = fresh_dir("vtrace_cli_flight_test");
  const auto window = dir / "w.vtrace";
  // The command, on `cpu` (the reference runtime takes minutes under the sanitizers).
  const auto run = run_vtrace(fmt::format(
      "record --workload decode --steps 200 --nan-at-step 150 --mode flight --window-batches 16 "
      "--runtime cpu -o {}",
      window.string()));
  INFO(run.output);
  REQUIRE(run.code == 0);
  CHECK(run.output.find("1 window written") != std::string::npos);
  REQUIRE(std::filesystem::exists(window));
  CHECK_FALSE(std::filesystem::exists(dir / "w.2.vtrace"));

  // The batches before the steps: a one-step full recording has them and one step's.
  const auto one = dir / "one.vtrace";
  REQUIRE(run_vtrace(fmt::format("record --workload decode --steps 1 --runtime cpu -o {}", one.string())).code ==
          0);
  const std::uint64_t setup_batches = submits_of(one) - 1;

  const auto w = window_values(window);
  CHECK(w.trigger == "non_finite_readback");
  CHECK(w.batches == 16);
  // The last batch of the window is step 150's (steps count from 0).
  CHECK(w.trigger_batch == setup_batches + 151);

  const auto info = run_vtrace(fmt::format("info {}", window.string()));
  INFO(info.output);
  CHECK(info.code == 0);
  CHECK(info.output.find(fmt::format("window:      number 1, written by non_finite_readback")) !=
        std::string::npos);
  CHECK(info.output.find(fmt::format("(batch {}); holds 16 batches", setup_batches + 151)) !=
        std::string::npos);

  const auto replay = run_vtrace(fmt::format("replay {} --runtime cpu", window.string()));
  INFO(replay.output);
  CHECK(replay.code == 0);
  const auto compare =
      run_vtrace(fmt::format("compare {} --runtimes cpu,reference", window.string()));
  INFO(compare.output);
  CHECK(compare.code == 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("vtrace record --window-mib is in MiB: 1 MiB holds a small run's window whole",
          "[cli]") {
  const auto dir = fresh_dir("vtrace_cli_flight_mib_test");
  const auto window = dir / "w.vtrace";
  const auto run = run_vtrace(fmt::format(
      "record --workload decode --hidden 32 --ffn 64 --layers 1 --steps 12 --nan-at-step 10 "
      "--mode flight --window-batches 1000 --window-mib 1 --runtime cpu -o {}",
      window.string()));
  INFO(run.output);
  REQUIRE(run.code == 0);
  const auto w = window_values(window);
  // Every batch up to the trigger: the budget did not evict one.
  CHECK(w.batches == w.trigger_batch);
  CHECK(w.prologue_events == 0);
  CHECK(w.batches > 12);  // the weights' uploads and 11 steps: far more than a KiB
  std::filesystem::remove_all(dir);
}

TEST_CASE("vtrace record --mode flight without a trigger writes nothing and says so", "[cli]") {
  const auto dir = fresh_dir("vtrace_cli_flight_quiet_test");
  const auto run = run_vtrace(
      fmt::format("record --workload decode --steps 4 --hidden 64 --ffn 128 --mode flight -o {}",
                  (dir / "w.vtrace").string()));
  INFO(run.output);
  CHECK(run.code == 0);
  CHECK(run.output.find("no trigger fired, nothing written") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir / "w.vtrace"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("vtrace record refuses flight options that do not fit, exit 2, recording nothing",
          "[cli]") {
  const auto dir = fresh_dir("vtrace_cli_flight_usage_test");
  const auto out = (dir / "w.vtrace").string();
  struct Case {
    std::string arguments;
    std::string says;
  };
  const Case cases[] = {
      {"--workload decode --window-batches 4", "--window-batches needs --mode flight"},
      {"--workload decode --window-mib 4", "--window-mib needs --mode flight"},
      {"--workload decode --mode replay", "--mode takes full or flight, not `replay`"},
      {"--workload decode --mode flight --window-batches 0", "--window-batches takes 1 or more"},
      {"--workload decode --mode flight --window-mib 0",
       "--window-mib takes 1 to 1048576 (MiB), not 0"},
      {"--workload decode --mode flight --window-mib 1048577",
       "--window-mib takes 1 to 1048576 (MiB), not 1048577"},
      {"--workload decode --steps 3 --nan-at-step 3", "--nan-at-step 3 names no step"},
      {"--workload tiny --nan-at-step 1", "does not take --nan-at-step"},
  };
  for (const auto& c : cases) {
    const auto run = run_vtrace(fmt::format("record {} -o {}", c.arguments, out));
    INFO(c.arguments << "\n" << run.output);
    CHECK(run.code == 2);
    CHECK(run.output.find(c.says) != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(out));
  }
  std::filesystem::remove_all(dir);
}
