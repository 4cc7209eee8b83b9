// The host runtimes side by side (issue: cpu runtimes).
//
//   BM_Runtimes_ReplayDecode/<runtime>  in-process `vtrace replay` of the default decode trace
//                                       (hidden 512, ffn 2048, 4 layers, 2 participants, 8
//                                       steps, recorded on reference) on reference, cpu and
//                                       cpu-splitk (which reports mismatches: it still runs all).
//   BM_Runtimes_ReplayCpuOverReference  both alternated in each iteration; counter
//                                       reference_over_cpu = sum(reference) / sum(cpu). Goal >= 10.
//   BM_Runtimes_Transfer/<op>/<runtime> one 64 MiB upload, copy, zero or readback through submit
//                                       (readback: the call) next to BM_Runtimes_Memcpy, the
//                                       baseline: std::memcpy of 64 MiB between two buffers.
//                                       bytes/s via SetBytesProcessed.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "vtrace/recorder/recording_runtime.h"
#include "vtrace/replayer/replay_trace.h"
#include "vtrace/runtime/registry.h"
#include "vtrace/workloads/workload.h"

namespace {

namespace rt = vtrace::runtime;
namespace rp = vtrace::replayer;
namespace wl = vtrace::workloads;

const char* const kRuntimes[] = {"reference", "cpu", "cpu-splitk"};

struct DecodeTrace {
  std::filesystem::path dir;
  std::filesystem::path path;
  std::string error;
  ~DecodeTrace() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

const DecodeTrace& decode_trace() {
  static DecodeTrace t = [] {
    DecodeTrace x;
    x.dir = std::filesystem::temp_directory_path() /
            ("vtrace-bench-runtimes-" + std::to_string(::getpid()));
    std::filesystem::create_directories(x.dir);
    x.path = x.dir / "decode.vtrace";
    auto inner = rt::default_registry().open("reference", {.device_id = "device.vtrace.0"});
    if (!inner) {
      x.error = inner.error().message();
      return x;
    }
    auto recording = vtrace::recorder::RecordingRuntime::create(std::move(*inner), "reference",
                                                                x.path);
    if (!recording) {
      x.error = recording.error().message();
      return x;
    }
    wl::WorkloadSpec spec;
    spec.kind = wl::WorkloadKind::kDecode;
    auto report = wl::run_workload(spec, **recording, nullptr);
    if (!(*recording)->close() || !report) x.error = "recording the decode trace failed";
    return x;
  }();
  return t;
}

// Seconds of one whole replay on `runtime`; `error` is set when it could not run (a cpu-splitk
// mismatch is expected and not an error).
double replay_seconds(const std::string& runtime, std::string& error) {
  const auto t0 = std::chrono::steady_clock::now();
  rp::ReplayTraceOptions options;
  options.runtime = runtime;
  auto report = rp::replay_trace(decode_trace().path, options, rt::default_registry());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!report) error = report.error().message;
  if (report && runtime != "cpu-splitk" && !report->matched()) error = runtime + " did not match";
  return seconds;
}

void BM_Runtimes_ReplayDecode(benchmark::State& state) {
  const std::string runtime = kRuntimes[state.range(0)];
  state.SetLabel(runtime);
  if (!decode_trace().error.empty()) return state.SkipWithError(decode_trace().error.c_str());
  std::string error;
  for (auto _ : state) replay_seconds(runtime, error);
  if (!error.empty()) state.SkipWithError(error.c_str());
}
BENCHMARK(BM_Runtimes_ReplayDecode)->DenseRange(0, 2)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Runtimes_ReplayCpuOverReference(benchmark::State& state) {
  if (!decode_trace().error.empty()) return state.SkipWithError(decode_trace().error.c_str());
  std::string error;
  double reference = 0;
  double cpu = 0;
  for (auto _ : state) {
    reference += replay_seconds("reference", error);
    cpu += replay_seconds("cpu", error);
  }
  if (!error.empty()) return state.SkipWithError(error.c_str());
  state.counters["reference_over_cpu"] = reference / cpu;
}
BENCHMARK(BM_Runtimes_ReplayCpuOverReference)->Unit(benchmark::kMillisecond)->UseRealTime();

constexpr std::uint64_t kTransferBytes = 64ull * 1024 * 1024;

rt::BufferPtr allocate(rt::DeviceRuntime& runtime, const char* name) {
  auto request = rt::BufferRequest::create(*rt::ResourceId::create(name), kTransferBytes, 64,
                                           rt::BufferUsage::kActivations, rt::ElementType::kU8);
  if (!request) return nullptr;
  auto permit = runtime.admit(*request);
  if (!permit) return nullptr;
  auto buffer = runtime.allocate(std::move(*permit));
  return buffer ? std::move(*buffer) : nullptr;
}

bool submit(rt::DeviceRuntime& runtime, rt::Stream& stream, rt::Result<rt::CommandPtr> command) {
  if (!command) return false;
  auto fence = runtime.submit(stream, rt::CommandBatch::singleton(std::move(*command)));
  return fence && runtime.wait_fence(**fence).has_value();
}

enum Op : std::int64_t { kUpload, kCopy, kZero, kReadback };
const char* const kOps[] = {"upload", "copy", "zero", "readback"};

void BM_Runtimes_Transfer(benchmark::State& state) {
  const auto op = static_cast<Op>(state.range(0));
  const std::string runtime_name = kRuntimes[state.range(1)];
  state.SetLabel(std::string(kOps[op]) + " on " + runtime_name);
  auto runtime = rt::default_registry().open(runtime_name, {.device_memory_bytes = 1ull << 30});
  if (!runtime) return state.SkipWithError(runtime.error().message().c_str());
  auto stream = (*runtime)->create_stream();
  auto a = allocate(**runtime, "resource.bench.a");
  auto b = allocate(**runtime, "resource.bench.b");
  if (!stream || !a || !b) return state.SkipWithError("setup failed");
  const std::vector<std::uint8_t> host(kTransferBytes, 0x5A);
  const auto layout = *rt::HostTransferLayout::create(rt::ElementType::kU8, kTransferBytes);
  const auto region = *rt::CopyRegion::create(0, 0, kTransferBytes);
  bool ok = true;
  for (auto _ : state) {
    switch (op) {
      case kUpload:  // the encode copies the host bytes, then submit writes them
        ok = submit(**runtime, **stream, (*runtime)->encode_upload(host, layout, *a, 0)) && ok;
        break;
      case kCopy:
        ok = submit(**runtime, **stream, (*runtime)->encode_copy(*a, *b, region)) && ok;
        break;
      case kZero:
        ok = submit(**runtime, **stream, (*runtime)->encode_zero(*a, 0, kTransferBytes)) && ok;
        break;
      case kReadback: {
        auto bytes = (*runtime)->readback(**stream, *a, region, layout);
        ok = bytes.has_value() && ok;
        benchmark::DoNotOptimize(bytes);
        break;
      }
    }
  }
  if (!ok) return state.SkipWithError("a transfer failed");
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(kTransferBytes));
}
BENCHMARK(BM_Runtimes_Transfer)
    ->ArgsProduct({{kUpload, kCopy, kZero, kReadback}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_Runtimes_Memcpy(benchmark::State& state) {
  std::vector<std::uint8_t> from(kTransferBytes, 0x5A);
  std::vector<std::uint8_t> to(kTransferBytes, 0);
  for (auto _ : state) {
    std::memcpy(to.data(), from.data(), kTransferBytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(kTransferBytes));
}
BENCHMARK(BM_Runtimes_Memcpy)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
