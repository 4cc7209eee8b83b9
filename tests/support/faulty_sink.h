// FaultySink: an in-memory ByteSink that fails on purpose, for the fault-injection tests. One
// FaultPlan per sink: the Nth write fails (nothing of it written), the Nth write is short (half
// of it written, then an error), the Nth flush fails, commit fails, or the sink holds only a byte
// budget and then fails like a full disk (ENOSPC: what fits is written, the rest refused). The
// bytes written so far and the call counts stay readable (State) after the sink is gone.
// Header-only.
//
// Errors: TraceErrorKind::kIo, "cannot write memory.vtrace: injected fault at write 3:
//   Input/output error"; the budget's "cannot write memory.vtrace: No space left on device
//   (byte budget of 4096 bytes)".
// Thread rules: the trace writer's thread calls it; State is guarded by its mutex.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "vtrace/schema/byte_io.h"

namespace vtrace::test {

struct FaultPlan {
  enum class Kind { kNone, kFailWrite, kShortWrite, kFailFlush, kFailCommit, kByteBudget };
  Kind kind = Kind::kNone;
  std::uint64_t nth = 0;     // kFailWrite, kShortWrite, kFailFlush: the failing call, from 1
  std::uint64_t budget = 0;  // kByteBudget: bytes the "disk" holds

  std::string describe() const {
    switch (kind) {
      case Kind::kNone:
        return "no fault";
      case Kind::kFailWrite:
        return fmt::format("write {} fails", nth);
      case Kind::kShortWrite:
        return fmt::format("write {} is short", nth);
      case Kind::kFailFlush:
        return fmt::format("flush {} fails", nth);
      case Kind::kFailCommit:
        return "commit fails";
      case Kind::kByteBudget:
        return fmt::format("the disk is full after {} bytes", budget);
    }
    return "?";
  }
};

class FaultySink final : public schema::ByteSink {
 public:
  struct State {
    mutable std::mutex mu;
    std::vector<std::uint8_t> bytes;
    std::vector<std::uint64_t> write_sizes;  // every write() call's size, failed ones included
    std::uint64_t flushes = 0;
    std::uint64_t commits = 0;
    bool injected = false;  // the fault happened
    std::vector<std::uint8_t> copy() const {
      std::lock_guard lock(mu);
      return bytes;
    }
  };

  FaultySink(std::shared_ptr<State> state, FaultPlan plan)
      : state_(std::move(state)), plan_(plan) {}

  schema::TraceResult<void> write(std::span<const std::uint8_t> data) override {
    std::lock_guard lock(state_->mu);
    auto& s = *state_;
    s.write_sizes.push_back(data.size());
    const std::uint64_t n = s.write_sizes.size();
    if (plan_.kind == FaultPlan::Kind::kFailWrite && n == plan_.nth) {
      return fail_locked(fmt::format("injected fault at write {}: {}", n, std::strerror(EIO)));
    }
    if (plan_.kind == FaultPlan::Kind::kShortWrite && n == plan_.nth) {
      const auto half = data.first(data.size() / 2);
      s.bytes.insert(s.bytes.end(), half.begin(), half.end());
      return fail_locked(fmt::format("injected short write at write {} ({} of {} bytes): {}", n,
                                     data.size() / 2, data.size(), std::strerror(EIO)));
    }
    if (plan_.kind == FaultPlan::Kind::kByteBudget && s.bytes.size() + data.size() > plan_.budget) {
      const std::size_t fits = plan_.budget - std::min<std::uint64_t>(plan_.budget, s.bytes.size());
      const auto part = data.first(fits);
      s.bytes.insert(s.bytes.end(), part.begin(), part.end());
      return fail_locked(
          fmt::format("{} (byte budget of {} bytes)", std::strerror(ENOSPC), plan_.budget));
    }
    s.bytes.insert(s.bytes.end(), data.begin(), data.end());
    return {};
  }
  schema::TraceResult<void> flush() override {
    std::lock_guard lock(state_->mu);
    const std::uint64_t n = ++state_->flushes;
    if (plan_.kind == FaultPlan::Kind::kFailFlush && n == plan_.nth) {
      state_->injected = true;
      return std::unexpected(
          schema::TraceError{schema::TraceErrorKind::kIo,
                             fmt::format("cannot flush {}: injected fault at flush {}: {}",
                                         describe(), n, std::strerror(EIO))});
    }
    return {};
  }
  schema::TraceResult<void> commit() override {
    std::lock_guard lock(state_->mu);
    ++state_->commits;
    if (plan_.kind == FaultPlan::Kind::kFailCommit) {
      state_->injected = true;
      return std::unexpected(schema::TraceError{
          schema::TraceErrorKind::kIo,
          fmt::format("cannot rename {}.partial to {}: injected fault at commit: {}", describe(),
                      describe(), std::strerror(EACCES))});
    }
    return {};
  }
  std::uint64_t bytes_written() const override {
    std::lock_guard lock(state_->mu);
    return state_->bytes.size();
  }
  std::string describe() const override { return "memory.vtrace"; }

 private:
  schema::TraceResult<void> fail_locked(const std::string& why) {
    state_->injected = true;
    return std::unexpected(schema::TraceError{schema::TraceErrorKind::kIo,
                                              fmt::format("cannot write {}: {}", describe(), why)});
  }
  std::shared_ptr<State> state_;
  FaultPlan plan_;
};

}  // namespace vtrace::test
