// A recording made by several threads at once replays on a fresh runtime with no mismatch
// (trace order is execution order), a recorded call has the wrapped runtime to itself while it
// runs, and capture that cannot start never opens a runtime twice.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "recorder_test_support.h"
#include "vtrace/recorder/open.h"
#include "vtrace/replayer/replay_trace.h"
#include "vtrace/runtime/forwarding_runtime.h"

using namespace vtrace::recorder::testing;
using vtrace::recorder::RecordingRuntime;

namespace {

namespace rt = vtrace::runtime;

std::filesystem::path fresh_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   (name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// One thread's work on its own stream and buffers: upload an input, one f16 dense linear and one
// copy in a batch, submit, wait, read the output back. Returns an empty string or what went wrong
// (Catch2 v2 assertions are not thread-safe, so threads report and the test thread checks).
std::string thread_workload(rt::DeviceRuntime& runtime, int thread, int iterations) {
  constexpr std::uint32_t kHidden = 8;
  constexpr std::uint64_t kActBytes = kHidden * 2;
  constexpr std::uint64_t kWeightBytes = kHidden * kHidden * 2;
  auto stream = runtime.create_stream();
  if (!stream) return "create_stream failed";
  auto make = [&](std::uint64_t size, const char* name) -> rt::BufferPtr {
    auto req = rt::BufferRequest::create(*rt::ResourceId::create(name), size, 16,
                                         rt::BufferUsage::kActivations, rt::ElementType::kF16);
    if (!req) return nullptr;
    auto permit = runtime.admit(*req);
    if (!permit) return nullptr;
    auto buffer = runtime.allocate(std::move(*permit));
    return buffer ? std::move(*buffer) : nullptr;
  };
  auto weight = make(kWeightBytes, "resource.weight");
  auto input = make(kActBytes, "resource.input");
  auto output = make(kActBytes, "resource.output");
  auto copy = make(kActBytes, "resource.copy");
  if (!weight || !input || !output || !copy) return "allocation failed";
  std::vector<float> w(std::size_t{kHidden} * kHidden);
  for (std::size_t i = 0; i < w.size(); ++i) {
    w[i] = static_cast<float>(static_cast<int>((i * 5 + static_cast<std::size_t>(thread)) % 9) - 4) /
           8.0f;
  }
  const auto w_bytes = f16_bytes(w);
  const auto f16_layout = [](std::uint64_t count) {
    return *rt::HostTransferLayout::create(rt::ElementType::kF16, count);
  };
  auto up_w = runtime.encode_upload(w_bytes, f16_layout(w.size()), *weight, 0);
  if (!up_w) return "weight upload encode failed";
  auto wf = runtime.submit(**stream, rt::CommandBatch::singleton(std::move(*up_w)));
  if (!wf || !runtime.wait_fence(**wf)) return "weight upload failed";
  for (int i = 0; i < iterations; ++i) {
    std::vector<float> x(kHidden);
    for (std::uint32_t k = 0; k < kHidden; ++k) {
      x[k] = static_cast<float>(static_cast<int>((k + static_cast<std::uint32_t>(i + thread)) % 7) -
                                3) /
             4.0f;
    }
    rt::CommandBatch batch;
    auto up = runtime.encode_upload(f16_bytes(x), f16_layout(kHidden), *input, 0);
    if (!up) return "upload encode failed";
    batch.push_initialization(std::move(*up));
    const rt::DenseLinearLaunch launch{{input.get(), 0, kActBytes},
                                       {weight.get(), 0, kWeightBytes},
                                       {output.get(), 0, kActBytes},
                                       1,
                                       kHidden,
                                       kHidden};
    auto linear = runtime.encode_dense_linear(rt::DenseLinearRequest{{&launch, 1}, 1, 1});
    if (!linear) return "dense linear encode failed";
    batch.push_compute(std::move(*linear));
    auto cp = runtime.encode_copy(*output, *copy, *rt::CopyRegion::create(0, 0, kActBytes));
    if (!cp) return "copy encode failed";
    batch.push_compute(std::move(*cp));
    auto fence = runtime.submit(**stream, std::move(batch));
    if (!fence) return "submit failed";
    if (!runtime.wait_fence(**fence)) return "wait failed";
    auto back = runtime.readback(**stream, *copy, *rt::CopyRegion::create(0, 0, kActBytes),
                                 f16_layout(kHidden));
    if (!back || back->size() != kActBytes) return "readback failed";
  }
  return {};
}

// A registry whose "reference" factory counts how often it is asked to open.
rt::RuntimeRegistry counting_registry(std::shared_ptr<std::atomic<int>> opens) {
  rt::RuntimeRegistry registry;
  registry.add("reference", "reference, counting opens",
               [opens](const rt::RuntimeOpenOptions&)
                   -> rt::Result<std::unique_ptr<rt::DeviceRuntime>> {
                 ++*opens;
                 return make_reference();
               });
  return registry;
}

}  // namespace

TEST_CASE("a trace recorded by four threads at once replays on a fresh runtime with no mismatch") {
  constexpr int kThreads = 4;
  constexpr int kIterations = 40;
  const auto dir = fresh_dir("vtrace_concurrent_replay_test");
  const auto path = dir / "concurrent.vtrace";
  {
    auto rec = RecordingRuntime::create(make_reference(), "reference", path);
    REQUIRE(rec.has_value());
    std::vector<std::string> problems(kThreads);
    {
      std::vector<std::thread> threads;
      for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&rec, &problems, t] {
          problems[static_cast<std::size_t>(t)] = thread_workload(**rec, t, kIterations);
        });
      }
      for (auto& th : threads) th.join();
    }
    for (const auto& problem : problems) CHECK(problem.empty());
    REQUIRE((*rec)->close().has_value());
  }
  auto report = vtrace::replayer::replay_trace(path, {}, rt::default_registry());
  REQUIRE(report.has_value());
  std::string first_mismatches;
  for (std::size_t i = 0; i < report->mismatches.size() && i < 5; ++i) {
    const auto& m = report->mismatches[i];
    first_mismatches += "event " + std::to_string(m.event) + " " + m.call + ": expected " +
                        m.expected + ", actual " + m.actual + "\n";
  }
  INFO(first_mismatches);
  CHECK(report->mismatch_count == 0);
  CHECK(report->complete);
  // Everything was compared: every submit's and readback's counters, every readback's bytes.
  CHECK(report->checked.counter_snapshots == kThreads * (2 * kIterations + 1));
  CHECK(report->checked.readbacks == kThreads * kIterations);
  CHECK(report->checked.fences >= kThreads * (kIterations + 1));
  std::filesystem::remove_all(dir);
}

TEST_CASE("capture that cannot create its trace file opens the runtime only once") {
  const auto dir = fresh_dir("vtrace_capture_open_once_test");
  auto opens = std::make_shared<std::atomic<int>>(0);
  const auto registry = counting_registry(opens);
  ::setenv("VTRACE_CAPTURE", (dir / "missing-dir" / "x.vtrace").c_str(), 1);
  auto runtime = vtrace::recorder::open_runtime("reference", {}, registry);
  ::unsetenv("VTRACE_CAPTURE");
  REQUIRE(runtime.has_value());
  CHECK(dynamic_cast<RecordingRuntime*>(runtime->get()) == nullptr);
  CHECK(opens->load() == 1);
  CHECK(run_small_workload(**runtime, 8, 1, 1).readbacks.size() == 1);
  std::filesystem::remove_all(dir);
}

TEST_CASE("wrap leaves the runtime with the caller when the recorder cannot be created") {
  auto inner = make_reference();
  const auto* before = inner.get();
  auto failed = RecordingRuntime::wrap(inner, "reference", nullptr);
  REQUIRE_FALSE(failed.has_value());
  CHECK(failed.error().kind() == rt::ErrorKind::kInternal);
  CHECK(inner.get() == before);

  auto sink = std::make_shared<MemorySink::State>();
  auto wrapped = RecordingRuntime::wrap(inner, "reference", std::make_unique<MemorySink>(sink));
  REQUIRE(wrapped.has_value());
  CHECK(inner == nullptr);
  CHECK(&(*wrapped)->inner() == before);
  REQUIRE((*wrapped)->close().has_value());
}

TEST_CASE("a recorded call has the wrapped runtime to itself: another thread's call waits") {
  // The wrapped synchronize holds on until the other thread has called the recorder's
  // create_stream, then gives that call a second to reach the wrapped runtime. The recorder's
  // order lock keeps it out until synchronize has returned and its events are written; a
  // recorder without it would let it in (and record its event inside synchronize's).
  struct Gate {
    std::mutex mu;
    std::condition_variable cv;
    bool armed = false;
    bool syncing = false;
    bool calling = false;
    bool entered = false;
    bool entered_while_syncing = false;
  };
  class Gated final : public rt::ForwardingRuntime {
   public:
    Gated(std::unique_ptr<rt::DeviceRuntime> inner, Gate& gate)
        : ForwardingRuntime(std::move(inner)), gate_(gate) {}
    rt::Result<void> synchronize(rt::Stream& stream) override {
      {
        std::unique_lock lock(gate_.mu);
        gate_.syncing = true;
        gate_.cv.notify_all();
        gate_.cv.wait(lock, [&] { return gate_.calling; });
        gate_.cv.wait_for(lock, std::chrono::seconds(1), [&] { return gate_.entered; });
        gate_.entered_while_syncing = gate_.entered;
        gate_.syncing = false;
      }
      return ForwardingRuntime::synchronize(stream);
    }
    rt::Result<rt::StreamPtr> create_stream() override {
      {
        const std::lock_guard lock(gate_.mu);
        if (gate_.armed) gate_.entered = true;
        gate_.cv.notify_all();
      }
      return ForwardingRuntime::create_stream();
    }

   private:
    Gate& gate_;
  };
  Gate gate;
  auto sink = std::make_shared<MemorySink::State>();
  auto rec = record_to_memory(std::make_unique<Gated>(make_reference(), gate), sink);
  auto stream = rec->create_stream();
  REQUIRE(stream.has_value());
  {
    const std::lock_guard lock(gate.mu);
    gate.armed = true;
  }
  std::string other;
  std::thread caller([&] {
    {
      std::unique_lock lock(gate.mu);
      gate.cv.wait(lock, [&] { return gate.syncing; });
      gate.calling = true;
      gate.cv.notify_all();
    }
    if (!rec->create_stream()) other = "create_stream failed";
  });
  const auto synced = rec->synchronize(**stream);
  caller.join();
  CHECK(synced.has_value());
  CHECK(other.empty());
  CHECK(gate.entered);
  CHECK_FALSE(gate.entered_while_syncing);
  REQUIRE(rec->close().has_value());
}
