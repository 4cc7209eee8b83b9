// The host-memory runtime core (spec 7, 8.5, 9) shared by reference, cpu and cpu-splitk.
//
// Spec points decided differently from upstream, and why:
//  - Fence identity exhaustion (7.4 step 11) does not panic: the fence instance is taken after
//    every validation step but before execution, and exhaustion returns DefinitelyNotSubmitted
//    with kIdentityExhausted ("<label> fence identity exhausted"). Taking it before execution
//    keeps the DNS promise true (nothing ran, no counter moved). Consequence: a fence instance is
//    consumed only by a submit that then succeeds, as upstream.
//  - Dense linear takes explicit launches (open question 15.2) instead of core invocations; the
//    launch rules are contract::check_dense_linear.
//  - Handles of another class are foreign: an encoder given a buffer of another class fails with
//    kForeignBufferInCommand; submit given a command of another class fails with kForeignCommand
//    (checked while walking entries, step 5); a stream or fence of another class is treated like
//    one of another runtime. buffer_descriptor() of such a buffer returns a default descriptor
//    (the interface has no error channel there). Buffers, streams and fences of another host
//    runtime (another instance, or another of reference/cpu/cpu-splitk) are foreign too.
//  - Dense-linear NaN outputs (open question 15.3): any output whose f32 accumulator is NaN is
//    written as 0x7E00 by every kernel, so NaN bits never depend on which operand the FPU
//    propagated.
//  - allocate() of a consumed permit fails with kAdmissionInvalidRequest, of a permit issued by
//    another runtime's admission with kAdmissionForeignPermit; a host allocation failure fails
//    with kAllocationInvalid "<label> allocation failed" instead of aborting.
//  - Execution cannot fail halfway: before the first command of a batch runs, submit gets all
//    the memory execution will need (a kernel's scratch, the staging of an aliased output); when
//    it cannot, the batch is DefinitelyNotSubmitted with kInternal "<label> cannot allocate ...;
//    nothing ran" (upstream would abort on the allocation).
//  - DeviceBufferRetention is not modelled: regions hold the storage (and through it the
//    admission reservation), which is all the port's retention does.
#include "vtrace/runtime/host/host_runtime.h"

#include <atomic>
#include <bit>
#include <cstring>
#include <limits>
#include <mutex>
#include <new>
#include <string>
#include <variant>

#include "host/host_objects.h"
#include "host/instance_counters.h"

namespace vtrace::runtime::host {

namespace {

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

}  // namespace

using namespace objects;  // the objects this runtime hands out (host_objects.h)

std::uint64_t detail::exchange_next_instance(InstanceCounter counter, std::uint64_t next) {
  std::atomic<std::uint64_t>& target = counter == InstanceCounter::kRuntime ? g_next_runtime_instance
                                       : counter == InstanceCounter::kStream
                                           ? g_next_stream_instance
                                           : g_next_fence_instance;
  return target.exchange(next, std::memory_order_relaxed);
}

struct HostRuntime::State {
  DeviceDescriptor descriptor;
  HostRuntimeConfig config;
  std::uint64_t instance = 0;
  // Shared with every storage, which may outlive the runtime only in misuse; even then the
  // decrement stays valid.
  std::shared_ptr<RuntimeCounters> counters = std::make_shared<RuntimeCounters>();
  // One submit executes at a time: the kernel and the staging buffer are not reentrant.
  std::mutex execute_mutex;
  // The output of a launch whose regions alias, grow-only (reserve() grows it).
  std::unique_ptr<std::uint8_t[]> staging;
  std::size_t staging_size = 0;
  // Shared with upload commands, which may outlive the runtime.
  std::shared_ptr<UploadPool> upload_pool = std::make_shared<UploadPool>();

  std::string_view rt() const { return config.label; }

  const HostBuffer* own_buffer(const Buffer& buffer) const {
    const auto* concrete = dynamic_cast<const HostBuffer*>(&buffer);
    return concrete != nullptr && concrete->runtime_instance() == instance ? concrete : nullptr;
  }
  HostStream* own_stream(Stream& stream) const {
    auto* concrete = dynamic_cast<HostStream*>(&stream);
    return concrete != nullptr && concrete->runtime_instance == instance ? concrete : nullptr;
  }
  const HostStream* own_stream(const Stream& stream) const {
    const auto* concrete = dynamic_cast<const HostStream*>(&stream);
    return concrete != nullptr && concrete->runtime_instance == instance ? concrete : nullptr;
  }
  const HostFence* own_fence(const Fence& fence) const {
    const auto* concrete = dynamic_cast<const HostFence*>(&fence);
    return concrete != nullptr && concrete->runtime_instance == instance ? concrete : nullptr;
  }
  // Encoders accept host buffers of any host runtime (submit then refuses other instances).
  Result<const HostBuffer*> host_buffer(const Buffer* buffer) const {
    const auto* concrete = dynamic_cast<const HostBuffer*>(buffer);
    if (concrete == nullptr) {
      return std::unexpected(error(ErrorKind::kForeignBufferInCommand, rt(),
                                   "command contains a buffer from another runtime"));
    }
    return concrete;
  }

  // "cannot allocate <what> of a RxKxN dense linear; nothing ran".
  static std::string fmt_refusal(std::string_view what, std::uint64_t rows, std::uint64_t in,
                                 std::uint64_t out) {
    return "cannot allocate " + std::string(what) + " of a " + std::to_string(rows) + "x" +
           std::to_string(in) + "x" + std::to_string(out) + " dense linear; nothing ran";
  }

  static bool aliased(const DenseLaunch& launch) {
    return launch.output.overlaps(launch.input) || launch.output.overlaps(launch.weight);
  }

  // Gets, before the first command of a batch runs, all the memory its commands will need (the
  // kernel's scratch, the staging of aliased outputs), so that execute() cannot fail halfway:
  // a batch runs whole or, when the memory cannot be had, not at all (DefinitelyNotSubmitted).
  // Called with execute_mutex held.
  std::optional<RuntimeError> reserve(const std::vector<contract::ContractCommand*>& commands) {
    for (const contract::ContractCommand* command : commands) {
      const auto* dense = std::get_if<DenseLinearKind>(&static_cast<const HostCommand&>(*command).kind);
      if (dense == nullptr) continue;
      for (const DenseLaunch& launch : dense->launches) {
        const auto& shape = launch.shape;
        // The sentence is built only on failure: this runs for every launch of every submit.
        const auto refused = [&](std::string_view what) {
          return error(ErrorKind::kInternal, rt(),
                       fmt_refusal(what, shape.rows, shape.in_features, shape.out_features));
        };
        if (aliased(launch) && staging_size < launch.output.length_bytes) {
          staging.reset(new (std::nothrow) std::uint8_t[launch.output.length_bytes]);
          staging_size = staging ? launch.output.length_bytes : 0;
          if (!staging) {
            return refused(std::to_string(launch.output.length_bytes) +
                           " bytes to stage the output");
          }
        }
        if (!config.kernel->reserve(shape)) return refused("the scratch memory");
      }
    }
    return std::nullopt;
  }

  void execute_dense_linear(const DenseLaunch& launch) {
    const auto& shape = launch.shape;
    StorageLocks locks{&launch.input, &launch.weight, &launch.output};
    if (!aliased(launch)) {
      config.kernel->run(launch.input.data(), launch.weight.data(), launch.output.data(), shape);
      return;
    }
    // Computes from the original operands, then writes the output in one piece.
    config.kernel->run(launch.input.data(), launch.weight.data(), staging.get(), shape);
    std::memcpy(launch.output.data(), staging.get(), launch.output.length_bytes);
  }

  void execute(const HostCommand& command) {
    std::visit(
        [this](const auto& k) {
          using K = std::decay_t<decltype(k)>;
          if constexpr (std::is_same_v<K, CopyKind>) {
            StorageLocks locks{&k.source, &k.destination};
            // memmove: overlapping copies behave as if the source were read completely first.
            std::memmove(k.destination.data(), k.source.data(), k.source.length_bytes);
          } else if constexpr (std::is_same_v<K, UploadKind>) {
            StorageLocks locks{&k.destination};
            std::memcpy(k.destination.data(), k.bytes.data(), k.bytes.size());
            bump(counters->uploaded_bytes, k.bytes.size());
          } else if constexpr (std::is_same_v<K, ZeroKind>) {
            StorageLocks locks{&k.destination};
            std::memset(k.destination.data(), 0, k.destination.length_bytes);
          } else {
            for (const auto& launch : k.launches) {
              execute_dense_linear(launch);
              bump(counters->dense_linear_launches);
            }
          }
        },
        command.kind);
  }
};

void HostRuntime::StateDeleter::operator()(State* state) const { delete state; }

Result<HostRuntime::StatePtr> HostRuntime::make_state(DeviceDescriptor descriptor,
                                                      HostRuntimeConfig config) {
  if (auto valid = contract::check_descriptor(config.label, descriptor, config.device_class,
                                              config.capabilities);
      !valid) {
    return std::unexpected(valid.error());
  }
  if (!config.kernel) {
    return std::unexpected(error(ErrorKind::kInternal, config.label, "runtime has no kernel"));
  }
  const auto instance = take_instance(g_next_runtime_instance);
  if (!instance) {
    return std::unexpected(
        error(ErrorKind::kIdentityExhausted, config.label, "runtime identity exhausted"));
  }
  StatePtr state(new State());
  state->descriptor = std::move(descriptor);
  state->config = std::move(config);
  state->instance = *instance;
  return state;
}

HostRuntime::HostRuntime(StatePtr state) : state_(std::move(state)) {}
HostRuntime::~HostRuntime() = default;

std::uint64_t HostRuntime::instance() const { return state_->instance; }

std::optional<std::uintptr_t> HostRuntime::logical_address(const Buffer& buffer) const {
  const HostBuffer* own = state_->own_buffer(buffer);
  if (own == nullptr) return std::nullopt;
  return own->logical_address();
}

CounterSnapshot HostRuntime::snapshot() const { return state_->counters->snapshot(); }

const DeviceDescriptor& HostRuntime::descriptor() const { return state_->descriptor; }

AttentionExecutionPolicy HostRuntime::attention_execution_policy() const {
  return AttentionExecutionPolicy::kPortable;
}

Result<BufferPtr> HostRuntime::allocate(AllocationPermit permit) {
  const std::string_view rt = state_->rt();
  auto parts = redeem(permit);
  if (!parts) return std::unexpected(parts.error());
  auto& [request, reservation] = *parts;

  const auto size = to_size(request.size_bytes());
  if (!size) {
    return std::unexpected(error(ErrorKind::kAllocationInvalid, rt, "allocation exceeds usize"));
  }
  const auto alignment = to_size(request.alignment_bytes());
  if (!alignment) {
    return std::unexpected(error(ErrorKind::kAllocationInvalid, rt, "alignment exceeds usize"));
  }
  if (*size == 0 || !std::has_single_bit(*alignment)) {
    return std::unexpected(
        error(ErrorKind::kAllocationInvalid, rt, "allocation size or alignment is invalid"));
  }
  std::size_t padded = 0;
  if (__builtin_add_overflow(*size, *alignment - 1, &padded)) {
    return std::unexpected(
        error(ErrorKind::kAllocationInvalid, rt, "aligned allocation size overflows"));
  }
  // nothrow so a huge request is an error, not abort. Not value-initialised: only the logical
  // range is zeroed below, so the alignment padding (admission counts size_bytes only, as
  // upstream) is never touched and costs address space, not memory.
  std::unique_ptr<std::uint8_t[]> bytes(new (std::nothrow) std::uint8_t[padded]);
  if (!bytes) {
    return std::unexpected(error(ErrorKind::kAllocationInvalid, rt, "allocation failed"));
  }
  const auto address = reinterpret_cast<std::uintptr_t>(bytes.get());
  std::uintptr_t aligned = 0;
  if (__builtin_add_overflow(address, *alignment - 1, &aligned)) {
    return std::unexpected(error(ErrorKind::kAllocationInvalid, rt, "aligned address overflows"));
  }
  aligned &= ~static_cast<std::uintptr_t>(*alignment - 1);
  if (aligned < address) {
    return std::unexpected(
        error(ErrorKind::kAllocationInvalid, rt, "aligned address precedes its allocation"));
  }
  const std::size_t logical_offset = aligned - address;
  if (logical_offset + *size > padded) {
    return std::unexpected(
        error(ErrorKind::kAllocationInvalid, rt, "aligned logical range exceeds its allocation"));
  }
  std::memset(bytes.get() + logical_offset, 0, *size);  // contents start as zeros

  bump(state_->counters->allocations);
  bump(state_->counters->live_allocations);
  auto storage = std::make_shared<Storage>(std::move(bytes), logical_offset, state_->counters,
                                           std::move(reservation));
  return std::make_unique<HostBuffer>(BufferDescriptor::from_request(request), state_->instance,
                                      std::move(storage));
}

BufferDescriptor HostRuntime::buffer_descriptor(const Buffer& buffer) const {
  const auto* concrete = dynamic_cast<const HostBuffer*>(&buffer);
  return concrete != nullptr ? concrete->descriptor() : BufferDescriptor{};
}

Result<StreamPtr> HostRuntime::create_stream() {
  const auto instance = take_instance(g_next_stream_instance);
  if (!instance) {
    return std::unexpected(
        error(ErrorKind::kIdentityExhausted, state_->rt(), "stream identity exhausted"));
  }
  return std::make_unique<HostStream>(state_->instance, *instance);
}

StreamState HostRuntime::stream_state(const Stream& stream) const {
  const auto* own = state_->own_stream(stream);
  return own != nullptr ? own->state : StreamState::kFailed;
}

Result<CommandPtr> HostRuntime::encode_copy(const Buffer& source, const Buffer& destination,
                                            const CopyRegion& region) {
  const std::string_view rt = state_->rt();
  auto src = state_->host_buffer(&source);
  if (!src) return std::unexpected(src.error());
  auto dst = state_->host_buffer(&destination);
  if (!dst) return std::unexpected(dst.error());
  auto ranges = contract::check_copy(rt, (*src)->descriptor(), (*dst)->descriptor(), region);
  if (!ranges) return std::unexpected(ranges.error());
  auto src_region = (*src)->region(rt, ranges->source);
  if (!src_region) return std::unexpected(src_region.error());
  auto dst_region = (*dst)->region(rt, ranges->destination);
  if (!dst_region) return std::unexpected(dst_region.error());
  return HostCommand::transfer(kDeviceCopyNativeOperationId,
                               CopyKind{std::move(*src_region), std::move(*dst_region)});
}

Result<CommandPtr> HostRuntime::encode_upload(std::span<const std::uint8_t> source,
                                              const HostTransferLayout& layout,
                                              const Buffer& destination,
                                              std::uint64_t destination_offset_bytes) {
  const std::string_view rt = state_->rt();
  auto dst = state_->host_buffer(&destination);
  if (!dst) return std::unexpected(dst.error());
  auto range = contract::check_upload(rt, source.size(), layout, (*dst)->descriptor(),
                                      destination_offset_bytes);
  if (!range) return std::unexpected(range.error());
  auto region = (*dst)->region(rt, *range);
  if (!region) return std::unexpected(region.error());
  // The host bytes are copied now, at encode time (into a spare buffer when one fits).
  std::vector<std::uint8_t> bytes = state_->upload_pool->take(source.size());
  if (auto copied = contract::copy_upload(rt, bytes, source); !copied) {
    return std::unexpected(copied.error());
  }
  return HostCommand::transfer(
      kHostUploadNativeOperationId,
      UploadKind(state_->upload_pool, std::move(bytes), std::move(*region)));
}

Result<CommandPtr> HostRuntime::encode_zero(const Buffer& destination,
                                            std::uint64_t destination_offset_bytes,
                                            std::uint64_t length_bytes) {
  const std::string_view rt = state_->rt();
  auto dst = state_->host_buffer(&destination);
  if (!dst) return std::unexpected(dst.error());
  auto range =
      contract::check_zero(rt, (*dst)->descriptor(), destination_offset_bytes, length_bytes);
  if (!range) return std::unexpected(range.error());
  auto region = (*dst)->region(rt, *range);
  if (!region) return std::unexpected(region.error());
  return HostCommand::transfer(kDeviceZeroNativeOperationId, ZeroKind{std::move(*region)});
}

Result<CommandPtr> HostRuntime::encode_dense_linear(const DenseLinearRequest& request) {
  const std::string_view rt = state_->rt();
  // The resolver keeps each region as it validates it: input, weight, output per launch.
  std::vector<Region> regions;
  regions.reserve(request.launches.size() * 3);
  const contract::RegionResolver resolve =
      [&](const BufferRegionRef& ref) -> Result<contract::ResolvedRegion> {
    auto buffer = state_->host_buffer(ref.buffer);
    if (!buffer) return std::unexpected(buffer.error());
    std::uint64_t end = 0;
    if (__builtin_add_overflow(ref.offset_bytes, ref.length_bytes, &end)) {
      return std::unexpected(error(ErrorKind::kRegionOutOfBounds, rt,
                                   "buffer region is empty or exceeds its admitted allocation"));
    }
    auto range = contract::check_region(rt, (*buffer)->descriptor(), ref.offset_bytes, end);
    if (!range) return std::unexpected(range.error());
    auto region = (*buffer)->region(rt, *range);
    if (!region) return std::unexpected(region.error());
    regions.push_back(std::move(*region));
    return contract::ResolvedRegion{(*buffer)->storage(), *range, regions.back().element_type};
  };
  auto plan = contract::check_dense_linear(rt, request, resolve);
  if (!plan) return std::unexpected(plan.error());

  return HostCommand::dense_linear(*plan, std::move(regions));
}

std::expected<FencePtr, DefinitelyNotSubmitted> HostRuntime::submit(Stream& stream,
                                                                    CommandBatch batch) {
  const std::string_view rt = state_->rt();
  HostStream* own_stream = state_->own_stream(stream);
  const std::uint64_t instance = state_->instance;
  const auto ownership = HostCommand::ownership(own_stream != nullptr, instance);
  auto plan = contract::check_submit(rt, std::move(batch), ownership);
  if (!plan) return std::unexpected(std::move(plan.error()));

  std::optional<std::uint64_t> fence_instance;
  {
    std::lock_guard lock(state_->execute_mutex);
    // The memory execution needs (see the top of this file), then
    // 11 (moved before execution, see the top of this file): the fence identity.
    if (auto refused = state_->reserve(plan->commands)) {
      return std::unexpected(DefinitelyNotSubmitted(std::move(*refused)));
    }
    fence_instance = take_instance(g_next_fence_instance);
    if (!fence_instance) {
      return std::unexpected(DefinitelyNotSubmitted(
          error(ErrorKind::kIdentityExhausted, rt, "fence identity exhausted")));
    }
    // 8. execute in order, synchronously
    for (const contract::ContractCommand* command : plan->commands) {
      state_->execute(static_cast<const HostCommand&>(*command));
    }
  }
  // 9, 10
  bump(state_->counters->submissions);
  bump(state_->counters->commands, plan->entries.size());
  own_stream->state = StreamState::kSubmitted;
  return std::make_unique<HostFence>(instance, *fence_instance, std::move(plan->attribution));
}

FenceQuery HostRuntime::query_fence(const Fence& fence) const {
  if (state_->own_fence(fence) == nullptr) {
    return error(ErrorKind::kForeignFence, state_->rt(), "fence belongs to another runtime");
  }
  // Execution already happened inside submit: never Pending.
  return TerminalReceipt::unprofiled(DeviceTerminal{});
}

std::expected<TerminalReceipt, FenceIndeterminate> HostRuntime::wait_fence(const Fence& fence) {
  if (state_->own_fence(fence) == nullptr) {
    return std::unexpected(FenceIndeterminate(
        error(ErrorKind::kForeignFence, state_->rt(), "fence belongs to another runtime")));
  }
  return TerminalReceipt::unprofiled(DeviceTerminal{});
}

Result<void> HostRuntime::synchronize(Stream& stream) {
  auto* own = state_->own_stream(stream);
  if (own == nullptr) {
    return std::unexpected(
        error(ErrorKind::kForeignStream, state_->rt(), "stream belongs to another runtime"));
  }
  own->state = StreamState::kReady;
  return {};
}

Result<std::vector<std::uint8_t>> HostRuntime::readback(Stream& stream, const Buffer& source,
                                                        const CopyRegion& region,
                                                        const HostTransferLayout& output_layout) {
  const std::string_view rt = state_->rt();
  const HostBuffer* src = state_->own_buffer(source);
  const bool own = state_->own_stream(stream) != nullptr && src != nullptr;
  auto plan = contract::check_readback(rt, own, own ? src->descriptor() : BufferDescriptor{},
                                       region, output_layout);
  if (!plan) return std::unexpected(plan.error());
  // Upstream synchronizes here, before the remaining (internal) checks.
  if (auto synced = synchronize(stream); !synced) return std::unexpected(synced.error());
  auto src_region = src->region(rt, plan->source);
  if (!src_region) return std::unexpected(src_region.error());
  const auto out_size = to_size(plan->output_bytes);
  if (!out_size) {
    return std::unexpected(
        error(ErrorKind::kReadbackInternal, rt, "readback output exceeds usize"));
  }
  const auto out_offset = to_size(plan->output_offset);
  if (!out_offset) {
    return std::unexpected(
        error(ErrorKind::kReadbackInternal, rt, "readback offset exceeds usize"));
  }
  std::vector<std::uint8_t> output;
  if (auto reserved = contract::reserve_readback(rt, output, *out_size); !reserved) {
    return std::unexpected(reserved.error());
  }
  {
    StorageLocks locks{&*src_region};
    const std::uint8_t* bytes = src_region->data();
    if (*out_offset == 0 && src_region->length_bytes == *out_size) {
      output.assign(bytes, bytes + *out_size);  // the common case: one copy, no zero fill
    } else {
      output.assign(*out_size, 0);
      std::memcpy(output.data() + *out_offset, bytes, src_region->length_bytes);
    }
  }
  bump(state_->counters->readback_bytes, plan->source.length_bytes);
  return output;
}

VNextResult<DeviceErrorReport> HostRuntime::describe_error(const RuntimeError& err) const {
  return DeviceErrorReport::create(state_->config.error_code, err.message(), false);
}

std::optional<SubmissionAttribution> HostRuntime::submission_attribution(
    const Fence& fence) const {
  const auto* own = state_->own_fence(fence);
  if (own == nullptr) return std::nullopt;
  return own->attribution;
}

}  // namespace vtrace::runtime::host
