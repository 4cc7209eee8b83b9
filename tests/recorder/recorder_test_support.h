// Helpers for the recorder tests: an in-memory sink, reference runtimes, a small dense-linear
// workload that runs on any DeviceRuntime, and reading a recorded trace back into events.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "vtrace/recorder/recording_runtime.h"
#include "vtrace/runtime/f16.h"
#include "vtrace/runtime/reference/reference_runtime.h"
#include "vtrace/schema/byte_io.h"
#include "vtrace/schema/events.h"
#include "vtrace/schema/trace_reader.h"

namespace vtrace::recorder::testing {

// Sends this process's stderr (fd 2) to `file` while it lives; text() is what was written so far.
// The file is removed with it.
class StderrCapture {
 public:
  explicit StderrCapture(std::filesystem::path file) : file_(std::move(file)) {
    std::fflush(stderr);
    saved_ = ::dup(2);
    REQUIRE(saved_ >= 0);
    const int fd = ::open(file_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    REQUIRE(fd >= 0);
    REQUIRE(::dup2(fd, 2) == 2);
    ::close(fd);
  }
  ~StderrCapture() {
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
    std::error_code ec;
    std::filesystem::remove(file_, ec);  // read through text() while it lives
  }
  StderrCapture(const StderrCapture&) = delete;
  StderrCapture& operator=(const StderrCapture&) = delete;
  std::string text() const {
    std::fflush(stderr);
    std::ifstream in(file_);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

 private:
  std::filesystem::path file_;
  int saved_ = -1;
};

namespace rt = vtrace::runtime;
namespace fb = vtrace::fb;

// Collects written bytes in memory; readable while the recorder runs.
class MemorySink final : public schema::ByteSink {
 public:
  struct State {
    mutable std::mutex mu;
    std::vector<std::uint8_t> bytes;
    std::vector<std::uint8_t> copy() const {
      std::lock_guard lock(mu);
      return bytes;
    }
  };
  explicit MemorySink(std::shared_ptr<State> state) : state_(std::move(state)) {}
  schema::TraceResult<void> write(std::span<const std::uint8_t> bytes) override {
    std::lock_guard lock(state_->mu);
    state_->bytes.insert(state_->bytes.end(), bytes.begin(), bytes.end());
    return {};
  }
  schema::TraceResult<void> flush() override { return {}; }
  schema::TraceResult<void> commit() override { return {}; }
  std::uint64_t bytes_written() const override {
    std::lock_guard lock(state_->mu);
    return state_->bytes.size();
  }
  std::string describe() const override { return "memory.vtrace"; }

 private:
  std::shared_ptr<State> state_;
};

inline std::unique_ptr<rt::DeviceRuntime> make_reference(
    const std::string& device_id = "device.recorder.test.0") {
  auto descriptor = rt::reference::reference_descriptor(device_id);
  REQUIRE(descriptor.has_value());
  auto runtime = rt::reference::ReferenceRuntime::create(std::move(*descriptor));
  REQUIRE(runtime.has_value());
  return std::unique_ptr<rt::DeviceRuntime>(std::move(*runtime));
}

inline std::unique_ptr<RecordingRuntime> record_to_memory(
    std::unique_ptr<rt::DeviceRuntime> inner, std::shared_ptr<MemorySink::State> sink,
    RecorderOptions options = {}) {
  auto recorder = RecordingRuntime::create(std::move(inner), "reference",
                                           std::make_unique<MemorySink>(std::move(sink)),
                                           std::move(options));
  REQUIRE(recorder.has_value());
  return std::move(*recorder);
}

inline rt::BufferRequest request(std::uint64_t size, rt::ElementType type,
                                 const std::string& name = "resource.test",
                                 rt::BufferUsage usage = rt::BufferUsage::kActivations) {
  auto r = rt::BufferRequest::create(*rt::ResourceId::create(name), size, 16, usage, type);
  REQUIRE(r.has_value());
  return std::move(*r);
}

inline rt::BufferPtr allocate(rt::DeviceRuntime& runtime, std::uint64_t size, rt::ElementType type,
                              const std::string& name = "resource.test") {
  auto permit = runtime.admit(request(size, type, name));
  REQUIRE(permit.has_value());
  auto buffer = runtime.allocate(std::move(*permit));
  REQUIRE(buffer.has_value());
  return std::move(*buffer);
}

inline rt::HostTransferLayout layout(rt::ElementType type, std::uint64_t count) {
  auto l = rt::HostTransferLayout::create(type, count);
  REQUIRE(l.has_value());
  return *l;
}

inline rt::CopyRegion region(std::uint64_t src, std::uint64_t dst, std::uint64_t len) {
  auto r = rt::CopyRegion::create(src, dst, len);
  REQUIRE(r.has_value());
  return *r;
}

inline std::vector<std::uint8_t> f16_bytes(const std::vector<float>& values) {
  std::vector<std::uint8_t> out;
  for (float v : values) {
    const std::uint16_t h = rt::f32_to_f16(v);
    out.push_back(static_cast<std::uint8_t>(h & 0xFFu));
    out.push_back(static_cast<std::uint8_t>(h >> 8));
  }
  return out;
}

// What a workload run lets the product see.
struct WorkloadResult {
  std::vector<std::vector<std::uint8_t>> readbacks;
  std::vector<std::string> errors;  // error kind names of the expected failures
  std::optional<rt::CounterSnapshot> counters;
};

// A small decode-like loop: `layers` f16 linears of width `hidden` chained on one stream, `steps`
// steps of upload -> dense linears -> wait -> readback, plus one failing readback per step (a
// region past the end) so errors flow through too. Deterministic for given arguments.
inline WorkloadResult run_small_workload(rt::DeviceRuntime& runtime, std::uint32_t hidden = 16,
                                         std::uint32_t layers = 2, std::uint32_t steps = 3) {
  WorkloadResult result;
  auto stream = runtime.create_stream();
  REQUIRE(stream.has_value());
  const std::uint64_t act_bytes = std::uint64_t{hidden} * 2;
  const std::uint64_t weight_bytes = std::uint64_t{hidden} * hidden * 2;
  std::vector<rt::BufferPtr> weights;
  std::vector<rt::BufferPtr> acts;
  for (std::uint32_t l = 0; l < layers; ++l) {
    weights.push_back(allocate(runtime, weight_bytes, rt::ElementType::kF16, "resource.weight"));
    std::vector<float> w(std::size_t{hidden} * hidden);
    for (std::size_t i = 0; i < w.size(); ++i) {
      w[i] = static_cast<float>(static_cast<int>((i * 7 + l * 3) % 11) - 5) / 16.0f;
    }
    auto bytes = f16_bytes(w);
    auto up = runtime.encode_upload(bytes, layout(rt::ElementType::kF16, w.size()), *weights.back(),
                                    0);
    REQUIRE(up.has_value());
    auto fence = runtime.submit(**stream, rt::CommandBatch::singleton(std::move(*up)));
    REQUIRE(fence.has_value());
    REQUIRE(runtime.wait_fence(**fence).has_value());
  }
  for (std::uint32_t l = 0; l <= layers; ++l) {
    acts.push_back(allocate(runtime, act_bytes, rt::ElementType::kF16, "resource.act"));
  }
  for (std::uint32_t step = 0; step < steps; ++step) {
    std::vector<float> x(hidden);
    for (std::uint32_t i = 0; i < hidden; ++i) {
      x[i] = static_cast<float>(static_cast<int>((i + step) % 5) - 2) / 4.0f;
    }
    rt::CommandBatch batch;
    auto up = runtime.encode_upload(f16_bytes(x), layout(rt::ElementType::kF16, hidden),
                                    *acts[0], 0);
    REQUIRE(up.has_value());
    batch.push_initialization(std::move(*up));
    for (std::uint32_t l = 0; l < layers; ++l) {
      const rt::DenseLinearLaunch launch{{acts[l].get(), 0, act_bytes},
                                         {weights[l].get(), 0, weight_bytes},
                                         {acts[l + 1].get(), 0, act_bytes},
                                         1,
                                         hidden,
                                         hidden};
      auto cmd = runtime.encode_dense_linear(rt::DenseLinearRequest{{&launch, 1}, 1, 1});
      REQUIRE(cmd.has_value());
      batch.push_compute(std::move(*cmd));
    }
    auto fence = runtime.submit(**stream, std::move(batch));
    REQUIRE(fence.has_value());
    REQUIRE(runtime.wait_fence(**fence).has_value());
    auto out = runtime.readback(**stream, *acts[layers], region(0, 0, act_bytes),
                                layout(rt::ElementType::kF16, hidden));
    REQUIRE(out.has_value());
    result.readbacks.push_back(std::move(*out));
    auto bad = runtime.readback(**stream, *acts[layers], region(act_bytes, 0, 2),
                                layout(rt::ElementType::kF16, 1));
    REQUIRE_FALSE(bad.has_value());
    result.errors.emplace_back(rt::error_kind_name(bad.error().kind()));
  }
  result.counters = runtime.counter_snapshot();
  return result;
}

// A trace read back: every verified event record, in order.
struct ReadTrace {
  std::unique_ptr<schema::TraceReader> reader;
  std::vector<std::vector<std::uint8_t>> records;
  const fb::Event& event(std::size_t i) const { return *schema::event_of(records.at(i)); }
  std::map<std::string, std::size_t> counts() const {
    std::map<std::string, std::size_t> out;
    for (const auto& r : records) ++out[std::string(schema::event_kind_name(*schema::event_of(r)))];
    return out;
  }
  // Events of one kind, in order.
  template <typename T>
  std::vector<const T*> all(fb::EventBody kind) const {
    std::vector<const T*> out;
    for (const auto& r : records) {
      const auto* e = schema::event_of(r);
      if (e->body_type() == kind) out.push_back(static_cast<const T*>(e->body()));
    }
    return out;
  }
};

inline ReadTrace read_trace(std::unique_ptr<schema::ByteSource> source) {
  ReadTrace out;
  auto reader = schema::TraceReader::open(std::move(source));
  REQUIRE(reader.has_value());
  out.reader = std::move(*reader);
  auto visited = out.reader->visit_events(
      0, out.reader->event_count(), [&](std::uint64_t, std::span<const std::uint8_t> bytes) {
        out.records.emplace_back(bytes.begin(), bytes.end());
        return true;
      });
  REQUIRE(visited.has_value());
  return out;
}

inline ReadTrace read_trace(const std::vector<std::uint8_t>& bytes) {
  return read_trace(schema::memory_source(bytes, "memory.vtrace"));
}

}  // namespace vtrace::recorder::testing
