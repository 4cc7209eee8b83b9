// Validation rules of the contract value types (spec 1 to 3), admission, fingerprints and names.
#include <catch2/catch.hpp>

#include <limits>
#include <set>
#include <string>

#include "vtrace/runtime/admission.h"
#include "vtrace/runtime/error.h"
#include "vtrace/runtime/fingerprint.h"
#include "vtrace/runtime/identity.h"
#include "vtrace/runtime/submission.h"
#include "vtrace/runtime/types.h"

using namespace vtrace::runtime;

namespace {

constexpr std::uint32_t kU32Max = std::numeric_limits<std::uint32_t>::max();
constexpr std::uint64_t kU64Max = std::numeric_limits<std::uint64_t>::max();

std::string valid_fingerprint() { return std::string(64, 'a'); }

DeviceDescriptor valid_descriptor() {
  DeviceDescriptor descriptor;
  descriptor.id = *DeviceId::create("device.test.0");
  descriptor.total_memory_bytes = 1024;
  descriptor.runtime_implementation_fingerprint = valid_fingerprint();
  descriptor.dynamic_storage_profiles = {DynamicStorageProfile::linear_contiguous()};
  return descriptor;
}

class DummyCommand final : public Command {};

}  // namespace

TEST_CASE("identities are checked for emptiness, then length, then portable characters",
          "[runtime][identity]") {
  const auto empty = DeviceId::create("");
  REQUIRE_FALSE(empty.has_value());
  CHECK(empty.error().kind() == VNextErrorKind::kInvalidIdentity);
  CHECK(empty.error().display() == "invalid device identity ``: identity must not be empty");

  CHECK(CapabilityId::create(std::string(160, 'x')).has_value());
  const auto long_value = CapabilityId::create(std::string(161, 'x'));
  REQUIRE_FALSE(long_value.has_value());
  CHECK(long_value.error().reason() == "identity exceeds 160 bytes");

  // Length is checked before characters: a long value with a space reports its length.
  const auto long_and_bad = ResourceId::create(std::string(170, ' '));
  REQUIRE_FALSE(long_and_bad.has_value());
  CHECK(long_and_bad.error().reason() == "identity exceeds 160 bytes");

  for (const char* bad : {"device zero", "caf\xc3\xa9", "a\tb", "a@b", "a,b"}) {
    const auto result = WeightFormatId::create(bad);
    REQUIRE_FALSE(result.has_value());
    CHECK(result.error().display() == std::string("invalid weight format identity `") + bad +
                                          "`: identity contains a non-portable character");
  }
  CHECK(ResourceId::create("resource.a-b_c:d/e.9").has_value());
  // No prefix is enforced.
  CHECK(CapabilityId::create("whatever").has_value());
}

TEST_CASE("identities order byte by byte and compare by value", "[runtime][identity]") {
  CHECK(*NodeId::create("B") < *NodeId::create("a"));
  CHECK(*NodeId::create("a") < *NodeId::create("a.b"));
  CHECK(*NodeId::create("x") == *NodeId::create("x"));
  CHECK(NodeId::create("node.1")->str() == "node.1");
}

TEST_CASE("contract versions satisfy a requirement with the same major and a greater minor",
          "[runtime][identity]") {
  const ContractVersion v1_1{1, 1};
  CHECK(v1_1.satisfies({1, 0}));
  CHECK(v1_1.satisfies({1, 1}));
  CHECK_FALSE(v1_1.satisfies({1, 2}));
  CHECK_FALSE(v1_1.satisfies({2, 0}));
  CHECK_FALSE(ContractVersion{2, 5}.satisfies({1, 0}));
  CHECK(v1_1.to_string() == "1.1");
}

TEST_CASE("native operation ids accept 1 to 256 portable bytes only", "[runtime][identity]") {
  CHECK(DeviceNativeOperationId::create("cuda.op_1:variant/path-name").has_value());
  CHECK(DeviceNativeOperationId::create(std::string(256, 'a')).has_value());
  CHECK_FALSE(DeviceNativeOperationId::create(std::string(257, 'a')).has_value());
  CHECK_FALSE(DeviceNativeOperationId::create("").has_value());
  CHECK_FALSE(DeviceNativeOperationId::create("device zero").has_value());
  CHECK_FALSE(DeviceNativeOperationId::create("\xc3\xa9").has_value());
  for (std::string_view id : {kDeviceCopyNativeOperationId, kHostUploadNativeOperationId,
                              kDeviceZeroNativeOperationId, kDenseLinearNativeOperationLabel}) {
    CHECK(DeviceNativeOperationId::create(id).has_value());
  }
  // The oldest runtime's labels would fail the rules.
  CHECK_FALSE(DeviceNativeOperationId::create("device copy").has_value());
}

TEST_CASE("vnext errors display upstream's text", "[runtime][error]") {
  CHECK(VNextError::invalid_execution_plan("x").display() == "invalid execution plan: x");
  CHECK(VNextError::invalid_execution_plan("x").reason() == "x");
  CHECK(VNextError::serialization("decode header", "eof").display() ==
        "failed to decode header: eof");
  CHECK(VNextError::invalid_identity("node", "v", "r").display() == "invalid node identity `v`: r");
  const RuntimeError wrapped(ErrorKind::kContractValue, VNextError::invalid_execution_plan("y"));
  CHECK(wrapped.message() == "invalid execution plan: y");
  CHECK(wrapped.kind() == ErrorKind::kContractValue);
}

TEST_CASE("every error kind has a distinct name that parses back", "[runtime][error]") {
  std::set<std::string_view> names;
  for (std::uint16_t raw = 0; raw <= static_cast<std::uint16_t>(ErrorKind::kInternal); ++raw) {
    const auto kind = static_cast<ErrorKind>(raw);
    const auto name = error_kind_name(kind);
    CHECK(names.insert(name).second);
    CHECK(parse_error_kind(name) == kind);
  }
  CHECK(error_kind_name(ErrorKind::kForeignStream) == "foreign_stream");
  CHECK_FALSE(parse_error_kind("no_such_kind").has_value());
}

TEST_CASE("failure envelopes reject bad codes and messages", "[runtime][error]") {
  const auto ok = FailureEnvelope::create(FailureDomain::kOperation, "reference.dense_linear.encode",
                                          "line one\n\tline two", true);
  REQUIRE(ok.has_value());
  CHECK(ok->domain() == FailureDomain::kOperation);
  CHECK(ok->code() == "reference.dense_linear.encode");
  CHECK(ok->retryable());
  CHECK(FailureEnvelope::create(FailureDomain::kDevice, std::string(64, 'c'), "m", false));
  CHECK(FailureEnvelope::create(FailureDomain::kDevice, "c", std::string(4096, 'm'), false));

  const std::string expected =
      "invalid execution plan: failure code or message is empty, oversized, or non-portable";
  const auto check_rejected = [&](std::string code, std::string message) {
    const auto result =
        FailureEnvelope::create(FailureDomain::kDevice, std::move(code), std::move(message), false);
    REQUIRE_FALSE(result.has_value());
    CHECK(result.error().display() == expected);
  };
  check_rejected("", "message");
  check_rejected(std::string(65, 'c'), "message");
  check_rejected("a:b", "message");
  check_rejected("a/b", "message");
  check_rejected("a b", "message");
  check_rejected("code", "");
  check_rejected("code", " \n\t ");
  check_rejected("code", std::string(4097, 'm'));
  check_rejected("code", "bell\x07");
  check_rejected("code", "carriage\rreturn");
  check_rejected("code", "delete\x7f");

  const auto report = DeviceErrorReport::create("reference_runtime", "boom", false);
  REQUIRE(report.has_value());
  CHECK(report->envelope().domain() == FailureDomain::kDevice);
  CHECK(report->code() == "reference_runtime");
  CHECK(report->message() == "boom");
  CHECK_FALSE(report->retryable());
  // Every domain by its serde name: a dropped case falls through to "device".
  const std::pair<FailureDomain, std::string_view> domains[] = {
      {FailureDomain::kDevice, "device"},     {FailureDomain::kOperation, "operation"},
      {FailureDomain::kResource, "resource"}, {FailureDomain::kPlanning, "planning"},
      {FailureDomain::kModelResolution, "model_resolution"},
      {FailureDomain::kProduct, "product"},   {FailureDomain::kEvent, "event"}};
  for (const auto& [domain, name] : domains) CHECK(failure_domain_name(domain) == name);
}

TEST_CASE("device descriptors require capacity, a storage profile and a 64-hex fingerprint",
          "[runtime][types]") {
  CHECK(valid_descriptor().validate().has_value());
  // Capabilities may be empty as far as validate is concerned.
  CHECK(valid_descriptor().capabilities.empty());

  const std::string message =
      "invalid execution plan: device `device.test.0` has invalid capacity or runtime "
      "implementation fingerprint";
  auto zero_capacity = valid_descriptor();
  zero_capacity.total_memory_bytes = 0;
  auto no_profiles = valid_descriptor();
  no_profiles.dynamic_storage_profiles.clear();
  auto short_fingerprint = valid_descriptor();
  short_fingerprint.runtime_implementation_fingerprint = std::string(63, 'a');
  auto upper_fingerprint = valid_descriptor();
  upper_fingerprint.runtime_implementation_fingerprint = std::string(63, 'a') + "A";
  auto prefixed_fingerprint = valid_descriptor();
  prefixed_fingerprint.runtime_implementation_fingerprint = "0x" + std::string(62, 'a');
  for (const auto* bad : {&zero_capacity, &no_profiles, &short_fingerprint, &upper_fingerprint,
                          &prefixed_fingerprint}) {
    const auto result = bad->validate();
    REQUIRE_FALSE(result.has_value());
    CHECK(result.error().display() == message);
  }
}

TEST_CASE("storage profiles accept only the three valid allocator/view combinations",
          "[runtime][types]") {
  using A = DynamicStorageAllocatorKind;
  using V = DynamicStorageViewKind;
  CHECK(DynamicStorageProfile::create(A::kLinearArena, 0, V::kContiguous, 0));
  CHECK(DynamicStorageProfile::create(A::kFixedBlockArena, 256, V::kContiguous, 0));
  CHECK(DynamicStorageProfile::create(A::kFixedBlockArena, 256, V::kPagedRegions, 256));

  const auto expect_invalid = [](A a, std::uint64_t ab, V v, std::uint64_t vb) {
    const auto result = DynamicStorageProfile::create(a, ab, v, vb);
    REQUIRE_FALSE(result.has_value());
    CHECK(result.error().reason() ==
          "dynamic storage allocator/view profile is incompatible or invalid");
  };
  expect_invalid(A::kLinearArena, 0, V::kPagedRegions, 256);
  expect_invalid(A::kFixedBlockArena, 0, V::kContiguous, 0);
  expect_invalid(A::kFixedBlockArena, 48, V::kContiguous, 0);
  expect_invalid(A::kFixedBlockArena, 256, V::kPagedRegions, 512);
  expect_invalid(A::kFixedBlockArena, 48, V::kPagedRegions, 48);

  // Ordering: allocator first (LinearArena < FixedBlockArena), then view.
  const auto linear = DynamicStorageProfile::linear_contiguous();
  const auto fixed_contiguous =
      *DynamicStorageProfile::create(A::kFixedBlockArena, 64, V::kContiguous, 0);
  const auto fixed_paged =
      *DynamicStorageProfile::create(A::kFixedBlockArena, 64, V::kPagedRegions, 64);
  CHECK(linear < fixed_contiguous);
  CHECK(fixed_contiguous < fixed_paged);
  CHECK(linear == *DynamicStorageProfile::create(A::kLinearArena, 0, V::kContiguous, 0));
}

TEST_CASE("buffer requests reject zero size and non-power-of-two alignment", "[runtime][types]") {
  const auto id = *ResourceId::create("resource.x");
  const auto ok = BufferRequest::create(id, 10, 4096, BufferUsage::kWeights, ElementType::kF16);
  REQUIRE(ok.has_value());
  CHECK(ok->size_bytes() == 10);
  CHECK(ok->alignment_bytes() == 4096);
  CHECK(ok->usage() == BufferUsage::kWeights);
  CHECK(ok->element_type() == ElementType::kF16);
  CHECK(ok->resource_id() == id);
  const auto descriptor = BufferDescriptor::from_request(*ok);
  CHECK(descriptor.size_bytes == 10);
  CHECK(descriptor.resource_id == id);

  for (auto [size, alignment] : {std::pair<std::uint64_t, std::uint64_t>{0, 1}, {1, 0}, {1, 3},
                                 {1, 48}}) {
    const auto result = BufferRequest::create(id, size, alignment, BufferUsage::kScratch,
                                              ElementType::kU8);
    REQUIRE_FALSE(result.has_value());
    CHECK(result.error().display() ==
          "invalid execution plan: buffer request has invalid size or alignment");
  }
}

TEST_CASE("copy regions reject empty or overflowing ranges and check bounds in order",
          "[runtime][types]") {
  CHECK(CopyRegion::create(0, 0, 0).error().reason() == "copy region is empty or overflows u64");
  CHECK_FALSE(CopyRegion::create(kU64Max, 0, 1).has_value());
  CHECK_FALSE(CopyRegion::create(0, kU64Max, 1).has_value());
  CHECK(CopyRegion::create(kU64Max - 1, 0, 1).has_value());

  BufferDescriptor small;
  small.size_bytes = 8;
  BufferDescriptor large;
  large.size_bytes = 16;
  const auto region = *CopyRegion::create(4, 8, 4);
  CHECK(region.source_offset_bytes() == 4);
  CHECK(region.destination_offset_bytes() == 8);
  CHECK(region.length_bytes() == 4);
  CHECK(region.validate_bounds(small, large).has_value());
  CHECK(region.validate_bounds(large, small).error().reason() ==
        "copy region exceeds a buffer boundary");
  CHECK(CopyRegion::create(5, 0, 4)->validate_bounds(small, large).error().reason() ==
        "copy region exceeds a buffer boundary");
}

TEST_CASE("host transfer layouts reject empty and overflowing counts and wrong byte counts",
          "[runtime][types]") {
  const auto layout = HostTransferLayout::create(ElementType::kF32, 3);
  REQUIRE(layout.has_value());
  CHECK(layout->byte_len() == 12);
  CHECK(layout->validate_bytes(12).has_value());
  CHECK(layout->validate_bytes(11).error().display() ==
        "invalid execution plan: host transfer byte count does not match its element layout");
  CHECK(HostTransferLayout::create(ElementType::kU8, 0).error().reason() ==
        "host transfer layout is empty or overflows u64");
  CHECK_FALSE(HostTransferLayout::create(ElementType::kF16, kU64Max / 2 + 1).has_value());
  CHECK(HostTransferLayout::create(ElementType::kF16, kU64Max / 2).has_value());
  CHECK(HostTransferLayout::create(ElementType::kU8, kU64Max).has_value());
}

TEST_CASE("element types have upstream's sizes and snake_case names", "[runtime][types]") {
  const std::pair<ElementType, std::uint64_t> sizes[] = {
      {ElementType::kBool, 1}, {ElementType::kU8, 1},   {ElementType::kU32, 4},
      {ElementType::kI8, 1},   {ElementType::kI32, 4},  {ElementType::kF16, 2},
      {ElementType::kBf16, 2}, {ElementType::kF32, 4}};
  for (auto [type, size] : sizes) {
    CHECK(element_size_bytes(type) == size);
    CHECK(parse_element_type(element_type_name(type)) == type);
  }
  CHECK(element_type_name(ElementType::kBf16) == "bf16");
  CHECK_FALSE(parse_element_type("f64").has_value());
  CHECK(ElementType::kBool < ElementType::kF32);
}

TEST_CASE("enum names round-trip and match upstream serde spellings", "[runtime][types]") {
  CHECK(device_class_name(DeviceClass::kAccelerator) == "accelerator");
  CHECK(parse_device_class("reference") == DeviceClass::kReference);
  CHECK(buffer_usage_name(BufferUsage::kPersistent) == "persistent");
  CHECK(parse_buffer_usage("transfer") == BufferUsage::kTransfer);
  CHECK(stream_state_name(StreamState::kSubmitted) == "submitted");
  CHECK(parse_stream_state("failed") == StreamState::kFailed);
  CHECK(command_phase_name(CommandPhase::kDynamicBinding) == "dynamic_binding");
  CHECK(parse_command_phase("result_binding") == CommandPhase::kResultBinding);
  CHECK(batching_form_name(BatchingForm::kParticipantLoop) == "participant_loop");
  CHECK(parse_batching_form("packed") == BatchingForm::kPacked);
  CHECK(execution_path_name(ExecutionPath::kReplayed) == "replayed");
  CHECK(timing_mode_name(TimingMode::kVerification) == "verification");
  CHECK(parse_timing_mode("off") == TimingMode::kOff);
  CHECK(compute_path_requirement_name(
            ComputePathRequirement::kReplayedWithDeclaredEagerBoundaries) ==
        "replayed_with_declared_eager_boundaries");
  CHECK(parse_compute_path_requirement("eager_only") == ComputePathRequirement::kEagerOnly);
  CHECK(attribution_requirement_name(AttributionRequirement::kLogicalExecutionPath) ==
        "logical_execution_path");
  CHECK_FALSE(parse_batching_form("Packed").has_value());
}

TEST_CASE("attention policies are kebab-case and parsing normalises case, spaces and underscores",
          "[runtime][types]") {
  CHECK(attention_policy_name(AttentionExecutionPolicy::kNativeAdaptive) == "native-adaptive");
  CHECK(parse_attention_policy("native-adaptive") == AttentionExecutionPolicy::kNativeAdaptive);
  CHECK(parse_attention_policy("  Native_Adaptive\n") == AttentionExecutionPolicy::kNativeAdaptive);
  // Trimmed as Rust's str::trim: Unicode White_Space too (U+3000, U+00A0, U+2003), but not
  // inside the name, and not other characters (U+200B ZERO WIDTH SPACE is not White_Space).
  CHECK(parse_attention_policy("\xE3\x80\x80portable\xC2\xA0\xE2\x80\x83") ==
        AttentionExecutionPolicy::kPortable);
  CHECK_FALSE(parse_attention_policy("port\xC2\xA0" "able").has_value());
  CHECK_FALSE(parse_attention_policy("\xE2\x80\x8B" "auto").has_value());
  CHECK(parse_attention_policy("PORTABLE") == AttentionExecutionPolicy::kPortable);
  CHECK(parse_attention_policy("auto") == AttentionExecutionPolicy::kAuto);
  CHECK_FALSE(parse_attention_policy("native adaptive").has_value());
  CHECK_FALSE(parse_attention_policy("").has_value());
}

TEST_CASE("timing mode predicates follow upstream's table", "[runtime][submission]") {
  using T = TimingMode;
  // mode: completion, physical span attribution, kernel attribution, direct reusable execution
  struct Row {
    T mode;
    bool completion, span, kernel, direct;
  };
  const Row table[] = {{T::kOff, false, false, false, true},
                       {T::kCompletion, true, false, false, true},
                       {T::kReplay, true, true, false, true},
                       {T::kKernel, true, true, true, false},
                       {T::kVerification, true, true, true, false}};
  for (const auto& row : table) {
    INFO(timing_mode_name(row.mode));
    CHECK(completion_enabled(row.mode) == row.completion);
    CHECK(physical_span_attribution_enabled(row.mode) == row.span);
    CHECK(kernel_attribution_enabled(row.mode) == row.kernel);
    CHECK(direct_reusable_execution_allowed(row.mode) == row.direct);
  }
  CHECK(static_cast<int>(T::kVerification) == 4);
}

TEST_CASE("logical work rejects an empty or overflowing participant range", "[runtime][submission]") {
  const auto work = LogicalWork::create(BatchingForm::kPacked, 3, 0);
  REQUIRE(work.has_value());
  CHECK(work->participant_start() == 0);
  CHECK(work->participant_end() == 3);
  CHECK(work->token_count() == 0);
  CHECK(LogicalWork::for_participant_range(BatchingForm::kScalar, kU32Max - 1, 1, 5));
  const std::string reason =
      "node-scoped device command has an empty or overflowing logical participant range";
  CHECK(LogicalWork::create(BatchingForm::kScalar, 0, 1).error().reason() == reason);
  CHECK(LogicalWork::for_participant_range(BatchingForm::kScalar, kU32Max, 1, 1).error().reason() ==
        reason);
}

TEST_CASE("reusable execution captures validate node counts and index lists",
          "[runtime][submission]") {
  const auto program = *ProgramId::create("program.test");
  CHECK(ReusableExecutionCapture::create(program, 4, {0, 2}, {1, 3}));
  CHECK(ReusableExecutionCapture::create(program, 4, {}, {}));
  CHECK_FALSE(ReusableExecutionCapture::create(program, 0, {}, {}));
  CHECK_FALSE(ReusableExecutionCapture::create(program, 4, {2, 2}, {}));
  CHECK_FALSE(ReusableExecutionCapture::create(program, 4, {2, 1}, {}));
  CHECK_FALSE(ReusableExecutionCapture::create(program, 4, {4}, {}));
  CHECK_FALSE(ReusableExecutionCapture::create(program, 4, {}, {1, 1}));
  CHECK_FALSE(ReusableExecutionCapture::create(program, 4, {}, {5}));
}

TEST_CASE("batch mutators enforce declared eager nodes and one capture", "[runtime][submission]") {
  CommandBatch adaptive;
  CHECK(adaptive.timing_mode() == TimingMode::kOff);
  CHECK(adaptive.compute_path_requirement() == ComputePathRequirement::kAdaptive);
  CHECK(adaptive.attribution_requirement() == AttributionRequirement::kNone);
  CHECK_FALSE(adaptive.set_declared_eager_compute_node_indices({1}).has_value());

  CommandBatch declared(TimingMode::kOff, ComputePathRequirement::kReplayedWithDeclaredEagerBoundaries);
  CHECK_FALSE(declared.set_declared_eager_compute_node_indices({}).has_value());
  CHECK_FALSE(declared.set_declared_eager_compute_node_indices({2, 1}).has_value());
  CHECK_FALSE(declared.set_declared_eager_compute_node_indices({1, 1}).has_value());
  CHECK(declared.declared_eager_compute_node_indices().empty());
  CHECK(declared.set_declared_eager_compute_node_indices({1, 4}).has_value());
  CHECK(declared.declared_eager_compute_node_indices() == std::vector<std::uint32_t>{1, 4});
  const auto again = declared.set_declared_eager_compute_node_indices({7});
  REQUIRE_FALSE(again.has_value());
  CHECK(again.error().kind() == VNextErrorKind::kInvalidExecutionPlan);
  CHECK(declared.declared_eager_compute_node_indices() == std::vector<std::uint32_t>{1, 4});

  const auto capture = *ReusableExecutionCapture::create(*ProgramId::create("p"), 2, {}, {});
  CHECK(adaptive.set_reusable_execution_capture(capture).has_value());
  CHECK_FALSE(adaptive.set_reusable_execution_capture(capture).has_value());
  CHECK(adaptive.reusable_execution_capture() == capture);

  adaptive.require_logical_execution_path_attribution();
  CHECK(adaptive.attribution_requirement() == AttributionRequirement::kLogicalExecutionPath);
}

TEST_CASE("batch push helpers append entries with upstream's phases and node indices",
          "[runtime][submission]") {
  CommandBatch batch;
  batch.push_initialization(std::make_unique<DummyCommand>());
  batch.push_node_initialization(3, *LogicalWork::create(BatchingForm::kPacked, 2, 5),
                                 std::make_unique<DummyCommand>());
  batch.push_dynamic_binding(std::make_unique<DummyCommand>());
  batch.push(std::make_unique<DummyCommand>());
  batch.push_result_binding(std::make_unique<DummyCommand>());
  EncodedOperation op;
  op.program_bindings.push_back(std::make_unique<DummyCommand>());
  op.dynamic_bindings.push_back(std::make_unique<DummyCommand>());
  op.compute = std::make_unique<DummyCommand>();
  op.result_bindings.push_back(std::make_unique<DummyCommand>());
  batch.push_operation(9, std::move(op));

  const auto& e = batch.entries();
  REQUIRE(batch.size() == 9);
  using P = CommandPhase;
  const std::vector<std::pair<P, std::optional<std::uint32_t>>> expected = {
      {P::kInitialization, std::nullopt}, {P::kInitialization, 3}, {P::kDynamicBinding, std::nullopt},
      {P::kCompute, std::nullopt},        {P::kResultBinding, std::nullopt},
      {P::kDynamicBinding, 9},            {P::kDynamicBinding, 9},
      {P::kCompute, 9},                   {P::kResultBinding, 9}};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CHECK(e[i].phase == expected[i].first);
    CHECK(e[i].node_index == expected[i].second);
    CHECK(e[i].logical_work.has_value() == (i == 1));
    CHECK(e[i].command != nullptr);
  }
  CHECK(e[1].logical_work->token_count() == 5);

  const auto single = CommandBatch::singleton(std::make_unique<DummyCommand>());
  REQUIRE(single.size() == 1);
  CHECK(single.entries()[0].phase == P::kCompute);
  CHECK_FALSE(single.entries()[0].node_index.has_value());
}

TEST_CASE("attribution rows reject each invalid combination of spec 3.12", "[runtime][submission]") {
  const auto id = *DeviceNativeOperationId::create("device.copy");
  const auto row = [&](std::optional<std::uint32_t> node, std::uint32_t start, std::uint32_t count,
                       std::uint64_t dispatches, std::uint64_t transfers, ExecutionPath path,
                       std::optional<std::uint64_t> graph_nodes) {
    return NativeWorkAttribution::with_participant_range(
        0, node, CommandPhase::kCompute, id, path, BatchingForm::kScalar, start, count, 7,
        dispatches, transfers, graph_nodes);
  };
  const auto eager = ExecutionPath::kEager;
  const auto ok = row(std::nullopt, 0, 0, 0, 1, eager, std::nullopt);
  REQUIRE(ok.has_value());
  CHECK(ok->native_op_id() == "device.copy");
  CHECK(ok->token_count() == 7);
  CHECK(row(2, 1, 3, 1, 0, eager, std::nullopt)->participant_end() == 4);
  CHECK(row(2, 0, 1, 1, 0, ExecutionPath::kReplayed, 5).has_value());

  CHECK_FALSE(row(std::nullopt, 0, 0, 0, 0, eager, std::nullopt));        // no dispatch at all
  CHECK_FALSE(row(2, 0, 0, 1, 0, eager, std::nullopt));                   // node without participants
  CHECK_FALSE(row(2, kU32Max, 1, 1, 0, eager, std::nullopt));             // range overflows
  CHECK_FALSE(row(std::nullopt, 1, 1, 1, 0, eager, std::nullopt));        // node-less with a start
  CHECK_FALSE(row(2, 0, 1, 1, 0, eager, 5));                              // graph nodes off Replayed
}

TEST_CASE("submission attributions need non-empty strictly increasing command indices",
          "[runtime][submission]") {
  const auto id = *DeviceNativeOperationId::create("host.upload");
  const auto row = [&](std::uint32_t index) {
    return *NativeWorkAttribution::with_participant_range(
        index, std::nullopt, CommandPhase::kInitialization, id, ExecutionPath::kEager,
        BatchingForm::kScalar, 0, 0, 0, 0, 1, std::nullopt);
  };
  CHECK(SubmissionAttribution::create({row(0), row(2)})->commands().size() == 2);
  CHECK_FALSE(SubmissionAttribution::create({}).has_value());
  CHECK_FALSE(SubmissionAttribution::create({row(1), row(1)}).has_value());
  CHECK_FALSE(SubmissionAttribution::create({row(2), row(1)}).has_value());
}

TEST_CASE("a resource transaction admits within capacity and returns bytes when tokens die",
          "[runtime][admission]") {
  ResourceTransaction transaction(100);
  const auto request = [](std::uint64_t size) {
    return *BufferRequest::create(*ResourceId::create("resource.r"), size, 1,
                                  BufferUsage::kScratch, ElementType::kU8);
  };
  auto first = transaction.admit(request(60));
  REQUIRE(first.has_value());
  CHECK(first->generation() == 1);
  CHECK(transaction.reserved_bytes() == 60);

  const auto refused = transaction.admit(request(41));
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().kind() == ErrorKind::kAdmissionOverCapacity);
  CHECK(refused.error().message() == "admission of `resource.r` needs 41 bytes but 40 of 100 remain");
  CHECK(transaction.reserved_bytes() == 60);

  auto second = transaction.admit(request(40));
  REQUIRE(second.has_value());
  CHECK(second->generation() == 2);
  CHECK(transaction.reserved_bytes() == 100);

  auto parts = first->into_parts();
  REQUIRE(parts.has_value());
  CHECK(first->consumed());
  CHECK(parts->first.size_bytes() == 60);
  const auto again = first->into_parts();
  REQUIRE_FALSE(again.has_value());
  CHECK(again.error().kind() == ErrorKind::kAdmissionInvalidRequest);
  // The token, not the permit, holds the bytes now.
  CHECK(transaction.reserved_bytes() == 100);
  parts->second.reset();
  CHECK(transaction.reserved_bytes() == 40);
  // An unconsumed permit returns its bytes when dropped.
  { auto dropped = std::move(*second); }
  CHECK(transaction.reserved_bytes() == 0);
  CHECK(transaction.capacity_bytes() == 100);

  // Move assignment: the permit assigned to gives back its own bytes, and the one moved from is
  // consumed (it cannot be turned into a second allocation of the same reservation).
  auto kept = transaction.admit(request(10));
  auto replaced = transaction.admit(request(20));
  REQUIRE((kept && replaced));
  CHECK(transaction.reserved_bytes() == 30);
  *replaced = std::move(*kept);
  CHECK(transaction.reserved_bytes() == 10);
  CHECK(kept->consumed());  // NOLINT(bugprone-use-after-move)
  CHECK_FALSE(kept->into_parts().has_value());
  CHECK_FALSE(replaced->consumed());
  auto moved_parts = replaced->into_parts();
  REQUIRE(moved_parts.has_value());
  CHECK(moved_parts->first.size_bytes() == 10);
}

TEST_CASE("sha-256 matches the FIPS 180-4 examples and fingerprints frame their parts",
          "[runtime][fingerprint]") {
  const auto digest = [](std::string_view text) {
    return to_lower_hex(sha256({reinterpret_cast<const std::uint8_t*>(text.data()), text.size()}));
  };
  CHECK(digest("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(digest("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(digest("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(digest(std::string(1000000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");

  // Framing: each part is its 8-byte little-endian length, then its bytes.
  const std::string framed = std::string("\x01\0\0\0\0\0\0\0a", 9) + std::string("\x02\0\0\0\0\0\0\0bc", 10);
  CHECK(implementation_fingerprint({"a", "bc"}) == digest(framed));
  CHECK(implementation_fingerprint({"ab", "c"}) != implementation_fingerprint({"a", "bc"}));
  CHECK(implementation_fingerprint({"a"}).size() == 64);
}
