#include "vtrace/runtime/admission.h"

#include <string>

namespace vtrace::runtime {

// The ledger outlives the transaction while any token refers to it, so releasing storage after
// the transaction is gone is still safe.
struct ResourceTransaction::Ledger {
  explicit Ledger(std::uint64_t capacity) : capacity_bytes(capacity) {}
  const std::uint64_t capacity_bytes;
  std::atomic<std::uint64_t> reserved_bytes{0};
  std::atomic<std::uint64_t> next_generation{1};
};

AllocationPermit::AllocationPermit(BufferRequest request, std::uint64_t generation,
                                   ReservationToken token, const void* issuer)
    : request_(std::move(request)),
      generation_(generation),
      issuer_(issuer),
      token_(std::move(token)) {}

AllocationPermit::AllocationPermit(AllocationPermit&& other) noexcept
    : request_(std::move(other.request_)),
      generation_(other.generation_),
      issuer_(other.issuer_),
      token_(std::move(other.token_)) {
  other.request_.reset();
}

AllocationPermit& AllocationPermit::operator=(AllocationPermit&& other) noexcept {
  if (this != &other) {
    request_ = std::move(other.request_);
    other.request_.reset();
    generation_ = other.generation_;
    issuer_ = other.issuer_;
    token_ = std::move(other.token_);
  }
  return *this;
}

// An unconsumed permit returns its bytes when it dies: token_ is the last holder.
AllocationPermit::~AllocationPermit() = default;

Result<std::pair<BufferRequest, ReservationToken>> AllocationPermit::into_parts() {
  if (!request_.has_value()) {
    return std::unexpected(RuntimeError(ErrorKind::kAdmissionInvalidRequest,
                                        "allocation permit was already consumed"));
  }
  std::pair<BufferRequest, ReservationToken> parts{std::move(*request_), std::move(token_)};
  request_.reset();
  token_.reset();
  return parts;
}

ResourceTransaction::ResourceTransaction(std::uint64_t capacity_bytes)
    : ledger_(std::make_shared<Ledger>(capacity_bytes)) {}

Result<AllocationPermit> ResourceTransaction::admit(const BufferRequest& request) {
  const std::uint64_t needed = request.size_bytes();
  std::uint64_t reserved = ledger_->reserved_bytes.load(std::memory_order_relaxed);
  // Reserve with a compare-exchange so a failed admission never moves the ledger.
  for (;;) {
    const std::uint64_t remaining = ledger_->capacity_bytes - reserved;
    if (needed > remaining) {
      return std::unexpected(RuntimeError(
          ErrorKind::kAdmissionOverCapacity,
          "admission of `" + request.resource_id().str() + "` needs " + std::to_string(needed) +
              " bytes but " + std::to_string(remaining) + " of " +
              std::to_string(ledger_->capacity_bytes) + " remain"));
    }
    if (ledger_->reserved_bytes.compare_exchange_weak(reserved, reserved + needed,
                                                      std::memory_order_acq_rel,
                                                      std::memory_order_relaxed)) {
      break;
    }
  }
  const std::uint64_t generation =
      ledger_->next_generation.fetch_add(1, std::memory_order_relaxed);
  std::shared_ptr<Ledger> ledger = ledger_;
  ReservationToken token(static_cast<const void*>(ledger.get()),
                         [ledger, needed](const void*) {
                           ledger->reserved_bytes.fetch_sub(needed, std::memory_order_acq_rel);
                         });
  return AllocationPermit(request, generation, std::move(token), ledger_.get());
}

bool ResourceTransaction::issued(const AllocationPermit& permit) const {
  return permit.issuer() == ledger_.get();
}

std::uint64_t ResourceTransaction::capacity_bytes() const { return ledger_->capacity_bytes; }

std::uint64_t ResourceTransaction::reserved_bytes() const {
  return ledger_->reserved_bytes.load(std::memory_order_acquire);
}

}  // namespace vtrace::runtime
