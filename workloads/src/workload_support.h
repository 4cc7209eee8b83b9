// Helpers shared by the workloads: seeded randomness, error sentences, the observation log behind
// WorkloadReport, and a scoped temporary directory. (Allocation, one-batch submits and f16 packing
// are the public vtrace/runtime/immediate.h and f16.h, which products use too.)
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vtrace/runtime/device_runtime.h"
#include "vtrace/workloads/workload.h"

namespace vtrace::workloads::detail {

// SplitMix64: tiny, seedable, and identical on every platform (std distributions are not).
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next();
  // Uniform in [0, bound); bound > 0.
  std::uint64_t below(std::uint64_t bound) { return next() % bound; }
  // Uniform in [-amplitude, amplitude), 24 random bits.
  float symmetric(float amplitude);

 private:
  std::uint64_t state_;
};

// "what failed: kind (message)".
std::string describe(std::string_view what, const runtime::RuntimeError& error);
WorkloadError fail(std::string message);
WorkloadError fail(std::string_view what, const runtime::RuntimeError& error);

// Collects what a workload observed into a WorkloadReport.
class Observations {
 public:
  explicit Observations(std::string workload);
  ~Observations();
  Observations(const Observations&) = delete;
  Observations& operator=(const Observations&) = delete;

  void readback(std::span<const std::uint8_t> bytes);
  void submitted() { ++report_.submissions; }
  void expected_error(runtime::ErrorKind kind);
  void counters_checked() { ++report_.counter_checks; }
  WorkloadReport finish(const runtime::DeviceRuntime& rt);

 private:
  WorkloadReport report_;
  std::set<runtime::ErrorKind> kinds_;
  void* hash_state_;  // XXH3_state_t, kept opaque so xxhash.h stays out of this header
};

// Compares two snapshots with the expected deltas; returns a sentence on mismatch.
struct CounterDelta {
  std::uint64_t allocations = 0;
  std::int64_t live_allocations = 0;
  std::uint64_t submissions = 0;
  std::uint64_t commands = 0;
  std::uint64_t uploaded_bytes = 0;
  std::uint64_t dense_linear_launches = 0;
  std::uint64_t readback_bytes = 0;
};
std::optional<std::string> check_counter_delta(const runtime::CounterSnapshot& before,
                                               const runtime::CounterSnapshot& after,
                                               const CounterDelta& expected);

// A fresh directory under the system temp dir, removed (with its contents) on destruction.
class TempDir {
 public:
  static WorkloadResult<TempDir> create(std::string_view stem);
  TempDir(TempDir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  TempDir& operator=(TempDir&&) = delete;
  TempDir(const TempDir&) = delete;
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }

 private:
  explicit TempDir(std::filesystem::path path) : path_(std::move(path)) {}
  std::filesystem::path path_;
};

}  // namespace vtrace::workloads::detail
