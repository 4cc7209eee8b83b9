// The reference runtime: construction, spec 13's unit tests, every row of spec 7.7 (error kind,
// nothing executed, no counter moved, buffers unchanged), lifetimes, admission and the registry.
#include <catch2/catch.hpp>

#include <limits>

#include "runtime_test_support.h"
#include "reference/instance_counters.h"
#include "vtrace/runtime/registry.h"

using namespace vtrace::runtime;
using namespace vtrace::runtime::testing;
using reference::ReferenceRuntime;

namespace {

constexpr std::uint64_t kU64Max = std::numeric_limits<std::uint64_t>::max();

class AlienBuffer final : public Buffer {};
class AlienStream final : public Stream {};
class AlienCommand final : public Command {};
class AlienFence final : public Fence {};

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

void check_not_submitted(Rig& rig, CommandBatch batch, ErrorKind kind, std::string_view message) {
  auto result = rig.runtime->submit(*rig.stream, std::move(batch));
  REQUIRE_FALSE(result.has_value());
  CHECK(result.error().error().kind() == kind);
  CHECK(result.error().error().message() == message);
  rig.check_untouched();
}

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

TEST_CASE("allocation echoes the request and counts allocations", "[runtime][reference]") {
  auto runtime = make_reference();
  auto request = *BufferRequest::create(*ResourceId::create("resource.weights"), 24, 64,
                                        BufferUsage::kWeights, ElementType::kF16);
  auto buffer = runtime->allocate(std::move(*runtime->admit(request)));
  REQUIRE(buffer.has_value());
  CHECK(runtime->buffer_descriptor(**buffer) == BufferDescriptor::from_request(request));
  CHECK(runtime->snapshot().allocations == 1);
  CHECK(runtime->snapshot().live_allocations == 1);
  buffer->reset();
  CHECK(runtime->snapshot().allocations == 1);
  CHECK(runtime->snapshot().live_allocations == 0);
  CHECK(runtime->buffer_descriptor(AlienBuffer{}) == BufferDescriptor{});
}

TEST_CASE("allocate rejects a permit that was already consumed and counts nothing",
          "[runtime][reference][7.7]") {
  auto runtime = make_reference();
  auto request = *BufferRequest::create(*ResourceId::create("resource.x"), 8, 8,
                                        BufferUsage::kScratch, ElementType::kU8);
  auto permit = std::move(*runtime->admit(request));
  AllocationPermit taken = std::move(permit);
  const auto result = runtime->allocate(std::move(permit));  // NOLINT(bugprone-use-after-move)
  REQUIRE_FALSE(result.has_value());
  CHECK(result.error().kind() == ErrorKind::kAdmissionInvalidRequest);
  CHECK(runtime->snapshot() == CounterSnapshot{});
  CHECK(runtime->allocate(std::move(taken)).has_value());
}

TEST_CASE("admission over capacity fails and changes nothing, and capacity returns after release",
          "[runtime][reference][admission]") {
  auto runtime = make_reference();
  auto stream = std::move(*runtime->create_stream());
  const auto request = [](std::uint64_t size) {
    return *BufferRequest::create(*ResourceId::create("resource.big"), size, 16,
                                  BufferUsage::kActivations, ElementType::kU8);
  };
  auto big = runtime->allocate(std::move(*runtime->admit(request(48ull << 20))));
  REQUIRE(big.has_value());
  auto command = runtime->encode_zero(**big, 0, 16);
  REQUIRE(command.has_value());
  const auto before = runtime->snapshot();

  const auto refused = runtime->admit(request(32ull << 20));
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().kind() == ErrorKind::kAdmissionOverCapacity);
  CHECK(refused.error().message() ==
        "admission of `resource.big` needs 33554432 bytes but 16777216 of 67108864 remain");
  CHECK(runtime->snapshot() == before);
  // Nothing was reserved by the refusal: exactly the remaining capacity is still admissible.
  CHECK(runtime->admit(request(16ull << 20)).has_value());

  // The command keeps the storage (and its reservation) alive after the handle is gone.
  big->reset();
  CHECK(runtime->snapshot().live_allocations == 1);
  CHECK_FALSE(runtime->admit(request(32ull << 20)).has_value());
  command->reset();
  CHECK(runtime->snapshot().live_allocations == 0);
  CHECK(runtime->admit(request(64ull << 20)).has_value());
}

TEST_CASE("a command outliving its buffer handle still executes and live drops after both die",
          "[runtime][reference]") {
  auto runtime = make_reference();
  auto stream = std::move(*runtime->create_stream());
  auto source = allocate(*runtime, 8, ElementType::kU8);
  auto destination = allocate(*runtime, 8, ElementType::kU8);
  fill(*runtime, *stream, *source, pattern(8));
  auto copy = runtime->encode_copy(*source, *destination, *CopyRegion::create(0, 0, 8));
  REQUIRE(copy.has_value());
  source.reset();
  CHECK(runtime->snapshot().live_allocations == 2);

  CommandBatch batch;
  batch.push(std::move(*copy));
  submit_ok(*runtime, *stream, std::move(batch));
  // The submitted batch was the last holder of the source storage.
  CHECK(runtime->snapshot().live_allocations == 1);
  CHECK(contents(*runtime, *stream, *destination) == pattern(8));
  destination.reset();
  CHECK(runtime->snapshot().live_allocations == 0);
  CHECK(runtime->snapshot().allocations == 2);
}

TEST_CASE("submission requirements: only timing Off with an adaptive or eager path and no capture",
          "[runtime][reference][7.7]") {
  using Path = ComputePathRequirement;
  SECTION("accepted: Off with Adaptive or EagerOnly, no capture") {
    for (Path path : {Path::kAdaptive, Path::kEagerOnly}) {
      Rig rig;
      CommandBatch batch(TimingMode::kOff, path);
      batch.push_initialization(rig.upload_to_target());
      auto fence = rig.runtime->submit(*rig.stream, std::move(batch));
      REQUIRE(fence.has_value());
      CHECK(rig.runtime->snapshot().submissions == rig.before.submissions + 1);
    }
  }
  SECTION("rejected: a replay-required path") {
    for (Path path : {Path::kReplayedOnly, Path::kReplayedWithDeclaredEagerBoundaries}) {
      Rig rig;
      CommandBatch batch(TimingMode::kOff, path);
      batch.push_initialization(rig.upload_to_target());
      check_not_submitted(rig, std::move(batch), ErrorKind::kReplayRequiredUnsupported,
                          "reference runtime cannot satisfy a replay-required compute submission");
    }
  }
  SECTION("rejected: any timing mode but Off, before the path is looked at") {
    for (TimingMode timing : {TimingMode::kCompletion, TimingMode::kReplay, TimingMode::kKernel,
                              TimingMode::kVerification}) {
      Rig rig;
      CommandBatch batch(timing, Path::kReplayedOnly);
      batch.push_initialization(rig.upload_to_target());
      check_not_submitted(rig, std::move(batch), ErrorKind::kTimingUnsupported,
                          "reference runtime does not provide device timing evidence");
    }
  }
  SECTION("rejected: Off, Adaptive with a reusable capture") {
    Rig rig;
    CommandBatch batch;
    REQUIRE(batch.set_reusable_execution_capture(
        *ReusableExecutionCapture::create(*ProgramId::create("program.p"), 1, {}, {})));
    batch.push_initialization(rig.upload_to_target());
    check_not_submitted(rig, std::move(batch), ErrorKind::kReusableCaptureUnsupported,
                        "reference runtime cannot consume reusable execution capture metadata");
  }
}

TEST_CASE("submit rejects a stream of another runtime and moves no counter", "[runtime][reference][7.7]") {
  Rig rig;
  auto other = make_reference();
  auto foreign_stream = std::move(*other->create_stream());
  auto result = rig.runtime->submit(*foreign_stream, CommandBatch::singleton(rig.upload_to_target()));
  REQUIRE_FALSE(result.has_value());
  CHECK(result.error().error().kind() == ErrorKind::kForeignStream);
  CHECK(result.error().error().message() == "reference stream belongs to another runtime");
  AlienStream alien;
  auto alien_result = rig.runtime->submit(alien, CommandBatch::singleton(rig.upload_to_target()));
  REQUIRE_FALSE(alien_result.has_value());
  CHECK(alien_result.error().error().kind() == ErrorKind::kForeignStream);
  CHECK(other->snapshot() == CounterSnapshot{});
  rig.check_untouched();
}

TEST_CASE("submit rejects an empty batch and moves no counter", "[runtime][reference][7.7]") {
  Rig rig;
  check_not_submitted(rig, CommandBatch{}, ErrorKind::kEmptyBatch,
                      "reference runtime cannot submit an empty batch");
}

TEST_CASE("submit rejects logical work on a provider command that already has participants",
          "[runtime][reference][7.7]") {
  Rig rig;
  auto input = allocate(*rig.runtime, 4, ElementType::kF16);
  auto weight = allocate(*rig.runtime, 8, ElementType::kF16);
  auto output = allocate(*rig.runtime, 4, ElementType::kF16);
  const DenseLinearLaunch launch{{input.get(), 0, 4}, {weight.get(), 0, 8}, {output.get(), 0, 4},
                                 1, 2, 2};
  auto dense = rig.runtime->encode_dense_linear({{&launch, 1}, 1, 1});
  REQUIRE(dense.has_value());
  rig.before = rig.runtime->snapshot();
  CommandBatch batch;
  batch.push_initialization(rig.upload_to_target());
  batch.push_node_initialization(0, *LogicalWork::create(BatchingForm::kScalar, 1, 1),
                                 std::move(*dense));
  check_not_submitted(rig, std::move(batch), ErrorKind::kLogicalWorkConflict,
                      "reference core logical work cannot replace provider command attribution");
}

TEST_CASE("submit rejects a command that holds a buffer of another runtime",
          "[runtime][reference][7.7]") {
  Rig rig;
  auto other = make_reference("device.reference.test.1");
  auto foreign = allocate(*other, 16, ElementType::kU8);
  // Encoders do not check ownership (upstream); submit does.
  auto copy = rig.runtime->encode_copy(*foreign, *rig.target, *CopyRegion::create(0, 0, 16));
  REQUIRE(copy.has_value());
  CommandBatch batch;
  batch.push_initialization(rig.upload_to_target());
  batch.push(std::move(*copy));
  const auto other_before = other->snapshot();
  check_not_submitted(rig, std::move(batch), ErrorKind::kForeignBufferInCommand,
                      "reference command contains a buffer from another runtime");
  CHECK(other->snapshot() == other_before);
}

TEST_CASE("submit rejects a command of another class", "[runtime][reference][7.7]") {
  Rig rig;
  CommandBatch batch;
  batch.push_initialization(rig.upload_to_target());
  batch.push(std::make_unique<AlienCommand>());
  check_not_submitted(rig, std::move(batch), ErrorKind::kForeignCommand,
                      "reference runtime cannot submit a command it did not encode");
}

TEST_CASE("attribution rejects a node-scoped transfer without participants", "[runtime][reference][7.7]") {
  Rig rig;
  auto input = allocate(*rig.runtime, 4, ElementType::kF16);
  auto weight = allocate(*rig.runtime, 8, ElementType::kF16);
  auto output = allocate(*rig.runtime, 4, ElementType::kF16);
  const DenseLinearLaunch launch{{input.get(), 0, 4}, {weight.get(), 0, 8}, {output.get(), 0, 4},
                                 1, 2, 2};
  EncodedOperation op;
  op.compute = std::move(*rig.runtime->encode_dense_linear({{&launch, 1}, 1, 1}));
  op.result_bindings.push_back(rig.upload_to_target());
  rig.before = rig.runtime->snapshot();

  CommandBatch batch;
  batch.push_operation(4, std::move(op));
  batch.require_logical_execution_path_attribution();
  check_not_submitted(rig, std::move(batch), ErrorKind::kAttributionInvalidMetadata,
                      "reference command attribution has invalid native work metadata");
}

TEST_CASE("attribution reports one row per entry with logical work bound to transfers",
          "[runtime][reference]") {
  Rig rig;
  auto input = allocate(*rig.runtime, 4, ElementType::kF16);
  auto weight = allocate(*rig.runtime, 8, ElementType::kF16);
  auto output = allocate(*rig.runtime, 4, ElementType::kF16);
  const DenseLinearLaunch launch{{input.get(), 0, 4}, {weight.get(), 0, 8}, {output.get(), 0, 4},
                                 1, 2, 2};
  CommandBatch batch;
  batch.require_logical_execution_path_attribution();
  batch.push_initialization(rig.upload_to_target());
  batch.push_node_initialization(2, *LogicalWork::for_participant_range(BatchingForm::kPacked, 1, 3, 9),
                                 std::move(*rig.runtime->encode_zero(*rig.target, 0, 4)));
  EncodedOperation op;
  op.compute = std::move(*rig.runtime->encode_dense_linear({{&launch, 1}, 1, 1}));
  batch.push_operation(5, std::move(op));
  auto fence = rig.runtime->submit(*rig.stream, std::move(batch));
  REQUIRE(fence.has_value());

  const auto attribution = rig.runtime->submission_attribution(**fence);
  REQUIRE(attribution.has_value());
  const auto& rows = attribution->commands();
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].command_index() == 0);
  CHECK(rows[0].native_op_id() == "host.upload");
  CHECK(rows[0].transfer_command_count() == 1);
  CHECK(rows[0].compute_dispatch_count() == 0);
  CHECK(rows[0].participant_count() == 0);
  CHECK(rows[1].native_op_id() == "device.zero");
  CHECK(rows[1].node_index() == 2u);
  CHECK(rows[1].batching_form() == BatchingForm::kPacked);
  CHECK(rows[1].participant_start() == 1);
  CHECK(rows[1].participant_count() == 3);
  CHECK(rows[1].token_count() == 9);
  CHECK(rows[2].native_op_id() == "vnext_dense_linear");
  CHECK(rows[2].command_phase() == CommandPhase::kCompute);
  CHECK(rows[2].execution_path() == ExecutionPath::kEager);
  CHECK(rows[2].batching_form() == BatchingForm::kScalar);
  CHECK(rows[2].compute_dispatch_count() == 1);
  CHECK(rows[2].participant_count() == 1);
  CHECK(rows[2].token_count() == 1);

  const auto after = rig.runtime->snapshot();
  CHECK(after.submissions == rig.before.submissions + 1);
  CHECK(after.commands == rig.before.commands + 3);
  CHECK(after.uploaded_bytes == rig.before.uploaded_bytes + 16);
  CHECK(after.dense_linear_launches == rig.before.dense_linear_launches + 1);

  // Without the requirement there is no attribution; another runtime's fence has none either.
  auto plain = rig.runtime->submit(*rig.stream, CommandBatch::singleton(rig.upload_to_target()));
  REQUIRE(plain.has_value());
  CHECK_FALSE(rig.runtime->submission_attribution(**plain).has_value());
  CHECK_FALSE(make_reference()->submission_attribution(**fence).has_value());
  CHECK_FALSE(rig.runtime->submission_attribution(AlienFence{}).has_value());
}

TEST_CASE("fences are terminal at once, idempotent, and foreign fences are indeterminate",
          "[runtime][reference][7.7]") {
  Rig rig;
  auto fence = rig.runtime->submit(*rig.stream, CommandBatch::singleton(rig.upload_to_target()));
  REQUIRE(fence.has_value());
  CHECK(rig.runtime->stream_state(*rig.stream) == StreamState::kSubmitted);
  const auto query = rig.runtime->query_fence(**fence);
  REQUIRE(std::holds_alternative<TerminalReceipt>(query));
  CHECK(std::get<TerminalReceipt>(query) == TerminalReceipt::unprofiled(DeviceTerminal{}));
  for (int i = 0; i < 3; ++i) {
    const auto waited = rig.runtime->wait_fence(**fence);
    REQUIRE(waited.has_value());
    CHECK(waited->terminal.is_succeeded());
    CHECK(waited->execution_timing.status == TimingMeasurement::Status::kNotRequested);
  }

  auto other = make_reference();
  const CounterSnapshot other_before = other->snapshot();
  const auto foreign_query = other->query_fence(**fence);
  REQUIRE(std::holds_alternative<RuntimeError>(foreign_query));
  CHECK(std::get<RuntimeError>(foreign_query).kind() == ErrorKind::kForeignFence);
  CHECK(std::get<RuntimeError>(foreign_query).message() ==
        "reference fence belongs to another runtime");
  CHECK_FALSE(is_pending(foreign_query));
  const auto foreign_wait = other->wait_fence(**fence);
  REQUIRE_FALSE(foreign_wait.has_value());
  CHECK(foreign_wait.error().error().kind() == ErrorKind::kForeignFence);
  CHECK(std::holds_alternative<RuntimeError>(rig.runtime->query_fence(AlienFence{})));
  CHECK_FALSE(rig.runtime->wait_fence(AlienFence{}).has_value());
  CHECK(other->snapshot() == other_before);
}

TEST_CASE("a stream from runtime A is Ready on A and Failed on B and B cannot synchronize it",
          "[runtime][reference][7.7]") {
  auto a = make_reference();
  auto b = make_reference();
  auto stream = std::move(*a->create_stream());
  CHECK(a->stream_state(*stream) == StreamState::kReady);
  CHECK(b->stream_state(*stream) == StreamState::kFailed);
  CHECK(a->stream_state(AlienStream{}) == StreamState::kFailed);

  const auto foreign = b->synchronize(*stream);
  REQUIRE_FALSE(foreign.has_value());
  CHECK(foreign.error().kind() == ErrorKind::kForeignStream);
  CHECK(foreign.error().message() == "reference stream belongs to another runtime");
  CHECK(b->snapshot() == CounterSnapshot{});
  CHECK(a->synchronize(*stream).has_value());
  CHECK(a->stream_state(*stream) == StreamState::kReady);
}

TEST_CASE("encoders reject empty and out-of-bounds regions without touching anything",
          "[runtime][reference][7.7]") {
  Rig rig;
  const auto u8 = [](std::uint64_t n) { return *HostTransferLayout::create(ElementType::kU8, n); };
  const std::string message = "reference buffer region is empty or exceeds its admitted allocation";

  const auto zero_empty = rig.runtime->encode_zero(*rig.target, 4, 0);
  REQUIRE_FALSE(zero_empty.has_value());
  CHECK(zero_empty.error().kind() == ErrorKind::kRegionOutOfBounds);
  CHECK(zero_empty.error().message() == message);
  CHECK(rig.runtime->encode_zero(*rig.target, 8, 9).error().kind() == ErrorKind::kRegionOutOfBounds);
  const auto upload_past = rig.runtime->encode_upload(pattern(4), u8(4), *rig.target, 13);
  REQUIRE_FALSE(upload_past.has_value());
  CHECK(upload_past.error().kind() == ErrorKind::kRegionOutOfBounds);
  CHECK(upload_past.error().message() == message);
  // Exactly at the end is fine.
  CHECK(rig.runtime->encode_upload(pattern(4), u8(4), *rig.target, 12).has_value());
  CHECK(rig.runtime->encode_zero(*rig.target, 0, 16).has_value());
  rig.check_untouched();
}

TEST_CASE("encode_copy rejects a range past a buffer and mismatched element types",
          "[runtime][reference][7.7]") {
  Rig rig;
  auto f16 = allocate(*rig.runtime, 16, ElementType::kF16);
  rig.before = rig.runtime->snapshot();
  const auto past = rig.runtime->encode_copy(*rig.target, *rig.target, *CopyRegion::create(8, 0, 9));
  REQUIRE_FALSE(past.has_value());
  CHECK(past.error().kind() == ErrorKind::kCopyOutOfBounds);
  CHECK(past.error().message() == "invalid execution plan: copy region exceeds a buffer boundary");
  const auto mixed = rig.runtime->encode_copy(*rig.target, *f16, *CopyRegion::create(0, 0, 4));
  REQUIRE_FALSE(mixed.has_value());
  CHECK(mixed.error().kind() == ErrorKind::kCopyElementTypeMismatch);
  CHECK(mixed.error().message() ==
        "reference copy requires matching source and destination element types");
  const auto alien = rig.runtime->encode_copy(AlienBuffer{}, *rig.target, *CopyRegion::create(0, 0, 4));
  REQUIRE_FALSE(alien.has_value());
  CHECK(alien.error().kind() == ErrorKind::kForeignBufferInCommand);
  rig.check_untouched();
}

TEST_CASE("encode_upload rejects a wrong byte count, another element type and an overflowing range",
          "[runtime][reference][7.7]") {
  Rig rig;
  const auto count = rig.runtime->encode_upload(pattern(3), *HostTransferLayout::create(ElementType::kU8, 4),
                                                *rig.target, 0);
  REQUIRE_FALSE(count.has_value());
  CHECK(count.error().kind() == ErrorKind::kUploadByteCountMismatch);
  CHECK(count.error().message() ==
        "invalid execution plan: host transfer byte count does not match its element layout");
  const auto type = rig.runtime->encode_upload(pattern(4), *HostTransferLayout::create(ElementType::kF16, 2),
                                               *rig.target, 0);
  REQUIRE_FALSE(type.has_value());
  CHECK(type.error().kind() == ErrorKind::kUploadElementTypeMismatch);
  CHECK(type.error().message() == "reference upload layout differs from destination element type");
  const auto overflow = rig.runtime->encode_upload(
      pattern(4), *HostTransferLayout::create(ElementType::kU8, 4), *rig.target, kU64Max - 2);
  REQUIRE_FALSE(overflow.has_value());
  CHECK(overflow.error().kind() == ErrorKind::kUploadRangeOverflow);
  CHECK(overflow.error().message() == "reference upload range overflows");
  rig.check_untouched();
}

TEST_CASE("encode_zero rejects an overflowing range", "[runtime][reference][7.7]") {
  Rig rig;
  const auto overflow = rig.runtime->encode_zero(*rig.target, kU64Max, 2);
  REQUIRE_FALSE(overflow.has_value());
  CHECK(overflow.error().kind() == ErrorKind::kZeroRangeOverflow);
  CHECK(overflow.error().message() == "reference zero range overflows");
  rig.check_untouched();
}

TEST_CASE("uploads copy host bytes at encode time and are counted at submit time",
          "[runtime][reference]") {
  Rig rig;
  std::vector<std::uint8_t> host = pattern(4, 0x40);
  auto upload = rig.runtime->encode_upload(host, *HostTransferLayout::create(ElementType::kU8, 4),
                                           *rig.target, 6);
  REQUIRE(upload.has_value());
  host.assign(4, 0xEE);
  CHECK(rig.runtime->snapshot() == rig.before);
  submit_ok(*rig.runtime, *rig.stream, CommandBatch::singleton(std::move(*upload)));
  auto expected = rig.target_bytes;
  std::copy_n(pattern(4, 0x40).begin(), 4, expected.begin() + 6);
  CHECK(rig.runtime->snapshot().uploaded_bytes == rig.before.uploaded_bytes + 4);
  CHECK(contents(*rig.runtime, *rig.stream, *rig.target) == expected);
}

TEST_CASE("copies within one buffer behave like memmove and zero fills its range",
          "[runtime][reference]") {
  Rig rig;
  CommandBatch batch;
  batch.push(std::move(*rig.runtime->encode_copy(*rig.target, *rig.target, *CopyRegion::create(0, 2, 8))));
  batch.push(std::move(*rig.runtime->encode_zero(*rig.target, 12, 4)));
  submit_ok(*rig.runtime, *rig.stream, std::move(batch));
  auto expected = rig.target_bytes;
  std::copy_n(rig.target_bytes.begin(), 8, expected.begin() + 2);
  std::fill_n(expected.begin() + 12, 4, 0);
  CHECK(contents(*rig.runtime, *rig.stream, *rig.target) == expected);
  const auto after = rig.runtime->snapshot();
  CHECK(after.uploaded_bytes == rig.before.uploaded_bytes);
  CHECK(after.commands == rig.before.commands + 2);
}

TEST_CASE("readback honours the host offset and element type", "[runtime][reference][7.7]") {
  auto runtime = make_reference();
  auto stream = std::move(*runtime->create_stream());
  auto buffer = allocate(*runtime, 4, ElementType::kU8);
  fill(*runtime, *stream, *buffer, {10, 11, 12, 13});
  const auto before = runtime->snapshot();
  const auto region = *CopyRegion::create(1, 2, 2);
  const auto bytes =
      runtime->readback(*stream, *buffer, region, *HostTransferLayout::create(ElementType::kU8, 6));
  REQUIRE(bytes.has_value());
  CHECK(*bytes == std::vector<std::uint8_t>{0, 0, 11, 12, 0, 0});
  CHECK(runtime->snapshot().readback_bytes == before.readback_bytes + 2);

  const auto mid = runtime->snapshot();
  const auto f16 =
      runtime->readback(*stream, *buffer, region, *HostTransferLayout::create(ElementType::kF16, 3));
  REQUIRE_FALSE(f16.has_value());
  CHECK(f16.error().kind() == ErrorKind::kReadbackElementTypeMismatch);
  CHECK(f16.error().message() == "reference readback layout differs from source element type");
  CHECK(runtime->snapshot() == mid);
}

TEST_CASE("readback rejects foreign objects and ranges outside the source or host layout",
          "[runtime][reference][7.7]") {
  Rig rig;
  auto other = make_reference();
  auto other_stream = std::move(*other->create_stream());
  const auto u8 = [](std::uint64_t n) { return *HostTransferLayout::create(ElementType::kU8, n); };
  const auto check_error = [&](Result<std::vector<std::uint8_t>> result, ErrorKind kind,
                               std::string_view message) {
    REQUIRE_FALSE(result.has_value());
    CHECK(result.error().kind() == kind);
    CHECK(result.error().message() == message);
  };
  const std::string_view foreign = "reference readback belongs to another runtime";
  check_error(rig.runtime->readback(*other_stream, *rig.target, *CopyRegion::create(0, 0, 4), u8(4)),
              ErrorKind::kReadbackForeign, foreign);
  check_error(other->readback(*other_stream, *rig.target, *CopyRegion::create(0, 0, 4), u8(4)),
              ErrorKind::kReadbackForeign, foreign);
  check_error(rig.runtime->readback(*rig.stream, AlienBuffer{}, *CopyRegion::create(0, 0, 4), u8(4)),
              ErrorKind::kReadbackForeign, foreign);
  check_error(rig.runtime->readback(*rig.stream, *rig.target, *CopyRegion::create(13, 0, 4), u8(4)),
              ErrorKind::kReadbackSourceOutOfBounds,
              "reference readback source exceeds its admitted allocation");
  check_error(rig.runtime->readback(*rig.stream, *rig.target, *CopyRegion::create(0, 1, 4), u8(4)),
              ErrorKind::kReadbackDestinationOutOfBounds,
              "reference readback destination exceeds its host layout");
  check_error(rig.runtime->readback(*rig.stream, *rig.target,
                                    *CopyRegion::create(0, kU64Max - 4, 4), u8(8)),
              ErrorKind::kReadbackDestinationOutOfBounds,
              "reference readback destination exceeds its host layout");
  CHECK(other->snapshot() == CounterSnapshot{});
  rig.check_untouched();
}

TEST_CASE("dense-linear encoding rejects missing work, bad launch counts, wrong ranges and unshared weights",
          "[runtime][reference][7.7]") {
  Rig rig;
  auto input = allocate(*rig.runtime, 8, ElementType::kF16);
  auto weight = allocate(*rig.runtime, 8, ElementType::kF16);
  auto weight_copy = allocate(*rig.runtime, 8, ElementType::kF16);
  auto output = allocate(*rig.runtime, 8, ElementType::kF16);
  rig.before = rig.runtime->snapshot();
  const auto launch = [&](const Buffer* w, std::uint64_t in_offset, std::uint64_t rows) {
    return DenseLinearLaunch{{input.get(), in_offset, 4 * rows}, {w, 0, 8},
                             {output.get(), in_offset, 4 * rows}, rows, 2, 2};
  };
  const auto check_error = [&](std::span<const DenseLinearLaunch> launches, std::uint32_t n,
                               std::uint64_t tokens, ErrorKind kind, std::string_view message) {
    const auto result = rig.runtime->encode_dense_linear({launches, n, tokens});
    REQUIRE_FALSE(result.has_value());
    CHECK(result.error().kind() == kind);
    CHECK(result.error().message() == message);
  };
  const std::string_view no_work = "reference dense-linear attribution has no participants or work";
  const DenseLinearLaunch one[] = {launch(weight.get(), 0, 1)};
  check_error({}, 1, 1, ErrorKind::kDenseLinearNoWork, no_work);
  check_error(one, 0, 1, ErrorKind::kDenseLinearNoWork, no_work);
  check_error(one, 1, 0, ErrorKind::kDenseLinearNoWork, no_work);

  const DenseLinearLaunch two[] = {launch(weight.get(), 0, 1), launch(weight.get(), 4, 1)};
  check_error(two, 3, 2, ErrorKind::kDenseLinearLaunchCount,
              "reference dense-linear launches are neither one packed launch nor one per "
              "participant");

  const DenseLinearLaunch unshared[] = {launch(weight.get(), 0, 1), launch(weight_copy.get(), 4, 1)};
  check_error(unshared, 2, 2, ErrorKind::kDenseLinearWeightNotShared,
              "reference dense-linear participants do not share one weight");

  DenseLinearLaunch wrong_rows = launch(weight.get(), 0, 1);
  wrong_rows.rows = 2;
  check_error({&wrong_rows, 1}, 1, 1, ErrorKind::kDenseLinearRangesDiffer,
              "reference dense-linear physical ranges differ from runtime work");
  DenseLinearLaunch zero_rows = launch(weight.get(), 0, 1);
  zero_rows.rows = 0;
  check_error({&zero_rows, 1}, 1, 1, ErrorKind::kDenseLinearRangesDiffer,
              "reference dense-linear physical ranges differ from runtime work");
  DenseLinearLaunch u8_output = launch(weight.get(), 0, 1);
  u8_output.output = {rig.target.get(), 0, 4};
  check_error({&u8_output, 1}, 1, 1, ErrorKind::kDenseLinearRangesDiffer,
              "reference dense-linear physical ranges differ from runtime work");
  DenseLinearLaunch huge = launch(weight.get(), 0, 1);
  huge.rows = kU64Max;
  check_error({&huge, 1}, 1, 1, ErrorKind::kDenseLinearRangesDiffer,
              "reference dense-linear input size overflows");
  DenseLinearLaunch past_end = launch(weight.get(), 4, 2);
  check_error({&past_end, 1}, 1, 2, ErrorKind::kRegionOutOfBounds,
              "reference buffer region is empty or exceeds its admitted allocation");
  DenseLinearLaunch alien = launch(weight.get(), 0, 1);
  AlienBuffer alien_buffer;
  alien.weight.buffer = &alien_buffer;
  check_error({&alien, 1}, 1, 1, ErrorKind::kForeignBufferInCommand,
              "reference command contains a buffer from another runtime");
  rig.check_untouched();
}

TEST_CASE("describe_error wraps the message as a reference_runtime device report",
          "[runtime][reference][7.7]") {
  auto runtime = make_reference();
  const auto report = runtime->describe_error(
      RuntimeError(ErrorKind::kEmptyBatch, "reference runtime cannot submit an empty batch"));
  REQUIRE(report.has_value());
  CHECK(report->code() == "reference_runtime");
  CHECK(report->message() == "reference runtime cannot submit an empty batch");
  CHECK_FALSE(report->retryable());
  const auto blank = runtime->describe_error(RuntimeError(ErrorKind::kInternal, "  "));
  REQUIRE_FALSE(blank.has_value());
  CHECK(blank.error().kind() == VNextErrorKind::kInvalidExecutionPlan);
  CHECK_FALSE(runtime->describe_error(RuntimeError(ErrorKind::kInternal, "nul\x01")).has_value());
}

TEST_CASE("the default registry opens the reference runtime and names the known ones on a miss",
          "[runtime][registry]") {
  const RuntimeRegistry& registry = default_registry();
  CHECK(registry.contains("reference"));
  CHECK(registry.names() == std::vector<std::string>{"reference"});
  CHECK_FALSE(registry.summary("reference").empty());
  CHECK(registry.summary("nope").empty());

  auto runtime = registry.open("reference", {"device.registry.0"});
  REQUIRE(runtime.has_value());
  CHECK((*runtime)->descriptor().id.str() == "device.registry.0");
  CHECK((*runtime)->descriptor().device_class == DeviceClass::kReference);
  CHECK((*runtime)->counter_snapshot() == CounterSnapshot{});

  const auto unknown = registry.open("cuda");
  REQUIRE_FALSE(unknown.has_value());
  CHECK(unknown.error().kind() == ErrorKind::kUnknownRuntime);
  CHECK(unknown.error().message() == "unknown runtime `cuda`; known runtimes: reference");
  const auto bad_id = registry.open("reference", {"device zero"});
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
  using reference::detail::InstanceCounter;
  using reference::detail::exchange_next_instance;
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
