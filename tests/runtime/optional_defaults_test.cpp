// The optional DeviceRuntime methods keep exactly upstream's defaults (spec 5.2). The reference
// runtime overrides none of them except submission_attribution, so it shows the defaults.
#include <catch2/catch.hpp>

#include "runtime_test_support.h"

namespace vtrace::runtime {
namespace {

using testing::allocate;
using testing::contents;
using testing::fill;
using testing::make_reference;
using testing::submit_ok;

TEST_CASE("static weight hooks default to the portable zero-then-upload path",
          "[runtime][defaults]") {
  auto runtime = make_reference();
  auto weight = allocate(*runtime, 8, ElementType::kF16);
  CHECK_FALSE(runtime->begin_static_weight_import().has_value());
  CHECK_FALSE(
      runtime->encode_static_weight_transform({weight.get(), weight.get(), "transform.test"})
          .has_value());
}

TEST_CASE("reusable-execution hooks report unsupported, an empty catalog and nothing to trim",
          "[runtime][defaults]") {
  auto runtime = make_reference();
  auto stream = runtime->create_stream();
  REQUIRE(stream.has_value());
  auto plan = ReusableExecutionPlan::create(4);
  REQUIRE(plan.has_value());
  CHECK_FALSE(ReusableExecutionPlan::create(0).has_value());

  const auto unsupported = ReusableExecutionPreparation::unsupported();
  CHECK(unsupported.state == ReusableExecutionState::kUnsupported);
  CHECK(unsupported.catalog_lifetime == ReusableExecutionCatalogLifetime::kStartupSealed);
  CHECK(unsupported.maximum_executables == 0);

  auto configured = runtime->configure_reusable_executables(**stream, *plan);
  REQUIRE(configured.has_value());
  CHECK(*configured == unsupported);
  auto sealed = runtime->seal_reusable_executables(**stream);
  REQUIRE(sealed.has_value());
  CHECK(*sealed == unsupported);
  auto preparation = runtime->reusable_executable_preparation(**stream);
  REQUIRE(preparation.has_value());
  CHECK(*preparation == unsupported);
  auto catalog = runtime->reusable_execution_catalog(**stream);
  REQUIRE(catalog.has_value());
  CHECK(catalog->empty());
  auto encoded = runtime->encode_reusable_execution({"program.test", 0});
  REQUIRE(encoded.has_value());
  CHECK_FALSE(encoded->has_value());  // Ok(None): use the provider's normal encoding
  auto trim = runtime->trim_reusable_executables(**stream);
  REQUIRE(trim.has_value());
  CHECK(trim->released_executables == 0);
  CHECK(trim->released_rejections == 0);
  CHECK(runtime->stream_state(**stream) == StreamState::kReady);
}

TEST_CASE("coalescing program bindings keeps every command in order", "[runtime][defaults]") {
  auto runtime = make_reference();
  auto stream = runtime->create_stream();
  REQUIRE(stream.has_value());
  auto buffer = allocate(*runtime, 4, ElementType::kU8);
  std::vector<CommandPtr> commands;
  for (const std::uint8_t value : std::initializer_list<std::uint8_t>{1, 2, 3}) {  // three uploads to one byte range: the last one wins
    const std::vector<std::uint8_t> bytes(4, value);
    auto layout = HostTransferLayout::create(ElementType::kU8, 4);
    REQUIRE(layout.has_value());
    auto upload = runtime->encode_upload(bytes, *layout, *buffer, 0);
    REQUIRE(upload.has_value());
    commands.push_back(std::move(*upload));
  }
  auto coalesced = runtime->coalesce_program_bindings(std::move(commands));
  REQUIRE(coalesced.has_value());
  REQUIRE(coalesced->size() == 3);
  CommandBatch batch;
  for (auto& command : *coalesced) batch.push_dynamic_binding(std::move(command));
  submit_ok(*runtime, **stream, std::move(batch));
  CHECK(contents(*runtime, **stream, *buffer) == std::vector<std::uint8_t>(4, 3));
  CHECK(runtime->snapshot().commands == 3);
}

TEST_CASE("guarded submission is unsupported and rejects without executing or counting",
          "[runtime][defaults]") {
  auto runtime = make_reference();
  auto stream = runtime->create_stream();
  REQUIRE(stream.has_value());
  auto buffer = allocate(*runtime, 4, ElementType::kU8);
  fill(*runtime, **stream, *buffer, {9, 9, 9, 9});
  CHECK_FALSE(runtime->supports_guarded_submission());

  auto zero = runtime->encode_zero(*buffer, 0, 4);
  REQUIRE(zero.has_value());
  const CounterSnapshot before = runtime->snapshot();
  auto guarded = runtime->submit_guarded(**stream, CommandBatch::singleton(std::move(*zero)),
                                         SubmissionGuard{16});
  REQUIRE_FALSE(guarded.has_value());
  REQUIRE(guarded.error().rejected.has_value());
  CHECK(*guarded.error().rejected == GuardedNotSubmittedReason::kAttributionUnavailable);
  CHECK_FALSE(guarded.error().not_submitted.has_value());
  CHECK(runtime->snapshot() == before);
  CHECK(contents(*runtime, **stream, *buffer) == std::vector<std::uint8_t>{9, 9, 9, 9});
}

TEST_CASE("submission attribution is absent unless the batch required it", "[runtime][defaults]") {
  auto runtime = make_reference();
  auto stream = runtime->create_stream();
  REQUIRE(stream.has_value());
  auto buffer = allocate(*runtime, 4, ElementType::kU8);
  auto zero = runtime->encode_zero(*buffer, 0, 4);
  REQUIRE(zero.has_value());
  auto fence = runtime->submit(**stream, CommandBatch::singleton(std::move(*zero)));
  REQUIRE(fence.has_value());
  CHECK_FALSE(runtime->submission_attribution(**fence).has_value());
}

}  // namespace
}  // namespace vtrace::runtime
