// Allocation goes through admission (spec 2.8, simplified for a C++ caller without core).
//
// A ResourceTransaction is a device's admission authority: it checks each BufferRequest against
// the device's remaining capacity (total_memory_bytes minus what live admitted buffers hold) and
// hands out a one-shot AllocationPermit. Nobody but a ResourceTransaction can construct a permit,
// and a runtime allocates only against one: DeviceRuntime::allocate takes a permit, not a request.
//
// Capacity comes back when the storage dies: the permit carries a reservation token that the
// runtime keeps alive in the buffer's storage (like upstream's DeviceBufferRetention), so bytes
// return to the transaction only when the buffer and every command that references it are gone.
//
// Thread rules: ResourceTransaction is thread-safe (atomic ledger). A permit is a move-only
//   value; using it twice is an error, not undefined behaviour.
// Errors: admit() fails with kAdmissionOverCapacity ("... needs N bytes but M of T remain")
//   and changes nothing.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

#include "vtrace/runtime/error.h"
#include "vtrace/runtime/types.h"

namespace vtrace::runtime {

// Opaque token a runtime stores with the storage it allocates. Dropping the last copy returns
// the admitted bytes to the transaction that issued it.
using ReservationToken = std::shared_ptr<const void>;

class AllocationPermit {
 public:
  AllocationPermit(AllocationPermit&& other) noexcept;
  AllocationPermit& operator=(AllocationPermit&& other) noexcept;
  AllocationPermit(const AllocationPermit&) = delete;
  AllocationPermit& operator=(const AllocationPermit&) = delete;
  ~AllocationPermit();

  // The admitted request; valid until consumed.
  const BufferRequest& request() const { return *request_; }
  // Reservation generation: a per-transaction sequence number, never 0.
  std::uint64_t generation() const { return generation_; }
  bool consumed() const { return !request_.has_value(); }
  // The admission that issued this permit (an identity, never dereferenced).
  const void* issuer() const { return issuer_; }

  // Consumes the permit: returns the request and the reservation token the runtime must keep
  // alive as long as the storage lives. Fails with kAdmissionInvalidRequest on a consumed permit.
  Result<std::pair<BufferRequest, ReservationToken>> into_parts();

 private:
  friend class ResourceTransaction;
  AllocationPermit(BufferRequest request, std::uint64_t generation, ReservationToken token,
                   const void* issuer);
  std::optional<BufferRequest> request_;
  std::uint64_t generation_ = 0;
  const void* issuer_ = nullptr;
  ReservationToken token_;
};

class ResourceTransaction {
 public:
  explicit ResourceTransaction(std::uint64_t capacity_bytes);
  ResourceTransaction(const ResourceTransaction&) = delete;
  ResourceTransaction& operator=(const ResourceTransaction&) = delete;

  // Admits one request against the remaining capacity. On failure nothing is reserved.
  Result<AllocationPermit> admit(const BufferRequest& request);

  // Whether `permit` came from this transaction (a permit is usable only with the runtime whose
  // admission issued it).
  bool issued(const AllocationPermit& permit) const;

  std::uint64_t capacity_bytes() const;
  std::uint64_t reserved_bytes() const;  // held by live permits and live storage

 private:
  struct Ledger;
  std::shared_ptr<Ledger> ledger_;
};

}  // namespace vtrace::runtime
