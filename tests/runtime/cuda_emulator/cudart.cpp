// The emulated CUDA runtime API (cuda_emulator.h): device memory, streams as worker threads,
// events, and the test controls. One mutex guards all emulator state; one condition variable
// announces every change of it (queues, events, holds).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cuda_emulator.h"
#include "emulator_internal.h"

namespace emu = vtrace::testing::cuda_emulator;

namespace {

struct EventState {
  std::uint64_t recorded = 0;                            // records made
  std::uint64_t completed = 0;                           // the last record its stream reached
  std::chrono::steady_clock::time_point completed_at{};  // when it did (cudaEventElapsedTime)
  bool timing = true;                                    // created without cudaEventDisableTiming
};

// One queued operation: work to run, an event record to complete, or an event to wait for.
struct Operation {
  std::function<void()> work{};
  std::shared_ptr<EventState> completes{};  // a record: sets completed = generation
  std::shared_ptr<EventState> waits_for{};  // a wait: until completed >= generation
  std::uint64_t generation = 0;
};

}  // namespace

struct CUstream_st {
  std::size_t ordinal = 0;
  std::deque<Operation> queue;
  bool running = false;  // the worker is running an operation's work
  bool held = false;
  bool stopping = false;
  std::thread worker;
};

struct CUevent_st {
  std::shared_ptr<EventState> state = std::make_shared<EventState>();
};

namespace {

struct Allocation {
  std::size_t bytes = 0;
  bool stream_ordered = false;  // cudaMallocAsync
};

struct State {
  std::mutex mutex;
  std::condition_variable changed;
  std::map<std::uintptr_t, Allocation> allocations;  // by base address
  std::set<CUstream_st*> streams;
  std::set<CUevent_st*> events;
  std::size_t next_ordinal = 0;
  bool holding = false;
  int device_count = 1;
  std::map<std::string, std::uint64_t, std::less<>> calls;
  struct Plan {
    std::string function;
    std::uint64_t call = 0;  // the call number (calls[function]) that fails
    int status = 0;
  };
  std::vector<Plan> plans;
  // At exit a live stream's worker still waits on `changed`: destroying it then would hang or
  // worse. A stream never destroyed is a leak of the code under test: say so and end here.
  ~State() {
    if (streams.empty()) return;
    std::fprintf(stderr, "cuda emulator: %zu streams still live at exit (never destroyed)\n",
                 streams.size());
    std::fflush(stderr);
    std::_Exit(70);
  }
};

State& state() {
  static State s;
  return s;
}

// The allocation containing [p, p + bytes), or nullptr (under the mutex).
const Allocation* find_allocation(const void* p, std::size_t bytes) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  auto& allocations = state().allocations;
  auto it = allocations.upper_bound(address);
  if (it == allocations.begin()) return nullptr;
  --it;
  const std::uintptr_t base = it->first;
  const std::size_t size = it->second.bytes;
  if (address - base >= size || bytes > size - (address - base)) return nullptr;
  return &it->second;
}

// Whether [p, p + bytes) shares a byte with a live allocation (under the mutex; bytes >= 1).
bool touches_device(const void* p, std::size_t bytes) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  auto& allocations = state().allocations;
  auto it = allocations.upper_bound(address + (bytes - 1));  // the first base past the range
  if (it == allocations.begin()) return false;
  --it;  // the last allocation starting inside or before the range
  return it->first + it->second.bytes > address;
}

bool stream_idle(const CUstream_st& s) { return s.queue.empty() && !s.running; }

bool operation_ready(const Operation& op) {
  return !op.waits_for || op.waits_for->completed >= op.generation;
}

void worker_loop(CUstream_st* stream) {
  State& s = state();
  std::unique_lock lock(s.mutex);
  for (;;) {
    s.changed.wait(lock, [&] {
      if (stream->queue.empty()) return stream->stopping;
      return !stream->held && operation_ready(stream->queue.front());
    });
    if (stream->queue.empty()) return;
    Operation op = std::move(stream->queue.front());
    stream->queue.pop_front();
    if (op.completes) {
      op.completes->completed = std::max(op.completes->completed, op.generation);
      op.completes->completed_at = std::chrono::steady_clock::now();
    } else if (op.work) {
      stream->running = true;
      lock.unlock();
      op.work();
      lock.lock();
      stream->running = false;
    }
    s.changed.notify_all();
  }
}

void push(CUstream_st* stream, Operation op) {
  State& s = state();
  {
    std::lock_guard lock(s.mutex);
    stream->queue.push_back(std::move(op));
  }
  s.changed.notify_all();
}

void wait_idle(std::unique_lock<std::mutex>& lock, CUstream_st* stream) {
  state().changed.wait(lock, [&] { return stream_idle(*stream); });
}

void wait_all_idle() {
  State& s = state();
  std::unique_lock lock(s.mutex);
  s.changed.wait(lock, [&] {
    return std::all_of(s.streams.begin(), s.streams.end(),
                       [](const CUstream_st* st) { return stream_idle(*st); });
  });
}

void require_event(std::string_view call, cudaEvent_t event) {
  std::lock_guard lock(state().mutex);
  if (state().events.count(event) == 0) emu::detail::misuse(call, "not a live event");
}

void require_host(std::string_view call, const void* p, std::size_t bytes) {
  std::lock_guard lock(state().mutex);
  if (p == nullptr) emu::detail::misuse(call, "null host pointer");
  if (touches_device(p, bytes)) {
    emu::detail::misuse(call, "a device pointer where a host pointer belongs");
  }
}

// Uninitialized device memory: a pattern, so a runtime that relies on zeros it did not write
// reads garbage.
constexpr std::uint8_t kUninitialized = 0xCD;

cudaError_t allocate(void** p, std::size_t bytes, bool stream_ordered) {
  *p = nullptr;
  if (bytes == 0) return cudaSuccess;
  constexpr std::size_t kAlignment = 256;  // as cudaMalloc documents
  const std::size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded < bytes) return cudaErrorMemoryAllocation;
  void* memory = std::aligned_alloc(kAlignment, rounded);
  if (memory == nullptr) return cudaErrorMemoryAllocation;
  std::memset(memory, kUninitialized, rounded);
  std::lock_guard lock(state().mutex);
  state().allocations[reinterpret_cast<std::uintptr_t>(memory)] = {bytes, stream_ordered};
  *p = memory;
  return cudaSuccess;
}

void release_allocation(std::string_view call, void* p, bool stream_ordered) {
  {
    std::lock_guard lock(state().mutex);
    auto& allocations = state().allocations;
    const auto it = allocations.find(reinterpret_cast<std::uintptr_t>(p));
    if (it == allocations.end()) emu::detail::misuse(call, "not the base of a live allocation");
    if (it->second.stream_ordered != stream_ordered) {
      emu::detail::misuse(call, stream_ordered ? "memory from cudaMalloc, not cudaMallocAsync"
                                               : "memory from cudaMallocAsync, not cudaMalloc");
    }
    allocations.erase(it);
  }
  std::free(p);
}

}  // namespace

namespace vtrace::testing::cuda_emulator {

namespace detail {

void misuse(std::string_view call, std::string_view what) {
  std::fprintf(stderr, "cuda emulator: %.*s: %.*s\n", static_cast<int>(call.size()), call.data(),
               static_cast<int>(what.size()), what.data());
  std::fflush(stderr);
  std::abort();
}

int planned_failure(std::string_view function) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  auto it = s.calls.find(function);
  if (it == s.calls.end()) it = s.calls.emplace(std::string(function), 0).first;
  const std::uint64_t call = ++it->second;
  for (auto plan = s.plans.begin(); plan != s.plans.end(); ++plan) {
    if (plan->function == function && plan->call == call) {
      const int status = plan->status;
      s.plans.erase(plan);
      return status;
    }
  }
  return 0;
}

void require_device(std::string_view call, const void* p, std::size_t bytes) {
  std::lock_guard lock(state().mutex);
  if (bytes == 0) misuse(call, "an empty device range");
  if (find_allocation(p, bytes) == nullptr) {
    misuse(call, "a device range outside every live allocation (out of bounds, freed, or host)");
  }
}

bool overlap(const void* a, std::size_t a_bytes, const void* b, std::size_t b_bytes) {
  const auto x = reinterpret_cast<std::uintptr_t>(a);
  const auto y = reinterpret_cast<std::uintptr_t>(b);
  return x < y + b_bytes && y < x + a_bytes;
}

void require_stream(std::string_view call, cudaStream_t stream) {
  if (stream == nullptr) misuse(call, "the null stream (not emulated; the runtime never uses it)");
  std::lock_guard lock(state().mutex);
  if (state().streams.count(stream) == 0) misuse(call, "not a live stream");
}

namespace {
thread_local cudaError_t last_error = cudaSuccess;  // cudart's per-thread last error
}  // namespace

cudaError_t noted(cudaError_t status) {
  if (status != cudaSuccess) last_error = status;
  return status;
}

cudaError_t take_last_error() { return std::exchange(last_error, cudaSuccess); }

cudaError_t peek_last_error() { return last_error; }

void enqueue(std::string_view call, cudaStream_t stream, std::function<void()> work) {
  require_stream(call, stream);
  push(stream, Operation{.work = std::move(work)});
}

}  // namespace detail

void reset() {
  wait_all_idle();
  State& s = state();
  {
    std::lock_guard lock(s.mutex);
    s.plans.clear();
    s.calls.clear();
    s.device_count = 1;
    s.holding = false;
    for (CUstream_st* stream : s.streams) stream->held = false;
  }
  s.changed.notify_all();
}

void fail_call(std::string_view function, int nth, int status) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  const auto it = s.calls.find(function);
  const std::uint64_t made = it == s.calls.end() ? 0 : it->second;
  s.plans.push_back({std::string(function), made + static_cast<std::uint64_t>(nth), status});
}

std::uint64_t calls(std::string_view function) {
  std::lock_guard lock(state().mutex);
  const auto it = state().calls.find(function);
  return it == state().calls.end() ? 0 : it->second;
}

void set_device_count(int count) {
  std::lock_guard lock(state().mutex);
  state().device_count = count;
}

void hold_all() {
  std::lock_guard lock(state().mutex);
  state().holding = true;
  for (CUstream_st* stream : state().streams) stream->held = true;
}

void release(std::size_t ordinal) {
  State& s = state();
  {
    std::lock_guard lock(s.mutex);
    bool found = false;
    for (CUstream_st* stream : s.streams) {
      if (stream->ordinal == ordinal) {
        stream->held = false;
        found = true;
      }
    }
    if (!found) detail::misuse("release", "no live stream has that ordinal");
  }
  s.changed.notify_all();
}

void release_all() {
  State& s = state();
  {
    std::lock_guard lock(s.mutex);
    s.holding = false;
    for (CUstream_st* stream : s.streams) stream->held = false;
  }
  s.changed.notify_all();
}

std::size_t next_stream_ordinal() {
  std::lock_guard lock(state().mutex);
  return state().next_ordinal;
}

void settle() {
  State& s = state();
  std::unique_lock lock(s.mutex);
  s.changed.wait(lock, [&] {
    return std::all_of(s.streams.begin(), s.streams.end(), [](const CUstream_st* st) {
      if (st->running) return false;
      return st->held || st->queue.empty() || !operation_ready(st->queue.front());
    });
  });
}

std::size_t live_allocations() {
  std::lock_guard lock(state().mutex);
  return state().allocations.size();
}

std::size_t live_streams() {
  std::lock_guard lock(state().mutex);
  return state().streams.size();
}

std::size_t live_events() {
  std::lock_guard lock(state().mutex);
  return state().events.size();
}

}  // namespace vtrace::testing::cuda_emulator

// The emulated API. Each function first counts its call and returns a planned failure.
#define VTRACE_EMULATED_CALL(name)                                             \
  if (const int planned = emu::detail::planned_failure(#name); planned != 0) { \
    return emu::detail::noted(static_cast<cudaError_t>(planned));              \
  }

extern "C" {

const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case cudaSuccess:
      return "no error";
    case cudaErrorInvalidValue:
      return "invalid argument";
    case cudaErrorMemoryAllocation:
      return "out of memory";
    case cudaErrorInsufficientDriver:
      return "CUDA driver version is insufficient for CUDA runtime version";
    case cudaErrorNoDevice:
      return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice:
      return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle:
      return "invalid resource handle";
    case cudaErrorNoKernelImageForDevice:
      return "no kernel image is available for execution on the device";
    case cudaErrorNotReady:
      return "device not ready";
    case cudaErrorIllegalAddress:
      return "an illegal memory access was encountered";
    case cudaErrorLaunchFailure:
      return "unspecified launch failure";
    default:
      return "unrecognized error code";
  }
}

cudaError_t cudaGetLastError() { return emu::detail::take_last_error(); }

cudaError_t cudaPeekAtLastError() { return emu::detail::peek_last_error(); }

cudaError_t cudaGetDeviceCount(int* count) {
  VTRACE_EMULATED_CALL(cudaGetDeviceCount)
  std::lock_guard lock(state().mutex);
  *count = state().device_count;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  VTRACE_EMULATED_CALL(cudaSetDevice)
  std::lock_guard lock(state().mutex);
  return emu::detail::noted(device >= 0 && device < state().device_count ? cudaSuccess
                                                                          : cudaErrorInvalidDevice);
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* properties, int device) {
  VTRACE_EMULATED_CALL(cudaGetDeviceProperties)
  if (device != 0) return cudaErrorInvalidDevice;
  *properties = cudaDeviceProp{};
  std::snprintf(properties->name, sizeof properties->name, "vtrace cudart emulator");
  properties->totalGlobalMem = static_cast<std::size_t>(emu::kDeviceMemoryBytes);
  properties->major = 9;
  properties->minor = 0;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  VTRACE_EMULATED_CALL(cudaGetDevice)
  *device = 0;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attribute, int device) {
  VTRACE_EMULATED_CALL(cudaDeviceGetAttribute)
  if (device != 0) return emu::detail::noted(cudaErrorInvalidDevice);
  switch (attribute) {
    case cudaDevAttrL2CacheSize:
      *value = static_cast<int>(emu::kL2CacheBytes);
      return cudaSuccess;
    case cudaDevAttrMultiProcessorCount:
      *value = emu::kMultiprocessors;
      return cudaSuccess;
    case cudaDevAttrClockRate:
      *value = emu::kClockKhz;
      return cudaSuccess;
    default:
      emu::detail::misuse("cudaDeviceGetAttribute", "an attribute the emulator does not answer");
  }
}

cudaError_t cudaDeviceSynchronize() {
  VTRACE_EMULATED_CALL(cudaDeviceSynchronize)
  wait_all_idle();
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** p, std::size_t bytes) {
  VTRACE_EMULATED_CALL(cudaMalloc)
  return emu::detail::noted(allocate(p, bytes, false));
}

cudaError_t cudaFree(void* p) {
  VTRACE_EMULATED_CALL(cudaFree)
  if (p == nullptr) return cudaSuccess;
  wait_all_idle();  // cudaFree waits for the device's work
  release_allocation("cudaFree", p, false);
  return cudaSuccess;
}

cudaError_t cudaMallocAsync(void** p, std::size_t bytes, cudaStream_t stream) {
  VTRACE_EMULATED_CALL(cudaMallocAsync)
  emu::detail::require_stream("cudaMallocAsync", stream);
  return emu::detail::noted(allocate(p, bytes, true));
}

cudaError_t cudaFreeAsync(void* p, cudaStream_t stream) {
  VTRACE_EMULATED_CALL(cudaFreeAsync)
  if (p == nullptr) return cudaSuccess;
  {
    std::lock_guard lock(state().mutex);
    const auto it = state().allocations.find(reinterpret_cast<std::uintptr_t>(p));
    if (it == state().allocations.end() || !it->second.stream_ordered) {
      emu::detail::misuse("cudaFreeAsync", "not the base of a live cudaMallocAsync allocation");
    }
  }
  emu::detail::enqueue("cudaFreeAsync", stream,
                       [p] { release_allocation("cudaFreeAsync (on its stream)", p, true); });
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  VTRACE_EMULATED_CALL(cudaMemcpyAsync)
  constexpr std::string_view call = "cudaMemcpyAsync";
  emu::detail::require_stream(call, stream);
  if (bytes == 0) return cudaSuccess;
  switch (kind) {
    case cudaMemcpyHostToDevice: {
      require_host(call, src, bytes);
      emu::detail::require_device(call, dst, bytes);
      // From pageable memory: the bytes are taken before the call returns.
      auto taken = std::make_shared<std::vector<std::uint8_t>>(
          static_cast<const std::uint8_t*>(src), static_cast<const std::uint8_t*>(src) + bytes);
      emu::detail::enqueue(call, stream, [dst, bytes, taken] {
        emu::detail::require_device("cudaMemcpyAsync (on its stream)", dst, bytes);
        std::memcpy(dst, taken->data(), bytes);
      });
      return cudaSuccess;
    }
    case cudaMemcpyDeviceToHost: {
      emu::detail::require_device(call, src, bytes);
      require_host(call, dst, bytes);
      // To pageable memory: the call returns once the copy is done.
      auto done = std::make_shared<bool>(false);
      emu::detail::enqueue(call, stream, [dst, src, bytes, done] {
        emu::detail::require_device("cudaMemcpyAsync (on its stream)", src, bytes);
        std::memcpy(dst, src, bytes);
        std::lock_guard lock(state().mutex);
        *done = true;
      });
      std::unique_lock lock(state().mutex);
      state().changed.wait(lock, [&] { return *done; });
      return cudaSuccess;
    }
    case cudaMemcpyDeviceToDevice: {
      emu::detail::require_device(call, src, bytes);
      emu::detail::require_device(call, dst, bytes);
      if (emu::detail::overlap(dst, bytes, src, bytes)) {
        emu::detail::misuse(call, "overlapping device ranges (memcpy is not memmove)");
      }
      emu::detail::enqueue(call, stream, [dst, src, bytes] {
        emu::detail::require_device("cudaMemcpyAsync (on its stream)", src, bytes);
        emu::detail::require_device("cudaMemcpyAsync (on its stream)", dst, bytes);
        std::memcpy(dst, src, bytes);
      });
      return cudaSuccess;
    }
    default:
      emu::detail::misuse(call, "a copy kind the emulator does not take");
  }
}

// Synchronous with the host; ordered with no non-blocking stream (the only ones emulated).
cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
  VTRACE_EMULATED_CALL(cudaMemcpy)
  constexpr std::string_view call = "cudaMemcpy";
  if (bytes == 0) return cudaSuccess;
  switch (kind) {
    case cudaMemcpyHostToDevice:
      require_host(call, src, bytes);
      emu::detail::require_device(call, dst, bytes);
      break;
    case cudaMemcpyDeviceToHost:
      emu::detail::require_device(call, src, bytes);
      require_host(call, dst, bytes);
      break;
    case cudaMemcpyDeviceToDevice:
      emu::detail::require_device(call, src, bytes);
      emu::detail::require_device(call, dst, bytes);
      if (emu::detail::overlap(dst, bytes, src, bytes)) {
        emu::detail::misuse(call, "overlapping device ranges (memcpy is not memmove)");
      }
      break;
    default:
      emu::detail::misuse(call, "a copy kind the emulator does not take");
  }
  std::memcpy(dst, src, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* p, int value, std::size_t bytes, cudaStream_t stream) {
  VTRACE_EMULATED_CALL(cudaMemsetAsync)
  constexpr std::string_view call = "cudaMemsetAsync";
  emu::detail::require_stream(call, stream);
  if (bytes == 0) return cudaSuccess;
  emu::detail::require_device(call, p, bytes);
  emu::detail::enqueue(call, stream, [p, value, bytes] {
    emu::detail::require_device("cudaMemsetAsync (on its stream)", p, bytes);
    std::memset(p, value, bytes);
  });
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int /*flags*/) {
  VTRACE_EMULATED_CALL(cudaStreamCreateWithFlags)
  auto* created = new CUstream_st;
  {
    std::lock_guard lock(state().mutex);
    created->ordinal = state().next_ordinal++;
    created->held = state().holding;
    state().streams.insert(created);
  }
  created->worker = std::thread(worker_loop, created);
  *stream = created;
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  VTRACE_EMULATED_CALL(cudaStreamDestroy)
  emu::detail::require_stream("cudaStreamDestroy", stream);
  {
    // The stream's work still runs (as CUDA does it), then its worker ends.
    std::lock_guard lock(state().mutex);
    stream->stopping = true;
  }
  state().changed.notify_all();
  stream->worker.join();
  {
    std::lock_guard lock(state().mutex);
    state().streams.erase(stream);
  }
  delete stream;
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  VTRACE_EMULATED_CALL(cudaStreamSynchronize)
  emu::detail::require_stream("cudaStreamSynchronize", stream);
  std::unique_lock lock(state().mutex);
  wait_idle(lock, stream);
  return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int /*flags*/) {
  VTRACE_EMULATED_CALL(cudaStreamWaitEvent)
  emu::detail::require_stream("cudaStreamWaitEvent", stream);
  require_event("cudaStreamWaitEvent", event);
  std::uint64_t generation = 0;
  {
    std::lock_guard lock(state().mutex);
    generation = event->state->recorded;  // the record made before this call
  }
  push(stream, Operation{.waits_for = event->state, .generation = generation});
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  VTRACE_EMULATED_CALL(cudaEventCreateWithFlags)
  auto* created = new CUevent_st;
  created->state->timing = (flags & cudaEventDisableTiming) == 0;
  std::lock_guard lock(state().mutex);
  state().events.insert(created);
  *event = created;
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  VTRACE_EMULATED_CALL(cudaEventCreate)
  return cudaEventCreateWithFlags(event, cudaEventDefault);
}

// The host time between the two records' completion (the emulator's, not a GPU's).
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  VTRACE_EMULATED_CALL(cudaEventElapsedTime)
  require_event("cudaEventElapsedTime", start);
  require_event("cudaEventElapsedTime", end);
  std::lock_guard lock(state().mutex);
  const EventState& a = *start->state;
  const EventState& b = *end->state;
  if (!a.timing || !b.timing) return cudaErrorInvalidResourceHandle;  // as CUDA answers
  if (a.recorded == 0 || b.recorded == 0) return cudaErrorInvalidResourceHandle;
  if (a.completed < a.recorded || b.completed < b.recorded) return cudaErrorNotReady;
  *ms = std::chrono::duration<float, std::milli>(b.completed_at - a.completed_at).count();
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  VTRACE_EMULATED_CALL(cudaEventDestroy)
  require_event("cudaEventDestroy", event);
  {
    std::lock_guard lock(state().mutex);
    state().events.erase(event);
  }
  delete event;  // queued records and waits keep the state
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  VTRACE_EMULATED_CALL(cudaEventRecord)
  require_event("cudaEventRecord", event);
  emu::detail::require_stream("cudaEventRecord", stream);
  std::uint64_t generation = 0;
  {
    std::lock_guard lock(state().mutex);
    generation = ++event->state->recorded;
  }
  push(stream, Operation{.completes = event->state, .generation = generation});
  return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  VTRACE_EMULATED_CALL(cudaEventQuery)
  require_event("cudaEventQuery", event);
  std::lock_guard lock(state().mutex);
  return emu::detail::noted(event->state->completed >= event->state->recorded ? cudaSuccess
                                                                               : cudaErrorNotReady);
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  VTRACE_EMULATED_CALL(cudaEventSynchronize)
  require_event("cudaEventSynchronize", event);
  std::unique_lock lock(state().mutex);
  const std::uint64_t target = event->state->recorded;
  const std::shared_ptr<EventState> tracked = event->state;
  state().changed.wait(lock, [&] { return tracked->completed >= target; });
  return cudaSuccess;
}

}  // extern "C"
