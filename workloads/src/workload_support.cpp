#include "workload_support.h"

#include <fmt/format.h>
#include <unistd.h>
#include <xxhash.h>

#include <atomic>
#include <system_error>

namespace vtrace::workloads::detail {

namespace rt = vtrace::runtime;

std::uint64_t SplitMix64::next() {
  std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

float SplitMix64::symmetric(float amplitude) {
  // 24 bits give every value an exact float; scaling by a power of two keeps it exact.
  const auto bits = static_cast<float>(next() >> 40);
  const float unit = bits * 0x1.0p-23f - 1.0f;  // [-1, 1)
  return unit * amplitude;
}

std::string describe(std::string_view what, const rt::RuntimeError& error) {
  return fmt::format("{} failed: {} ({})", what, rt::error_kind_name(error.kind()), error.message());
}

WorkloadError fail(std::string message) { return WorkloadError{std::move(message)}; }

WorkloadError fail(std::string_view what, const rt::RuntimeError& error) {
  return WorkloadError{describe(what, error)};
}

Observations::Observations(std::string workload) : hash_state_(XXH3_createState()) {
  report_.workload = std::move(workload);
  XXH3_64bits_reset(static_cast<XXH3_state_t*>(hash_state_));
}

Observations::~Observations() { XXH3_freeState(static_cast<XXH3_state_t*>(hash_state_)); }

void Observations::readback(std::span<const std::uint8_t> bytes) {
  ++report_.readbacks;
  report_.readback_bytes += bytes.size();
  XXH3_64bits_update(static_cast<XXH3_state_t*>(hash_state_), bytes.data(), bytes.size());
  report_.last_readback.assign(bytes.begin(), bytes.end());
}

void Observations::expected_error(rt::ErrorKind kind) {
  ++report_.expected_errors;
  kinds_.insert(kind);
}

WorkloadReport Observations::finish(const rt::DeviceRuntime& runtime) {
  report_.readback_digest = XXH3_64bits_digest(static_cast<XXH3_state_t*>(hash_state_));
  report_.error_kinds.assign(kinds_.begin(), kinds_.end());
  report_.final_counters = runtime.counter_snapshot();
  return report_;
}

std::optional<std::string> check_counter_delta(const rt::CounterSnapshot& before,
                                               const rt::CounterSnapshot& after,
                                               const CounterDelta& expected) {
  std::string wrong;
  auto check = [&](std::string_view name, std::uint64_t b, std::uint64_t a, std::int64_t delta) {
    const auto want = static_cast<std::uint64_t>(static_cast<std::int64_t>(b) + delta);
    if (a != want) {
      wrong += fmt::format("{}{} is {} but {} + {} = {} was expected", wrong.empty() ? "" : "; ",
                           name, a, b, delta, want);
    }
  };
  auto s = [](std::uint64_t v) { return static_cast<std::int64_t>(v); };
  check("allocations", before.allocations, after.allocations, s(expected.allocations));
  check("live_allocations", before.live_allocations, after.live_allocations,
        expected.live_allocations);
  check("submissions", before.submissions, after.submissions, s(expected.submissions));
  check("commands", before.commands, after.commands, s(expected.commands));
  check("uploaded_bytes", before.uploaded_bytes, after.uploaded_bytes,
        s(expected.uploaded_bytes));
  check("dense_linear_launches", before.dense_linear_launches, after.dense_linear_launches,
        s(expected.dense_linear_launches));
  check("readback_bytes", before.readback_bytes, after.readback_bytes,
        s(expected.readback_bytes));
  if (wrong.empty()) return std::nullopt;
  return wrong;
}

WorkloadResult<TempDir> TempDir::create(std::string_view stem) {
  static std::atomic<std::uint64_t> sequence{0};
  std::error_code ec;
  auto base = std::filesystem::temp_directory_path(ec);
  if (ec) return std::unexpected(fail("no temporary directory: " + ec.message()));
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto path = base / fmt::format("{}-{}-{}", stem, ::getpid(), sequence.fetch_add(1));
    if (std::filesystem::create_directory(path, ec)) return TempDir(std::move(path));
    if (ec) return std::unexpected(fail(fmt::format("{}: {}", path.string(), ec.message())));
  }
  return std::unexpected(fail("could not create a fresh temporary directory"));
}

TempDir::~TempDir() {
  if (path_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);  // best effort: a leftover temp dir is harmless
}

}  // namespace vtrace::workloads::detail
