// The DeviceRuntime conformance suite (one suite, instantiated per registered runtime, in the
// shape of IREE's hal/cts).
//
// Which runtime is under test: the environment variable VTRACE_CONFORMANCE_RUNTIME names a
//   runtime of vtrace::runtime::default_registry(). tests/runtime/CMakeLists.txt registers every
//   TEST_CASE once per runtime of VTRACE_CONFORMANCE_RUNTIMES, prefixed "<name>: ". A missing or
//   unknown name fails the test with a sentence naming it; a runtime whose open() answers
//   kRuntimeUnavailable (a GPU runtime on a machine without the GPU) makes the test skipped.
// Traits: the suite knows, per runtime name, what may differ between conforming runtimes
//   (bit-exactness, the expected-output model, whether fences are always terminal at once,
//   whether the reference's exact messages apply). A registered runtime without traits fails.
// Helpers fail the running test (REQUIRE) on unexpected errors; tests compare ErrorKinds.
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime_test_support.h"
#include "support/test_support.h"
#include "vtrace/runtime/device_runtime.h"
#include "vtrace/runtime/registry.h"

namespace vtrace::conformance {

namespace rt = vtrace::runtime;

// Expected dense-linear output bytes for one launch (inputs as little-endian f16 bytes).
using DenseModel = std::vector<std::uint8_t> (*)(std::span<const std::uint8_t> input,
                                                 std::span<const std::uint8_t> weight,
                                                 std::size_t rows, std::size_t in_features,
                                                 std::size_t out_features);

struct RuntimeTraits {
  std::string_view name;
  // Dense-linear outputs equal the reference runtime's bit for bit.
  bool bit_exact = false;
  // The expected output of every launch (reference_model for bit-exact runtimes).
  DenseModel model = nullptr;
  // Execution happens inside submit: query_fence never answers Pending (spec 7.3, reference).
  bool fences_terminal_at_submit = false;
  // Execution goes on after submit returns (a GPU runtime): query_fence answers Pending while a
  // long batch runs. The host runtimes run every batch inside submit.
  bool runs_after_submit = false;
  // Error messages, device-report code and admission texts are the reference's (spec 7.7).
  bool reference_messages = false;
  // Dense-linear outputs are only close to the model's (cuda-cublas: cuBLAS's summation order is
  // its own and undocumented): checked with wrong_elements' tolerance, not bit for bit, and
  // its NaN outputs may be any NaN (the 0x7E00 rule is the reference kernel's).
  bool approximate = false;
};

// This build of the suite runs the cuda runtimes on the host's emulated cudart
// (runtime_cuda_emulated_test, tests/runtime/cuda_emulator/cuda_emulator.h): they must open
// (unavailable is a failure, not a skip), and the [async] case, whose long batch would take the
// host minutes there, holds the emulated streams instead (hold/release_emulated_streams: no-ops
// in every other build).
#ifdef VTRACE_CONFORMANCE_CUDA_EMULATED
inline constexpr bool kCudaEmulated = true;
#else
inline constexpr bool kCudaEmulated = false;
#endif
void hold_emulated_streams();
void release_emulated_streams();

// The scalar models, written from the documented orders (independent of the runtime code).
// Reference (spec 11.1): one f32 accumulator from +0, k ascending, NaN written as 0x7E00.
std::vector<std::uint8_t> reference_model(std::span<const std::uint8_t> input,
                                          std::span<const std::uint8_t> weight, std::size_t rows,
                                          std::size_t in_features, std::size_t out_features);
// cpu-splitk: k blocks of kSplitKModelBlock, each summed from +0 k ascending; the partials
// combined as a pairwise tree level by level (an odd last partial carried up unchanged).
inline constexpr std::size_t kSplitKModelBlock = 256;
std::vector<std::uint8_t> splitk_model(std::span<const std::uint8_t> input,
                                       std::span<const std::uint8_t> weight, std::size_t rows,
                                       std::size_t in_features, std::size_t out_features);

// How far an approximate runtime's f32 sum may be from the model's, per output of a launch,
// whatever order it sums in: two orders of the same n products, each add rounded to nearest,
// differ by at most 2 (n - 1) 2^-24 sum_k |x_k w_k| (the textbook bound of recursive summation,
// twice); the allowance is 4 times that, for accumulators that truncate (tensor cores). A
// product that is not finite makes the allowance infinite, which means "exact": such sums are
// the same infinity or NaN in every order. Empty for exact runtimes (they get no allowance).
std::vector<float> order_allowance(std::span<const std::uint8_t> input,
                                   std::span<const std::uint8_t> weight, std::size_t rows,
                                   std::size_t in_features, std::size_t out_features);

// The f16 elements of `actual` that the runtime under test gets wrong against `expected` (its
// model's answer), plus one if the sizes differ. Exact runtimes: any differing bits. Approximate
// runtimes: an element is right when both are NaN, or both equal, or, with an infinity counted
// as 65536 (the first f16 value past the largest), |a - e| <= allowance[e] + 1 f16 ulp of
// max(|a|, |e|) (the two roundings to f16) + 2^-14 (a subnormal result flushed to zero);
// `allowance` (order_allowance of the same launch) must then have one entry per element.
std::size_t wrong_elements(std::span<const std::uint8_t> actual,
                           std::span<const std::uint8_t> expected,
                           std::span<const float> allowance = {});

// wrong_elements of one launch's output against the model of the runtime under test, with the
// launch's order allowance when the runtime is approximate.
std::size_t wrong_outputs(std::span<const std::uint8_t> actual, std::span<const std::uint8_t> input,
                          std::span<const std::uint8_t> weight, std::size_t rows,
                          std::size_t in_features, std::size_t out_features);

// tests/data: the environment variable VTRACE_TEST_DATA_DIR when set (scripts/gpu-check.sh runs
// a carried binary in another checkout), else the source tree's, compiled in.
std::string test_data_dir();

// The name in VTRACE_CONFORMANCE_RUNTIME; fails the test when it is unset.
std::string runtime_name();
// The traits of the runtime under test; fails the test when the suite has none for it.
const RuntimeTraits& traits();

// Opens the runtime under test through the registry. nullptr when the runtime is unavailable
// here (the test is then marked skipped; use VTRACE_CONFORMANCE_OPEN, which also returns).
std::unique_ptr<rt::DeviceRuntime> open_under_test(const std::string& device_id,
                                                   rt::RuntimeOpenOptions options = {});
// Opens another registered runtime (e.g. "reference" beside the runtime under test).
std::unique_ptr<rt::DeviceRuntime> open_named(std::string_view name, const std::string& device_id);

#define VTRACE_CONFORMANCE_OPEN(var, device_id)                                 \
  auto var = ::vtrace::conformance::open_under_test(device_id);                 \
  if (!var) return

// The counters of `runtime`; every runtime under test keeps them (spec 7.6).
rt::CounterSnapshot counters(const rt::DeviceRuntime& runtime);

// Kind check, plus the reference's exact message where it applies.
void check_error(const rt::RuntimeError& error, rt::ErrorKind kind, std::string_view reference_message);
template <typename T>
void check_failed(const rt::Result<T>& result, rt::ErrorKind kind,
                  std::string_view reference_message = {}) {
  REQUIRE_FALSE(result.has_value());
  check_error(result.error(), kind, reference_message);
}

inline rt::HostTransferLayout layout(rt::ElementType type, std::uint64_t count) {
  auto made = rt::HostTransferLayout::create(type, count);
  REQUIRE(made.has_value());
  return *made;
}
inline rt::CopyRegion region(std::uint64_t src, std::uint64_t dst, std::uint64_t len) {
  auto made = rt::CopyRegion::create(src, dst, len);
  REQUIRE(made.has_value());
  return *made;
}
inline rt::StreamPtr stream_of(rt::DeviceRuntime& runtime) {
  auto stream = runtime.create_stream();
  REQUIRE(stream.has_value());
  return std::move(*stream);
}
rt::AllocationPermit admit(rt::DeviceRuntime& runtime, std::uint64_t size,
                           rt::ElementType type = rt::ElementType::kU8,
                           const std::string& name = "resource.conformance");

// Handles of no runtime at all.
class AlienBuffer final : public rt::Buffer {};
class AlienStream final : public rt::Stream {};
class AlienCommand final : public rt::Command {};
class AlienFence final : public rt::Fence {};

// The runtime under test with a stream and a U8 buffer holding a known pattern, so a failing
// call can be checked for "nothing ran, no counter moved, contents and stream state unchanged".
struct Rig {
  std::unique_ptr<rt::DeviceRuntime> runtime;
  rt::StreamPtr stream;
  rt::BufferPtr target;
  std::vector<std::uint8_t> target_bytes = rt::testing::pattern(16);
  rt::CounterSnapshot before;
  rt::StreamState stream_before = rt::StreamState::kReady;

  explicit Rig(const std::string& device_id = "device.conformance.rig.0");
  bool ok() const { return runtime != nullptr; }
  rt::DeviceRuntime& rt() { return *runtime; }
  // Re-takes the "before" picture (after a test allocated or encoded more).
  void mark();
  rt::CommandPtr upload_to_target(std::uint8_t seed = 0x70);
  // Nothing ran, no counter moved and the stream state is unchanged since mark(); then the
  // target still holds its pattern (checked last: the readback moves readback_bytes and
  // synchronizes the stream, so it ends with mark()).
  void check_untouched();
  // submit must fail with DefinitelyNotSubmitted of `kind`, and check_untouched().
  void check_not_submitted(rt::CommandBatch batch, rt::ErrorKind kind,
                           std::string_view reference_message = {});
  void check_not_submitted_on(rt::Stream& stream, rt::CommandBatch batch, rt::ErrorKind kind,
                              std::string_view reference_message = {});
};

#define VTRACE_CONFORMANCE_RIG(var, ...)        \
  ::vtrace::conformance::Rig var{__VA_ARGS__};  \
  if (!var.ok()) return

// An F16 dense-linear fixture: input, shared weight and output buffers for `rows` rows of a
// in x out linear, allocated on `runtime` (buffers exactly sized).
struct DenseBuffers {
  rt::BufferPtr input;
  rt::BufferPtr weight;
  rt::BufferPtr output;
  std::uint64_t rows = 0, in = 0, out = 0;
  rt::DenseLinearLaunch launch() const;
};
DenseBuffers dense_buffers(rt::DeviceRuntime& runtime, std::uint64_t rows, std::uint64_t in,
                           std::uint64_t out);
// One encoded Scalar dense-linear command over `buffers` (1 participant, rows tokens).
rt::CommandPtr dense_command(rt::DeviceRuntime& runtime, const DenseBuffers& buffers);

std::uint16_t load_u16(std::span<const std::uint8_t> bytes, std::size_t element);
bool is_f16_nan(std::uint16_t bits);
std::vector<std::uint8_t> from_hex(const std::string& hex);
std::vector<std::uint8_t> raw_f16(const std::vector<std::uint16_t>& values);

}  // namespace vtrace::conformance
