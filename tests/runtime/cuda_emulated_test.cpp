// The cuda runtimes' own code (runtime/cuda/src/cuda_runtime.cpp) on the emulated cudart
// (cuda_emulator/cuda_emulator.h), in what the conformance suite cannot make happen: CUDA calls
// that fail (at open, allocation, submit, wait, readback), work that has not run yet (Pending),
// and the order of batches and readbacks across streams, made deterministic by holding streams.
// Every case ends by checking that the runtime gave back every allocation, stream, event and
// cuBLAS handle it took; a listener checks the same after every conformance case too.
// Tag [cuda-emulator]; built where the CUDA toolkit is (no GPU needed).
#define CATCH_CONFIG_EXTERNAL_INTERFACES  // the listener base (Catch2 v2)
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "conformance/conformance.h"
#include "cuda_emulator/cuda_emulator.h"
#include "vtrace/runtime/cuda/cuda_runtime.h"

namespace {

namespace rt = vtrace::runtime;
namespace emu = vtrace::testing::cuda_emulator;
namespace conf = vtrace::conformance;
using rt::CommandBatch;
using rt::ErrorKind;
using rt::cuda::CudaDenseLinear;

// Each case starts from a clean emulator and leaves none of its holds or plans behind.
struct Emulator {
  Emulator() { emu::reset(); }
  ~Emulator() {
    emu::release_all();
    emu::reset();
  }
};

void check_everything_given_back() {
  CHECK(emu::live_allocations() == 0);
  CHECK(emu::live_streams() == 0);
  CHECK(emu::live_events() == 0);
  CHECK(emu::live_blas_handles() == 0);
}

std::unique_ptr<rt::DeviceRuntime> open(CudaDenseLinear kind) {
  auto opened = rt::cuda::open_cuda_runtime(kind, {.device_id = "device.emulated.0"});
  if (!opened) FAIL("opening on the emulator failed: " << opened.error().message());
  return std::move(*opened);
}

rt::CommandPtr upload(rt::DeviceRuntime& runtime, const rt::Buffer& buffer,
                      const std::vector<std::uint8_t>& bytes, std::uint64_t offset = 0) {
  auto command = runtime.encode_upload(bytes, conf::layout(rt::ElementType::kU8, bytes.size()),
                                       buffer, offset);
  REQUIRE(command.has_value());
  return std::move(*command);
}

rt::CommandPtr copy(rt::DeviceRuntime& runtime, const rt::Buffer& from, const rt::Buffer& to,
                    std::uint64_t bytes) {
  auto command = runtime.encode_copy(from, to, conf::region(0, 0, bytes));
  REQUIRE(command.has_value());
  return std::move(*command);
}

CommandBatch batch_of(std::vector<rt::CommandPtr> commands) {
  CommandBatch batch;
  for (auto& command : commands) batch.push(std::move(command));
  return batch;
}

const rt::TerminalReceipt& terminal_of(const rt::FenceQuery& query) {
  REQUIRE(std::holds_alternative<rt::TerminalReceipt>(query));
  return std::get<rt::TerminalReceipt>(query);
}

// `count` f16 values (little-endian bytes), normal with sigma 1, from `seed`.
std::vector<std::uint8_t> f16_values(std::size_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> values(count);
  for (float& v : values) v = normal(rng);
  return rt::testing::f16_bytes(values);
}

std::vector<std::uint8_t> bytes_from(std::uint8_t seed, std::size_t count) {
  std::vector<std::uint8_t> bytes(count);
  for (std::size_t i = 0; i < count; ++i) bytes[i] = static_cast<std::uint8_t>(seed + 7 * i);
  return bytes;
}

// A cuda runtime with two streams (the second's emulator ordinal known) and buffers a (32
// bytes) and b (16).
struct TwoStreams {
  std::unique_ptr<rt::DeviceRuntime> runtime = open(CudaDenseLinear::kStrict);
  rt::StreamPtr first = conf::stream_of(*runtime);
  std::size_t second_ordinal = emu::next_stream_ordinal();
  rt::StreamPtr second = conf::stream_of(*runtime);
  rt::BufferPtr a = rt::testing::allocate(*runtime, 32, rt::ElementType::kU8);
  rt::BufferPtr b = rt::testing::allocate(*runtime, 16, rt::ElementType::kU8);

  // With the streams held: submits b := a[0, 16) on the second stream and lets only that stream
  // run, which must leave the copy Pending behind the first stream's last batch. Its fence.
  rt::FencePtr copy_behind_first() {
    auto copied = runtime->submit(*second, CommandBatch::singleton(copy(*runtime, *a, *b, 16)));
    REQUIRE(copied.has_value());
    emu::release(second_ordinal);
    emu::settle();
    CHECK(rt::is_pending(runtime->query_fence(**copied)));
    return std::move(*copied);
  }
};

// After every test case of this executable, the conformance suite's included: the runtimes it
// opened must have given back every allocation, stream, event and cuBLAS handle. A case that
// leaks ends the process with one line naming it (a listener cannot fail the case itself).
struct GivenBack : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  void testCaseEnded(const Catch::TestCaseStats& stats) override {
    const std::size_t allocations = emu::live_allocations(), streams = emu::live_streams(),
                      events = emu::live_events(), handles = emu::live_blas_handles();
    if (allocations + streams + events + handles == 0) return;
    std::fprintf(stderr,
                 "cuda emulator: test case `%s` left %zu allocations, %zu streams, %zu events "
                 "and %zu cuBLAS handles live\n",
                 stats.testInfo.name.c_str(), allocations, streams, events, handles);
    std::fflush(stderr);
    std::abort();
  }
};

}  // namespace

CATCH_REGISTER_LISTENER(GivenBack)

TEST_CASE("the cuda runtimes run on the emulated cudart, and give back all they took",
          "[cuda-emulator]") {
  const Emulator fresh;
  for (const auto kind : {CudaDenseLinear::kStrict, CudaDenseLinear::kCublas}) {
    INFO(rt::cuda::runtime_name(kind));
    {
      auto runtime = open(kind);
      CHECK(runtime->descriptor().device_class == rt::DeviceClass::kAccelerator);
      CHECK(runtime->descriptor().total_memory_bytes == emu::kDeviceMemoryBytes);
      auto stream = conf::stream_of(*runtime);
      const auto buffers = conf::dense_buffers(*runtime, 3, 37, 5);
      const auto input = f16_values(3 * 37, 1);
      const auto weight = f16_values(5 * 37, 2);
      rt::testing::fill(*runtime, *stream, *buffers.input, input);
      rt::testing::fill(*runtime, *stream, *buffers.weight, weight);
      const std::uint64_t launches_before = kind == CudaDenseLinear::kStrict
                                                ? emu::calls("launch_strict_dense_linear")
                                                : emu::calls("cublasGemmEx");
      rt::testing::submit_ok(*runtime, *stream,
                             CommandBatch::singleton(conf::dense_command(*runtime, buffers)));
      CHECK((kind == CudaDenseLinear::kStrict ? emu::calls("launch_strict_dense_linear")
                                              : emu::calls("cublasGemmEx")) == launches_before + 1);
      const auto output = rt::testing::contents(*runtime, *stream, *buffers.output);
      if (kind == CudaDenseLinear::kStrict) {
        CHECK(output == conf::reference_model(input, weight, 3, 37, 5));
      }
      CHECK(emu::live_streams() == 2);  // the runtime's service stream and this one
    }
    check_everything_given_back();
  }
}

TEST_CASE("opening fails with one sentence naming the CUDA call, and leaves nothing behind",
          "[cuda-emulator]") {
  const Emulator fresh;
  struct Failure {
    const char* function;  // "" for a device count of 0
    int status;
    CudaDenseLinear kind;
    const char* message;
  };
  const Failure failures[] = {
      {"cudaGetDeviceCount", cudaErrorInsufficientDriver, CudaDenseLinear::kStrict,
       "cuda: no CUDA device is available (cudaGetDeviceCount: CUDA driver version is "
       "insufficient for CUDA runtime version)"},
      {"", 0, CudaDenseLinear::kStrict,
       "cuda: no CUDA device is available (cudaGetDeviceCount found none)"},
      {"cudaSetDevice", cudaErrorInvalidDevice, CudaDenseLinear::kCublas,
       "cuda-cublas: CUDA device 0 cannot be used (cudaSetDevice: invalid device ordinal)"},
      {"cudaGetDeviceProperties", cudaErrorInvalidValue, CudaDenseLinear::kStrict,
       "cuda: CUDA device 0 cannot be queried (cudaGetDeviceProperties: invalid argument)"},
      {"cudaStreamCreateWithFlags", cudaErrorMemoryAllocation, CudaDenseLinear::kStrict,
       "cuda: a CUDA stream cannot be created (cudaStreamCreateWithFlags: out of memory)"},
      // A machine without cuBLAS: vtrace starts (cuBLAS is loaded, not linked); cuda-cublas is
      // unavailable.
      {"load_cublas", 1, CudaDenseLinear::kCublas,
       "cuda-cublas: cuBLAS cannot be loaded (libcublas.so.13: cannot open shared object file: No "
       "such file or directory; nor from the emulator)"},
      {"cublasCreate", CUBLAS_STATUS_NOT_INITIALIZED, CudaDenseLinear::kCublas,
       "cuda-cublas: cuBLAS cannot start (cublasCreate: the library was not initialized)"},
  };
  for (const Failure& f : failures) {
    INFO(f.message);
    emu::reset();
    if (*f.function == '\0') {
      emu::set_device_count(0);
    } else {
      emu::fail_call(f.function, 1, f.status);
    }
    const auto opened = rt::cuda::open_cuda_runtime(f.kind, {.device_id = "device.emulated.0"});
    REQUIRE_FALSE(opened.has_value());
    CHECK(opened.error().kind() == ErrorKind::kRuntimeUnavailable);
    CHECK(opened.error().message() == f.message);
    check_everything_given_back();
  }
  // A GPU this build has no kernel image for (an sm_80 under the default sm_90 build): `cuda` is
  // unavailable at open, not failing at every launch; `cuda-cublas` runs no kernel of ours.
  emu::reset();
  emu::fail_call("check_kernel_image", 1, cudaErrorNoKernelImageForDevice);
  const auto old_gpu = rt::cuda::open_cuda_runtime(CudaDenseLinear::kStrict, {});
  REQUIRE_FALSE(old_gpu.has_value());
  CHECK(old_gpu.error().kind() == ErrorKind::kRuntimeUnavailable);
  CHECK(old_gpu.error().message() ==
        std::string("cuda: CUDA device 0 (vtrace cudart emulator, compute capability 9.0) cannot "
                    "run this build's kernels, built for CUDA architectures ") +
            VTRACE_CUDA_ARCHITECTURES +
            " (cudaFuncGetAttributes: no kernel image is available for execution on the device)");
  check_everything_given_back();
  emu::fail_call("check_kernel_image", 1, cudaErrorNoKernelImageForDevice);
  CHECK(rt::cuda::open_cuda_runtime(CudaDenseLinear::kCublas, {}).has_value());
  CHECK(emu::calls("check_kernel_image") == 1);  // the strict open's only
  emu::reset();
  check_everything_given_back();
}

TEST_CASE("readback of a valid host layout larger than this host can hold is an error, not an "
          "exception",
          "[cuda-emulator]") {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  VTRACE_SKIP("the sanitizers' allocators end the process on such a request instead of failing it");
#else
  // 2^62 bytes: a layout spec 2.11 accepts (n * size does not overflow), which no host holds.
  // Like every readback failure after the checks of spec 7.3, the stream is synchronized first;
  // nothing else moves. (Not a conformance case: under the sanitizers, whose allocators end the
  // process on such a request, it can only be skipped, and the conformance suite must not skip.)
  const Emulator fresh;
  {
    auto runtime = open(CudaDenseLinear::kStrict);
    auto stream = conf::stream_of(*runtime);
    const auto buffer = rt::testing::allocate(*runtime, 4, rt::ElementType::kU8);
    const auto before = conf::counters(*runtime);
    const auto huge = runtime->readback(*stream, *buffer, conf::region(0, 0, 4),
                                        conf::layout(rt::ElementType::kU8, std::uint64_t{1} << 62));
    REQUIRE_FALSE(huge.has_value());
    CHECK(huge.error().kind() == ErrorKind::kReadbackInternal);
    CHECK(huge.error().message() ==
          "cuda cannot allocate the 4611686018427387904 bytes of the readback's host layout");
    CHECK(conf::counters(*runtime) == before);
    CHECK(runtime->stream_state(*stream) == rt::StreamState::kReady);
  }
  check_everything_given_back();
#endif
}

TEST_CASE("an allocation whose cudaMalloc or zero fill fails names the call and moves no counter",
          "[cuda-emulator]") {
  const Emulator fresh;
  {
    auto runtime = open(CudaDenseLinear::kStrict);
    struct Failure {
      const char* function;
      const char* message;
    };
    for (const Failure& f :
         {Failure{"cudaMalloc", "cuda allocation failed (cudaMalloc: out of memory)"},
          Failure{"cudaMemsetAsync",
                  "cuda allocation could not be zero-filled (cudaMemsetAsync: out of memory)"},
          Failure{"cudaStreamSynchronize",
                  "cuda allocation could not be zero-filled "
                  "(cudaStreamSynchronize: out of memory)"}}) {
      INFO(f.function);
      const auto before = conf::counters(*runtime);
      emu::fail_call(f.function, 1, cudaErrorMemoryAllocation);
      const auto allocated = runtime->allocate(conf::admit(*runtime, 64));
      REQUIRE_FALSE(allocated.has_value());
      CHECK(allocated.error().kind() == ErrorKind::kAllocationInvalid);
      CHECK(allocated.error().message() == f.message);
      const auto after = conf::counters(*runtime);
      CHECK(after.allocations == before.allocations);
      CHECK(after.live_allocations == before.live_allocations);
      CHECK(emu::live_allocations() == 0);
    }
    // The next one works, and reads zeros although the emulator's fresh memory is 0xCD.
    auto stream = conf::stream_of(*runtime);
    const auto buffer = rt::testing::allocate(*runtime, 64, rt::ElementType::kU8);
    CHECK(rt::testing::contents(*runtime, *stream, *buffer) == std::vector<std::uint8_t>(64, 0));
    CHECK(conf::counters(*runtime).allocations == 1);
  }
  check_everything_given_back();
}

TEST_CASE("a submit whose fence cannot be created is definitely not submitted", "[cuda-emulator]") {
  const Emulator fresh;
  {
    auto runtime = open(CudaDenseLinear::kStrict);
    auto stream = conf::stream_of(*runtime);
    const auto buffer = rt::testing::allocate(*runtime, 16, rt::ElementType::kU8);
    const auto pattern = bytes_from(0x30, 16);
    rt::testing::fill(*runtime, *stream, *buffer, pattern);
    const auto before = conf::counters(*runtime);
    const auto state_before = runtime->stream_state(*stream);
    emu::fail_call("cudaEventCreateWithFlags", 1, cudaErrorMemoryAllocation);
    auto fence = runtime->submit(
        *stream, CommandBatch::singleton(upload(*runtime, *buffer, bytes_from(0x90, 16))));
    REQUIRE_FALSE(fence.has_value());
    CHECK(fence.error().error().kind() == ErrorKind::kInternal);
    CHECK(fence.error().error().message() ==
          "cuda fence creation failed (cudaEventCreateWithFlags: out of memory)");
    CHECK(runtime->stream_state(*stream) == state_before);
    const auto after = conf::counters(*runtime);
    CHECK(after.submissions == before.submissions);
    CHECK(after.commands == before.commands);
    CHECK(after.uploaded_bytes == before.uploaded_bytes);
    CHECK(rt::testing::contents(*runtime, *stream, *buffer) == pattern);
  }
  check_everything_given_back();
}

TEST_CASE("a CUDA call that fails inside a batch ends its fence with a failure naming the call",
          "[cuda-emulator]") {
  const Emulator fresh;
  struct Failure {
    const char* function;
    int nth;  // which call of the batch's fails
    int status;
    CudaDenseLinear kind;
    const char* message;
  };
  const Failure failures[] = {
      {"cudaMemcpyAsync", 2, cudaErrorIllegalAddress, CudaDenseLinear::kStrict,
       "cuda cudaMemcpyAsync: an illegal memory access was encountered"},
      {"cudaMemsetAsync", 1, cudaErrorIllegalAddress, CudaDenseLinear::kStrict,
       "cuda cudaMemsetAsync: an illegal memory access was encountered"},
      {"launch_strict_dense_linear", 1, cudaErrorLaunchFailure, CudaDenseLinear::kStrict,
       "cuda strict dense-linear kernel launch: unspecified launch failure"},
      {"cublasGemmEx", 1, CUBLAS_STATUS_EXECUTION_FAILED, CudaDenseLinear::kCublas,
       "cuda-cublas cublasGemmEx: the GPU program failed to execute"},
      {"cudaMallocAsync", 1, cudaErrorMemoryAllocation, CudaDenseLinear::kStrict,
       "cuda cudaMallocAsync: out of memory"},
      {"cudaStreamWaitEvent", 1, cudaErrorInvalidResourceHandle, CudaDenseLinear::kStrict,
       "cuda cudaStreamWaitEvent: invalid resource handle"},
      {"cudaEventRecord", 1, cudaErrorInvalidResourceHandle, CudaDenseLinear::kStrict,
       "cuda cudaEventRecord: invalid resource handle"},
  };
  for (const Failure& f : failures) {
    INFO(f.function);
    emu::reset();
    {
      auto runtime = open(f.kind);
      auto stream = conf::stream_of(*runtime);
      auto other = conf::stream_of(*runtime);
      const auto buffers = conf::dense_buffers(*runtime, 2, 8, 4);
      const auto scratch = rt::testing::allocate(*runtime, 64, rt::ElementType::kU8);
      // A batch on another stream first, so that this one starts by waiting for it.
      rt::testing::fill(*runtime, *other, *buffers.input, f16_values(16, 3));
      rt::testing::fill(*runtime, *other, *buffers.weight, f16_values(32, 4));
      // Two uploads, a zero, an overlapping copy (staged through cudaMallocAsync), a launch.
      std::vector<rt::CommandPtr> commands;
      commands.push_back(upload(*runtime, *scratch, bytes_from(1, 16)));
      commands.push_back(upload(*runtime, *scratch, bytes_from(2, 16), 16));
      auto zero = runtime->encode_zero(*scratch, 32, 8);
      REQUIRE(zero.has_value());
      commands.push_back(std::move(*zero));
      auto overlapping = runtime->encode_copy(*scratch, *scratch, conf::region(0, 8, 16));
      REQUIRE(overlapping.has_value());
      commands.push_back(std::move(*overlapping));
      commands.push_back(conf::dense_command(*runtime, buffers));
      const auto before = conf::counters(*runtime);
      emu::fail_call(f.function, f.nth, f.status);
      auto fence = runtime->submit(*stream, batch_of(std::move(commands)));
      REQUIRE(fence.has_value());  // part of the batch may be enqueued: not DefinitelyNotSubmitted
      const auto waited = runtime->wait_fence(**fence);
      REQUIRE(waited.has_value());
      REQUIRE(waited->terminal.failure.has_value());
      CHECK(waited->terminal.failure->kind() == ErrorKind::kInternal);
      CHECK(waited->terminal.failure->message() == f.message);
      CHECK(terminal_of(runtime->query_fence(**fence)) == *waited);
      CHECK(runtime->stream_state(*stream) == rt::StreamState::kFailed);
      CHECK(conf::counters(*runtime).submissions == before.submissions + 1);
      // The stream recovers: synchronize makes it Ready, and the next batch runs right.
      REQUIRE(runtime->synchronize(*stream).has_value());
      CHECK(runtime->stream_state(*stream) == rt::StreamState::kReady);
      rt::testing::fill(*runtime, *stream, *scratch, bytes_from(9, 64));
      CHECK(rt::testing::contents(*runtime, *stream, *scratch) == bytes_from(9, 64));
    }
    check_everything_given_back();
  }
}

TEST_CASE(
    "query_fence answers Pending until the stream has run the batch, and counters move at submit",
    "[cuda-emulator]") {
  const Emulator fresh;
  {
    auto runtime = open(CudaDenseLinear::kStrict);
    auto stream = conf::stream_of(*runtime);
    const auto buffer = rt::testing::allocate(*runtime, 16, rt::ElementType::kU8);
    const auto before = conf::counters(*runtime);
    emu::hold_all();
    auto fence = runtime->submit(
        *stream, CommandBatch::singleton(upload(*runtime, *buffer, bytes_from(0x40, 16))));
    REQUIRE(fence.has_value());
    emu::settle();
    CHECK(rt::is_pending(runtime->query_fence(**fence)));
    CHECK(rt::is_pending(runtime->query_fence(**fence)));  // asking again changes nothing
    // cudaEventQuery's cudaErrorNotReady is cudart's last error of this thread too: the query
    // clears it, or a strict launch later on this thread would read it as its own failure.
    CHECK(cudaPeekAtLastError() == cudaSuccess);
    CHECK(runtime->stream_state(*stream) == rt::StreamState::kSubmitted);
    const auto moved = conf::counters(*runtime);
    CHECK(moved.submissions == before.submissions + 1);
    CHECK(moved.commands == before.commands + 1);
    CHECK(moved.uploaded_bytes == before.uploaded_bytes + 16);
    emu::release_all();
    const auto waited = runtime->wait_fence(**fence);
    REQUIRE(waited.has_value());
    CHECK(waited->terminal.is_succeeded());
    CHECK(terminal_of(runtime->query_fence(**fence)).terminal.is_succeeded());
    CHECK(rt::testing::contents(*runtime, *stream, *buffer) == bytes_from(0x40, 16));
  }
  check_everything_given_back();
}

TEST_CASE("a failing event query or wait is reported, not taken for completion",
          "[cuda-emulator]") {
  const Emulator fresh;
  {
    auto runtime = open(CudaDenseLinear::kStrict);
    auto stream = conf::stream_of(*runtime);
    const auto buffer = rt::testing::allocate(*runtime, 16, rt::ElementType::kU8);
    auto fence = runtime->submit(
        *stream, CommandBatch::singleton(upload(*runtime, *buffer, bytes_from(0x50, 16))));
    REQUIRE(fence.has_value());
    emu::fail_call("cudaEventQuery", 1, cudaErrorIllegalAddress);
    const auto queried = runtime->query_fence(**fence);
    REQUIRE(std::holds_alternative<rt::RuntimeError>(queried));
    CHECK(std::get<rt::RuntimeError>(queried).kind() == ErrorKind::kInternal);
    CHECK(std::get<rt::RuntimeError>(queried).message() ==
          "cuda cudaEventQuery: an illegal memory access was encountered");
    emu::fail_call("cudaEventSynchronize", 1, cudaErrorIllegalAddress);
    const auto waited = runtime->wait_fence(**fence);
    REQUIRE_FALSE(waited.has_value());
    CHECK(waited.error().error().kind() == ErrorKind::kInternal);
    CHECK(waited.error().error().message() ==
          "cuda cudaEventSynchronize: an illegal memory access was encountered");
    // Indeterminate is not terminal: the fence can still be waited for.
    CHECK(runtime->wait_fence(**fence).has_value());
    emu::fail_call("cudaStreamSynchronize", 1, cudaErrorIllegalAddress);
    const auto synced = runtime->synchronize(*stream);
    REQUIRE_FALSE(synced.has_value());
    CHECK(synced.error().message() ==
          "cuda cudaStreamSynchronize: an illegal memory access was encountered");
    CHECK(runtime->stream_state(*stream) == rt::StreamState::kFailed);
    emu::fail_call("cudaMemcpyAsync", 1, cudaErrorIllegalAddress);
    auto read = runtime->readback(*stream, *buffer, conf::region(0, 0, 16),
                                  conf::layout(rt::ElementType::kU8, 16));
    REQUIRE_FALSE(read.has_value());
    CHECK(read.error().kind() == ErrorKind::kReadbackInternal);
    CHECK(read.error().message() ==
          "cuda readback copy failed (cudaMemcpyAsync: an illegal "
          "memory access was encountered)");
    CHECK(rt::testing::contents(*runtime, *stream, *buffer) == bytes_from(0x50, 16));
  }
  check_everything_given_back();
}

TEST_CASE("a batch on one stream runs after the batch submitted before it on another",
          "[cuda-emulator]") {
  const Emulator fresh;
  {
    TwoStreams rig;
    emu::hold_all();
    // First stream: a := X. Second stream, submitted after: b := a.
    auto written = rig.runtime->submit(
        *rig.first, CommandBatch::singleton(upload(*rig.runtime, *rig.a, bytes_from(0x60, 16))));
    REQUIRE(written.has_value());
    const auto copied = rig.copy_behind_first();
    CHECK(rt::is_pending(rig.runtime->query_fence(**written)));
    emu::release_all();
    REQUIRE(rig.runtime->wait_fence(*copied).has_value());
    CHECK(rt::testing::contents(*rig.runtime, *rig.second, *rig.b) == bytes_from(0x60, 16));
  }
  check_everything_given_back();
}

TEST_CASE("a readback waits for the last batch of every stream", "[cuda-emulator]") {
  const Emulator fresh;
  {
    auto runtime = open(CudaDenseLinear::kStrict);
    auto writer = conf::stream_of(*runtime);
    auto reader = conf::stream_of(*runtime);
    const auto buffer = rt::testing::allocate(*runtime, 16, rt::ElementType::kU8);
    emu::hold_all();
    auto written = runtime->submit(
        *writer, CommandBatch::singleton(upload(*runtime, *buffer, bytes_from(0x70, 16))));
    REQUIRE(written.has_value());
    const std::uint64_t copies = emu::calls("cudaMemcpyAsync");
    auto read = std::async(std::launch::async, [&] {
      return runtime->readback(*reader, *buffer, conf::region(0, 0, 16),
                               conf::layout(rt::ElementType::kU8, 16));
    });
    // Once the readback's copy is enqueued, the reader stream may run; the writer stays held.
    while (emu::calls("cudaMemcpyAsync") == copies) std::this_thread::yield();
    emu::release(emu::next_stream_ordinal() - 1);  // the reader
    emu::settle();
    CHECK(read.wait_for(std::chrono::seconds(0)) == std::future_status::timeout);
    emu::release_all();
    const auto bytes = read.get();
    REQUIRE(bytes.has_value());
    CHECK(*bytes == bytes_from(0x70, 16));
  }
  check_everything_given_back();
}

TEST_CASE(
    "a batch that fails part way stays Pending while its enqueued part runs, and later "
    "batches wait for that part",
    "[cuda-emulator]") {
  const Emulator fresh;
  {
    TwoStreams rig;
    emu::hold_all();
    // The first upload is enqueued, the second fails.
    emu::fail_call("cudaMemcpyAsync", 2, cudaErrorIllegalAddress);
    std::vector<rt::CommandPtr> commands;
    commands.push_back(upload(*rig.runtime, *rig.a, bytes_from(0x80, 16)));
    commands.push_back(upload(*rig.runtime, *rig.a, bytes_from(0x81, 16), 16));
    auto failed = rig.runtime->submit(*rig.first, batch_of(std::move(commands)));
    REQUIRE(failed.has_value());
    CHECK(rig.runtime->stream_state(*rig.first) == rt::StreamState::kFailed);
    emu::settle();
    CHECK(rt::is_pending(rig.runtime->query_fence(**failed)));
    const auto copied = rig.copy_behind_first();
    emu::release_all();
    const auto waited = rig.runtime->wait_fence(**failed);
    REQUIRE(waited.has_value());
    REQUIRE(waited->terminal.failure.has_value());
    CHECK(waited->terminal.failure->message() ==
          "cuda cudaMemcpyAsync: an illegal memory access was encountered");
    REQUIRE(rig.runtime->wait_fence(*copied).has_value());
    CHECK(rt::testing::contents(*rig.runtime, *rig.second, *rig.b) == bytes_from(0x80, 16));
  }
  check_everything_given_back();
}
