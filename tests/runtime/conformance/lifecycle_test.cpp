// Conformance: opening, allocation, streams and fences, transfers, readback layouts, counters
// with the exact triggers of spec 7.6, submission attribution, static weights (spec 10) and the
// optional-method defaults of spec 5.2.
#include "conformance/conformance.h"

#include <functional>
#include <random>
#include <thread>

#include "vtrace/runtime/static_weights.h"

using namespace vtrace::conformance;
using namespace vtrace::runtime;
using vtrace::runtime::testing::allocate;
using vtrace::runtime::testing::contents;
using vtrace::runtime::testing::fill;
using vtrace::runtime::testing::pattern;
using vtrace::runtime::testing::submit_ok;

// ---- opening ------------------------------------------------------------------------------------

TEST_CASE("the registry opens the runtime under its name with the given device id and fresh counters",
          "[conformance][registry]") {
  VTRACE_CONFORMANCE_OPEN(runtime, "device.conformance.registry.0");
  CHECK(default_registry().contains(runtime_name()));
  CHECK_FALSE(default_registry().summary(runtime_name()).empty());
  const DeviceDescriptor& descriptor = runtime->descriptor();
  CHECK(descriptor.id.str() == "device.conformance.registry.0");
  CHECK(descriptor.validate().has_value());
  CHECK(descriptor.total_memory_bytes > 0);
  CHECK(runtime->attention_execution_policy() != AttentionExecutionPolicy::kAuto);
  CHECK(counters(*runtime) == CounterSnapshot{});
  // The fingerprint names the implementation, not the device.
  VTRACE_CONFORMANCE_OPEN(second, "device.conformance.registry.1");
  CHECK(second->descriptor().runtime_implementation_fingerprint ==
        descriptor.runtime_implementation_fingerprint);
  CHECK(second->descriptor().id.str() == "device.conformance.registry.1");
  // An invalid device id is a descriptor error.
  const auto bad_id = default_registry().open(runtime_name(), {.device_id = "device zero"});
  REQUIRE_FALSE(bad_id.has_value());
  CHECK(bad_id.error().kind() == ErrorKind::kDescriptorInvalid);
  if (traits().reference_messages) {
    CHECK(runtime->attention_execution_policy() == AttentionExecutionPolicy::kPortable);
  }
}

// ---- allocation ---------------------------------------------------------------------------------

TEST_CASE("allocation echoes the request and counts allocations", "[conformance][allocation]") {
  VTRACE_CONFORMANCE_OPEN(runtime, "device.conformance.0");
  auto request = *BufferRequest::create(*ResourceId::create("resource.weights"), 24, 64,
                                        BufferUsage::kWeights, ElementType::kF16);
  auto buffer = runtime->allocate(std::move(*runtime->admit(request)));
  REQUIRE(buffer.has_value());
  CHECK(runtime->buffer_descriptor(**buffer) == BufferDescriptor::from_request(request));
  CHECK(counters(*runtime).allocations == 1);
  CHECK(counters(*runtime).live_allocations == 1);
  // Another instance of the same runtime describes the buffer too (device_runtime.h).
  VTRACE_CONFORMANCE_OPEN(other, "device.conformance.1");
  CHECK(other->buffer_descriptor(**buffer) == BufferDescriptor::from_request(request));
  buffer->reset();
  CHECK(counters(*runtime).allocations == 1);
  CHECK(counters(*runtime).live_allocations == 0);
  CHECK(runtime->buffer_descriptor(AlienBuffer{}) == BufferDescriptor{});
  CHECK(counters(*other) == CounterSnapshot{});
}

TEST_CASE("storage starts zeroed and holds the whole request for every alignment",
          "[conformance][allocation]") {
  VTRACE_CONFORMANCE_OPEN(runtime, "device.conformance.0");
  auto stream = stream_of(*runtime);
  for (std::uint64_t alignment : {1u, 2u, 16u, 64u, 4096u}) {
    INFO("alignment " << alignment);
    auto buffer = allocate(*runtime, 257, ElementType::kU8, alignment);
    CHECK(runtime->buffer_descriptor(*buffer).alignment_bytes == alignment);
    CHECK(runtime->buffer_descriptor(*buffer).size_bytes == 257);
    CHECK(contents(*runtime, *stream, *buffer) == std::vector<std::uint8_t>(257, 0));
    const auto bytes = pattern(257, static_cast<std::uint8_t>(alignment));
    fill(*runtime, *stream, *buffer, bytes);
    CHECK(contents(*runtime, *stream, *buffer) == bytes);
  }
  const auto snapshot = counters(*runtime);
  CHECK(snapshot.allocations == 5);
  CHECK(snapshot.live_allocations == 0);
}

TEST_CASE("live allocations fall only when the last holder of the storage dies",
          "[conformance][counters]") {
  VTRACE_CONFORMANCE_OPEN(runtime, "device.conformance.0");
  auto stream = stream_of(*runtime);
  SECTION("a copy outliving its source handle still executes") {
    auto source = allocate(*runtime, 8, ElementType::kU8);
    auto destination = allocate(*runtime, 8, ElementType::kU8);
    fill(*runtime, *stream, *source, pattern(8));
    auto copy = runtime->encode_copy(*source, *destination, region(0, 0, 8));
    REQUIRE(copy.has_value());
    source.reset();
    CHECK(counters(*runtime).live_allocations == 2);
    CommandBatch batch;
    batch.push(std::move(*copy));
    submit_ok(*runtime, *stream, std::move(batch));
    // The submitted batch was the last holder of the source storage.
    CHECK(counters(*runtime).live_allocations == 1);
    CHECK(contents(*runtime, *stream, *destination) == pattern(8));
    destination.reset();
    CHECK(counters(*runtime).live_allocations == 0);
    CHECK(counters(*runtime).allocations == 2);
  }
  SECTION("a dense-linear command holds its three storages, an unsubmitted one too") {
    auto buffers = dense_buffers(*runtime, 1, 2, 2);
    auto command = dense_command(*runtime, buffers);
    auto second = dense_command(*runtime, buffers);
    buffers.input.reset();
    buffers.weight.reset();
    buffers.output.reset();
    CHECK(counters(*runtime).live_allocations == 3);
    submit_ok(*runtime, *stream, CommandBatch::singleton(std::move(command)));
    CHECK(counters(*runtime).live_allocations == 3);  // `second` still holds them
    second.reset();
    CHECK(counters(*runtime).live_allocations == 0);
    CHECK(counters(*runtime).allocations == 3);
    CHECK(counters(*runtime).dense_linear_launches == 1);
  }
  SECTION("an upload and a zero hold their destination") {
    auto buffer = allocate(*runtime, 8, ElementType::kU8);
    auto upload = runtime->encode_upload(pattern(8), layout(ElementType::kU8, 8), *buffer, 0);
    auto zero = runtime->encode_zero(*buffer, 0, 8);
    REQUIRE(upload.has_value());
    REQUIRE(zero.has_value());
    buffer.reset();
    CHECK(counters(*runtime).live_allocations == 1);
    upload->reset();
    CHECK(counters(*runtime).live_allocations == 1);
    zero->reset();
    CHECK(counters(*runtime).live_allocations == 0);
  }
}

// ---- streams and fences -------------------------------------------------------------------------

TEST_CASE("fences reach a terminal success, waits are idempotent and the stream is Submitted until synchronized",
          "[conformance][fences][streams]") {
  VTRACE_CONFORMANCE_RIG(rig);
  auto fresh = stream_of(rig.rt());
  CHECK(rig.rt().stream_state(*fresh) == StreamState::kReady);
  auto fence = rig.rt().submit(*fresh, CommandBatch::singleton(rig.upload_to_target()));
  REQUIRE(fence.has_value());
  CHECK(rig.rt().stream_state(*fresh) == StreamState::kSubmitted);
  // Pending is allowed before a wait (an asynchronous runtime); terminal success otherwise.
  const auto first = rig.rt().query_fence(**fence);
  if (traits().fences_terminal_at_submit) {
    REQUIRE(std::holds_alternative<TerminalReceipt>(first));
    CHECK(std::get<TerminalReceipt>(first) == TerminalReceipt::unprofiled(DeviceTerminal{}));
  } else {
    REQUIRE_FALSE(std::holds_alternative<RuntimeError>(first));
    if (std::holds_alternative<TerminalReceipt>(first)) {
      CHECK(std::get<TerminalReceipt>(first).terminal.is_succeeded());
    }
  }
  for (int i = 0; i < 3; ++i) {
    const auto waited = rig.rt().wait_fence(**fence);
    REQUIRE(waited.has_value());
    CHECK(waited->terminal.is_succeeded());
    CHECK(waited->execution_timing.status == TimingMeasurement::Status::kNotRequested);
    CHECK(waited->submission_timing.status == TimingMeasurement::Status::kNotRequested);
  }
  // After a wait the fence is terminal for good.
  const auto after = rig.rt().query_fence(**fence);
  REQUIRE(std::holds_alternative<TerminalReceipt>(after));
  CHECK(std::get<TerminalReceipt>(after).terminal.is_succeeded());
  CHECK(rig.rt().stream_state(*fresh) == StreamState::kSubmitted);
  // Other streams are independent.
  CHECK(rig.rt().stream_state(*stream_of(rig.rt())) == StreamState::kReady);
  REQUIRE(rig.rt().synchronize(*fresh).has_value());
  CHECK(rig.rt().stream_state(*fresh) == StreamState::kReady);
  // A rejected submit leaves a Ready stream Ready.
  CHECK_FALSE(rig.rt().submit(*fresh, CommandBatch{}).has_value());
  CHECK(rig.rt().stream_state(*fresh) == StreamState::kReady);
  // The upload ran.
  CHECK(contents(rig.rt(), *fresh, *rig.target) == pattern(16, 0x70));
}

TEST_CASE("a batch keeps command order and many fences of one stream all complete",
          "[conformance][fences]") {
  VTRACE_CONFORMANCE_RIG(rig);
  std::vector<FencePtr> fences;
  for (std::uint8_t i = 0; i < 8; ++i) {
    CommandBatch batch;
    batch.push(rig.upload_to_target(static_cast<std::uint8_t>(0x20 + i)));
    batch.push(std::move(*rig.rt().encode_zero(*rig.target, i, 1)));
    auto fence = rig.rt().submit(*rig.stream, std::move(batch));
    REQUIRE(fence.has_value());
    fences.push_back(std::move(*fence));
  }
  // Waited out of order.
  for (std::size_t i = fences.size(); i-- > 0;) {
    const auto waited = rig.rt().wait_fence(*fences[i]);
    REQUIRE(waited.has_value());
    CHECK(waited->terminal.is_succeeded());
  }
  auto expected = pattern(16, 0x27);
  expected[7] = 0;
  CHECK(contents(rig.rt(), *rig.stream, *rig.target) == expected);
  CHECK(counters(rig.rt()).submissions == rig.before.submissions + 8);
  CHECK(counters(rig.rt()).commands == rig.before.commands + 16);
}

// ---- transfers and counters ---------------------------------------------------------------------

TEST_CASE("uploads copy host bytes at encode time and are counted at submit time",
          "[conformance][counters]") {
  VTRACE_CONFORMANCE_RIG(rig);
  std::vector<std::uint8_t> host = pattern(4, 0x40);
  auto upload = rig.rt().encode_upload(host, layout(ElementType::kU8, 4), *rig.target, 6);
  REQUIRE(upload.has_value());
  host.assign(4, 0xEE);
  CHECK(counters(rig.rt()) == rig.before);
  submit_ok(rig.rt(), *rig.stream, CommandBatch::singleton(std::move(*upload)));
  auto expected = rig.target_bytes;
  std::copy_n(pattern(4, 0x40).begin(), 4, expected.begin() + 6);
  const auto after = counters(rig.rt());
  CHECK(after.uploaded_bytes == rig.before.uploaded_bytes + 4);
  CHECK(after.submissions == rig.before.submissions + 1);
  CHECK(after.commands == rig.before.commands + 1);
  CHECK(after.readback_bytes == rig.before.readback_bytes);
  CHECK(contents(rig.rt(), *rig.stream, *rig.target) == expected);
}

TEST_CASE("copies within one buffer behave like memmove and zero fills its range",
          "[conformance][counters]") {
  VTRACE_CONFORMANCE_RIG(rig);
  CommandBatch batch;
  batch.push(std::move(*rig.rt().encode_copy(*rig.target, *rig.target, region(0, 2, 8))));
  batch.push(std::move(*rig.rt().encode_zero(*rig.target, 12, 4)));
  submit_ok(rig.rt(), *rig.stream, std::move(batch));
  auto expected = rig.target_bytes;
  std::copy_n(rig.target_bytes.begin(), 8, expected.begin() + 2);
  std::fill_n(expected.begin() + 12, 4, 0);
  CHECK(contents(rig.rt(), *rig.stream, *rig.target) == expected);
  const auto after = counters(rig.rt());
  CHECK(after.uploaded_bytes == rig.before.uploaded_bytes);  // copy and zero do not count
  CHECK(after.commands == rig.before.commands + 2);
  CHECK(after.submissions == rig.before.submissions + 1);
  CHECK(after.allocations == rig.before.allocations);
  CHECK(after.dense_linear_launches == rig.before.dense_linear_launches);
  // Backwards overlap too.
  submit_ok(rig.rt(), *rig.stream,
            CommandBatch::singleton(std::move(*rig.rt().encode_copy(*rig.target, *rig.target, region(4, 0, 8)))));
  auto backwards = expected;
  std::copy_n(expected.begin() + 4, 8, backwards.begin());
  CHECK(contents(rig.rt(), *rig.stream, *rig.target) == backwards);
}

TEST_CASE("a copy between two buffers moves exactly its region", "[conformance]") {
  VTRACE_CONFORMANCE_RIG(rig);
  auto destination = allocate(rig.rt(), 32, ElementType::kU8, 64);
  fill(rig.rt(), *rig.stream, *destination, pattern(32, 0x90));
  submit_ok(rig.rt(), *rig.stream,
            CommandBatch::singleton(std::move(*rig.rt().encode_copy(*rig.target, *destination, region(3, 17, 9)))));
  auto expected = pattern(32, 0x90);
  std::copy_n(rig.target_bytes.begin() + 3, 9, expected.begin() + 17);
  CHECK(contents(rig.rt(), *rig.stream, *destination) == expected);
  CHECK(contents(rig.rt(), *rig.stream, *rig.target) == rig.target_bytes);
}

TEST_CASE("readback honours the host offset, zero-fills the rest and counts the region length",
          "[conformance][readback][counters]") {
  VTRACE_CONFORMANCE_OPEN(runtime, "device.conformance.0");
  auto stream = stream_of(*runtime);
  auto buffer = allocate(*runtime, 4, ElementType::kU8);
  fill(*runtime, *stream, *buffer, {10, 11, 12, 13});
  const auto before = counters(*runtime);
  const auto bytes = runtime->readback(*stream, *buffer, region(1, 2, 2), layout(ElementType::kU8, 6));
  REQUIRE(bytes.has_value());
  CHECK(*bytes == std::vector<std::uint8_t>{0, 0, 11, 12, 0, 0});
  CHECK(counters(*runtime).readback_bytes == before.readback_bytes + 2);  // not the 6 of the output
  CHECK(counters(*runtime).submissions == before.submissions);

  const auto mid = counters(*runtime);
  check_failed(runtime->readback(*stream, *buffer, region(1, 2, 2), layout(ElementType::kF16, 3)),
               ErrorKind::kReadbackElementTypeMismatch,
               "reference readback layout differs from source element type");
  CHECK(counters(*runtime) == mid);

  // An F16 buffer read with an F16 layout at a host offset.
  auto halves = allocate(*runtime, 8, ElementType::kF16);
  fill(*runtime, *stream, *halves, pattern(8, 0x31));
  const auto f16 = runtime->readback(*stream, *halves, region(2, 4, 4), layout(ElementType::kF16, 5));
  REQUIRE(f16.has_value());
  auto expected = std::vector<std::uint8_t>(10, 0);
  std::copy_n(pattern(8, 0x31).begin() + 2, 4, expected.begin() + 4);
  CHECK(*f16 == expected);
  CHECK(counters(*runtime).readback_bytes == mid.readback_bytes + 4);
  // The whole buffer exactly, and a layout larger than the region.
  CHECK(runtime->readback(*stream, *halves, region(0, 0, 8), layout(ElementType::kF16, 4)).value() ==
        pattern(8, 0x31));
}

// ---- attribution --------------------------------------------------------------------------------

TEST_CASE("attribution reports one row per entry with logical work bound to transfers",
          "[conformance][attribution][counters]") {
  VTRACE_CONFORMANCE_RIG(rig);
  const auto buffers = dense_buffers(rig.rt(), 1, 2, 2);
  CommandBatch batch;
  batch.require_logical_execution_path_attribution();
  batch.push_initialization(rig.upload_to_target());
  batch.push_node_initialization(2, *LogicalWork::for_participant_range(BatchingForm::kPacked, 1, 3, 9),
                                 std::move(*rig.rt().encode_zero(*rig.target, 0, 4)));
  EncodedOperation op;
  op.compute = dense_command(rig.rt(), buffers);
  batch.push_operation(5, std::move(op));
  rig.mark();
  auto fence = rig.rt().submit(*rig.stream, std::move(batch));
  REQUIRE(fence.has_value());
  REQUIRE(rig.rt().wait_fence(**fence).has_value());

  const auto attribution = rig.rt().submission_attribution(**fence);
  REQUIRE(attribution.has_value());
  const auto& rows = attribution->commands();
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].command_index() == 0);
  CHECK(rows[0].native_op_id() == "host.upload");
  CHECK(rows[0].command_phase() == CommandPhase::kInitialization);
  CHECK_FALSE(rows[0].node_index().has_value());
  CHECK(rows[0].transfer_command_count() == 1);
  CHECK(rows[0].compute_dispatch_count() == 0);
  CHECK(rows[0].participant_count() == 0);
  CHECK(rows[0].batching_form() == BatchingForm::kScalar);
  CHECK(rows[1].command_index() == 1);
  CHECK(rows[1].native_op_id() == "device.zero");
  CHECK(rows[1].node_index() == 2u);
  CHECK(rows[1].batching_form() == BatchingForm::kPacked);
  CHECK(rows[1].participant_start() == 1);
  CHECK(rows[1].participant_count() == 3);
  CHECK(rows[1].token_count() == 9);
  CHECK(rows[1].transfer_command_count() == 1);
  CHECK(rows[2].command_index() == 2);
  CHECK(rows[2].native_op_id() == "vnext_dense_linear");
  CHECK(rows[2].node_index() == 5u);
  CHECK(rows[2].command_phase() == CommandPhase::kCompute);
  CHECK(rows[2].execution_path() == ExecutionPath::kEager);
  CHECK(rows[2].batching_form() == BatchingForm::kScalar);
  CHECK(rows[2].compute_dispatch_count() == 1);
  CHECK(rows[2].transfer_command_count() == 0);
  CHECK(rows[2].participant_start() == 0);
  CHECK(rows[2].participant_count() == 1);
  CHECK(rows[2].token_count() == 1);
  CHECK_FALSE(rows[2].reusable_graph_node_count().has_value());

  const auto after = counters(rig.rt());
  CHECK(after.submissions == rig.before.submissions + 1);
  CHECK(after.commands == rig.before.commands + 3);
  CHECK(after.uploaded_bytes == rig.before.uploaded_bytes + 16);
  CHECK(after.dense_linear_launches == rig.before.dense_linear_launches + 1);

  // Without the requirement there is no attribution; another runtime's fence has none either.
  auto plain = rig.rt().submit(*rig.stream, CommandBatch::singleton(rig.upload_to_target()));
  REQUIRE(plain.has_value());
  CHECK_FALSE(rig.rt().submission_attribution(**plain).has_value());
  VTRACE_CONFORMANCE_OPEN(other, "device.conformance.1");
  CHECK_FALSE(other->submission_attribution(**fence).has_value());
  CHECK_FALSE(rig.rt().submission_attribution(AlienFence{}).has_value());
}

// ---- static weights (spec 10) -------------------------------------------------------------------

TEST_CASE("static weights take the portable zero-then-upload path: one submit of two initialization commands",
          "[conformance][static_weights][counters]") {
  VTRACE_CONFORMANCE_RIG(rig);
  CHECK_FALSE(rig.rt().begin_static_weight_import().has_value());
  auto weight = allocate(rig.rt(), 16, ElementType::kF16);
  fill(rig.rt(), *rig.stream, *weight, pattern(16, 0x55));  // zeroing must matter
  rig.mark();
  const auto component = pattern(8, 0x61);
  const auto receipt =
      initialize_static_buffer(rig.rt(), *rig.stream, *weight, component, ElementType::kF16, 4);
  REQUIRE(receipt.has_value());
  CHECK(receipt->uploaded_component_count == 1);
  CHECK(receipt->uploaded_bytes == 8);
  const auto after = counters(rig.rt());
  CHECK(after.submissions == rig.before.submissions + 1);
  CHECK(after.commands == rig.before.commands + 2);
  CHECK(after.uploaded_bytes == rig.before.uploaded_bytes + 8);
  CHECK(after.allocations == rig.before.allocations);
  std::vector<std::uint8_t> expected(16, 0);
  std::copy(component.begin(), component.end(), expected.begin() + 4);
  CHECK(contents(rig.rt(), *rig.stream, *weight) == expected);

  // Failures come back unchanged and submit nothing.
  rig.mark();
  const auto odd = initialize_static_buffer(rig.rt(), *rig.stream, *weight, pattern(3),
                                            ElementType::kF16);
  check_failed(odd, ErrorKind::kUploadByteCountMismatch);
  const auto past = initialize_static_buffer(rig.rt(), *rig.stream, *weight, pattern(8),
                                             ElementType::kF16, 10);
  check_failed(past, ErrorKind::kRegionOutOfBounds);
  const auto wrong_type = initialize_static_buffer(rig.rt(), *rig.stream, *weight, pattern(8),
                                                   ElementType::kU8);
  check_failed(wrong_type, ErrorKind::kUploadElementTypeMismatch);
  const auto empty = initialize_static_buffer(rig.rt(), *rig.stream, *weight, pattern(1),
                                              ElementType::kF16);
  check_failed(empty, ErrorKind::kContractValue);
  CHECK(counters(rig.rt()) == rig.before);
  CHECK(contents(rig.rt(), *rig.stream, *weight) == expected);
}

// ---- optional-method defaults (spec 5.2) --------------------------------------------------------

TEST_CASE("static weight hooks default to the portable zero-then-upload path",
          "[conformance][defaults]") {
  VTRACE_CONFORMANCE_OPEN(runtime, "device.conformance.0");
  auto weight = allocate(*runtime, 8, ElementType::kF16);
  CHECK_FALSE(runtime->begin_static_weight_import().has_value());
  CHECK_FALSE(
      runtime->encode_static_weight_transform({weight.get(), weight.get(), "transform.test"})
          .has_value());
}

TEST_CASE("reusable-execution hooks report unsupported, an empty catalog and nothing to trim",
          "[conformance][defaults]") {
  VTRACE_CONFORMANCE_OPEN(runtime, "device.conformance.0");
  auto stream = stream_of(*runtime);
  auto plan = ReusableExecutionPlan::create(4);
  REQUIRE(plan.has_value());
  CHECK_FALSE(ReusableExecutionPlan::create(0).has_value());

  const auto unsupported = ReusableExecutionPreparation::unsupported();
  CHECK(unsupported.state == ReusableExecutionState::kUnsupported);
  CHECK(unsupported.catalog_lifetime == ReusableExecutionCatalogLifetime::kStartupSealed);
  CHECK(unsupported.maximum_executables == 0);

  auto configured = runtime->configure_reusable_executables(*stream, *plan);
  REQUIRE(configured.has_value());
  CHECK(*configured == unsupported);
  auto sealed = runtime->seal_reusable_executables(*stream);
  REQUIRE(sealed.has_value());
  CHECK(*sealed == unsupported);
  auto preparation = runtime->reusable_executable_preparation(*stream);
  REQUIRE(preparation.has_value());
  CHECK(*preparation == unsupported);
  auto catalog = runtime->reusable_execution_catalog(*stream);
  REQUIRE(catalog.has_value());
  CHECK(catalog->empty());
  auto encoded = runtime->encode_reusable_execution({"program.test", 0});
  REQUIRE(encoded.has_value());
  CHECK_FALSE(encoded->has_value());  // Ok(None): use the provider's normal encoding
  auto trim = runtime->trim_reusable_executables(*stream);
  REQUIRE(trim.has_value());
  CHECK(trim->released_executables == 0);
  CHECK(trim->released_rejections == 0);
  CHECK(runtime->stream_state(*stream) == StreamState::kReady);
  CHECK(counters(*runtime) == CounterSnapshot{});
}

TEST_CASE("coalescing program bindings keeps every command in order", "[conformance][defaults]") {
  VTRACE_CONFORMANCE_OPEN(runtime, "device.conformance.0");
  auto stream = stream_of(*runtime);
  auto buffer = allocate(*runtime, 4, ElementType::kU8);
  std::vector<CommandPtr> commands;
  // Three uploads to one byte range: the last one wins.
  for (const std::uint8_t value : std::initializer_list<std::uint8_t>{1, 2, 3}) {
    auto upload = runtime->encode_upload(std::vector<std::uint8_t>(4, value),
                                         layout(ElementType::kU8, 4), *buffer, 0);
    REQUIRE(upload.has_value());
    commands.push_back(std::move(*upload));
  }
  auto coalesced = runtime->coalesce_program_bindings(std::move(commands));
  REQUIRE(coalesced.has_value());
  REQUIRE(coalesced->size() == 3);
  CommandBatch batch;
  for (auto& command : *coalesced) batch.push_dynamic_binding(std::move(command));
  submit_ok(*runtime, *stream, std::move(batch));
  CHECK(contents(*runtime, *stream, *buffer) == std::vector<std::uint8_t>(4, 3));
  CHECK(counters(*runtime).commands == 3);
  CHECK(counters(*runtime).uploaded_bytes == 12);
}

TEST_CASE("guarded submission is unsupported and rejects without executing or counting",
          "[conformance][defaults]") {
  VTRACE_CONFORMANCE_OPEN(runtime, "device.conformance.0");
  auto stream = stream_of(*runtime);
  auto buffer = allocate(*runtime, 4, ElementType::kU8);
  fill(*runtime, *stream, *buffer, {9, 9, 9, 9});
  CHECK_FALSE(runtime->supports_guarded_submission());

  auto zero = runtime->encode_zero(*buffer, 0, 4);
  REQUIRE(zero.has_value());
  const CounterSnapshot before = counters(*runtime);
  auto guarded = runtime->submit_guarded(*stream, CommandBatch::singleton(std::move(*zero)),
                                         SubmissionGuard{16});
  REQUIRE_FALSE(guarded.has_value());
  REQUIRE(guarded.error().rejected.has_value());
  CHECK(*guarded.error().rejected == GuardedNotSubmittedReason::kAttributionUnavailable);
  CHECK_FALSE(guarded.error().not_submitted.has_value());
  CHECK(counters(*runtime) == before);
  CHECK(contents(*runtime, *stream, *buffer) == std::vector<std::uint8_t>{9, 9, 9, 9});
}

TEST_CASE("submission attribution is absent unless the batch required it", "[conformance][defaults]") {
  VTRACE_CONFORMANCE_OPEN(runtime, "device.conformance.0");
  auto stream = stream_of(*runtime);
  auto buffer = allocate(*runtime, 4, ElementType::kU8);
  auto zero = runtime->encode_zero(*buffer, 0, 4);
  REQUIRE(zero.has_value());
  auto fence = runtime->submit(*stream, CommandBatch::singleton(std::move(*zero)));
  REQUIRE(fence.has_value());
  REQUIRE(runtime->wait_fence(**fence).has_value());
  CHECK_FALSE(runtime->submission_attribution(**fence).has_value());
}

TEST_CASE("submits from several threads, each on its own stream, compute as if alone",
          "[conformance][threads]") {
  // Every method may be called concurrently, one stream per thread (device_runtime.h). Four
  // threads each upload their own input and weight, run a dense linear over k = 1024 (four
  // split-k blocks) and read back, 8 rounds each; the assertions run on this thread only
  // (Catch2 v2 is not thread-safe).
  VTRACE_CONFORMANCE_OPEN(runtime, "device.conformance.threads.0");
  constexpr std::size_t kThreads = 4;
  constexpr std::size_t kRounds = 8;
  constexpr std::uint64_t kRows = 3, kIn = 1024, kOut = 40;
  struct Lane {
    rt::StreamPtr stream;
    DenseBuffers buffers;
    std::vector<std::vector<std::uint8_t>> inputs, weights, outputs;
    std::string failure;
  };
  std::vector<Lane> lanes(kThreads);
  std::mt19937_64 rng(2026);
  std::normal_distribution<float> gaussian(0.0f, 1.0f);
  const auto random_f16 = [&](std::size_t n) {
    std::vector<float> values(n);
    for (auto& v : values) v = gaussian(rng);
    return rt::testing::f16_bytes(values);
  };
  for (auto& lane : lanes) {
    lane.stream = stream_of(*runtime);
    lane.buffers = dense_buffers(*runtime, kRows, kIn, kOut);
    for (std::size_t r = 0; r < kRounds; ++r) {
      lane.inputs.push_back(random_f16(kRows * kIn));
      lane.weights.push_back(random_f16(kOut * kIn));
    }
  }
  const auto run_lane = [&runtime](Lane& lane) {
    const auto fail = [&lane](const std::string& what) {
      if (lane.failure.empty()) lane.failure = what;
    };
    for (std::size_t r = 0; r < kRounds && lane.failure.empty(); ++r) {
      rt::CommandBatch batch;
      auto in = rt::HostTransferLayout::create(rt::ElementType::kF16, kRows * kIn);
      auto w = rt::HostTransferLayout::create(rt::ElementType::kF16, kOut * kIn);
      auto up_in = runtime->encode_upload(lane.inputs[r], *in, *lane.buffers.input, 0);
      auto up_w = runtime->encode_upload(lane.weights[r], *w, *lane.buffers.weight, 0);
      const rt::DenseLinearLaunch launch = lane.buffers.launch();
      auto dense = runtime->encode_dense_linear({{&launch, 1}, 1, kRows});
      if (!up_in || !up_w || !dense) return fail("encode failed");
      batch.push(std::move(*up_in));
      batch.push(std::move(*up_w));
      batch.push(std::move(*dense));
      auto fence = runtime->submit(*lane.stream, std::move(batch));
      if (!fence || !runtime->wait_fence(**fence)) return fail("submit or wait failed");
      auto out_layout = rt::HostTransferLayout::create(rt::ElementType::kF16, kRows * kOut);
      auto whole = rt::CopyRegion::create(0, 0, kRows * kOut * 2);
      auto bytes = runtime->readback(*lane.stream, *lane.buffers.output, *whole, *out_layout);
      if (!bytes) return fail("readback failed");
      lane.outputs.push_back(std::move(*bytes));
    }
  };
  const rt::CounterSnapshot before = counters(*runtime);
  {
    std::vector<std::thread> threads;
    for (auto& lane : lanes) threads.emplace_back(run_lane, std::ref(lane));
    for (auto& thread : threads) thread.join();
  }
  for (std::size_t t = 0; t < kThreads; ++t) {
    INFO("thread " << t);
    CHECK(lanes[t].failure.empty());
    REQUIRE(lanes[t].outputs.size() == kRounds);
    for (std::size_t r = 0; r < kRounds; ++r) {
      INFO("round " << r);
      CHECK(wrong_outputs(lanes[t].outputs[r], lanes[t].inputs[r], lanes[t].weights[r], kRows, kIn,
                          kOut) == 0);
    }
  }
  const rt::CounterSnapshot after = counters(*runtime);
  CHECK(after.submissions - before.submissions == kThreads * kRounds);
  CHECK(after.commands - before.commands == 3 * kThreads * kRounds);
  CHECK(after.dense_linear_launches - before.dense_linear_launches == kThreads * kRounds);
  CHECK(after.uploaded_bytes - before.uploaded_bytes == kThreads * kRounds * (kRows + kOut) * kIn * 2);
  CHECK(after.readback_bytes - before.readback_bytes == kThreads * kRounds * kRows * kOut * 2);
}

// Spec 7.3: query_fence does not block. A runtime whose work goes on after submit (a GPU) must
// answer Pending while a long batch runs, and the fence must then reach terminal success through
// wait_fence with the right result. The batch is dense-linear launches of 512 x 4096 x 4096 (8.6 G
// multiply-adds each: longer on the device than enqueueing one takes the host, even with tensor
// cores, so work piles up behind submit), 16 of them, then 64, 256, 1024 until a query right
// after submit sees Pending: a runtime whose submit waits for its work never does. The result is
// checked on the first and the last row (the host model of all 512 would take minutes).
TEST_CASE("a runtime that runs after submit answers Pending while a long batch runs, then succeeds",
          "[conformance][fences][async]") {
  VTRACE_CONFORMANCE_OPEN(runtime, "device.conformance.0");
  if (!traits().runs_after_submit) {
    VTRACE_SKIP("runtime `" + runtime_name() +
                "` runs every batch inside submit: its fences are never Pending");
  }
  auto stream = stream_of(*runtime);
  // On the emulated cudart such a batch would take the host minutes: a small one, with the
  // device's streams held while the fence is first asked.
  constexpr std::uint64_t kRows = kCudaEmulated ? 8 : 512;
  constexpr std::uint64_t kIn = kCudaEmulated ? 64 : 4096, kOut = kCudaEmulated ? 64 : 4096;
  const auto buffers = dense_buffers(*runtime, kRows, kIn, kOut);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<float> input(kRows * kIn), weight(kOut * kIn);
  for (float& v : input) v = normal(rng);
  for (float& v : weight) v = normal(rng);
  const auto input_bytes = vtrace::runtime::testing::f16_bytes(input);
  const auto weight_bytes = vtrace::runtime::testing::f16_bytes(weight);
  fill(*runtime, *stream, *buffers.input, input_bytes);
  fill(*runtime, *stream, *buffers.weight, weight_bytes);
  bool pending = false;
  std::size_t launches = 16;
  for (; !pending && launches <= 1024; launches *= 4) {
    CommandBatch batch;
    for (std::size_t i = 0; i < launches; ++i) batch.push(dense_command(*runtime, buffers));
    hold_emulated_streams();
    auto fence = runtime->submit(*stream, std::move(batch));
    REQUIRE(fence.has_value());
    const auto first = runtime->query_fence(**fence);
    release_emulated_streams();
    REQUIRE_FALSE(std::holds_alternative<RuntimeError>(first));
    pending = std::holds_alternative<FenceQueryPending>(first);
    const auto waited = runtime->wait_fence(**fence);
    REQUIRE(waited.has_value());
    CHECK(waited->terminal.is_succeeded());
    const auto after = runtime->query_fence(**fence);
    REQUIRE(std::holds_alternative<TerminalReceipt>(after));
  }
  INFO("largest batch tried: " << launches / 4 << " launches");
  CHECK(pending);
  const auto out = contents(*runtime, *stream, *buffers.output);
  REQUIRE(out.size() == kRows * kOut * 2);
  for (const std::uint64_t row : {std::uint64_t{0}, kRows - 1}) {
    INFO("row " << row);
    const auto row_of = [row](const std::vector<std::uint8_t>& bytes, std::uint64_t width) {
      const auto first = bytes.begin() + static_cast<std::ptrdiff_t>(row * width * 2);
      return std::vector<std::uint8_t>(first, first + static_cast<std::ptrdiff_t>(width * 2));
    };
    CHECK(wrong_outputs(row_of(out, kOut), row_of(input_bytes, kIn), weight_bytes, 1, kIn, kOut) ==
          0);
  }
}
