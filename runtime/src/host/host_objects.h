// Private to the host runtimes: the objects HostRuntime hands out and executes (spec 7.1):
// storage shared by buffers and command regions, the regions themselves, the locks a command
// takes, buffers, streams, fences and the validated commands. host_runtime.cpp holds the runtime's
// methods; this file holds what they work on, so each stays readable.
//
// Thread rules: a Storage's bytes are touched only under its mutex (StorageLocks); counters are
// relaxed atomics; UploadPool is thread-safe. Ownership: see each type.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string_view>
#include <variant>
#include <vector>

#include "vtrace/runtime/contract.h"
#include "vtrace/runtime/host/host_runtime.h"
#include "vtrace/runtime/runtime_command.h"

namespace vtrace::runtime::host::objects {

using contract::bump;
using contract::error;
using contract::RuntimeCounters;

inline std::optional<std::size_t> to_size(std::uint64_t value) {
  if constexpr (sizeof(std::size_t) < sizeof(std::uint64_t)) {
    if (value > std::numeric_limits<std::size_t>::max()) return std::nullopt;
  }
  return static_cast<std::size_t>(value);
}

// One allocation. Shared by the buffer handle and every command region that refers to it; the
// last holder's release decrements live_allocations and returns the admitted bytes.
class Storage {
 public:
  Storage(std::unique_ptr<std::uint8_t[]> bytes, std::size_t logical_offset,
          std::shared_ptr<RuntimeCounters> counters, ReservationToken reservation)
      : bytes_(std::move(bytes)),
        logical_offset_(logical_offset),
        counters_(std::move(counters)),
        reservation_(std::move(reservation)) {}
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  ~Storage() { counters_->live_allocations.fetch_sub(1, std::memory_order_relaxed); }

  std::size_t logical_offset() const { return logical_offset_; }
  const std::uint8_t* base() const { return bytes_.get(); }
  // Physical bytes; only while mutex() is held.
  std::uint8_t* bytes() { return bytes_.get(); }
  std::mutex& mutex() const { return mutex_; }

 private:
  mutable std::mutex mutex_;
  std::unique_ptr<std::uint8_t[]> bytes_;
  std::size_t logical_offset_;
  std::shared_ptr<RuntimeCounters> counters_;
  ReservationToken reservation_;
};

// A physical byte range of one storage, as a command holds it.
struct Region {
  std::shared_ptr<Storage> storage;
  std::uint64_t runtime_instance = 0;
  std::size_t offset_bytes = 0;  // physical: logical offset of the storage plus the range start
  std::size_t length_bytes = 0;
  ElementType element_type = ElementType::kU8;

  std::uint8_t* data() const { return storage->bytes() + offset_bytes; }
  bool overlaps(const Region& other) const {
    return storage == other.storage && offset_bytes < other.offset_bytes + other.length_bytes &&
           other.offset_bytes < offset_bytes + length_bytes;
  }
};

// Locks the distinct storages of up to three regions in address order (no deadlock between
// commands touching the same storages in another order).
class StorageLocks {
 public:
  explicit StorageLocks(std::initializer_list<const Region*> regions) {
    for (const Region* region : regions) {
      if (count_ == mutexes_.size()) break;  // at most three regions per command
      std::mutex* m = &region->storage->mutex();
      // Insert in address order, skipping a storage already held (a plain insertion: std::sort
      // on three elements trips GCC 12's -Warray-bounds at -O3).
      std::size_t at = 0;
      while (at < count_ && std::less<std::mutex*>()(mutexes_[at], m)) ++at;
      if (at < count_ && mutexes_[at] == m) continue;
      for (std::size_t i = count_; i > at; --i) mutexes_[i] = mutexes_[i - 1];
      mutexes_[at] = m;
      ++count_;
    }
    for (std::size_t i = 0; i < count_; ++i) mutexes_[i]->lock();
  }
  ~StorageLocks() {
    for (std::size_t i = count_; i > 0; --i) mutexes_[i - 1]->unlock();
  }
  StorageLocks(const StorageLocks&) = delete;
  StorageLocks& operator=(const StorageLocks&) = delete;

 private:
  std::array<std::mutex*, 3> mutexes_{};
  std::size_t count_ = 0;
};

class HostBuffer final : public Buffer {
 public:
  HostBuffer(BufferDescriptor descriptor, std::uint64_t runtime_instance,
             std::shared_ptr<Storage> storage)
      : descriptor_(std::move(descriptor)),
        runtime_instance_(runtime_instance),
        storage_(std::move(storage)) {}
  const BufferDescriptor& descriptor() const { return descriptor_; }
  std::uint64_t runtime_instance() const { return runtime_instance_; }
  const Storage* storage() const { return storage_.get(); }
  std::uintptr_t logical_address() const {
    return reinterpret_cast<std::uintptr_t>(storage_->base() + storage_->logical_offset());
  }

  // The physical region of a range the contract has validated.
  Result<Region> region(std::string_view rt, const contract::ByteRange& range) const {
    const auto offset = to_size(range.offset_bytes);
    if (!offset) {
      return std::unexpected(
          error(ErrorKind::kRegionOutOfBounds, rt, "buffer offset exceeds usize"));
    }
    std::size_t physical = 0;
    if (__builtin_add_overflow(*offset, storage_->logical_offset(), &physical)) {
      return std::unexpected(
          error(ErrorKind::kRegionOutOfBounds, rt, "buffer physical offset overflows usize"));
    }
    const auto length = to_size(range.length_bytes);
    if (!length) {
      return std::unexpected(
          error(ErrorKind::kRegionOutOfBounds, rt, "buffer length exceeds usize"));
    }
    return Region{storage_, runtime_instance_, physical, *length, descriptor_.element_type};
  }

 private:
  BufferDescriptor descriptor_;
  std::uint64_t runtime_instance_;
  std::shared_ptr<Storage> storage_;
};

class HostStream final : public Stream {
 public:
  HostStream(std::uint64_t runtime, std::uint64_t stream)
      : runtime_instance(runtime), stream_instance(stream) {}
  const std::uint64_t runtime_instance;
  const std::uint64_t stream_instance;
  StreamState state = StreamState::kReady;
};

class HostFence final : public Fence {
 public:
  HostFence(std::uint64_t runtime, std::uint64_t fence, std::optional<SubmissionAttribution> rows)
      : runtime_instance(runtime), fence_instance(fence), attribution(std::move(rows)) {}
  const std::uint64_t runtime_instance;
  const std::uint64_t fence_instance;
  const std::optional<SubmissionAttribution> attribution;
};

using CopyKind = contract::CopyKind<Region>;
using ZeroKind = contract::ZeroKind<Region>;
using DenseLaunch = contract::DenseLaunch<Region>;
using DenseLinearKind = contract::DenseLinearKind<Region>;

// Host buffers of commands that died, kept for the next uploads' encode-time copies so that a
// steady stream of large uploads copies into warm memory instead of faulting in fresh pages.
// Bounded: at most kMaxSpare buffers and kMaxSpareBytes in all.
class UploadPool {
 public:
  // The smallest spare buffer whose capacity holds `size` bytes (contents unspecified), or an
  // empty vector when none does.
  std::vector<std::uint8_t> take(std::size_t size) {
    std::vector<std::uint8_t> bytes;
    std::lock_guard lock(mutex_);
    auto best = spare_.end();
    for (auto it = spare_.begin(); it != spare_.end(); ++it) {
      if (it->capacity() >= size && (best == spare_.end() || it->capacity() < best->capacity())) {
        best = it;
      }
    }
    if (best != spare_.end()) {
      spare_bytes_ -= best->capacity();
      bytes = std::move(*best);
      spare_.erase(best);
    }
    return bytes;
  }
  void give_back(std::vector<std::uint8_t> bytes) {
    std::lock_guard lock(mutex_);
    if (spare_.size() >= kMaxSpare || spare_bytes_ + bytes.capacity() > kMaxSpareBytes) return;
    spare_bytes_ += bytes.capacity();
    spare_.push_back(std::move(bytes));
  }

 private:
  static constexpr std::size_t kMaxSpare = 8;
  static constexpr std::size_t kMaxSpareBytes = 256u << 20;
  std::mutex mutex_;
  std::vector<std::vector<std::uint8_t>> spare_;
  std::size_t spare_bytes_ = 0;
};

struct UploadKind {
  UploadKind(std::shared_ptr<UploadPool> from, std::vector<std::uint8_t> copy, Region dst)
      : pool(std::move(from)), bytes(std::move(copy)), destination(std::move(dst)) {}
  UploadKind(UploadKind&&) = default;
  UploadKind& operator=(UploadKind&&) = default;
  ~UploadKind() {
    if (pool) pool->give_back(std::move(bytes));
  }
  std::shared_ptr<UploadPool> pool;
  std::vector<std::uint8_t> bytes;
  Region destination;
};
// A fully validated command that owns its data and keeps every storage it touches alive.
using HostCommand = contract::RuntimeCommand<Region, UploadKind>;

}  // namespace vtrace::runtime::host::objects
