// The host runtimes side by side (issue: cpu runtimes).
//
//   BM_Runtimes_ReplayDecode/<runtime>  in-process `vtrace replay` of the default decode trace
//                                       (hidden 512, ffn 2048, 4 layers, 2 participants, 8
//                                       steps, recorded on reference) on reference, cpu and
//                                       cpu-splitk (which reports mismatches: it still runs all).
//   BM_Runtimes_ReplayCpuOverReference  both alternated in each iteration; counter
//                                       reference_over_cpu = sum(reference) / sum(cpu). Goal >= 10.
//   BM_Runtimes_Transfer/<op>/<runtime>/<MiB>  one upload, copy, zero or readback of 1 or 64 MiB
//                                       through submit (readback: the call), next to two
//                                       baselines of the same size: BM_Runtimes_Memcpy
//                                       (std::memcpy between two warm buffers) and
//                                       BM_Runtimes_FreshCopy (a copy into a new std::vector,
//                                       what the interface's host vectors cost: an upload's
//                                       encode-time copy, a readback's result). bytes/s via
//                                       SetBytesProcessed.
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

constexpr std::uint64_t kMiB = 1024ull * 1024;

rt::BufferPtr allocate(rt::DeviceRuntime& runtime, const char* name, std::uint64_t bytes) {
  auto request = rt::BufferRequest::create(*rt::ResourceId::create(name), bytes, 64,
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
  const std::uint64_t kTransferBytes = static_cast<std::uint64_t>(state.range(2)) * kMiB;
  state.SetLabel(std::string(kOps[op]) + " on " + runtime_name);
  auto runtime = rt::default_registry().open(runtime_name, {.device_memory_bytes = 1ull << 30});
  if (!runtime) return state.SkipWithError(runtime.error().message().c_str());
  auto stream = (*runtime)->create_stream();
  auto a = allocate(**runtime, "resource.bench.a", kTransferBytes);
  auto b = allocate(**runtime, "resource.bench.b", kTransferBytes);
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
    ->ArgsProduct({{kUpload, kCopy, kZero, kReadback}, {0, 1}, {1, 64}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_Runtimes_Memcpy(benchmark::State& state) {
  const std::uint64_t kTransferBytes = static_cast<std::uint64_t>(state.range(0)) * kMiB;
  std::vector<std::uint8_t> from(kTransferBytes, 0x5A);
  std::vector<std::uint8_t> to(kTransferBytes, 0);
  for (auto _ : state) {
    std::memcpy(to.data(), from.data(), kTransferBytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(kTransferBytes));
}
BENCHMARK(BM_Runtimes_Memcpy)->Arg(1)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Runtimes_FreshCopy(benchmark::State& state) {
  const std::uint64_t bytes = static_cast<std::uint64_t>(state.range(0)) * kMiB;
  const std::vector<std::uint8_t> from(bytes, 0x5A);
  for (auto _ : state) {
    std::vector<std::uint8_t> to(from.begin(), from.end());
    benchmark::DoNotOptimize(to.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(bytes));
}
BENCHMARK(BM_Runtimes_FreshCopy)->Arg(1)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
