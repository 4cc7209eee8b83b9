// The reference runtime's fixed identity: its descriptor and fingerprint, creation refusing
// other classes and capability sets, logical-address alignment, the registry's entry and the
// process-wide identity counters (white-box, host/instance_counters.h).
//
// Everything the reference shares with every runtime (the error table of spec 7.7, precedence,
// counters, streams, fences, readback, attribution, numerics, the optional defaults) is tested
// for every registered runtime by the conformance suite (tests/runtime/conformance/).
#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <limits>
#include <string>

#include "host/instance_counters.h"
#include "runtime_test_support.h"
#include "support/test_support.h"
#include "vtrace/runtime/registry.h"

using namespace vtrace::runtime;
using namespace vtrace::runtime::testing;
using reference::ReferenceRuntime;

namespace {

// A runtime with a stream and a U8 buffer holding a known pattern, so any failing call can be
// checked for "nothing ran, no counter moved, contents unchanged".
struct Rig {
  std::unique_ptr<ReferenceRuntime> runtime = make_reference();
  StreamPtr stream = std::move(*runtime->create_stream());
  BufferPtr target = allocate(*runtime, 16, ElementType::kU8);
  std::vector<std::uint8_t> target_bytes = pattern(16);
  CounterSnapshot before;

  Rig() {
    fill(*runtime, *stream, *target, target_bytes);
    before = runtime->snapshot();
  }
  CommandPtr upload_to_target(std::uint8_t seed = 0x70) {
    return std::move(*runtime->encode_upload(pattern(16, seed),
                                             *HostTransferLayout::create(ElementType::kU8, 16),
                                             *target, 0));
  }
  // Nothing ran and no counter moved since construction (checked before the readback moves
  // readback_bytes).
  void check_untouched() {
    CHECK(runtime->snapshot() == before);
    CHECK(contents(*runtime, *stream, *target) == target_bytes);
  }
};

}  // namespace

TEST_CASE("the fixed reference descriptor is valid and advertises exactly dense linear f16",
          "[runtime][reference]") {
  const auto descriptor = reference::reference_descriptor("device.reference.l1.0");
  REQUIRE(descriptor.has_value());
  CHECK(descriptor->validate().has_value());
  CHECK(descriptor->id.str() == "device.reference.l1.0");
  CHECK(descriptor->device_class == DeviceClass::kReference);
  CHECK(descriptor->ordinal == 0);
  CHECK(descriptor->total_memory_bytes == 67108864);
  CHECK(descriptor->capabilities ==
        std::set<CapabilityId>{*CapabilityId::create("capability.operation.dense_linear.f16")});
  CHECK(descriptor->dynamic_storage_profiles ==
        std::set<DynamicStorageProfile>{DynamicStorageProfile::linear_contiguous()});
  // Stable across calls and device ids: it names the implementation, not the device.
  CHECK(descriptor->runtime_implementation_fingerprint ==
        reference::reference_descriptor("device.other")->runtime_implementation_fingerprint);
  CHECK_FALSE(reference::reference_descriptor("device zero").has_value());

  auto runtime = make_reference();
  CHECK(runtime->descriptor() == *reference::reference_descriptor("device.reference.test.0"));
  CHECK(runtime->attention_execution_policy() == AttentionExecutionPolicy::kPortable);
  CHECK(runtime->snapshot() == CounterSnapshot{});
  CHECK(runtime->counter_snapshot() == runtime->snapshot());
  CHECK(runtime->instance() >= 1);
  CHECK(make_reference()->instance() > runtime->instance());
}

TEST_CASE("creation rejects an invalid descriptor, another class and a different capability set",
          "[runtime][reference]") {
  const auto base = *reference::reference_descriptor("device.reference.test.0");

  auto invalid = base;
  invalid.total_memory_bytes = 0;
  const auto invalid_result = ReferenceRuntime::create(invalid);
  REQUIRE_FALSE(invalid_result.has_value());
  CHECK(invalid_result.error().kind() == ErrorKind::kDescriptorInvalid);
  CHECK(invalid_result.error().message() ==
        "invalid execution plan: device `device.reference.test.0` has invalid capacity or runtime "
        "implementation fingerprint");

  auto accelerator = base;
  accelerator.device_class = DeviceClass::kAccelerator;
  auto extra = base;
  extra.capabilities.insert(*CapabilityId::create("capability.reference.unimplemented"));
  auto missing = base;
  missing.capabilities.clear();
  for (const auto* descriptor : {&accelerator, &extra, &missing}) {
    const auto result = ReferenceRuntime::create(*descriptor);
    REQUIRE_FALSE(result.has_value());
    CHECK(result.error().kind() == ErrorKind::kDescriptorOverclaims);
    CHECK(result.error().message() ==
          "reference runtime descriptor overclaims its fixed device class or capabilities");
  }
}

TEST_CASE("aligned storage starts aligned and holds the whole request for every alignment",
          "[runtime][reference]") {
  auto runtime = make_reference();
  auto stream = std::move(*runtime->create_stream());
  for (std::uint64_t alignment : {1u, 2u, 16u, 64u, 4096u}) {
    INFO("alignment " << alignment);
    auto buffer = allocate(*runtime, 257, ElementType::kU8, alignment);
    const auto address = runtime->logical_address(*buffer);
    REQUIRE(address.has_value());
    CHECK(*address % alignment == 0);
    CHECK(runtime->buffer_descriptor(*buffer).alignment_bytes == alignment);
    // Starts zeroed; all 257 bytes are writable and read back.
    CHECK(contents(*runtime, *stream, *buffer) == std::vector<std::uint8_t>(257, 0));
    const auto bytes = pattern(257, static_cast<std::uint8_t>(alignment));
    fill(*runtime, *stream, *buffer, bytes);
    CHECK(contents(*runtime, *stream, *buffer) == bytes);
  }
  const auto snapshot = runtime->snapshot();
  CHECK(snapshot.allocations == 5);
  CHECK(snapshot.live_allocations == 0);
}

namespace {

// This process's resident memory in KiB (VmRSS), or -1 when /proc cannot say.
long resident_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

}  // namespace

TEST_CASE("a large alignment costs address space, not memory: the padding is never touched",
          "[runtime][reference]") {
  // Admission counts size_bytes only (as upstream), so a product may ask for tiny buffers with
  // huge alignments; zero-filling the padding made 2 one-byte buffers cost 512 MiB of memory.
  auto runtime = make_reference();
  auto stream = std::move(*runtime->create_stream());
  const long before = resident_kib();
  if (before < 0) VTRACE_SKIP("/proc/self/status has no VmRSS here");
  constexpr std::uint64_t kAlignment = std::uint64_t{1} << 28;  // 256 MiB
  auto first = allocate(*runtime, 1, ElementType::kU8, kAlignment);
  auto second = allocate(*runtime, 1, ElementType::kU8, kAlignment);
  const long grown_mib = (resident_kib() - before) / 1024;
  INFO("resident memory grew by " << grown_mib << " MiB");
  CHECK(grown_mib < 200);  // 512 when the padding is zero-filled (the sanitizers' shadow: ~64)
  CHECK(*runtime->logical_address(*first) % kAlignment == 0);
  CHECK(contents(*runtime, *stream, *second) == std::vector<std::uint8_t>{0});
}

TEST_CASE("readback of a valid host layout larger than this host can hold is an error, not an "
          "exception",
          "[runtime][reference]") {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  VTRACE_SKIP("the sanitizers' allocators end the process on such a request instead of failing it");
#else
  // 2^62 bytes: a layout spec 2.11 accepts (n * size does not overflow), which no host holds.
  // Like every readback failure after the checks of spec 7.3, the stream is synchronized first;
  // nothing else moves. (Not a conformance case: under the sanitizers, whose allocators end the
  // process on such a request, it can only be skipped, and the conformance suite must not skip.)
  for (const char* name : {"reference", "cpu", "cpu-splitk"}) {
    INFO(name);
    auto runtime = std::move(*default_registry().open(name));
    auto stream = std::move(*runtime->create_stream());
    auto buffer = allocate(*runtime, 4, ElementType::kU8);
    fill(*runtime, *stream, *buffer, {1, 2, 3, 4});
    const auto before = *runtime->counter_snapshot();
    const auto huge = runtime->readback(*stream, *buffer, *CopyRegion::create(0, 0, 4),
                                        *HostTransferLayout::create(ElementType::kU8,
                                                                    std::uint64_t{1} << 62));
    REQUIRE_FALSE(huge.has_value());
    CHECK(huge.error().kind() == ErrorKind::kReadbackInternal);
    CHECK(huge.error().message() == std::string(name) +
                                        " cannot allocate the 4611686018427387904 bytes of the "
                                        "readback's host layout");
    CHECK(*runtime->counter_snapshot() == before);
    CHECK(runtime->stream_state(*stream) == StreamState::kReady);
    CHECK(contents(*runtime, *stream, *buffer) == std::vector<std::uint8_t>{1, 2, 3, 4});
  }
#endif
}

TEST_CASE(
    "cuda and cuda-cublas are registered exactly in a CUDA build and say why when they cannot open",
    "[runtime][registry][cuda]") {
  const RuntimeRegistry& registry = default_registry();
  for (const std::string name : {"cuda", "cuda-cublas"}) {
    INFO(name << (built_with_cuda() ? " in a CUDA build" : " in a build without CUDA"));
    CHECK(registry.contains(name) == built_with_cuda());
    const auto opened = registry.open(name, {.device_id = "device.registry.cuda.0"});
    if (!built_with_cuda()) {
      REQUIRE_FALSE(opened.has_value());
      CHECK(opened.error().kind() == ErrorKind::kUnknownRuntime);
      CHECK(opened.error().message().starts_with(
          "unknown runtime `" + name +
          "` (this build has no CUDA runtime: it was configured without the CUDA "
          "toolkit); known runtimes: "));
    } else if (!opened) {
      // No usable device here: one sentence naming the runtime and CUDA's answer.
      CHECK(opened.error().kind() == ErrorKind::kRuntimeUnavailable);
      CHECK(opened.error().message().starts_with(name + ": no CUDA device is available ("));
      CHECK(opened.error().message().find('\n') == std::string::npos);
    } else {
      // A GPU is here: the descriptor is the GPU's.
      CHECK((*opened)->descriptor().device_class == DeviceClass::kAccelerator);
      CHECK((*opened)->descriptor().total_memory_bytes > 0);
      CHECK((*opened)->descriptor().id.str() == "device.registry.cuda.0");
    }
  }
  // Other names are unknown without the CUDA sentence.
  const auto unknown = registry.open("cudax");
  REQUIRE_FALSE(unknown.has_value());
  CHECK(unknown.error().message().find("CUDA") == std::string::npos);
}

TEST_CASE("the default registry opens the reference runtime and names the known ones on a miss",
          "[runtime][registry]") {
  const RuntimeRegistry& registry = default_registry();
  CHECK(registry.contains("reference"));
  // Sorted; the reference is always there (other built-in runtimes join it).
  const std::vector<std::string> names = registry.names();
  CHECK(std::is_sorted(names.begin(), names.end()));
  CHECK(std::find(names.begin(), names.end(), "reference") != names.end());
  std::string known;
  for (const auto& name : names) known += (known.empty() ? "" : ", ") + name;
  CHECK_FALSE(registry.summary("reference").empty());
  CHECK(registry.summary("nope").empty());

  auto runtime = registry.open("reference", {.device_id = "device.registry.0"});
  REQUIRE(runtime.has_value());
  CHECK((*runtime)->descriptor().id.str() == "device.registry.0");
  CHECK((*runtime)->descriptor().device_class == DeviceClass::kReference);
  CHECK((*runtime)->counter_snapshot() == CounterSnapshot{});

  const auto unknown = registry.open("nope");
  REQUIRE_FALSE(unknown.has_value());
  CHECK(unknown.error().kind() == ErrorKind::kUnknownRuntime);
  CHECK(unknown.error().message() == "unknown runtime `nope`; known runtimes: " + known);
  const auto bad_id = registry.open("reference", {.device_id = "device zero"});
  REQUIRE_FALSE(bad_id.has_value());
  CHECK(bad_id.error().kind() == ErrorKind::kDescriptorInvalid);

  RuntimeRegistry custom;
  custom.add("fake", "always unavailable", [](const RuntimeOpenOptions&) -> Result<std::unique_ptr<DeviceRuntime>> {
    return std::unexpected(RuntimeError(ErrorKind::kRuntimeUnavailable, "no device"));
  });
  CHECK(custom.open("fake").error().kind() == ErrorKind::kRuntimeUnavailable);
}

TEST_CASE("exhausted runtime, stream and fence identities fail without running or counting anything",
          "[runtime][reference][7.7]") {
  using host::detail::InstanceCounter;
  using host::detail::exchange_next_instance;
  Rig rig;
  constexpr std::uint64_t kLast = std::numeric_limits<std::uint64_t>::max();

  // The last value is never handed out: u64::MAX - 1 is, then the counter is exhausted.
  const std::uint64_t runtimes = exchange_next_instance(InstanceCounter::kRuntime, kLast - 1);
  auto last_runtime = ReferenceRuntime::create(rig.runtime->descriptor());
  REQUIRE(last_runtime.has_value());
  CHECK((*last_runtime)->instance() == kLast - 1);
  const auto no_runtime = ReferenceRuntime::create(rig.runtime->descriptor());
  exchange_next_instance(InstanceCounter::kRuntime, runtimes);
  REQUIRE_FALSE(no_runtime.has_value());
  CHECK(no_runtime.error().kind() == ErrorKind::kIdentityExhausted);
  CHECK(no_runtime.error().message() == "reference runtime identity exhausted");

  const std::uint64_t streams = exchange_next_instance(InstanceCounter::kStream, kLast);
  const auto no_stream = rig.runtime->create_stream();
  exchange_next_instance(InstanceCounter::kStream, streams);
  REQUIRE_FALSE(no_stream.has_value());
  CHECK(no_stream.error().kind() == ErrorKind::kIdentityExhausted);
  CHECK(no_stream.error().message() == "reference stream identity exhausted");

  // Decided differently from upstream (which panics): DNS, and the batch did not run.
  const StreamState state_before = rig.runtime->stream_state(*rig.stream);
  const std::uint64_t fences = exchange_next_instance(InstanceCounter::kFence, kLast);
  auto no_fence = rig.runtime->submit(*rig.stream, CommandBatch::singleton(rig.upload_to_target()));
  exchange_next_instance(InstanceCounter::kFence, fences);
  REQUIRE_FALSE(no_fence.has_value());
  CHECK(no_fence.error().error().kind() == ErrorKind::kIdentityExhausted);
  CHECK(no_fence.error().error().message() == "reference fence identity exhausted");
  CHECK(rig.runtime->stream_state(*rig.stream) == state_before);
  rig.check_untouched();
}
