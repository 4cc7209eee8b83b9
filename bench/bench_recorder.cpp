// Recorder overhead as a ratio: one small decode-like workload (4 f16 dense-linear layers of width
// 256, 16 steps of upload -> 4 linears -> wait -> readback) on the bare reference runtime
// (BM_DecodeRaw) and on the same runtime wrapped in a RecordingRuntime writing a temp file
// (BM_DecodeRecorded; BM_DecodeRecordedDevNull: the same into /dev/null). Each iteration is a whole run: open, weights, steps, close (for the
// recorder: the trace is finalised and renamed). overhead = median(Recorded) / median(Raw).
//
// Size counters (BM_DecodeRecorded): trace_bytes (the finished .vtrace file), payload_bytes (every
// uploaded and read-back byte, concatenated), payload_zstd3_bytes (those bytes through
// ZSTD_compress level 3: what "just zstd the data" would cost), trace_vs_zstd3 = the ratio.
#include <benchmark/benchmark.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>
#include <zstd.h>

#include "vtrace/recorder/recording_runtime.h"
#include "vtrace/runtime/f16.h"
#include "vtrace/runtime/reference/reference_runtime.h"
#include "vtrace/schema/byte_io.h"

namespace {

namespace rt = vtrace::runtime;
using Bytes = std::vector<std::uint8_t>;

constexpr std::uint32_t kHidden = 256;
constexpr std::uint32_t kLayers = 4;
constexpr std::uint32_t kSteps = 16;

Bytes f16_bytes(const std::vector<float>& values) {
  Bytes out;
  out.reserve(values.size() * 2);
  for (float v : values) {
    const std::uint16_t h = rt::f32_to_f16(v);
    out.push_back(static_cast<std::uint8_t>(h & 0xFFu));
    out.push_back(static_cast<std::uint8_t>(h >> 8));
  }
  return out;
}

std::unique_ptr<rt::DeviceRuntime> reference() {
  auto descriptor = rt::reference::reference_descriptor("device.bench.0");
  if (!descriptor) return nullptr;
  auto runtime = rt::reference::ReferenceRuntime::create(std::move(*descriptor));
  if (!runtime) return nullptr;
  return std::move(*runtime);
}

rt::BufferPtr allocate(rt::DeviceRuntime& runtime, std::uint64_t bytes) {
  auto request = rt::BufferRequest::create(*rt::ResourceId::create("resource.bench"), bytes, 16,
                                           rt::BufferUsage::kActivations, rt::ElementType::kF16);
  if (!request) return nullptr;
  auto permit = runtime.admit(*request);
  if (!permit) return nullptr;
  auto buffer = runtime.allocate(std::move(*permit));
  return buffer ? std::move(*buffer) : nullptr;
}

// The workload; appends every uploaded and read-back byte to `payloads` when given. Returns false
// on any runtime failure (the benchmark then reports an error).
bool run_decode(rt::DeviceRuntime& runtime, Bytes* payloads) {
  auto stream = runtime.create_stream();
  if (!stream) return false;
  const std::uint64_t act_bytes = kHidden * 2;
  const std::uint64_t weight_bytes = std::uint64_t{kHidden} * kHidden * 2;
  const auto wait = [&](rt::CommandBatch batch) {
    auto fence = runtime.submit(**stream, std::move(batch));
    return fence && runtime.wait_fence(**fence).has_value();
  };
  std::vector<rt::BufferPtr> weights;
  for (std::uint32_t l = 0; l < kLayers; ++l) {
    weights.push_back(allocate(runtime, weight_bytes));
    if (!weights.back()) return false;
    std::vector<float> w(std::size_t{kHidden} * kHidden);
    for (std::size_t i = 0; i < w.size(); ++i) {
      w[i] = std::sin(static_cast<float>(i * 31 + l * 7)) / 16.0f;
    }
    const Bytes bytes = f16_bytes(w);
    if (payloads) payloads->insert(payloads->end(), bytes.begin(), bytes.end());
    auto up = runtime.encode_upload(bytes, *rt::HostTransferLayout::create(rt::ElementType::kF16, w.size()),
                                    *weights.back(), 0);
    if (!up || !wait(rt::CommandBatch::singleton(std::move(*up)))) return false;
  }
  std::vector<rt::BufferPtr> acts;
  for (std::uint32_t l = 0; l <= kLayers; ++l) {
    acts.push_back(allocate(runtime, act_bytes));
    if (!acts.back()) return false;
  }
  for (std::uint32_t step = 0; step < kSteps; ++step) {
    std::vector<float> x(kHidden);
    for (std::uint32_t i = 0; i < kHidden; ++i) x[i] = std::cos(static_cast<float>(i + 3 * step));
    const Bytes input = f16_bytes(x);
    if (payloads) payloads->insert(payloads->end(), input.begin(), input.end());
    rt::CommandBatch batch;
    auto up = runtime.encode_upload(input, *rt::HostTransferLayout::create(rt::ElementType::kF16, kHidden),
                                    *acts[0], 0);
    if (!up) return false;
    batch.push_initialization(std::move(*up));
    for (std::uint32_t l = 0; l < kLayers; ++l) {
      const rt::DenseLinearLaunch launch{{acts[l].get(), 0, act_bytes},
                                         {weights[l].get(), 0, weight_bytes},
                                         {acts[l + 1].get(), 0, act_bytes},
                                         1, kHidden, kHidden};
      auto cmd = runtime.encode_dense_linear(rt::DenseLinearRequest{{&launch, 1}, 1, 1});
      if (!cmd) return false;
      batch.push_compute(std::move(*cmd));
    }
    if (!wait(std::move(batch))) return false;
    auto out = runtime.readback(**stream, *acts[kLayers], *rt::CopyRegion::create(0, 0, act_bytes),
                                *rt::HostTransferLayout::create(rt::ElementType::kF16, kHidden));
    if (!out) return false;
    if (payloads) payloads->insert(payloads->end(), out->begin(), out->end());
  }
  return true;
}

std::filesystem::path temp_trace() {
  return std::filesystem::temp_directory_path() /
         ("vtrace_bench_recorder_" + std::to_string(::getpid()) + ".vtrace");
}

void BM_DecodeRaw(benchmark::State& state) {
  for (auto _ : state) {
    auto runtime = reference();
    if (!runtime || !run_decode(*runtime, nullptr)) {
      state.SkipWithError("the decode workload failed on the reference runtime");
      return;
    }
    benchmark::DoNotOptimize(runtime);
  }
}
BENCHMARK(BM_DecodeRaw)->Unit(benchmark::kMillisecond);

void BM_DecodeRecorded(benchmark::State& state) {
  const auto path = temp_trace();
  std::uint64_t trace_bytes = 0;
  for (auto _ : state) {
    auto recorder = vtrace::recorder::RecordingRuntime::create(reference(), "reference", path);
    if (!recorder || !run_decode(**recorder, nullptr)) {
      state.SkipWithError("the decode workload failed on the recording runtime");
      return;
    }
    auto closed = (*recorder)->close();
    if (!closed) {
      state.SkipWithError("the recorder could not write its trace");
      return;
    }
    trace_bytes = closed->file_bytes;
  }
  // Size figures, once, outside the timed loop.
  Bytes payloads;
  auto runtime = reference();
  if (!runtime || !run_decode(*runtime, &payloads)) return;
  Bytes compressed(ZSTD_compressBound(payloads.size()));
  const std::size_t z = ZSTD_compress(compressed.data(), compressed.size(), payloads.data(),
                                      payloads.size(), 3);
  if (ZSTD_isError(z)) return;
  state.counters["trace_bytes"] = static_cast<double>(trace_bytes);
  state.counters["payload_bytes"] = static_cast<double>(payloads.size());
  state.counters["payload_zstd3_bytes"] = static_cast<double>(z);
  state.counters["trace_vs_zstd3"] = static_cast<double>(trace_bytes) / static_cast<double>(z);
  std::filesystem::remove(path);
}
BENCHMARK(BM_DecodeRecorded)->Unit(benchmark::kMillisecond);

// The same recording into /dev/null: the recorder and writer without the file system's fsync and
// rename at close (what BM_DecodeRecorded adds on top of this is the disk).
void BM_DecodeRecordedDevNull(benchmark::State& state) {
  for (auto _ : state) {
    auto sink = vtrace::schema::open_raw_file_sink("/dev/null");
    if (!sink) {
      state.SkipWithError("cannot open /dev/null");
      return;
    }
    auto recorder =
        vtrace::recorder::RecordingRuntime::create(reference(), "reference", std::move(*sink));
    if (!recorder || !run_decode(**recorder, nullptr) || !(*recorder)->close()) {
      state.SkipWithError("the decode workload failed on the recording runtime");
      return;
    }
  }
}
BENCHMARK(BM_DecodeRecordedDevNull)->Unit(benchmark::kMillisecond);

}  // namespace
