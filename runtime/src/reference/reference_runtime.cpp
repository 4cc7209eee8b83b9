// The reference runtime (spec 7, 8.5, 9, 11.1).
//
// Spec points decided differently from upstream, and why:
//  - Fence identity exhaustion (7.4 step 11) does not panic: the fence instance is taken after
//    every validation step but before execution, and exhaustion returns DefinitelyNotSubmitted
//    with kIdentityExhausted ("reference fence identity exhausted"). Taking it before execution
//    keeps the DNS promise true (nothing ran, no counter moved). Consequence: a fence instance is
//    consumed only by a submit that then succeeds, as upstream.
//  - Dense linear takes explicit launches (open question 15.2) instead of core invocations:
//    encode_dense_linear validates launch count (1 or participant_count), work (kDenseLinearNoWork),
//    each launch per 8.5 and one shared weight region.
//  - Handles of another class are foreign: an encoder given a non-reference buffer fails with
//    kForeignBufferInCommand; submit given a non-reference command fails with kForeignCommand
//    (checked while walking entries, step 5); a non-reference stream or fence is treated like one
//    of another runtime. buffer_descriptor() of a non-reference buffer returns a default
//    descriptor (the interface has no error channel there).
//  - Dense-linear NaN outputs (open question 15.3): any output whose f32 accumulator is NaN is
//    written as 0x7E00 (see dense_linear_kernel.h), so NaN bits never depend on which operand the
//    FPU propagated.
//  - allocate() of a permit that was already consumed fails with kAdmissionInvalidRequest; a host
//    allocation failure (only possible with a transaction larger than the host) fails with
//    kAllocationInvalid "reference allocation failed" instead of aborting.
//  - DeviceBufferRetention is not modelled: regions hold the storage (and through it the
//    admission reservation), which is all the port's retention does.
#include "vtrace/runtime/reference/reference_runtime.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <new>
#include <variant>

#include "reference/dense_linear_kernel.h"
#include "reference/instance_counters.h"
#include "vtrace/runtime/fingerprint.h"

namespace vtrace::runtime::reference {

namespace {

constexpr std::string_view kImplementationVersion = "vtrace.reference.runtime.v1";

std::atomic<std::uint64_t> g_next_runtime_instance{1};
std::atomic<std::uint64_t> g_next_stream_instance{1};
std::atomic<std::uint64_t> g_next_fence_instance{1};

// Returns the current value and advances by one with a checked add; nullopt once the counter
// reached u64::MAX (the counter then stays there).
std::optional<std::uint64_t> take_instance(std::atomic<std::uint64_t>& counter) {
  std::uint64_t current = counter.load(std::memory_order_relaxed);
  do {
    if (current == std::numeric_limits<std::uint64_t>::max()) return std::nullopt;
  } while (!counter.compare_exchange_weak(current, current + 1, std::memory_order_relaxed));
  return current;
}

std::optional<std::size_t> to_size(std::uint64_t value) {
  if constexpr (sizeof(std::size_t) < sizeof(std::uint64_t)) {
    if (value > std::numeric_limits<std::size_t>::max()) return std::nullopt;
  }
  return static_cast<std::size_t>(value);
}

RuntimeError error(ErrorKind kind, std::string_view message) {
  return RuntimeError(kind, std::string(message));
}

// Relaxed atomics: the counters are statistics, ordered by the calls that move them.
struct Counters {
  std::atomic<std::uint64_t> allocations{0};
  std::atomic<std::uint64_t> live_allocations{0};
  std::atomic<std::uint64_t> submissions{0};
  std::atomic<std::uint64_t> commands{0};
  std::atomic<std::uint64_t> uploaded_bytes{0};
  std::atomic<std::uint64_t> dense_linear_launches{0};
  std::atomic<std::uint64_t> readback_bytes{0};
};

void bump(std::atomic<std::uint64_t>& counter, std::uint64_t amount = 1) {
  counter.fetch_add(amount, std::memory_order_relaxed);
}

// One allocation. Shared by the buffer handle and every command region that refers to it; the
// last holder's release decrements live_allocations and returns the admitted bytes.
class Storage {
 public:
  Storage(std::unique_ptr<std::uint8_t[]> bytes, std::size_t logical_offset,
          std::shared_ptr<Counters> counters, ReservationToken reservation)
      : bytes_(std::move(bytes)),
        logical_offset_(logical_offset),
        counters_(std::move(counters)),
        reservation_(std::move(reservation)) {}
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  ~Storage() { counters_->live_allocations.fetch_sub(1, std::memory_order_relaxed); }

  std::size_t logical_offset() const { return logical_offset_; }
  const std::uint8_t* base() const { return bytes_.get(); }

  std::vector<std::uint8_t> read(std::size_t offset, std::size_t length) const {
    std::lock_guard lock(mutex_);
    return std::vector<std::uint8_t>(bytes_.get() + offset, bytes_.get() + offset + length);
  }
  void write(std::size_t offset, std::span<const std::uint8_t> src) {
    std::lock_guard lock(mutex_);
    std::memcpy(bytes_.get() + offset, src.data(), src.size());
  }
  void zero(std::size_t offset, std::size_t length) {
    std::lock_guard lock(mutex_);
    std::memset(bytes_.get() + offset, 0, length);
  }

 private:
  mutable std::mutex mutex_;
  std::unique_ptr<std::uint8_t[]> bytes_;
  std::size_t logical_offset_;
  std::shared_ptr<Counters> counters_;
  ReservationToken reservation_;
};

// A physical byte range of one storage, as a command holds it.
struct Region {
  std::shared_ptr<Storage> storage;
  std::uint64_t runtime_instance = 0;
  std::size_t offset_bytes = 0;  // physical: logical offset of the storage plus the range start
  std::size_t length_bytes = 0;
  ElementType element_type = ElementType::kU8;

  bool same_physical_region(const Region& other) const {
    return storage == other.storage && offset_bytes == other.offset_bytes &&
           length_bytes == other.length_bytes && element_type == other.element_type;
  }
  std::vector<std::uint8_t> read() const { return storage->read(offset_bytes, length_bytes); }
  void write(std::span<const std::uint8_t> src) const { storage->write(offset_bytes, src); }
  void zero() const { storage->zero(offset_bytes, length_bytes); }
};

class ReferenceBuffer final : public Buffer {
 public:
  ReferenceBuffer(BufferDescriptor descriptor, std::uint64_t runtime_instance,
                  std::shared_ptr<Storage> storage)
      : descriptor_(std::move(descriptor)),
        runtime_instance_(runtime_instance),
        storage_(std::move(storage)) {}
  const BufferDescriptor& descriptor() const { return descriptor_; }
  std::uint64_t runtime_instance() const { return runtime_instance_; }
  std::uintptr_t logical_address() const {
    return reinterpret_cast<std::uintptr_t>(storage_->base() + storage_->logical_offset());
  }

  // Region rule of spec 7.3 for the byte range [start, end).
  Result<Region> region(std::uint64_t start, std::uint64_t end) const {
    if (start >= end || end > descriptor_.size_bytes) {
      return std::unexpected(
          error(ErrorKind::kRegionOutOfBounds,
                "reference buffer region is empty or exceeds its admitted allocation"));
    }
    const auto offset = to_size(start);
    if (!offset) {
      return std::unexpected(
          error(ErrorKind::kRegionOutOfBounds, "reference buffer offset exceeds usize"));
    }
    std::size_t physical = 0;
    if (__builtin_add_overflow(*offset, storage_->logical_offset(), &physical)) {
      return std::unexpected(error(ErrorKind::kRegionOutOfBounds,
                                   "reference buffer physical offset overflows usize"));
    }
    const auto length = to_size(end - start);
    if (!length) {
      return std::unexpected(
          error(ErrorKind::kRegionOutOfBounds, "reference buffer length exceeds usize"));
    }
    return Region{storage_, runtime_instance_, physical, *length, descriptor_.element_type};
  }

 private:
  BufferDescriptor descriptor_;
  std::uint64_t runtime_instance_;
  std::shared_ptr<Storage> storage_;
};

class ReferenceStream final : public Stream {
 public:
  ReferenceStream(std::uint64_t runtime, std::uint64_t stream)
      : runtime_instance(runtime), stream_instance(stream) {}
  const std::uint64_t runtime_instance;
  const std::uint64_t stream_instance;
  StreamState state = StreamState::kReady;
};

class ReferenceFence final : public Fence {
 public:
  ReferenceFence(std::uint64_t runtime, std::uint64_t fence,
                 std::optional<SubmissionAttribution> rows)
      : runtime_instance(runtime), fence_instance(fence), attribution(std::move(rows)) {}
  const std::uint64_t runtime_instance;
  const std::uint64_t fence_instance;
  const std::optional<SubmissionAttribution> attribution;
};

struct DenseLaunch {
  Region input;
  Region weight;
  Region output;
  std::size_t rows = 0;
  std::size_t in_features = 0;
  std::size_t out_features = 0;
};

struct CopyKind {
  Region source;
  Region destination;
};
struct UploadKind {
  std::vector<std::uint8_t> bytes;
  Region destination;
};
struct ZeroKind {
  Region destination;
};
struct DenseLinearKind {
  std::vector<DenseLaunch> launches;
};

// A fully validated command that owns its data and keeps every storage it touches alive.
class ReferenceCommand final : public Command {
 public:
  using Kind = std::variant<CopyKind, UploadKind, ZeroKind, DenseLinearKind>;

  static CommandPtr transfer(std::string_view operation, Kind kind) {
    auto command = std::unique_ptr<ReferenceCommand>(new ReferenceCommand(std::move(kind)));
    command->operation = operation;
    command->transfer_command_count = 1;
    return command;
  }

  static CommandPtr dense_linear(std::vector<DenseLaunch> launches, BatchingForm form,
                                 std::uint32_t participant_count, std::uint64_t token_count) {
    const auto dispatches = static_cast<std::uint64_t>(launches.size());
    auto command = std::unique_ptr<ReferenceCommand>(
        new ReferenceCommand(DenseLinearKind{std::move(launches)}));
    command->operation = kDenseLinearNativeOperationLabel;
    command->batching_form = form;
    command->participant_count = participant_count;
    command->token_count = token_count;
    command->compute_dispatch_count = dispatches;
    return command;
  }

  // Every region the command touches.
  std::vector<const Region*> regions() const {
    std::vector<const Region*> result;
    std::visit(
        [&result](const auto& k) {
          using K = std::decay_t<decltype(k)>;
          if constexpr (std::is_same_v<K, CopyKind>) {
            result = {&k.source, &k.destination};
          } else if constexpr (std::is_same_v<K, DenseLinearKind>) {
            for (const auto& launch : k.launches) {
              result.push_back(&launch.input);
              result.push_back(&launch.weight);
              result.push_back(&launch.output);
            }
          } else {
            result = {&k.destination};
          }
        },
        kind);
    return result;
  }

  std::string_view operation;
  BatchingForm batching_form = BatchingForm::kScalar;
  std::uint32_t participant_start = 0;
  std::uint32_t participant_count = 0;
  std::uint64_t token_count = 0;
  std::uint64_t compute_dispatch_count = 0;
  std::uint64_t transfer_command_count = 0;
  Kind kind;

 private:
  explicit ReferenceCommand(Kind k) : kind(std::move(k)) {}
};

Result<const ReferenceBuffer*> reference_buffer(const Buffer* buffer) {
  const auto* concrete = dynamic_cast<const ReferenceBuffer*>(buffer);
  if (concrete == nullptr) {
    return std::unexpected(error(ErrorKind::kForeignBufferInCommand,
                                 "reference command contains a buffer from another runtime"));
  }
  return concrete;
}

// spec 8.5 for one launch, after its regions were built.
Result<DenseLaunch> reference_launch(Region input, Region weight, Region output,
                                     std::uint64_t rows, std::uint64_t in_features,
                                     std::uint64_t out_features) {
  const auto rows_size = to_size(rows);
  const auto in_size = to_size(in_features);
  const auto out_size = to_size(out_features);
  if (!rows_size || !in_size || !out_size) {
    return std::unexpected(
        error(ErrorKind::kDenseLinearRangesDiffer, "reference dense-linear row count exceeds usize"));
  }
  std::size_t input_bytes = 0;
  std::size_t weight_bytes = 0;
  std::size_t output_bytes = 0;
  if (__builtin_mul_overflow(*rows_size, *in_size, &input_bytes) ||
      __builtin_mul_overflow(input_bytes, std::size_t{2}, &input_bytes)) {
    return std::unexpected(
        error(ErrorKind::kDenseLinearRangesDiffer, "reference dense-linear input size overflows"));
  }
  if (__builtin_mul_overflow(*out_size, *in_size, &weight_bytes) ||
      __builtin_mul_overflow(weight_bytes, std::size_t{2}, &weight_bytes)) {
    return std::unexpected(
        error(ErrorKind::kDenseLinearRangesDiffer, "reference dense-linear weight size overflows"));
  }
  if (__builtin_mul_overflow(*rows_size, *out_size, &output_bytes) ||
      __builtin_mul_overflow(output_bytes, std::size_t{2}, &output_bytes)) {
    return std::unexpected(
        error(ErrorKind::kDenseLinearRangesDiffer, "reference dense-linear output size overflows"));
  }
  if (input.length_bytes != input_bytes || weight.length_bytes != weight_bytes ||
      output.length_bytes != output_bytes || input.element_type != ElementType::kF16 ||
      weight.element_type != ElementType::kF16 || output.element_type != ElementType::kF16) {
    return std::unexpected(error(ErrorKind::kDenseLinearRangesDiffer,
                                 "reference dense-linear physical ranges differ from runtime work"));
  }
  return DenseLaunch{std::move(input), std::move(weight), std::move(output),
                     *rows_size,       *in_size,          *out_size};
}

Result<Region> resolve_region(const BufferRegionRef& ref) {
  auto buffer = reference_buffer(ref.buffer);
  if (!buffer) return std::unexpected(buffer.error());
  std::uint64_t end = 0;
  if (__builtin_add_overflow(ref.offset_bytes, ref.length_bytes, &end)) {
    return std::unexpected(
        error(ErrorKind::kRegionOutOfBounds,
              "reference buffer region is empty or exceeds its admitted allocation"));
  }
  return (*buffer)->region(ref.offset_bytes, end);
}

void execute(const ReferenceCommand& command, Counters& counters) {
  std::visit(
      [&counters](const auto& k) {
        using K = std::decay_t<decltype(k)>;
        if constexpr (std::is_same_v<K, CopyKind>) {
          // Read completely before writing: overlapping copies behave like memmove.
          const auto bytes = k.source.read();
          k.destination.write(bytes);
        } else if constexpr (std::is_same_v<K, UploadKind>) {
          k.destination.write(k.bytes);
          bump(counters.uploaded_bytes, k.bytes.size());
        } else if constexpr (std::is_same_v<K, ZeroKind>) {
          k.destination.zero();
        } else {
          for (const auto& launch : k.launches) {
            const auto input = launch.input.read();
            const auto weight = launch.weight.read();
            const auto output = dense_linear_f16(input, weight, launch.rows, launch.in_features,
                                                 launch.out_features);
            launch.output.write(output);
            bump(counters.dense_linear_launches);
          }
        }
      },
      command.kind);
}

}  // namespace

std::uint64_t detail::exchange_next_instance(InstanceCounter counter, std::uint64_t next) {
  std::atomic<std::uint64_t>& target = counter == InstanceCounter::kRuntime ? g_next_runtime_instance
                                       : counter == InstanceCounter::kStream
                                           ? g_next_stream_instance
                                           : g_next_fence_instance;
  return target.exchange(next, std::memory_order_relaxed);
}

struct ReferenceRuntime::State {
  DeviceDescriptor descriptor;
  std::uint64_t instance = 0;
  // Shared with every storage, which may outlive the runtime only in misuse; even then the
  // decrement stays valid.
  std::shared_ptr<Counters> counters = std::make_shared<Counters>();

  bool owns(const ReferenceBuffer& buffer) const { return buffer.runtime_instance() == instance; }
  const ReferenceStream* own_stream(const Stream& stream) const {
    const auto* concrete = dynamic_cast<const ReferenceStream*>(&stream);
    return concrete != nullptr && concrete->runtime_instance == instance ? concrete : nullptr;
  }
  ReferenceStream* own_stream(Stream& stream) const {
    auto* concrete = dynamic_cast<ReferenceStream*>(&stream);
    return concrete != nullptr && concrete->runtime_instance == instance ? concrete : nullptr;
  }
  const ReferenceFence* own_fence(const Fence& fence) const {
    const auto* concrete = dynamic_cast<const ReferenceFence*>(&fence);
    return concrete != nullptr && concrete->runtime_instance == instance ? concrete : nullptr;
  }
};

VNextResult<DeviceDescriptor> reference_descriptor(std::string_view device_id) {
  auto id = DeviceId::create(std::string(device_id));
  if (!id) return std::unexpected(id.error());
  auto capability = CapabilityId::create(std::string(kDenseLinearF16CapabilityId));
  DeviceDescriptor descriptor;
  descriptor.id = std::move(*id);
  descriptor.device_class = DeviceClass::kReference;
  descriptor.ordinal = 0;
  descriptor.total_memory_bytes = kReferenceMemoryBytes;
  descriptor.runtime_implementation_fingerprint = implementation_fingerprint(
      {"vtrace.reference.runtime", "vtrace.reference.dense_linear", kImplementationVersion});
  descriptor.capabilities = {*capability};
  descriptor.dynamic_storage_profiles = {DynamicStorageProfile::linear_contiguous()};
  if (auto valid = descriptor.validate(); !valid) return std::unexpected(valid.error());
  return descriptor;
}

Result<std::unique_ptr<ReferenceRuntime>> ReferenceRuntime::create(DeviceDescriptor descriptor) {
  if (auto valid = descriptor.validate(); !valid) {
    return std::unexpected(RuntimeError(ErrorKind::kDescriptorInvalid, valid.error()));
  }
  const std::set<CapabilityId> supported = {
      *CapabilityId::create(std::string(kDenseLinearF16CapabilityId))};
  if (descriptor.device_class != DeviceClass::kReference || descriptor.capabilities != supported) {
    return std::unexpected(
        error(ErrorKind::kDescriptorOverclaims,
              "reference runtime descriptor overclaims its fixed device class or capabilities"));
  }
  const auto instance = take_instance(g_next_runtime_instance);
  if (!instance) {
    return std::unexpected(
        error(ErrorKind::kIdentityExhausted, "reference runtime identity exhausted"));
  }
  auto state = std::make_unique<State>();
  state->descriptor = std::move(descriptor);
  state->instance = *instance;
  return std::unique_ptr<ReferenceRuntime>(new ReferenceRuntime(std::move(state)));
}

ReferenceRuntime::ReferenceRuntime(std::unique_ptr<State> state) : state_(std::move(state)) {}
ReferenceRuntime::~ReferenceRuntime() = default;

std::uint64_t ReferenceRuntime::instance() const { return state_->instance; }

std::optional<std::uintptr_t> ReferenceRuntime::logical_address(const Buffer& buffer) const {
  const auto* concrete = dynamic_cast<const ReferenceBuffer*>(&buffer);
  if (concrete == nullptr || !state_->owns(*concrete)) return std::nullopt;
  return concrete->logical_address();
}

CounterSnapshot ReferenceRuntime::snapshot() const {
  const Counters& c = *state_->counters;
  constexpr auto relaxed = std::memory_order_relaxed;
  return CounterSnapshot{c.allocations.load(relaxed),           c.live_allocations.load(relaxed),
                         c.submissions.load(relaxed),           c.commands.load(relaxed),
                         c.uploaded_bytes.load(relaxed),        c.dense_linear_launches.load(relaxed),
                         c.readback_bytes.load(relaxed)};
}

const DeviceDescriptor& ReferenceRuntime::descriptor() const { return state_->descriptor; }

AttentionExecutionPolicy ReferenceRuntime::attention_execution_policy() const {
  return AttentionExecutionPolicy::kPortable;
}

Result<BufferPtr> ReferenceRuntime::allocate(AllocationPermit permit) {
  auto parts = permit.into_parts();
  if (!parts) return std::unexpected(parts.error());
  auto& [request, reservation] = *parts;

  const auto size = to_size(request.size_bytes());
  if (!size) {
    return std::unexpected(
        error(ErrorKind::kAllocationInvalid, "reference allocation exceeds usize"));
  }
  const auto alignment = to_size(request.alignment_bytes());
  if (!alignment) {
    return std::unexpected(
        error(ErrorKind::kAllocationInvalid, "reference alignment exceeds usize"));
  }
  if (*size == 0 || !std::has_single_bit(*alignment)) {
    return std::unexpected(error(ErrorKind::kAllocationInvalid,
                                 "reference allocation size or alignment is invalid"));
  }
  std::size_t padded = 0;
  if (__builtin_add_overflow(*size, *alignment - 1, &padded)) {
    return std::unexpected(
        error(ErrorKind::kAllocationInvalid, "reference aligned allocation size overflows"));
  }
  // Value-initialised: contents start as zeros. nothrow so a huge request is an error, not abort.
  std::unique_ptr<std::uint8_t[]> bytes(new (std::nothrow) std::uint8_t[padded]());
  if (!bytes) {
    return std::unexpected(error(ErrorKind::kAllocationInvalid, "reference allocation failed"));
  }
  const auto address = reinterpret_cast<std::uintptr_t>(bytes.get());
  std::uintptr_t aligned = 0;
  if (__builtin_add_overflow(address, *alignment - 1, &aligned)) {
    return std::unexpected(
        error(ErrorKind::kAllocationInvalid, "reference aligned address overflows"));
  }
  aligned &= ~static_cast<std::uintptr_t>(*alignment - 1);
  if (aligned < address) {
    return std::unexpected(
        error(ErrorKind::kAllocationInvalid, "reference aligned address precedes its allocation"));
  }
  const std::size_t logical_offset = aligned - address;
  if (logical_offset + *size > padded) {
    return std::unexpected(error(ErrorKind::kAllocationInvalid,
                                 "reference aligned logical range exceeds its allocation"));
  }

  bump(state_->counters->allocations);
  bump(state_->counters->live_allocations);
  auto storage = std::make_shared<Storage>(std::move(bytes), logical_offset, state_->counters,
                                           std::move(reservation));
  return std::make_unique<ReferenceBuffer>(BufferDescriptor::from_request(request),
                                           state_->instance, std::move(storage));
}

BufferDescriptor ReferenceRuntime::buffer_descriptor(const Buffer& buffer) const {
  const auto* concrete = dynamic_cast<const ReferenceBuffer*>(&buffer);
  return concrete != nullptr ? concrete->descriptor() : BufferDescriptor{};
}

Result<StreamPtr> ReferenceRuntime::create_stream() {
  const auto instance = take_instance(g_next_stream_instance);
  if (!instance) {
    return std::unexpected(
        error(ErrorKind::kIdentityExhausted, "reference stream identity exhausted"));
  }
  return std::make_unique<ReferenceStream>(state_->instance, *instance);
}

StreamState ReferenceRuntime::stream_state(const Stream& stream) const {
  const auto* own = state_->own_stream(stream);
  return own != nullptr ? own->state : StreamState::kFailed;
}

Result<CommandPtr> ReferenceRuntime::encode_copy(const Buffer& source, const Buffer& destination,
                                                 const CopyRegion& region) {
  auto src = reference_buffer(&source);
  if (!src) return std::unexpected(src.error());
  auto dst = reference_buffer(&destination);
  if (!dst) return std::unexpected(dst.error());
  if (auto bounds = region.validate_bounds((*src)->descriptor(), (*dst)->descriptor()); !bounds) {
    return std::unexpected(RuntimeError(ErrorKind::kCopyOutOfBounds, bounds.error()));
  }
  if ((*src)->descriptor().element_type != (*dst)->descriptor().element_type) {
    return std::unexpected(
        error(ErrorKind::kCopyElementTypeMismatch,
              "reference copy requires matching source and destination element types"));
  }
  const std::uint64_t length = region.length_bytes();
  auto src_region = (*src)->region(region.source_offset_bytes(),
                                   region.source_offset_bytes() + length);
  if (!src_region) return std::unexpected(src_region.error());
  auto dst_region = (*dst)->region(region.destination_offset_bytes(),
                                   region.destination_offset_bytes() + length);
  if (!dst_region) return std::unexpected(dst_region.error());
  return ReferenceCommand::transfer(kDeviceCopyNativeOperationId,
                                    CopyKind{std::move(*src_region), std::move(*dst_region)});
}

Result<CommandPtr> ReferenceRuntime::encode_upload(std::span<const std::uint8_t> source,
                                                   const HostTransferLayout& layout,
                                                   const Buffer& destination,
                                                   std::uint64_t destination_offset_bytes) {
  auto dst = reference_buffer(&destination);
  if (!dst) return std::unexpected(dst.error());
  if (auto matches = layout.validate_bytes(source.size()); !matches) {
    return std::unexpected(RuntimeError(ErrorKind::kUploadByteCountMismatch, matches.error()));
  }
  if (layout.element_type() != (*dst)->descriptor().element_type) {
    return std::unexpected(error(ErrorKind::kUploadElementTypeMismatch,
                                 "reference upload layout differs from destination element type"));
  }
  std::uint64_t end = 0;
  if (__builtin_add_overflow(destination_offset_bytes, layout.byte_len(), &end)) {
    return std::unexpected(
        error(ErrorKind::kUploadRangeOverflow, "reference upload range overflows"));
  }
  auto region = (*dst)->region(destination_offset_bytes, end);
  if (!region) return std::unexpected(region.error());
  // The host bytes are copied now, at encode time.
  return ReferenceCommand::transfer(
      kHostUploadNativeOperationId,
      UploadKind{std::vector<std::uint8_t>(source.begin(), source.end()), std::move(*region)});
}

Result<CommandPtr> ReferenceRuntime::encode_zero(const Buffer& destination,
                                                 std::uint64_t destination_offset_bytes,
                                                 std::uint64_t length_bytes) {
  auto dst = reference_buffer(&destination);
  if (!dst) return std::unexpected(dst.error());
  std::uint64_t end = 0;
  if (__builtin_add_overflow(destination_offset_bytes, length_bytes, &end)) {
    return std::unexpected(error(ErrorKind::kZeroRangeOverflow, "reference zero range overflows"));
  }
  auto region = (*dst)->region(destination_offset_bytes, end);
  if (!region) return std::unexpected(region.error());
  return ReferenceCommand::transfer(kDeviceZeroNativeOperationId, ZeroKind{std::move(*region)});
}

Result<CommandPtr> ReferenceRuntime::encode_dense_linear(const DenseLinearRequest& request) {
  if (request.launches.empty() || request.participant_count == 0 || request.token_count == 0) {
    return std::unexpected(error(ErrorKind::kDenseLinearNoWork,
                                 "reference dense-linear attribution has no participants or work"));
  }
  if (request.launches.size() != 1 && request.launches.size() != request.participant_count) {
    return std::unexpected(
        error(ErrorKind::kDenseLinearLaunchCount,
              "reference dense-linear launches are neither one packed launch nor one per "
              "participant"));
  }
  std::vector<DenseLaunch> launches;
  launches.reserve(request.launches.size());
  for (const auto& launch : request.launches) {
    auto input = resolve_region(launch.input);
    if (!input) return std::unexpected(input.error());
    auto weight = resolve_region(launch.weight);
    if (!weight) return std::unexpected(weight.error());
    auto output = resolve_region(launch.output);
    if (!output) return std::unexpected(output.error());
    auto validated = reference_launch(std::move(*input), std::move(*weight), std::move(*output),
                                      launch.rows, launch.in_features, launch.out_features);
    if (!validated) return std::unexpected(validated.error());
    if (!launches.empty() && !validated->weight.same_physical_region(launches.front().weight)) {
      return std::unexpected(error(ErrorKind::kDenseLinearWeightNotShared,
                                   "reference dense-linear participants do not share one weight"));
    }
    launches.push_back(std::move(*validated));
  }
  const BatchingForm form = request.participant_count == 1 ? BatchingForm::kScalar
                            : launches.size() == 1         ? BatchingForm::kPacked
                                                           : BatchingForm::kParticipantLoop;
  return ReferenceCommand::dense_linear(std::move(launches), form, request.participant_count,
                                        request.token_count);
}

std::expected<FencePtr, DefinitelyNotSubmitted> ReferenceRuntime::submit(Stream& stream,
                                                                         CommandBatch batch) {
  const auto not_submitted = [](ErrorKind kind, std::string_view message) {
    return std::unexpected(DefinitelyNotSubmitted(error(kind, message)));
  };
  // 1. stream ownership
  auto* own_stream = state_->own_stream(stream);
  if (own_stream == nullptr) {
    return not_submitted(ErrorKind::kForeignStream, "reference stream belongs to another runtime");
  }
  // 2. empty batch
  if (batch.empty()) {
    return not_submitted(ErrorKind::kEmptyBatch, "reference runtime cannot submit an empty batch");
  }
  // 3. submission requirements
  if (batch.timing_mode() != TimingMode::kOff) {
    return not_submitted(ErrorKind::kTimingUnsupported,
                         "reference runtime does not provide device timing evidence");
  }
  if (batch.compute_path_requirement() == ComputePathRequirement::kReplayedOnly ||
      batch.compute_path_requirement() ==
          ComputePathRequirement::kReplayedWithDeclaredEagerBoundaries) {
    return not_submitted(ErrorKind::kReplayRequiredUnsupported,
                         "reference runtime cannot satisfy a replay-required compute submission");
  }
  if (batch.reusable_execution_capture().has_value()) {
    return not_submitted(ErrorKind::kReusableCaptureUnsupported,
                         "reference runtime cannot consume reusable execution capture metadata");
  }
  // 4.
  const bool attribution_required =
      batch.attribution_requirement() == AttributionRequirement::kLogicalExecutionPath;
  std::vector<CommandEntry> entries = std::move(batch).into_entries();

  // 5. bind logical work (the batch is ours now; on failure it is dropped unexecuted).
  std::vector<ReferenceCommand*> commands;
  commands.reserve(entries.size());
  for (auto& entry : entries) {
    auto* command = dynamic_cast<ReferenceCommand*>(entry.command.get());
    if (command == nullptr) {
      return not_submitted(ErrorKind::kForeignCommand,
                           "reference runtime cannot submit a command it did not encode");
    }
    if (entry.logical_work.has_value()) {
      if (command->participant_count != 0 || command->token_count != 0) {
        return not_submitted(ErrorKind::kLogicalWorkConflict,
                             "reference core logical work cannot replace provider command "
                             "attribution");
      }
      command->batching_form = entry.logical_work->batching_form();
      command->participant_start = entry.logical_work->participant_start();
      command->participant_count = entry.logical_work->participant_count();
      command->token_count = entry.logical_work->token_count();
    }
    commands.push_back(command);
  }
  // 6. every region belongs to this runtime
  for (const auto* command : commands) {
    for (const Region* region : command->regions()) {
      if (region->runtime_instance != state_->instance) {
        return not_submitted(ErrorKind::kForeignBufferInCommand,
                             "reference command contains a buffer from another runtime");
      }
    }
  }
  // 7. attribution rows
  std::optional<SubmissionAttribution> attribution;
  if (attribution_required) {
    std::vector<NativeWorkAttribution> rows;
    rows.reserve(entries.size());
    for (std::size_t index = 0; index < entries.size(); ++index) {
      if (index > std::numeric_limits<std::uint32_t>::max()) {
        return not_submitted(ErrorKind::kAttributionIndexOverflow,
                             "reference command index exceeds u32");
      }
      const ReferenceCommand& command = *commands[index];
      auto op_id = DeviceNativeOperationId::create(command.operation);
      if (!op_id) {
        return not_submitted(
            ErrorKind::kAttributionNonPortableOperation,
            "reference command attribution has a non-portable native operation identity");
      }
      auto row = NativeWorkAttribution::with_participant_range(
          static_cast<std::uint32_t>(index), entries[index].node_index, entries[index].phase,
          std::move(*op_id), ExecutionPath::kEager, command.batching_form,
          command.participant_start, command.participant_count, command.token_count,
          command.compute_dispatch_count, command.transfer_command_count, std::nullopt);
      if (!row) {
        return not_submitted(ErrorKind::kAttributionInvalidMetadata,
                             "reference command attribution has invalid native work metadata");
      }
      rows.push_back(std::move(*row));
    }
    attribution = SubmissionAttribution::create(std::move(rows));
    if (!attribution) {
      return not_submitted(ErrorKind::kAttributionEmptyOrUnordered,
                           "reference submission attribution is empty or unordered");
    }
  }
  // 11 (moved before execution, see the top of this file): the fence identity.
  const auto fence_instance = take_instance(g_next_fence_instance);
  if (!fence_instance) {
    return not_submitted(ErrorKind::kIdentityExhausted, "reference fence identity exhausted");
  }
  // 8. execute in order, synchronously
  for (const auto* command : commands) execute(*command, *state_->counters);
  // 9, 10
  bump(state_->counters->submissions);
  bump(state_->counters->commands, entries.size());
  own_stream->state = StreamState::kSubmitted;
  return std::make_unique<ReferenceFence>(state_->instance, *fence_instance,
                                          std::move(attribution));
}

FenceQuery ReferenceRuntime::query_fence(const Fence& fence) const {
  if (state_->own_fence(fence) == nullptr) {
    return error(ErrorKind::kForeignFence, "reference fence belongs to another runtime");
  }
  // Execution already happened inside submit: never Pending.
  return TerminalReceipt::unprofiled(DeviceTerminal{});
}

std::expected<TerminalReceipt, FenceIndeterminate> ReferenceRuntime::wait_fence(
    const Fence& fence) {
  if (state_->own_fence(fence) == nullptr) {
    return std::unexpected(FenceIndeterminate(
        error(ErrorKind::kForeignFence, "reference fence belongs to another runtime")));
  }
  return TerminalReceipt::unprofiled(DeviceTerminal{});
}

Result<void> ReferenceRuntime::synchronize(Stream& stream) {
  auto* own = state_->own_stream(stream);
  if (own == nullptr) {
    return std::unexpected(
        error(ErrorKind::kForeignStream, "reference stream belongs to another runtime"));
  }
  own->state = StreamState::kReady;
  return {};
}

Result<std::vector<std::uint8_t>> ReferenceRuntime::readback(
    Stream& stream, const Buffer& source, const CopyRegion& region,
    const HostTransferLayout& output_layout) {
  const auto* src = dynamic_cast<const ReferenceBuffer*>(&source);
  if (state_->own_stream(stream) == nullptr || src == nullptr || !state_->owns(*src)) {
    return std::unexpected(
        error(ErrorKind::kReadbackForeign, "reference readback belongs to another runtime"));
  }
  if (output_layout.element_type() != src->descriptor().element_type) {
    return std::unexpected(error(ErrorKind::kReadbackElementTypeMismatch,
                                 "reference readback layout differs from source element type"));
  }
  const std::uint64_t out_bytes = output_layout.byte_len();
  const std::uint64_t length = region.length_bytes();
  std::uint64_t src_end = 0;
  if (__builtin_add_overflow(region.source_offset_bytes(), length, &src_end) ||
      src_end > src->descriptor().size_bytes) {
    return std::unexpected(error(ErrorKind::kReadbackSourceOutOfBounds,
                                 "reference readback source exceeds its admitted allocation"));
  }
  std::uint64_t out_end = 0;
  if (__builtin_add_overflow(region.destination_offset_bytes(), length, &out_end) ||
      out_end > out_bytes) {
    return std::unexpected(error(ErrorKind::kReadbackDestinationOutOfBounds,
                                 "reference readback destination exceeds its host layout"));
  }
  // Upstream synchronizes here, before the remaining (internal) checks.
  if (auto synced = synchronize(stream); !synced) return std::unexpected(synced.error());
  auto src_region = src->region(region.source_offset_bytes(), src_end);
  if (!src_region) return std::unexpected(src_region.error());
  const auto out_size = to_size(out_bytes);
  if (!out_size) {
    return std::unexpected(
        error(ErrorKind::kReadbackInternal, "reference readback output exceeds usize"));
  }
  const auto out_offset = to_size(region.destination_offset_bytes());
  if (!out_offset) {
    return std::unexpected(
        error(ErrorKind::kReadbackInternal, "reference readback offset exceeds usize"));
  }
  const auto out_end_size = to_size(out_end);
  if (!out_end_size) {
    return std::unexpected(
        error(ErrorKind::kReadbackInternal, "reference readback end exceeds usize"));
  }
  const auto bytes = src_region->read();
  if (bytes.size() != *out_end_size - *out_offset) {
    return std::unexpected(error(ErrorKind::kReadbackInternal,
                                 "reference readback source and destination lengths differ"));
  }
  std::vector<std::uint8_t> output(*out_size, 0);
  std::copy(bytes.begin(), bytes.end(), output.begin() + static_cast<std::ptrdiff_t>(*out_offset));
  bump(state_->counters->readback_bytes, length);
  return output;
}

VNextResult<DeviceErrorReport> ReferenceRuntime::describe_error(const RuntimeError& err) const {
  return DeviceErrorReport::create(std::string(kReferenceRuntimeErrorCode), err.message(), false);
}

std::optional<SubmissionAttribution> ReferenceRuntime::submission_attribution(
    const Fence& fence) const {
  const auto* own = state_->own_fence(fence);
  if (own == nullptr) return std::nullopt;
  return own->attribution;
}

}  // namespace vtrace::runtime::reference
