// The CUDA runtimes (cuda_runtime.h): the contract (contract.h) on device memory, CUDA streams
// and CUDA events. Spec points decided as host_runtime.cpp decides them (foreign handles,
// allocate of a consumed or foreign permit, NaN outputs as 0x7E00, no DeviceBufferRetention);
// in addition:
//  - Execution is asynchronous: submit enqueues the batch on the stream and records an event;
//    the fence is that event. Each batch first waits for the previous batch's event (any
//    stream of this runtime), and readback waits for the last batch too, so results are those
//    of the host runtimes, which run each submit to completion in submit order.
//  - Counters move when the work is enqueued (submit, readback), as the host runtimes' move
//    inside submit.
//  - An upload's host bytes are copied at encode time; the fence keeps its commands (and so
//    their regions and bytes) alive until it is dropped.
//  - A copy whose regions overlap and a dense-linear launch whose output overlaps an operand go
//    through a stream-ordered temporary (cudaMallocAsync), as the host runtimes stage them.
//  - A CUDA call that fails once part of a batch is enqueued cannot be DefinitelyNotSubmitted:
//    the fence is returned and the stream reads kFailed. The fence is Pending while the part
//    enqueued before the failure runs, then terminal with a kInternal failure naming the call;
//    the next batch (any stream) waits for that part as for a whole batch.
#include "vtrace/runtime/cuda/cuda_runtime.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <atomic>
#include <bit>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "cublas_linear.h"
#include "kernels.h"
#include "vtrace/runtime/contract.h"
#include "vtrace/runtime/fingerprint.h"
#include "vtrace/runtime/runtime_command.h"

namespace vtrace::runtime::cuda {

namespace {

using contract::bump;
using contract::error;
using contract::RuntimeCounters;

constexpr std::string_view kImplementationVersion = "vtrace.cuda.runtime.v1";

std::atomic<std::uint64_t> g_next_runtime_instance{1};

std::string cuda_failure(std::string_view call, cudaError_t status) {
  return std::string(call) + ": " + cudaGetErrorString(status);
}

std::string cublas_failure(const CublasApi& api, std::string_view call, cublasStatus_t status) {
  return std::string(call) + ": " + api.status_string(status);
}

// One cudaMalloc allocation, shared by the buffer and every command region on it.
class DeviceStorage {
 public:
  DeviceStorage(std::uint8_t* base, std::uint64_t logical_offset,
                std::shared_ptr<RuntimeCounters> counters, ReservationToken reservation)
      : base_(base),
        logical_offset_(logical_offset),
        counters_(std::move(counters)),
        reservation_(std::move(reservation)) {}
  DeviceStorage(const DeviceStorage&) = delete;
  DeviceStorage& operator=(const DeviceStorage&) = delete;
  ~DeviceStorage() {
    // cudaFree waits for the device work that may still use the memory.
    (void)cudaFree(base_);
    counters_->live_allocations.fetch_sub(1, std::memory_order_relaxed);
  }
  std::uint8_t* logical_base() const { return base_ + logical_offset_; }

 private:
  std::uint8_t* base_;
  std::uint64_t logical_offset_;
  std::shared_ptr<RuntimeCounters> counters_;
  ReservationToken reservation_;
};

// A validated byte range of one storage, as a command holds it.
struct Region {
  std::shared_ptr<DeviceStorage> storage;
  std::uint64_t runtime_instance = 0;
  std::uint64_t offset_bytes = 0;  // logical
  std::uint64_t length_bytes = 0;
  ElementType element_type = ElementType::kU8;

  std::uint8_t* data() const { return storage->logical_base() + offset_bytes; }
  bool overlaps(const Region& other) const {
    return storage == other.storage && offset_bytes < other.offset_bytes + other.length_bytes &&
           other.offset_bytes < offset_bytes + length_bytes;
  }
};

class CudaBuffer final : public Buffer {
 public:
  CudaBuffer(BufferDescriptor descriptor, std::uint64_t runtime_instance,
             std::shared_ptr<DeviceStorage> storage)
      : descriptor_(std::move(descriptor)),
        runtime_instance_(runtime_instance),
        storage_(std::move(storage)) {}
  const BufferDescriptor& descriptor() const { return descriptor_; }
  std::uint64_t runtime_instance() const { return runtime_instance_; }
  const DeviceStorage* storage() const { return storage_.get(); }
  Region region(const contract::ByteRange& range) const {
    return Region{storage_, runtime_instance_, range.offset_bytes, range.length_bytes,
                  descriptor_.element_type};
  }

 private:
  BufferDescriptor descriptor_;
  std::uint64_t runtime_instance_;
  std::shared_ptr<DeviceStorage> storage_;
};

class CudaStream final : public Stream {
 public:
  CudaStream(std::uint64_t runtime, cudaStream_t native)
      : runtime_instance(runtime), stream(native) {}
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  ~CudaStream() override { (void)cudaStreamDestroy(stream); }
  const std::uint64_t runtime_instance;
  const cudaStream_t stream;
  StreamState state = StreamState::kReady;
};

// A recorded event, shared by the fence and the runtime (the next batch waits for it).
class Event {
 public:
  explicit Event(cudaEvent_t native) : event(native) {}
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event() { (void)cudaEventDestroy(event); }
  const cudaEvent_t event;
};

struct UploadKind {
  std::vector<std::uint8_t> bytes;
  Region destination;
};
using CopyKind = contract::CopyKind<Region>;
using ZeroKind = contract::ZeroKind<Region>;
using DenseLaunch = contract::DenseLaunch<Region>;
using DenseLinearKind = contract::DenseLinearKind<Region>;
using CudaCommand = contract::RuntimeCommand<Region, UploadKind>;

class CudaFence final : public Fence {
 public:
  CudaFence(std::uint64_t runtime, std::shared_ptr<Event> done,
            std::optional<SubmissionAttribution> rows, std::vector<CommandEntry> entries,
            std::optional<RuntimeError> failure)
      : runtime_instance(runtime),
        event(std::move(done)),
        attribution(std::move(rows)),
        entries_(std::move(entries)),
        failure_(std::move(failure)) {}
  const std::uint64_t runtime_instance;
  // The event recorded after the batch (after its enqueued part when failure_ is set); null
  // when the record failed, and submit then waited for the stream itself.
  const std::shared_ptr<Event> event;
  const std::optional<SubmissionAttribution> attribution;
  TerminalReceipt terminal() const { return TerminalReceipt::unprofiled(DeviceTerminal{failure_}); }

 private:
  std::vector<CommandEntry> entries_;  // keeps the commands' regions and bytes alive
  std::optional<RuntimeError> failure_;
};

class CudaRuntime final : public DeviceRuntime {
 public:
  static Result<std::unique_ptr<DeviceRuntime>> open(CudaDenseLinear dense_linear,
                                                     const RuntimeOpenOptions& options);
  ~CudaRuntime() override {
    (void)cudaDeviceSynchronize();
    last_batch_.reset();
    if (cublas_ != nullptr) (void)cublas_api_->destroy(cublas_);
    if (service_stream_ != nullptr) (void)cudaStreamDestroy(service_stream_);
  }

  const DeviceDescriptor& descriptor() const override { return descriptor_; }
  AttentionExecutionPolicy attention_execution_policy() const override {
    return AttentionExecutionPolicy::kPortable;
  }
  Result<BufferPtr> allocate(AllocationPermit permit) override;
  BufferDescriptor buffer_descriptor(const Buffer& buffer) const override {
    const auto* concrete = dynamic_cast<const CudaBuffer*>(&buffer);
    return concrete != nullptr ? concrete->descriptor() : BufferDescriptor{};
  }
  Result<StreamPtr> create_stream() override;
  StreamState stream_state(const Stream& stream) const override {
    const auto* own = own_stream(stream);
    return own != nullptr ? own->state : StreamState::kFailed;
  }
  Result<CommandPtr> encode_copy(const Buffer& source, const Buffer& destination,
                                 const CopyRegion& region) override;
  Result<CommandPtr> encode_upload(std::span<const std::uint8_t> source,
                                   const HostTransferLayout& layout, const Buffer& destination,
                                   std::uint64_t destination_offset_bytes) override;
  Result<CommandPtr> encode_zero(const Buffer& destination, std::uint64_t destination_offset_bytes,
                                 std::uint64_t length_bytes) override;
  Result<CommandPtr> encode_dense_linear(const DenseLinearRequest& request) override;
  std::expected<FencePtr, DefinitelyNotSubmitted> submit(Stream& stream,
                                                         CommandBatch batch) override;
  FenceQuery query_fence(const Fence& fence) const override;
  std::expected<TerminalReceipt, FenceIndeterminate> wait_fence(const Fence& fence) override;
  Result<void> synchronize(Stream& stream) override;
  Result<std::vector<std::uint8_t>> readback(Stream& stream, const Buffer& source,
                                             const CopyRegion& region,
                                             const HostTransferLayout& output_layout) override;
  VNextResult<DeviceErrorReport> describe_error(const RuntimeError& err) const override {
    return DeviceErrorReport::create(std::string(kCudaRuntimeErrorCode), err.message(), false);
  }
  std::optional<CounterSnapshot> counter_snapshot() const override;
  std::optional<SubmissionAttribution> submission_attribution(const Fence& fence) const override {
    const auto* own = own_fence(fence);
    if (own == nullptr) return std::nullopt;
    return own->attribution;
  }

 private:
  CudaRuntime(CudaDenseLinear dense_linear, DeviceDescriptor descriptor, std::uint64_t instance)
      : dense_linear_(dense_linear),
        label_(runtime_name(dense_linear)),
        descriptor_(std::move(descriptor)),
        instance_(instance) {}

  std::string_view rt() const { return label_; }
  CudaStream* own_stream(Stream& stream) const {
    auto* concrete = dynamic_cast<CudaStream*>(&stream);
    return concrete != nullptr && concrete->runtime_instance == instance_ ? concrete : nullptr;
  }
  const CudaStream* own_stream(const Stream& stream) const {
    const auto* concrete = dynamic_cast<const CudaStream*>(&stream);
    return concrete != nullptr && concrete->runtime_instance == instance_ ? concrete : nullptr;
  }
  const CudaBuffer* own_buffer(const Buffer& buffer) const {
    const auto* concrete = dynamic_cast<const CudaBuffer*>(&buffer);
    return concrete != nullptr && concrete->runtime_instance() == instance_ ? concrete : nullptr;
  }
  const CudaFence* own_fence(const Fence& fence) const {
    const auto* concrete = dynamic_cast<const CudaFence*>(&fence);
    return concrete != nullptr && concrete->runtime_instance == instance_ ? concrete : nullptr;
  }
  // Encoders accept buffers of any cuda runtime (submit then refuses other instances).
  Result<const CudaBuffer*> cuda_buffer(const Buffer* buffer) const {
    const auto* concrete = dynamic_cast<const CudaBuffer*>(buffer);
    if (concrete == nullptr) {
      return std::unexpected(error(ErrorKind::kForeignBufferInCommand, rt(),
                                   "command contains a buffer from another runtime"));
    }
    return concrete;
  }
  RuntimeError internal(const std::string& what) const {
    return error(ErrorKind::kInternal, rt(), what);
  }

  // Enqueues one command on `stream` (under submit_mutex_). An error names the failed call.
  std::optional<RuntimeError> enqueue(const CudaCommand& command, cudaStream_t stream);
  std::optional<RuntimeError> enqueue_dense(const DenseLaunch& launch, cudaStream_t stream);
  std::optional<RuntimeError> run_cublas(const std::uint8_t* input, const std::uint8_t* weight,
                                         std::uint8_t* output,
                                         const contract::DenseLinearLaunchShape& shape,
                                         cudaStream_t stream);
  // Makes `stream` wait for the last batch (under submit_mutex_).
  std::optional<RuntimeError> after_last_batch(cudaStream_t stream);

  const CudaDenseLinear dense_linear_;
  const std::string_view label_;
  const DeviceDescriptor descriptor_;
  const std::uint64_t instance_;
  std::shared_ptr<RuntimeCounters> counters_ = std::make_shared<RuntimeCounters>();
  cudaStream_t service_stream_ = nullptr;  // zero fill of new allocations
  std::mutex service_mutex_;
  const CublasApi* cublas_api_ = nullptr;  // cuda-cublas only: the loaded library
  cublasHandle_t cublas_ = nullptr;        // cuda-cublas only; used under submit_mutex_
  // Serializes submits and readbacks: the order of batches across streams, the cuBLAS handle.
  std::mutex submit_mutex_;
  std::shared_ptr<Event> last_batch_;
};

Result<std::unique_ptr<DeviceRuntime>> CudaRuntime::open(CudaDenseLinear dense_linear,
                                                         const RuntimeOpenOptions& options) {
  const std::string_view name = runtime_name(dense_linear);
  const auto unavailable = [name](const std::string& why) {
    return std::unexpected(
        RuntimeError(ErrorKind::kRuntimeUnavailable, std::string(name) + ": " + why));
  };
  int devices = 0;
  if (const cudaError_t status = cudaGetDeviceCount(&devices); status != cudaSuccess) {
    return unavailable("no CUDA device is available (" +
                       cuda_failure("cudaGetDeviceCount", status) + ")");
  }
  if (devices == 0) {
    return unavailable("no CUDA device is available (cudaGetDeviceCount found none)");
  }
  if (const cudaError_t status = cudaSetDevice(0); status != cudaSuccess) {
    return unavailable("CUDA device 0 cannot be used (" + cuda_failure("cudaSetDevice", status) +
                       ")");
  }
  cudaDeviceProp properties{};
  if (const cudaError_t status = cudaGetDeviceProperties(&properties, 0); status != cudaSuccess) {
    return unavailable("CUDA device 0 cannot be queried (" +
                       cuda_failure("cudaGetDeviceProperties", status) + ")");
  }
  if (dense_linear == CudaDenseLinear::kStrict) {
    if (const cudaError_t status = kernels::check_kernel_image(); status != cudaSuccess) {
      return unavailable("CUDA device 0 (" + std::string(properties.name) + ", compute capability " +
                         std::to_string(properties.major) + "." + std::to_string(properties.minor) +
                         ") cannot run this build's kernels, built for CUDA architectures " +
                         VTRACE_CUDA_ARCHITECTURES + " (" +
                         cuda_failure("cudaFuncGetAttributes", status) + ")");
    }
  }

  auto id = DeviceId::create(options.device_id);
  if (!id) return std::unexpected(RuntimeError(ErrorKind::kDescriptorInvalid, id.error()));
  const auto capability = CapabilityId::create(std::string(kDenseLinearF16CapabilityId));
  DeviceDescriptor descriptor;
  descriptor.id = std::move(*id);
  descriptor.device_class = DeviceClass::kAccelerator;
  descriptor.ordinal = 0;
  descriptor.total_memory_bytes =
      options.device_memory_bytes != 0 ? options.device_memory_bytes : properties.totalGlobalMem;
  descriptor.runtime_implementation_fingerprint = implementation_fingerprint(
      {"vtrace.cuda.runtime", name,
       dense_linear == CudaDenseLinear::kStrict
           ? "dense_linear: strict kernel, one f32 accumulator, k ascending, fmaf"
           : "dense_linear: cublasGemmEx f16 inputs, f32 compute, default algorithm",
       kImplementationVersion});
  descriptor.capabilities = {*capability};
  descriptor.dynamic_storage_profiles = {DynamicStorageProfile::linear_contiguous()};
  if (auto valid = descriptor.validate(); !valid) {
    return std::unexpected(RuntimeError(ErrorKind::kDescriptorInvalid, valid.error()));
  }
  if (auto valid =
          contract::check_descriptor(name, descriptor, DeviceClass::kAccelerator, {*capability});
      !valid) {
    return std::unexpected(valid.error());
  }

  std::uint64_t instance = g_next_runtime_instance.load(std::memory_order_relaxed);
  do {
    if (instance == std::numeric_limits<std::uint64_t>::max()) {
      return std::unexpected(
          error(ErrorKind::kIdentityExhausted, name, "runtime identity exhausted"));
    }
  } while (!g_next_runtime_instance.compare_exchange_weak(instance, instance + 1,
                                                          std::memory_order_relaxed));

  std::unique_ptr<CudaRuntime> runtime(
      new CudaRuntime(dense_linear, std::move(descriptor), instance));
  if (const cudaError_t status =
          cudaStreamCreateWithFlags(&runtime->service_stream_, cudaStreamNonBlocking);
      status != cudaSuccess) {
    runtime->service_stream_ = nullptr;
    return unavailable("a CUDA stream cannot be created (" +
                       cuda_failure("cudaStreamCreateWithFlags", status) + ")");
  }
  if (dense_linear == CudaDenseLinear::kCublas) {
    const auto api = load_cublas();
    if (!api) return unavailable(api.error());
    if (const cublasStatus_t status = (*api)->create(&runtime->cublas_);
        status != CUBLAS_STATUS_SUCCESS) {
      runtime->cublas_ = nullptr;
      return unavailable("cuBLAS cannot start (" + cublas_failure(**api, "cublasCreate", status) +
                         ")");
    }
    runtime->cublas_api_ = *api;
  }
  return std::unique_ptr<DeviceRuntime>(std::move(runtime));
}

std::optional<CounterSnapshot> CudaRuntime::counter_snapshot() const {
  return counters_->snapshot();
}

Result<BufferPtr> CudaRuntime::allocate(AllocationPermit permit) {
  auto parts = redeem(permit);
  if (!parts) return std::unexpected(parts.error());
  auto& [request, reservation] = *parts;
  const std::uint64_t size = request.size_bytes();
  const std::uint64_t alignment = request.alignment_bytes();
  if (size == 0 || !std::has_single_bit(alignment)) {
    return std::unexpected(
        error(ErrorKind::kAllocationInvalid, rt(), "allocation size or alignment is invalid"));
  }
  // cudaMalloc aligns to 256 bytes; a larger alignment is padded for.
  constexpr std::uint64_t kMallocAlignment = 256;
  const std::uint64_t pad = alignment > kMallocAlignment ? alignment - 1 : 0;
  std::uint64_t padded = 0;
  if (__builtin_add_overflow(size, pad, &padded) ||
      padded > std::numeric_limits<std::size_t>::max()) {
    return std::unexpected(
        error(ErrorKind::kAllocationInvalid, rt(), "aligned allocation size overflows"));
  }
  void* base = nullptr;
  if (const cudaError_t status = cudaMalloc(&base, static_cast<std::size_t>(padded));
      status != cudaSuccess) {
    return std::unexpected(error(ErrorKind::kAllocationInvalid, rt(),
                                 "allocation failed (" + cuda_failure("cudaMalloc", status) + ")"));
  }
  {
    // Zero fill, complete before the buffer is handed out (any later stream sees the zeros).
    std::lock_guard lock(service_mutex_);
    std::string_view call = "cudaMemsetAsync";
    cudaError_t status =
        cudaMemsetAsync(base, 0, static_cast<std::size_t>(padded), service_stream_);
    if (status == cudaSuccess) {
      call = "cudaStreamSynchronize";
      status = cudaStreamSynchronize(service_stream_);
    }
    if (status != cudaSuccess) {
      (void)cudaFree(base);
      return std::unexpected(
          error(ErrorKind::kAllocationInvalid, rt(),
                "allocation could not be zero-filled (" + cuda_failure(call, status) + ")"));
    }
  }
  // Counted on success only (spec 7.3), as the storage is made.
  const auto address = reinterpret_cast<std::uintptr_t>(base);
  const std::uint64_t logical_offset = (alignment - address % alignment) % alignment;
  bump(counters_->allocations);
  bump(counters_->live_allocations);
  auto storage = std::make_shared<DeviceStorage>(static_cast<std::uint8_t*>(base), logical_offset,
                                                 counters_, std::move(reservation));
  return std::make_unique<CudaBuffer>(BufferDescriptor::from_request(request), instance_,
                                      std::move(storage));
}

Result<StreamPtr> CudaRuntime::create_stream() {
  cudaStream_t native = nullptr;
  if (const cudaError_t status = cudaStreamCreateWithFlags(&native, cudaStreamNonBlocking);
      status != cudaSuccess) {
    return std::unexpected(internal("stream creation failed (" +
                                    cuda_failure("cudaStreamCreateWithFlags", status) + ")"));
  }
  return std::make_unique<CudaStream>(instance_, native);
}

Result<CommandPtr> CudaRuntime::encode_copy(const Buffer& source, const Buffer& destination,
                                            const CopyRegion& region) {
  auto src = cuda_buffer(&source);
  if (!src) return std::unexpected(src.error());
  auto dst = cuda_buffer(&destination);
  if (!dst) return std::unexpected(dst.error());
  auto ranges = contract::check_copy(rt(), (*src)->descriptor(), (*dst)->descriptor(), region);
  if (!ranges) return std::unexpected(ranges.error());
  return CudaCommand::transfer(
      kDeviceCopyNativeOperationId,
      CopyKind{(*src)->region(ranges->source), (*dst)->region(ranges->destination)});
}

Result<CommandPtr> CudaRuntime::encode_upload(std::span<const std::uint8_t> source,
                                              const HostTransferLayout& layout,
                                              const Buffer& destination,
                                              std::uint64_t destination_offset_bytes) {
  auto dst = cuda_buffer(&destination);
  if (!dst) return std::unexpected(dst.error());
  auto range = contract::check_upload(rt(), source.size(), layout, (*dst)->descriptor(),
                                      destination_offset_bytes);
  if (!range) return std::unexpected(range.error());
  std::vector<std::uint8_t> bytes;
  if (auto copied = contract::copy_upload(rt(), bytes, source); !copied) {
    return std::unexpected(copied.error());
  }
  return CudaCommand::transfer(kHostUploadNativeOperationId,
                               UploadKind{std::move(bytes), (*dst)->region(*range)});
}

Result<CommandPtr> CudaRuntime::encode_zero(const Buffer& destination,
                                            std::uint64_t destination_offset_bytes,
                                            std::uint64_t length_bytes) {
  auto dst = cuda_buffer(&destination);
  if (!dst) return std::unexpected(dst.error());
  auto range =
      contract::check_zero(rt(), (*dst)->descriptor(), destination_offset_bytes, length_bytes);
  if (!range) return std::unexpected(range.error());
  return CudaCommand::transfer(kDeviceZeroNativeOperationId, ZeroKind{(*dst)->region(*range)});
}

Result<CommandPtr> CudaRuntime::encode_dense_linear(const DenseLinearRequest& request) {
  std::vector<Region> regions;
  regions.reserve(request.launches.size() * 3);
  const contract::RegionResolver resolve =
      [&](const BufferRegionRef& ref) -> Result<contract::ResolvedRegion> {
    auto buffer = cuda_buffer(ref.buffer);
    if (!buffer) return std::unexpected(buffer.error());
    std::uint64_t end = 0;
    if (__builtin_add_overflow(ref.offset_bytes, ref.length_bytes, &end)) {
      return std::unexpected(error(ErrorKind::kRegionOutOfBounds, rt(),
                                   "buffer region is empty or exceeds its admitted allocation"));
    }
    auto range = contract::check_region(rt(), (*buffer)->descriptor(), ref.offset_bytes, end);
    if (!range) return std::unexpected(range.error());
    regions.push_back((*buffer)->region(*range));
    return contract::ResolvedRegion{(*buffer)->storage(), *range, regions.back().element_type};
  };
  auto plan = contract::check_dense_linear(rt(), request, resolve);
  if (!plan) return std::unexpected(plan.error());
  if (dense_linear_ == CudaDenseLinear::kCublas) {
    constexpr std::uint64_t kIntMax = std::numeric_limits<int>::max();
    for (const auto& shape : plan->launches) {
      if (shape.rows > kIntMax || shape.in_features > kIntMax || shape.out_features > kIntMax) {
        return std::unexpected(error(ErrorKind::kUnsupportedOperation, rt(),
                                     "dense linear dimension exceeds cuBLAS's int range"));
      }
    }
  }
  return CudaCommand::dense_linear(*plan, std::move(regions));
}

std::optional<RuntimeError> CudaRuntime::run_cublas(const std::uint8_t* input,
                                                    const std::uint8_t* weight,
                                                    std::uint8_t* output,
                                                    const contract::DenseLinearLaunchShape& shape,
                                                    cudaStream_t stream) {
  // encode_dense_linear refused dimensions past int.
  const cublasStatus_t status = cublas_dense_linear(
      *cublas_api_, cublas_, input, weight, output, static_cast<int>(shape.rows),
      static_cast<int>(shape.in_features), static_cast<int>(shape.out_features), stream);
  if (status != CUBLAS_STATUS_SUCCESS) {
    return internal(cublas_failure(*cublas_api_, "cublasGemmEx", status));
  }
  return std::nullopt;
}

std::optional<RuntimeError> CudaRuntime::enqueue_dense(const DenseLaunch& launch,
                                                       cudaStream_t stream) {
  const auto& shape = launch.shape;
  // Temporaries (stream ordered): the output when it aliases an operand; for cuBLAS also any
  // operand at an odd address (cuBLAS needs f16 alignment).
  std::vector<void*> temporaries;
  std::optional<RuntimeError> failure;
  const auto temporary = [&](std::uint64_t bytes) -> std::uint8_t* {
    void* p = nullptr;
    if (const cudaError_t status = cudaMallocAsync(&p, static_cast<std::size_t>(bytes), stream);
        status != cudaSuccess) {
      failure = internal(cuda_failure("cudaMallocAsync", status));
      return nullptr;
    }
    temporaries.push_back(p);
    return static_cast<std::uint8_t*>(p);
  };
  const auto copy = [&](void* to, const void* from, std::uint64_t bytes) {
    if (const cudaError_t status = cudaMemcpyAsync(to, from, static_cast<std::size_t>(bytes),
                                                   cudaMemcpyDeviceToDevice, stream);
        status != cudaSuccess && !failure) {
      failure = internal(cuda_failure("cudaMemcpyAsync", status));
    }
  };
  const bool cublas = dense_linear_ == CudaDenseLinear::kCublas;
  const auto odd = [](const std::uint8_t* p) {
    return reinterpret_cast<std::uintptr_t>(p) % 2 != 0;
  };
  const std::uint8_t* input = launch.input.data();
  const std::uint8_t* weight = launch.weight.data();
  std::uint8_t* output = launch.output.data();
  if (cublas && odd(input)) {
    if (auto* staged = temporary(launch.input.length_bytes)) {
      copy(staged, input, launch.input.length_bytes);
      input = staged;
    }
  }
  if (cublas && odd(weight) && !failure) {
    if (auto* staged = temporary(launch.weight.length_bytes)) {
      copy(staged, weight, launch.weight.length_bytes);
      weight = staged;
    }
  }
  const bool stage_output = launch.output.overlaps(launch.input) ||
                            launch.output.overlaps(launch.weight) || (cublas && odd(output));
  std::uint8_t* target = output;
  if (stage_output && !failure) target = temporary(launch.output.length_bytes);
  if (!failure) {
    if (cublas) {
      failure = run_cublas(input, weight, target, shape, stream);
    } else if (const cudaError_t status = kernels::launch_strict_dense_linear(
                   input, weight, target, shape.rows, shape.in_features, shape.out_features,
                   stream);
               status != cudaSuccess) {
      failure = internal(cuda_failure("strict dense-linear kernel launch", status));
    }
  }
  if (stage_output && !failure) copy(output, target, launch.output.length_bytes);
  for (void* p : temporaries) (void)cudaFreeAsync(p, stream);
  return failure;
}

std::optional<RuntimeError> CudaRuntime::enqueue(const CudaCommand& command, cudaStream_t stream) {
  return std::visit(
      [&](const auto& k) -> std::optional<RuntimeError> {
        using K = std::decay_t<decltype(k)>;
        cudaError_t status = cudaSuccess;
        if constexpr (std::is_same_v<K, CopyKind>) {
          const auto bytes = static_cast<std::size_t>(k.source.length_bytes);
          if (!k.source.overlaps(k.destination)) {
            status = cudaMemcpyAsync(k.destination.data(), k.source.data(), bytes,
                                     cudaMemcpyDeviceToDevice, stream);
          } else {
            // As memmove: the source is read completely first.
            void* staged = nullptr;
            status = cudaMallocAsync(&staged, bytes, stream);
            if (status != cudaSuccess) return internal(cuda_failure("cudaMallocAsync", status));
            status =
                cudaMemcpyAsync(staged, k.source.data(), bytes, cudaMemcpyDeviceToDevice, stream);
            if (status == cudaSuccess) {
              status = cudaMemcpyAsync(k.destination.data(), staged, bytes,
                                       cudaMemcpyDeviceToDevice, stream);
            }
            (void)cudaFreeAsync(staged, stream);
          }
          if (status != cudaSuccess) return internal(cuda_failure("cudaMemcpyAsync", status));
        } else if constexpr (std::is_same_v<K, UploadKind>) {
          status = cudaMemcpyAsync(k.destination.data(), k.bytes.data(), k.bytes.size(),
                                   cudaMemcpyHostToDevice, stream);
          if (status != cudaSuccess) return internal(cuda_failure("cudaMemcpyAsync", status));
          bump(counters_->uploaded_bytes, k.bytes.size());
        } else if constexpr (std::is_same_v<K, ZeroKind>) {
          status = cudaMemsetAsync(k.destination.data(), 0,
                                   static_cast<std::size_t>(k.destination.length_bytes), stream);
          if (status != cudaSuccess) return internal(cuda_failure("cudaMemsetAsync", status));
        } else {
          for (const auto& launch : k.launches) {
            if (auto failed = enqueue_dense(launch, stream)) return failed;
            bump(counters_->dense_linear_launches);
          }
        }
        return std::nullopt;
      },
      command.kind);
}

std::optional<RuntimeError> CudaRuntime::after_last_batch(cudaStream_t stream) {
  if (!last_batch_) return std::nullopt;
  if (const cudaError_t status = cudaStreamWaitEvent(stream, last_batch_->event, 0);
      status != cudaSuccess) {
    return internal(cuda_failure("cudaStreamWaitEvent", status));
  }
  return std::nullopt;
}

std::expected<FencePtr, DefinitelyNotSubmitted> CudaRuntime::submit(Stream& stream,
                                                                    CommandBatch batch) {
  CudaStream* own = own_stream(stream);
  const std::uint64_t instance = instance_;
  const auto ownership = CudaCommand::ownership(own != nullptr, instance);
  auto plan = contract::check_submit(rt(), std::move(batch), ownership);
  if (!plan) return std::unexpected(std::move(plan.error()));

  cudaEvent_t native = nullptr;
  if (const cudaError_t status = cudaEventCreateWithFlags(&native, cudaEventDisableTiming);
      status != cudaSuccess) {
    // Nothing is enqueued yet: the batch is definitely not submitted.
    return std::unexpected(DefinitelyNotSubmitted(internal(
        "fence creation failed (" + cuda_failure("cudaEventCreateWithFlags", status) + ")")));
  }
  auto done = std::make_shared<Event>(native);
  std::optional<RuntimeError> failure;
  {
    std::lock_guard lock(submit_mutex_);
    failure = after_last_batch(own->stream);
    for (const contract::ContractCommand* command : plan->commands) {
      if (failure) break;
      failure = enqueue(static_cast<const CudaCommand&>(*command), own->stream);
    }
    // Recorded even after a failure: the event then marks the end of the part that was
    // enqueued, which the fence and the next batch wait for.
    const cudaError_t recorded = cudaEventRecord(done->event, own->stream);
    if (recorded == cudaSuccess) {
      last_batch_ = done;
    } else {
      if (!failure) failure = internal(cuda_failure("cudaEventRecord", recorded));
      // Nothing marks the enqueued part's end: wait for it here, so that the fence's terminal
      // answer is true and the next batch cannot overtake it.
      (void)cudaStreamSynchronize(own->stream);
      done.reset();
    }
  }
  bump(counters_->submissions);
  bump(counters_->commands, plan->entries.size());
  own->state = failure ? StreamState::kFailed : StreamState::kSubmitted;
  return std::make_unique<CudaFence>(instance_, std::move(done), std::move(plan->attribution),
                                     std::move(plan->entries), std::move(failure));
}

FenceQuery CudaRuntime::query_fence(const Fence& fence) const {
  const CudaFence* own = own_fence(fence);
  if (own == nullptr) {
    return error(ErrorKind::kForeignFence, rt(), "fence belongs to another runtime");
  }
  if (!own->event) return own->terminal();
  const cudaError_t status = cudaEventQuery(own->event->event);
  if (status == cudaErrorNotReady) {
    // Not an error, but cudart records it as this thread's last error: leave nothing behind for
    // a later call that reads it (kernels.cu's launches do).
    (void)cudaGetLastError();
    return FenceQueryPending{};
  }
  if (status != cudaSuccess) return internal(cuda_failure("cudaEventQuery", status));
  return own->terminal();
}

std::expected<TerminalReceipt, FenceIndeterminate> CudaRuntime::wait_fence(const Fence& fence) {
  const CudaFence* own = own_fence(fence);
  if (own == nullptr) {
    return std::unexpected(FenceIndeterminate(
        error(ErrorKind::kForeignFence, rt(), "fence belongs to another runtime")));
  }
  if (own->event) {
    if (const cudaError_t status = cudaEventSynchronize(own->event->event); status != cudaSuccess) {
      return std::unexpected(
          FenceIndeterminate(internal(cuda_failure("cudaEventSynchronize", status))));
    }
  }
  return own->terminal();
}

Result<void> CudaRuntime::synchronize(Stream& stream) {
  CudaStream* own = own_stream(stream);
  if (own == nullptr) {
    return std::unexpected(
        error(ErrorKind::kForeignStream, rt(), "stream belongs to another runtime"));
  }
  if (const cudaError_t status = cudaStreamSynchronize(own->stream); status != cudaSuccess) {
    own->state = StreamState::kFailed;
    return std::unexpected(internal(cuda_failure("cudaStreamSynchronize", status)));
  }
  own->state = StreamState::kReady;
  return {};
}

Result<std::vector<std::uint8_t>> CudaRuntime::readback(Stream& stream, const Buffer& source,
                                                        const CopyRegion& region,
                                                        const HostTransferLayout& output_layout) {
  const CudaBuffer* src = own_buffer(source);
  CudaStream* own = own_stream(stream);
  const bool owned = own != nullptr && src != nullptr;
  auto plan = contract::check_readback(rt(), owned, owned ? src->descriptor() : BufferDescriptor{},
                                       region, output_layout);
  if (!plan) return std::unexpected(plan.error());
  if (plan->output_bytes > std::numeric_limits<std::size_t>::max() ||
      plan->output_offset > plan->output_bytes) {
    return std::unexpected(
        error(ErrorKind::kReadbackInternal, rt(), "readback output exceeds usize"));
  }
  std::vector<std::uint8_t> output;
  if (auto reserved = contract::reserve_readback(rt(), output, plan->output_bytes); !reserved) {
    // As the host runtimes and upstream: the stream is synchronized before the internal checks.
    if (auto synced = synchronize(stream); !synced) return std::unexpected(synced.error());
    return std::unexpected(reserved.error());
  }
  output.resize(static_cast<std::size_t>(plan->output_bytes));  // zeros, within the capacity
  const Region src_region = src->region(plan->source);
  {
    // Ordered after the last batch of any stream, then synchronized (spec 7.3 step 6).
    std::lock_guard lock(submit_mutex_);
    if (auto failed = after_last_batch(own->stream)) return std::unexpected(*failed);
    if (const cudaError_t status = cudaMemcpyAsync(
            output.data() + plan->output_offset, src_region.data(),
            static_cast<std::size_t>(src_region.length_bytes), cudaMemcpyDeviceToHost, own->stream);
        status != cudaSuccess) {
      return std::unexpected(
          error(ErrorKind::kReadbackInternal, rt(),
                "readback copy failed (" + cuda_failure("cudaMemcpyAsync", status) + ")"));
    }
  }
  if (auto synced = synchronize(stream); !synced) return std::unexpected(synced.error());
  bump(counters_->readback_bytes, plan->source.length_bytes);
  return output;
}

}  // namespace

std::string_view runtime_name(CudaDenseLinear dense_linear) {
  return dense_linear == CudaDenseLinear::kStrict ? "cuda" : "cuda-cublas";
}

Result<std::unique_ptr<DeviceRuntime>> open_cuda_runtime(CudaDenseLinear dense_linear,
                                                         const RuntimeOpenOptions& options) {
  return CudaRuntime::open(dense_linear, options);
}

void register_cuda_runtimes(RuntimeRegistry& registry) {
  registry.add("cuda",
               "CUDA GPU runtime (device 0), strict dense-linear kernel bit-exact with the "
               "reference (one f32 accumulator, k ascending, fmaf)",
               [](const RuntimeOpenOptions& options) {
                 return open_cuda_runtime(CudaDenseLinear::kStrict, options);
               });
  registry.add("cuda-cublas",
               "CUDA GPU runtime (device 0), dense linear through cublasGemmEx (f16 in, f32 "
               "compute, tensor cores): drifts from the reference",
               [](const RuntimeOpenOptions& options) {
                 return open_cuda_runtime(CudaDenseLinear::kCublas, options);
               });
}

}  // namespace vtrace::runtime::cuda
