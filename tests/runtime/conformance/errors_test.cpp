// Conformance: every row of the error table (spec 7.7) that a caller can trigger through the
// interface, with its exact ErrorKind, and "nothing ran, no counter moved, contents and stream
// state unchanged" after every failure (Rig::check_untouched).
//
// Rows that cannot be reached through the public interface and are therefore not here: allocate's
// usize and aligned-address rows (BufferRequest refuses size/alignment 0 and non-powers of two;
// u64 fits usize on this host), attribution index > u32 (2^32 entries), a non-portable native
// operation label and empty/unordered attribution rows (the runtime's own labels and enumeration),
// readback's usize/length-mismatch rows. Identity exhaustion and the construction rows are the
// reference's and stay in tests/runtime/reference_test.cpp.
//
// Over ~600 lines on purpose: one case per reachable row of the spec's error table, in the table's
// order, so the file reads beside the spec.
#include "conformance/conformance.h"

#include <limits>

#include "vtrace/runtime/immediate.h"

using namespace vtrace::conformance;
using namespace vtrace::runtime;
using vtrace::runtime::testing::allocate;
using vtrace::runtime::testing::contents;
using vtrace::runtime::testing::fill;
using vtrace::runtime::testing::pattern;

namespace {

constexpr std::uint64_t kU64Max = std::numeric_limits<std::uint64_t>::max();

}  // namespace

// ---- allocate / admit ---------------------------------------------------------------------------

TEST_CASE("allocate rejects a permit that was already consumed and counts nothing",
          "[conformance][7.7][admission]") {
  VTRACE_CONFORMANCE_OPEN(runtime, "device.conformance.0");
  AllocationPermit permit = admit(*runtime, 8, ElementType::kU8, "resource.x");
  AllocationPermit taken = std::move(permit);
  const auto result = runtime->allocate(std::move(permit));  // NOLINT(bugprone-use-after-move)
  check_failed(result, ErrorKind::kAdmissionInvalidRequest);
  CHECK(counters(*runtime) == CounterSnapshot{});
  CHECK(runtime->allocate(std::move(taken)).has_value());
  CHECK(counters(*runtime).allocations == 1);
}

TEST_CASE("allocate rejects a permit admitted by another runtime and the issuer gets its capacity back",
          "[conformance][7.7][admission][new]") {
  VTRACE_CONFORMANCE_OPEN(issuer, "device.conformance.0");
  VTRACE_CONFORMANCE_OPEN(other, "device.conformance.1");
  const std::uint64_t capacity = issuer->descriptor().total_memory_bytes;
  const CounterSnapshot issuer_before = counters(*issuer);
  const CounterSnapshot other_before = counters(*other);
  {
    AllocationPermit permit = admit(*issuer, 1 << 20);
    const auto result = other->allocate(std::move(permit));
    check_failed(result, ErrorKind::kAdmissionForeignPermit);
  }
  CHECK(counters(*issuer) == issuer_before);
  CHECK(counters(*other) == other_before);
  // The issuer's whole capacity is admissible again: the foreign permit's bytes came back.
  auto request = BufferRequest::create(*ResourceId::create("resource.all"), capacity, 16,
                                       BufferUsage::kActivations, ElementType::kU8);
  REQUIRE(request.has_value());
  CHECK(issuer->admit(*request).has_value());
  // And the refusing runtime reserved nothing either.
  auto other_request =
      BufferRequest::create(*ResourceId::create("resource.all"), other->descriptor().total_memory_bytes,
                            16, BufferUsage::kActivations, ElementType::kU8);
  CHECK(other->admit(*other_request).has_value());
}

TEST_CASE("admission over capacity fails and changes nothing, and capacity returns after release",
          "[conformance][7.7][admission]") {
  VTRACE_CONFORMANCE_OPEN(runtime, "device.conformance.0");
  const std::uint64_t capacity = runtime->descriptor().total_memory_bytes;
  REQUIRE(capacity >= (64ull << 20));
  const auto request = [](std::uint64_t size) {
    return *BufferRequest::create(*ResourceId::create("resource.big"), size, 16,
                                  BufferUsage::kActivations, ElementType::kU8);
  };
  // A quarter of the capacity stays free: 1 MiB of real storage (held by a command below) plus a
  // held permit for the rest of three quarters.
  const std::uint64_t quarter = capacity / 4;
  const std::uint64_t storage_bytes = 1ull << 20;
  auto big = runtime->allocate(std::move(*runtime->admit(request(storage_bytes))));
  REQUIRE(big.has_value());
  auto pad = runtime->admit(request(capacity - quarter - storage_bytes));
  REQUIRE(pad.has_value());
  auto command = runtime->encode_zero(**big, 0, 16);
  REQUIRE(command.has_value());
  const auto before = counters(*runtime);

  const auto refused = runtime->admit(request(2 * quarter));
  check_failed(refused, ErrorKind::kAdmissionOverCapacity,
               "admission of `resource.big` needs 33554432 bytes but 16777216 of 67108864 remain");
  CHECK(counters(*runtime) == before);
  // Nothing was reserved by the refusal: exactly the remaining capacity is still admissible.
  CHECK(runtime->admit(request(quarter)).has_value());
  CHECK_FALSE(runtime->admit(request(quarter + 1)).has_value());

  // The command keeps the storage (and its reservation) alive after the handle is gone.
  big->reset();
  CHECK(counters(*runtime).live_allocations == 1);
  CHECK_FALSE(runtime->admit(request(quarter + 1)).has_value());
  command->reset();
  CHECK(counters(*runtime).live_allocations == 0);
  CHECK(runtime->admit(request(quarter + storage_bytes)).has_value());
  pad = std::unexpected(RuntimeError(ErrorKind::kInternal, "permit dropped"));  // drops the permit
  CHECK(runtime->admit(request(capacity)).has_value());
}

// ---- streams, fences, synchronize ---------------------------------------------------------------

TEST_CASE("a stream from runtime A is Ready on A and Failed on B and B cannot synchronize it",
          "[conformance][7.7][streams]") {
  VTRACE_CONFORMANCE_OPEN(a, "device.conformance.0");
  VTRACE_CONFORMANCE_OPEN(b, "device.conformance.1");
  auto stream = stream_of(*a);
  CHECK(a->stream_state(*stream) == StreamState::kReady);
  CHECK(b->stream_state(*stream) == StreamState::kFailed);
  CHECK(a->stream_state(AlienStream{}) == StreamState::kFailed);

  check_failed(b->synchronize(*stream), ErrorKind::kForeignStream,
               "reference stream belongs to another runtime");
  AlienStream alien;
  check_failed(a->synchronize(alien), ErrorKind::kForeignStream);
  CHECK(counters(*b) == CounterSnapshot{});
  CHECK(a->synchronize(*stream).has_value());
  CHECK(a->stream_state(*stream) == StreamState::kReady);
  CHECK(b->stream_state(*stream) == StreamState::kFailed);
}

TEST_CASE("fences of another runtime or class are indeterminate and have no attribution",
          "[conformance][7.7][fences]") {
  VTRACE_CONFORMANCE_RIG(rig);
  CommandBatch batch;
  batch.require_logical_execution_path_attribution();
  batch.push_initialization(rig.upload_to_target());
  auto fence = rig.rt().submit(*rig.stream, std::move(batch));
  REQUIRE(fence.has_value());
  REQUIRE(rig.rt().wait_fence(**fence).has_value());

  VTRACE_CONFORMANCE_OPEN(other, "device.conformance.1");
  const CounterSnapshot other_before = counters(*other);
  // Always Indeterminate, never Pending, whatever the fence's state on its own runtime.
  const auto foreign_query = other->query_fence(**fence);
  REQUIRE(std::holds_alternative<RuntimeError>(foreign_query));
  check_error(std::get<RuntimeError>(foreign_query), ErrorKind::kForeignFence,
              "reference fence belongs to another runtime");
  CHECK_FALSE(is_pending(foreign_query));
  const auto foreign_wait = other->wait_fence(**fence);
  REQUIRE_FALSE(foreign_wait.has_value());
  check_error(foreign_wait.error().error(), ErrorKind::kForeignFence,
              "reference fence belongs to another runtime");
  CHECK_FALSE(other->submission_attribution(**fence).has_value());

  const auto alien_query = rig.rt().query_fence(AlienFence{});
  REQUIRE(std::holds_alternative<RuntimeError>(alien_query));
  CHECK(std::get<RuntimeError>(alien_query).kind() == ErrorKind::kForeignFence);
  const auto alien_wait = rig.rt().wait_fence(AlienFence{});
  REQUIRE_FALSE(alien_wait.has_value());
  CHECK(alien_wait.error().error().kind() == ErrorKind::kForeignFence);
  CHECK_FALSE(rig.rt().submission_attribution(AlienFence{}).has_value());
  CHECK(counters(*other) == other_before);
  // The owner still has its attribution.
  CHECK(rig.rt().submission_attribution(**fence).has_value());
}

// ---- encoders -----------------------------------------------------------------------------------

TEST_CASE("encoders reject empty and out-of-bounds regions without touching anything",
          "[conformance][7.7][encode]") {
  VTRACE_CONFORMANCE_RIG(rig);
  const std::string_view message = "reference buffer region is empty or exceeds its admitted allocation";
  check_failed(rig.rt().encode_zero(*rig.target, 4, 0), ErrorKind::kRegionOutOfBounds, message);
  check_failed(rig.rt().encode_zero(*rig.target, 8, 9), ErrorKind::kRegionOutOfBounds, message);
  check_failed(rig.rt().encode_zero(*rig.target, 16, 1), ErrorKind::kRegionOutOfBounds, message);
  check_failed(rig.rt().encode_upload(pattern(4), layout(ElementType::kU8, 4), *rig.target, 13),
               ErrorKind::kRegionOutOfBounds, message);
  // Exactly at the end is fine.
  CHECK(rig.rt().encode_upload(pattern(4), layout(ElementType::kU8, 4), *rig.target, 12).has_value());
  CHECK(rig.rt().encode_zero(*rig.target, 0, 16).has_value());
  rig.check_untouched();
}

TEST_CASE("encode_copy rejects ranges past or overflowing a buffer, mismatched element types and foreign classes",
          "[conformance][7.7][encode]") {
  VTRACE_CONFORMANCE_RIG(rig);
  auto f16 = allocate(rig.rt(), 16, ElementType::kF16);
  rig.mark();
  check_failed(rig.rt().encode_copy(*rig.target, *rig.target, region(8, 0, 9)),
               ErrorKind::kCopyOutOfBounds,
               "invalid execution plan: copy region exceeds a buffer boundary");
  check_failed(rig.rt().encode_copy(*rig.target, *rig.target, region(0, 8, 9)),
               ErrorKind::kCopyOutOfBounds,
               "invalid execution plan: copy region exceeds a buffer boundary");
  check_failed(rig.rt().encode_copy(*rig.target, *rig.target, region(kU64Max - 3, 0, 3)),
               ErrorKind::kCopyOutOfBounds,
               "invalid execution plan: copy region exceeds a buffer boundary");
  check_failed(rig.rt().encode_copy(*rig.target, *rig.target, region(0, kU64Max - 3, 3)),
               ErrorKind::kCopyOutOfBounds,
               "invalid execution plan: copy region exceeds a buffer boundary");
  // ("source/destination copy range overflows u64" cannot be reached: CopyRegion::create refuses
  // a region whose end overflows.)
  CHECK_FALSE(CopyRegion::create(kU64Max - 2, 0, 4).has_value());
  CHECK_FALSE(CopyRegion::create(0, kU64Max - 2, 4).has_value());
  check_failed(rig.rt().encode_copy(*rig.target, *f16, region(0, 0, 4)),
               ErrorKind::kCopyElementTypeMismatch,
               "reference copy requires matching source and destination element types");
  check_failed(rig.rt().encode_copy(AlienBuffer{}, *rig.target, region(0, 0, 4)),
               ErrorKind::kForeignBufferInCommand,
               "reference command contains a buffer from another runtime");
  check_failed(rig.rt().encode_copy(*rig.target, AlienBuffer{}, region(0, 0, 4)),
               ErrorKind::kForeignBufferInCommand);
  rig.check_untouched();
}

TEST_CASE("encode_upload rejects a wrong byte count, another element type, an overflowing range and foreign classes",
          "[conformance][7.7][encode]") {
  VTRACE_CONFORMANCE_RIG(rig);
  check_failed(rig.rt().encode_upload(pattern(3), layout(ElementType::kU8, 4), *rig.target, 0),
               ErrorKind::kUploadByteCountMismatch,
               "invalid execution plan: host transfer byte count does not match its element layout");
  check_failed(rig.rt().encode_upload(pattern(5), layout(ElementType::kU8, 4), *rig.target, 0),
               ErrorKind::kUploadByteCountMismatch);
  check_failed(rig.rt().encode_upload(pattern(4), layout(ElementType::kF16, 2), *rig.target, 0),
               ErrorKind::kUploadElementTypeMismatch,
               "reference upload layout differs from destination element type");
  check_failed(
      rig.rt().encode_upload(pattern(4), layout(ElementType::kU8, 4), *rig.target, kU64Max - 2),
      ErrorKind::kUploadRangeOverflow, "reference upload range overflows");
  check_failed(rig.rt().encode_upload(pattern(4), layout(ElementType::kU8, 4), AlienBuffer{}, 0),
               ErrorKind::kForeignBufferInCommand);
  rig.check_untouched();
}

TEST_CASE("encode_zero rejects an overflowing range, a zero length and foreign classes",
          "[conformance][7.7][encode]") {
  VTRACE_CONFORMANCE_RIG(rig);
  check_failed(rig.rt().encode_zero(*rig.target, kU64Max, 2), ErrorKind::kZeroRangeOverflow,
               "reference zero range overflows");
  check_failed(rig.rt().encode_zero(*rig.target, 0, 0), ErrorKind::kRegionOutOfBounds,
               "reference buffer region is empty or exceeds its admitted allocation");
  check_failed(rig.rt().encode_zero(AlienBuffer{}, 0, 4), ErrorKind::kForeignBufferInCommand);
  rig.check_untouched();
}

// ---- submit -------------------------------------------------------------------------------------

TEST_CASE("submission requirements: only timing Off with an adaptive or eager path and no capture",
          "[conformance][7.7][submit]") {
  using Path = ComputePathRequirement;
  SECTION("accepted: Off with Adaptive or EagerOnly, no capture") {
    for (Path path : {Path::kAdaptive, Path::kEagerOnly}) {
      VTRACE_CONFORMANCE_RIG(rig);
      CommandBatch batch(TimingMode::kOff, path);
      batch.push_initialization(rig.upload_to_target());
      auto fence = rig.rt().submit(*rig.stream, std::move(batch));
      REQUIRE(fence.has_value());
      REQUIRE(rig.rt().wait_fence(**fence).has_value());
      CHECK(counters(rig.rt()).submissions == rig.before.submissions + 1);
    }
  }
  SECTION("rejected: a replay-required path, whatever its declared eager indices") {
    VTRACE_CONFORMANCE_RIG(rig);
    CommandBatch batch(TimingMode::kOff, Path::kReplayedWithDeclaredEagerBoundaries);
    REQUIRE(batch.set_declared_eager_compute_node_indices({0, 2}).has_value());
    batch.push_initialization(rig.upload_to_target());
    rig.check_not_submitted(std::move(batch), ErrorKind::kReplayRequiredUnsupported);
  }
  SECTION("rejected: a replay-required path") {
    for (Path path : {Path::kReplayedOnly, Path::kReplayedWithDeclaredEagerBoundaries}) {
      VTRACE_CONFORMANCE_RIG(rig);
      CommandBatch batch(TimingMode::kOff, path);
      batch.push_initialization(rig.upload_to_target());
      rig.check_not_submitted(std::move(batch), ErrorKind::kReplayRequiredUnsupported,
                              "reference runtime cannot satisfy a replay-required compute submission");
    }
  }
  SECTION("rejected: any timing mode but Off, before the path is looked at") {
    for (TimingMode timing : {TimingMode::kCompletion, TimingMode::kReplay, TimingMode::kKernel,
                              TimingMode::kVerification}) {
      VTRACE_CONFORMANCE_RIG(rig);
      CommandBatch batch(timing, Path::kReplayedOnly);
      batch.push_initialization(rig.upload_to_target());
      rig.check_not_submitted(std::move(batch), ErrorKind::kTimingUnsupported,
                              "reference runtime does not provide device timing evidence");
    }
  }
  SECTION("rejected: Off, Adaptive with a reusable capture") {
    VTRACE_CONFORMANCE_RIG(rig);
    CommandBatch batch;
    REQUIRE(batch.set_reusable_execution_capture(
        *ReusableExecutionCapture::create(*ProgramId::create("program.p"), 1, {}, {})));
    batch.push_initialization(rig.upload_to_target());
    rig.check_not_submitted(std::move(batch), ErrorKind::kReusableCaptureUnsupported,
                            "reference runtime cannot consume reusable execution capture metadata");
  }
}

TEST_CASE("submit rejects a stream of another runtime or class and moves no counter on either",
          "[conformance][7.7][submit]") {
  VTRACE_CONFORMANCE_RIG(rig);
  VTRACE_CONFORMANCE_OPEN(other, "device.conformance.1");
  auto foreign_stream = stream_of(*other);
  rig.check_not_submitted_on(*foreign_stream, CommandBatch::singleton(rig.upload_to_target()),
                             ErrorKind::kForeignStream,
                             "reference stream belongs to another runtime");
  AlienStream alien;
  rig.check_not_submitted_on(alien, CommandBatch::singleton(rig.upload_to_target()),
                             ErrorKind::kForeignStream);
  CHECK(counters(*other) == CounterSnapshot{});
  CHECK(other->stream_state(*foreign_stream) == StreamState::kReady);
}

TEST_CASE("submit rejects an empty batch and moves no counter", "[conformance][7.7][submit]") {
  VTRACE_CONFORMANCE_RIG(rig);
  rig.check_not_submitted(CommandBatch{}, ErrorKind::kEmptyBatch,
                          "reference runtime cannot submit an empty batch");
}

TEST_CASE("submit rejects logical work on a provider command that already has participants",
          "[conformance][7.7][submit]") {
  VTRACE_CONFORMANCE_RIG(rig);
  const auto buffers = dense_buffers(rig.rt(), 1, 2, 2);
  auto dense = dense_command(rig.rt(), buffers);
  rig.mark();
  CommandBatch batch;
  batch.push_initialization(rig.upload_to_target());
  batch.push_node_initialization(0, *LogicalWork::create(BatchingForm::kScalar, 1, 1),
                                 std::move(dense));
  rig.check_not_submitted(std::move(batch), ErrorKind::kLogicalWorkConflict,
                          "reference core logical work cannot replace provider command attribution");
}

TEST_CASE("submit rejects a command that holds a buffer of another runtime",
          "[conformance][7.7][submit]") {
  VTRACE_CONFORMANCE_RIG(rig);
  VTRACE_CONFORMANCE_OPEN(other, "device.conformance.1");
  auto foreign = allocate(*other, 16, ElementType::kU8);
  auto foreign_f16 = allocate(*other, 8, ElementType::kF16);
  const auto other_before = counters(*other);
  SECTION("a copy from a foreign buffer") {
    // Encoders do not check ownership (spec 7.3); submit does (7.4 step 6).
    auto copy = rig.rt().encode_copy(*foreign, *rig.target, region(0, 0, 16));
    REQUIRE(copy.has_value());
    CommandBatch batch;
    batch.push_initialization(rig.upload_to_target());
    batch.push(std::move(*copy));
    rig.check_not_submitted(std::move(batch), ErrorKind::kForeignBufferInCommand,
                            "reference command contains a buffer from another runtime");
  }
  SECTION("a copy into a foreign buffer") {
    auto copy = rig.rt().encode_copy(*rig.target, *foreign, region(0, 0, 16));
    REQUIRE(copy.has_value());
    rig.check_not_submitted(CommandBatch::singleton(std::move(*copy)),
                            ErrorKind::kForeignBufferInCommand);
  }
  SECTION("an upload and a zero of a foreign buffer") {
    auto upload = rig.rt().encode_upload(pattern(16), layout(ElementType::kU8, 16), *foreign, 0);
    REQUIRE(upload.has_value());
    rig.check_not_submitted(CommandBatch::singleton(std::move(*upload)),
                            ErrorKind::kForeignBufferInCommand);
    auto zero = rig.rt().encode_zero(*foreign, 0, 16);
    REQUIRE(zero.has_value());
    rig.check_not_submitted(CommandBatch::singleton(std::move(*zero)),
                            ErrorKind::kForeignBufferInCommand);
  }
  SECTION("a dense-linear launch whose input, weight or output is foreign") {
    for (int foreign_role = 0; foreign_role < 3; ++foreign_role) {
      INFO("foreign role " << foreign_role);
      const auto buffers = dense_buffers(rig.rt(), 1, 2, 2);
      DenseLinearLaunch launch = buffers.launch();
      BufferRegionRef& ref = foreign_role == 0 ? launch.input
                             : foreign_role == 1 ? launch.weight
                                                 : launch.output;
      ref.buffer = foreign_f16.get();  // 8 bytes: holds the 4-byte input/output or the weight
      auto dense = rig.rt().encode_dense_linear({{&launch, 1}, 1, 1});
      REQUIRE(dense.has_value());
      rig.mark();
      rig.check_not_submitted(CommandBatch::singleton(std::move(*dense)),
                              ErrorKind::kForeignBufferInCommand);
    }
  }
  SECTION("a command encoded by the other runtime") {
    // Its class is this runtime's (step 5 passes), its regions are the other's (step 6).
    auto zero = other->encode_zero(*foreign, 0, 16);
    REQUIRE(zero.has_value());
    rig.check_not_submitted(CommandBatch::singleton(std::move(*zero)),
                            ErrorKind::kForeignBufferInCommand);
  }
  CHECK(counters(*other) == other_before);
  CHECK(contents(*other, *stream_of(*other), *foreign) == std::vector<std::uint8_t>(16, 0));
}

TEST_CASE("submit rejects a command of another class", "[conformance][7.7][submit]") {
  VTRACE_CONFORMANCE_RIG(rig);
  CommandBatch batch;
  batch.push_initialization(rig.upload_to_target());
  batch.push(std::make_unique<AlienCommand>());
  rig.check_not_submitted(std::move(batch), ErrorKind::kForeignCommand,
                          "reference runtime cannot submit a command it did not encode");
}

TEST_CASE("submit rejects a null command: a foreign command, not undefined behaviour",
          "[conformance][7.7][submit]") {
  VTRACE_CONFORMANCE_RIG(rig);
  SECTION("through push_compute") {
    CommandBatch batch;
    batch.push_initialization(rig.upload_to_target());
    batch.push_compute(nullptr);
    rig.check_not_submitted(std::move(batch), ErrorKind::kForeignCommand,
                            "reference runtime cannot submit a null command");
  }
  SECTION("through push_entry") {
    CommandBatch batch;
    batch.push_initialization(rig.upload_to_target());
    batch.push_entry({CommandPhase::kCompute, std::nullopt, std::nullopt, nullptr});
    rig.check_not_submitted(std::move(batch), ErrorKind::kForeignCommand,
                            "reference runtime cannot submit a null command");
  }
}

TEST_CASE("submit rejects logical work on any entry but a node's initialization",
          "[conformance][7.7][submit][3.9]") {
  VTRACE_CONFORMANCE_RIG(rig);
  const auto work = *LogicalWork::create(BatchingForm::kPacked, 7, 3);
  const auto refused = [&](CommandPhase phase, std::optional<std::uint32_t> node) {
    INFO("phase " << static_cast<int>(phase) << ", node " << node.value_or(999));
    rig.mark();
    CommandBatch batch;
    batch.push_initialization(rig.upload_to_target(0x31));
    batch.push_entry({phase, node, work, rig.upload_to_target(0x32)});
    rig.check_not_submitted(std::move(batch), ErrorKind::kLogicalWorkConflict,
                            "reference logical work is attached only to a node's initialization "
                            "entry");
  };
  refused(CommandPhase::kCompute, std::nullopt);
  refused(CommandPhase::kCompute, 0);
  refused(CommandPhase::kResultBinding, 0);
  refused(CommandPhase::kDynamicBinding, 0);
  refused(CommandPhase::kInitialization, std::nullopt);
  // The one legal place (push_node_initialization builds exactly this entry).
  CommandBatch batch;
  batch.push_entry({CommandPhase::kInitialization, 0, work, rig.upload_to_target(0x33)});
  CHECK(rig.rt().submit(*rig.stream, std::move(batch)).has_value());
}

TEST_CASE("attribution rejects a node-scoped transfer without participants",
          "[conformance][7.7][submit]") {
  VTRACE_CONFORMANCE_RIG(rig);
  const auto buffers = dense_buffers(rig.rt(), 1, 2, 2);
  SECTION("a result binding of push_operation") {
    EncodedOperation op;
    op.compute = dense_command(rig.rt(), buffers);
    op.result_bindings.push_back(rig.upload_to_target());
    rig.mark();
    CommandBatch batch;
    batch.push_operation(4, std::move(op));
    batch.require_logical_execution_path_attribution();
    rig.check_not_submitted(std::move(batch), ErrorKind::kAttributionInvalidMetadata,
                            "reference command attribution has invalid native work metadata");
  }
  SECTION("a dynamic binding of push_operation") {
    EncodedOperation op;
    op.dynamic_bindings.push_back(rig.upload_to_target());
    op.compute = dense_command(rig.rt(), buffers);
    rig.mark();
    CommandBatch batch;
    batch.require_logical_execution_path_attribution();
    batch.push_operation(1, std::move(op));
    rig.check_not_submitted(std::move(batch), ErrorKind::kAttributionInvalidMetadata);
  }
  SECTION("the same batch without the requirement is accepted") {
    EncodedOperation op;
    op.compute = dense_command(rig.rt(), buffers);
    op.result_bindings.push_back(rig.upload_to_target());
    CommandBatch batch;
    batch.push_operation(4, std::move(op));
    auto fence = rig.rt().submit(*rig.stream, std::move(batch));
    REQUIRE(fence.has_value());
    REQUIRE(rig.rt().wait_fence(**fence).has_value());
  }
}

// ---- readback -----------------------------------------------------------------------------------

TEST_CASE("readback rejects foreign objects and ranges outside the source or host layout",
          "[conformance][7.7][readback]") {
  VTRACE_CONFORMANCE_RIG(rig);
  VTRACE_CONFORMANCE_OPEN(other, "device.conformance.1");
  auto other_stream = stream_of(*other);
  auto other_buffer = allocate(*other, 16, ElementType::kU8);
  const auto other_before = counters(*other);
  const auto u8 = [](std::uint64_t n) { return layout(ElementType::kU8, n); };
  const std::string_view foreign = "reference readback belongs to another runtime";
  check_failed(rig.rt().readback(*other_stream, *rig.target, region(0, 0, 4), u8(4)),
               ErrorKind::kReadbackForeign, foreign);
  check_failed(other->readback(*other_stream, *rig.target, region(0, 0, 4), u8(4)),
               ErrorKind::kReadbackForeign, foreign);
  check_failed(rig.rt().readback(*rig.stream, *other_buffer, region(0, 0, 4), u8(4)),
               ErrorKind::kReadbackForeign, foreign);
  check_failed(rig.rt().readback(*rig.stream, AlienBuffer{}, region(0, 0, 4), u8(4)),
               ErrorKind::kReadbackForeign, foreign);
  // immediate::readback names the buffer the same way (it sizes the layout from the buffer's
  // descriptor, which the runtime does not have for either).
  check_failed(immediate::readback(rig.rt(), *rig.stream, AlienBuffer{}),
               ErrorKind::kReadbackForeign, foreign);
  check_failed(immediate::readback(rig.rt(), *rig.stream, *other_buffer),
               ErrorKind::kReadbackForeign, foreign);
  AlienStream alien_stream;
  check_failed(rig.rt().readback(alien_stream, *rig.target, region(0, 0, 4), u8(4)),
               ErrorKind::kReadbackForeign, foreign);
  check_failed(rig.rt().readback(*rig.stream, *rig.target, region(13, 0, 4), u8(4)),
               ErrorKind::kReadbackSourceOutOfBounds,
               "reference readback source exceeds its admitted allocation");
  check_failed(rig.rt().readback(*rig.stream, *rig.target, region(kU64Max - 3, 0, 3), u8(4)),
               ErrorKind::kReadbackSourceOutOfBounds,
               "reference readback source exceeds its admitted allocation");
  check_failed(rig.rt().readback(*rig.stream, *rig.target, region(0, 1, 4), u8(4)),
               ErrorKind::kReadbackDestinationOutOfBounds,
               "reference readback destination exceeds its host layout");
  check_failed(rig.rt().readback(*rig.stream, *rig.target, region(0, kU64Max - 4, 4), u8(8)),
               ErrorKind::kReadbackDestinationOutOfBounds,
               "reference readback destination exceeds its host layout");
  check_failed(rig.rt().readback(*rig.stream, *rig.target, region(0, 0, 4), layout(ElementType::kF16, 2)),
               ErrorKind::kReadbackElementTypeMismatch,
               "reference readback layout differs from source element type");
  CHECK(counters(*other) == other_before);
  rig.check_untouched();
}

// ---- dense linear encoding ----------------------------------------------------------------------

TEST_CASE("dense-linear encoding rejects missing work, bad launch counts, wrong ranges and unshared weights",
          "[conformance][7.7][dense_linear]") {
  VTRACE_CONFORMANCE_RIG(rig);
  auto input = allocate(rig.rt(), 8, ElementType::kF16);
  auto weight = allocate(rig.rt(), 8, ElementType::kF16);
  auto weight_copy = allocate(rig.rt(), 8, ElementType::kF16);
  auto output = allocate(rig.rt(), 8, ElementType::kF16);
  rig.mark();
  // Every request below has token_count equal to the launches' rows (the token-count rule is a
  // test of its own) unless it is about missing work.
  const auto launch = [&](const Buffer* w, std::uint64_t in_offset, std::uint64_t rows) {
    return DenseLinearLaunch{{input.get(), in_offset, 4 * rows}, {w, 0, 8},
                             {output.get(), in_offset, 4 * rows}, rows, 2, 2};
  };
  const auto check = [&](std::span<const DenseLinearLaunch> launches, std::uint32_t n,
                         std::uint64_t tokens, ErrorKind kind, std::string_view message = {}) {
    check_failed(rig.rt().encode_dense_linear({launches, n, tokens}), kind, message);
  };
  const std::string_view no_work = "reference dense-linear attribution has no participants or work";
  const std::string_view differ = "reference dense-linear physical ranges differ from runtime work";
  const DenseLinearLaunch one[] = {launch(weight.get(), 0, 1)};
  check({}, 1, 1, ErrorKind::kDenseLinearNoWork, no_work);
  check(one, 0, 1, ErrorKind::kDenseLinearNoWork, no_work);
  check(one, 1, 0, ErrorKind::kDenseLinearNoWork, no_work);

  const DenseLinearLaunch two[] = {launch(weight.get(), 0, 1), launch(weight.get(), 4, 1)};
  check(two, 3, 2, ErrorKind::kDenseLinearLaunchCount,
        "reference dense-linear launches are neither one packed launch nor one per participant");
  check(two, 1, 2, ErrorKind::kDenseLinearLaunchCount);

  const DenseLinearLaunch unshared[] = {launch(weight.get(), 0, 1), launch(weight_copy.get(), 4, 1)};
  check(unshared, 2, 2, ErrorKind::kDenseLinearWeightNotShared,
        "reference dense-linear participants do not share one weight");
  // Same storage, another byte range of it, is not the same weight either.
  auto wide_weight = allocate(rig.rt(), 16, ElementType::kF16);
  DenseLinearLaunch shifted[] = {launch(wide_weight.get(), 0, 1), launch(wide_weight.get(), 4, 1)};
  shifted[1].weight.offset_bytes = 8;
  rig.mark();
  check(shifted, 2, 2, ErrorKind::kDenseLinearWeightNotShared);

  DenseLinearLaunch wrong_rows = launch(weight.get(), 0, 1);
  wrong_rows.rows = 2;
  check({&wrong_rows, 1}, 1, 2, ErrorKind::kDenseLinearRangesDiffer, differ);
  // Zero rows in the second launch of a loop, whose total still matches the token count.
  const DenseLinearLaunch zero_rows[] = {launch(weight.get(), 0, 1),
                                         [&] {
                                           DenseLinearLaunch l = launch(weight.get(), 4, 1);
                                           l.rows = 0;
                                           return l;
                                         }()};
  check(zero_rows, 2, 1, ErrorKind::kDenseLinearRangesDiffer, differ);
  DenseLinearLaunch zero_rows_scalar = launch(weight.get(), 0, 1);
  zero_rows_scalar.rows = 0;
  check({&zero_rows_scalar, 1}, 1, 1, ErrorKind::kDenseLinearRangesDiffer, differ);
  check({&wrong_rows, 1}, 1, 1, ErrorKind::kDenseLinearRangesDiffer, differ);  // tokens != rows too
  DenseLinearLaunch huge_one_token = launch(weight.get(), 0, 1);
  huge_one_token.rows = kU64Max;
  check({&huge_one_token, 1}, 1, 1, ErrorKind::kDenseLinearRangesDiffer,
        "reference dense-linear input size overflows");
  DenseLinearLaunch u8_output = launch(weight.get(), 0, 1);
  u8_output.output = {rig.target.get(), 0, 4};
  check({&u8_output, 1}, 1, 1, ErrorKind::kDenseLinearRangesDiffer, differ);
  DenseLinearLaunch short_weight = launch(weight.get(), 0, 1);
  short_weight.weight.length_bytes = 6;
  check({&short_weight, 1}, 1, 1, ErrorKind::kDenseLinearRangesDiffer, differ);
  DenseLinearLaunch huge = launch(weight.get(), 0, 1);
  huge.rows = kU64Max;
  check({&huge, 1}, 1, kU64Max, ErrorKind::kDenseLinearRangesDiffer,
        "reference dense-linear input size overflows");
  DenseLinearLaunch past_end = launch(weight.get(), 4, 2);
  check({&past_end, 1}, 1, 2, ErrorKind::kRegionOutOfBounds,
        "reference buffer region is empty or exceeds its admitted allocation");
  DenseLinearLaunch empty_region = launch(weight.get(), 0, 1);
  empty_region.input.length_bytes = 0;
  check({&empty_region, 1}, 1, 1, ErrorKind::kRegionOutOfBounds);
  DenseLinearLaunch overflowing_region = launch(weight.get(), 0, 1);
  overflowing_region.output.offset_bytes = kU64Max - 1;
  check({&overflowing_region, 1}, 1, 1, ErrorKind::kRegionOutOfBounds);
  AlienBuffer alien_buffer;
  for (int role = 0; role < 3; ++role) {
    INFO("alien role " << role);
    DenseLinearLaunch alien = launch(weight.get(), 0, 1);
    (role == 0 ? alien.input : role == 1 ? alien.weight : alien.output).buffer = &alien_buffer;
    check({&alien, 1}, 1, 1, ErrorKind::kForeignBufferInCommand,
          "reference command contains a buffer from another runtime");
  }
  rig.check_untouched();
}

TEST_CASE("dense-linear encoding refuses launches that disagree on in or out features",
          "[conformance][7.7][dense_linear][new]") {
  VTRACE_CONFORMANCE_RIG(rig);
  auto input = allocate(rig.rt(), 32, ElementType::kF16);
  auto weight = allocate(rig.rt(), 16, ElementType::kF16);
  auto output = allocate(rig.rt(), 32, ElementType::kF16);
  rig.mark();
  // One 16-byte weight read as 2x4 by launch A and as 4x2 by launch B: same physical region.
  const DenseLinearLaunch a{{input.get(), 0, 8}, {weight.get(), 0, 16}, {output.get(), 0, 4}, 1, 4, 2};
  const DenseLinearLaunch b{{input.get(), 8, 4}, {weight.get(), 0, 16}, {output.get(), 4, 8}, 1, 2, 4};
  const DenseLinearLaunch ab[] = {a, b};
  check_failed(rig.rt().encode_dense_linear({ab, 2, 2}), ErrorKind::kDenseLinearAttributesDisagree);
  // 8x1 against 2x4 over the same 16 bytes, and the disagreeing launch third of three.
  const DenseLinearLaunch c{{input.get(), 12, 16}, {weight.get(), 0, 16}, {output.get(), 12, 2}, 1, 8, 1};
  const DenseLinearLaunch aac[] = {a, {{input.get(), 16, 8}, {weight.get(), 0, 16}, {output.get(), 16, 4}, 1, 4, 2}, c};
  check_failed(rig.rt().encode_dense_linear({aac, 3, 3}), ErrorKind::kDenseLinearAttributesDisagree);
  // Agreeing launches over the same weight are fine.
  const DenseLinearLaunch aa[] = {a, aac[1]};
  CHECK(rig.rt().encode_dense_linear({aa, 2, 2}).has_value());
  rig.check_untouched();
}

TEST_CASE("dense-linear encoding refuses a token count other than the launches' total rows",
          "[conformance][7.7][dense_linear][new]") {
  VTRACE_CONFORMANCE_RIG(rig);
  auto input = allocate(rig.rt(), 24, ElementType::kF16);
  auto weight = allocate(rig.rt(), 8, ElementType::kF16);
  auto output = allocate(rig.rt(), 24, ElementType::kF16);
  rig.mark();
  const auto launch = [&](std::uint64_t first_row, std::uint64_t rows) {
    return DenseLinearLaunch{{input.get(), 4 * first_row, 4 * rows}, {weight.get(), 0, 8},
                             {output.get(), 4 * first_row, 4 * rows}, rows, 2, 2};
  };
  const auto refused = [&](std::span<const DenseLinearLaunch> launches, std::uint32_t n,
                           std::uint64_t tokens) {
    INFO(launches.size() << " launches, " << n << " participants, " << tokens << " tokens");
    check_failed(rig.rt().encode_dense_linear({launches, n, tokens}),
                 ErrorKind::kDenseLinearTokenCount);
  };
  const auto accepted = [&](std::span<const DenseLinearLaunch> launches, std::uint32_t n,
                            std::uint64_t tokens) {
    INFO(launches.size() << " launches, " << n << " participants, " << tokens << " tokens");
    CHECK(rig.rt().encode_dense_linear({launches, n, tokens}).has_value());
  };
  SECTION("scalar: one participant, one launch") {
    const DenseLinearLaunch one[] = {launch(0, 2)};
    refused(one, 1, 1);
    refused(one, 1, 3);
    accepted(one, 1, 2);
  }
  SECTION("packed: the one launch's rows") {
    const DenseLinearLaunch packed[] = {launch(0, 6)};
    refused(packed, 3, 3);  // one token per participant is not the launch's 6 rows
    refused(packed, 3, 7);
    accepted(packed, 3, 6);
  }
  SECTION("packed: at least one token per participant (spec 8.3)") {
    const DenseLinearLaunch packed[] = {launch(0, 2)};
    refused(packed, 3, 2);  // the rows match the token count, but 3 participants need 3 tokens
    refused(packed, 5, 2);
    accepted(packed, 2, 2);
  }
  SECTION("participant loop: the sum of the launches' rows") {
    const DenseLinearLaunch loop[] = {launch(0, 1), launch(1, 2), launch(3, 3)};
    refused(loop, 3, 3);  // the participant count, not the rows
    refused(loop, 3, 5);
    refused(loop, 3, 7);
    accepted(loop, 3, 6);
  }
  rig.check_untouched();
}

TEST_CASE("describe_error wraps the message as a device report and refuses non-portable messages",
          "[conformance][7.7]") {
  VTRACE_CONFORMANCE_OPEN(runtime, "device.conformance.0");
  const auto report = runtime->describe_error(
      RuntimeError(ErrorKind::kEmptyBatch, "reference runtime cannot submit an empty batch"));
  REQUIRE(report.has_value());
  CHECK_FALSE(report->code().empty());
  CHECK(report->message() == "reference runtime cannot submit an empty batch");
  CHECK(report->envelope().domain() == FailureDomain::kDevice);
  if (traits().reference_messages) {
    CHECK(report->code() == "reference_runtime");
    CHECK_FALSE(report->retryable());
  }
  const auto blank = runtime->describe_error(RuntimeError(ErrorKind::kInternal, "  "));
  REQUIRE_FALSE(blank.has_value());
  CHECK(blank.error().kind() == VNextErrorKind::kInvalidExecutionPlan);
  // Blank after Rust's str::trim, which strips Unicode White_Space: U+00A0, U+3000, U+2028, U+0085.
  for (const char* unicode_blank : {"\xC2\xA0", "\xE3\x80\x80 \t", "\xE2\x80\xA8", "\xC2\x85"}) {
    INFO("message bytes " << std::string_view(unicode_blank).size());
    CHECK_FALSE(runtime->describe_error(RuntimeError(ErrorKind::kInternal, unicode_blank)));
  }
  // Text between such spaces is kept as it is.
  const auto spaced = runtime->describe_error(
      RuntimeError(ErrorKind::kInternal, "\xC2\xA0" "device lost" "\xE3\x80\x80"));
  REQUIRE(spaced.has_value());
  CHECK(spaced->message() == "\xC2\xA0" "device lost" "\xE3\x80\x80");
  CHECK_FALSE(runtime->describe_error(RuntimeError(ErrorKind::kInternal, "nul\x01")).has_value());
}
