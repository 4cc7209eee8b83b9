// The comparator's rules, each tested directly: two observations that differ in exactly one way.
#include <catch2/catch.hpp>

#include <bit>
#include <cstring>
#include <limits>

#include "vtrace/replayer/comparator.h"

namespace rp = vtrace::replayer;
namespace rt = vtrace::runtime;
using rp::CheckMode;
using rp::DifferenceKind;
using rp::Observation;

namespace {

rp::Comparison cmp(const Observation& e, const Observation& a, CheckMode mode = CheckMode::bits()) {
  return rp::compare(e, a, mode);
}

// The one difference of a comparison (REQUIREs there is exactly one).
rp::Difference only(const rp::Comparison& c) {
  REQUIRE(c.differences.size() == 1);
  return c.differences.front();
}

Observation with_outcome(rp::Outcome outcome) {
  Observation o;
  o.outcome = std::move(outcome);
  return o;
}

rt::RuntimeError error(rt::ErrorKind kind, std::string message = "because") {
  return rt::RuntimeError(kind, std::move(message));
}

rt::BufferDescriptor descriptor() {
  rt::BufferDescriptor d;
  d.resource_id = *rt::ResourceId::create("resource.test");
  d.size_bytes = 64;
  d.alignment_bytes = 16;
  d.usage = rt::BufferUsage::kActivations;
  d.element_type = rt::ElementType::kF16;
  return d;
}

rt::NativeWorkAttribution row(std::uint64_t tokens, std::uint32_t command = 0) {
  return *rt::NativeWorkAttribution::with_participant_range(
      command, std::nullopt, rt::CommandPhase::kCompute, *rt::DeviceNativeOperationId::create("op.dense"),
      rt::ExecutionPath::kEager, rt::BatchingForm::kPacked, 0, 0, tokens, 1, 0, std::nullopt);
}

Observation with_rows(std::vector<rt::NativeWorkAttribution> rows) {
  Observation o;
  o.attribution = rp::AttributionAnswer{rt::SubmissionAttribution::create(std::move(rows))};
  return o;
}

Observation with_fence(rt::FenceQuery q) {
  Observation o;
  o.fence = std::move(q);
  return o;
}

rt::FenceQuery terminal(std::optional<rt::RuntimeError> failure = std::nullopt,
                        std::uint64_t elapsed_ns = 0) {
  rt::TerminalReceipt r = rt::TerminalReceipt::unprofiled({std::move(failure)});
  if (elapsed_ns != 0) {
    r.execution_timing.status = rt::TimingMeasurement::Status::kMeasured;
    r.execution_timing.elapsed_ns = elapsed_ns;
  }
  return r;
}

template <typename T>
std::vector<std::uint8_t> bytes_of(std::initializer_list<T> values) {
  std::vector<std::uint8_t> out(values.size() * sizeof(T));
  std::size_t i = 0;
  for (const T v : values) {
    std::memcpy(out.data() + i, &v, sizeof(T));  // little-endian host, as traces are
    i += sizeof(T);
  }
  return out;
}

Observation with_readback(std::vector<std::uint8_t> bytes, rt::ElementType type) {
  Observation o;
  o.outcome = rp::Outcome{};
  o.readback = rp::ReadbackAnswer{type, std::move(bytes), nullptr};
  return o;
}

// Compares two readbacks of one element each under `mode`; nullopt when they match.
std::optional<rp::ReadbackDifference> readback_diff(std::vector<std::uint8_t> e,
                                                    std::vector<std::uint8_t> a,
                                                    rt::ElementType type, CheckMode mode) {
  const auto c = cmp(with_readback(std::move(e), type), with_readback(std::move(a), type), mode);
  CHECK(c.checked.readbacks == 1);
  if (c.differences.empty()) return std::nullopt;
  const auto d = only(c);
  CHECK(d.kind == DifferenceKind::kReadback);
  REQUIRE(d.readback.has_value());
  return d.readback;
}

}  // namespace

TEST_CASE("comparator: identical observations match and count one call", "[replayer][comparator]") {
  const auto c = cmp(with_outcome({}), with_outcome({}));
  CHECK(c.differences.empty());
  CHECK(c.checked.calls == 1);
  CHECK(c.checked.error_outcomes == 0);
}

TEST_CASE("comparator: success against failure is an outcome difference", "[replayer][comparator]") {
  const Observation ok = with_outcome({});
  const Observation failed = with_outcome(error(rt::ErrorKind::kUploadByteCountMismatch));
  const auto d = only(cmp(ok, failed));
  CHECK(d.kind == DifferenceKind::kOutcome);
  const auto text = rp::render(d, ok, failed);
  CHECK(text.expected == "success");
  CHECK(text.actual == "error upload_byte_count_mismatch (because)");
  CHECK(only(cmp(failed, ok)).kind == DifferenceKind::kOutcome);
  CHECK(cmp(failed, ok).checked.error_outcomes == 1);
}

TEST_CASE("comparator: two failures of different kinds differ, messages are not compared",
          "[replayer][comparator]") {
  const Observation a = with_outcome(error(rt::ErrorKind::kUploadByteCountMismatch, "one"));
  const Observation b = with_outcome(error(rt::ErrorKind::kUploadElementTypeMismatch, "one"));
  const auto d = only(cmp(a, b));
  CHECK(d.kind == DifferenceKind::kErrorKind);
  CHECK(rp::render(d, a, b).actual == "error upload_element_type_mismatch (one)");
  const Observation same_kind = with_outcome(error(rt::ErrorKind::kUploadByteCountMismatch, "two"));
  const auto c = cmp(a, same_kind);
  CHECK(c.differences.empty());
  CHECK(c.checked.calls == 1);
  CHECK(c.checked.error_outcomes == 1);
}

TEST_CASE("comparator: one descriptor field differs", "[replayer][comparator]") {
  Observation e;
  e.descriptor = descriptor();
  for (int field = 0; field < 5; ++field) {
    Observation a;
    a.descriptor = descriptor();
    switch (field) {
      case 0: a.descriptor->resource_id = *rt::ResourceId::create("resource.other"); break;
      case 1: a.descriptor->size_bytes = 65; break;
      case 2: a.descriptor->alignment_bytes = 32; break;
      case 3: a.descriptor->usage = rt::BufferUsage::kScratch; break;
      default: a.descriptor->element_type = rt::ElementType::kBf16; break;
    }
    INFO("field " << field);
    const auto c = cmp(e, a);
    CHECK(only(c).kind == DifferenceKind::kDescriptor);
    CHECK(c.checked.calls == 1);
  }
  CHECK(cmp(e, e).differences.empty());
}

TEST_CASE("comparator: stream states differ", "[replayer][comparator]") {
  Observation e;
  e.stream_state = rt::StreamState::kReady;
  Observation a;
  a.stream_state = rt::StreamState::kFailed;
  const auto d = only(cmp(e, a));
  CHECK(d.kind == DifferenceKind::kStreamState);
  CHECK(rp::render(d, e, a).expected == "ready");
}

TEST_CASE("comparator: fence answers, pending is not compared, indeterminate vs terminal is",
          "[replayer][comparator]") {
  const Observation pending = with_fence(rt::FenceQueryPending{});
  const Observation succeeded = with_fence(terminal());
  const Observation failed = with_fence(terminal(error(rt::ErrorKind::kUploadByteCountMismatch)));
  const Observation failed_other =
      with_fence(terminal(error(rt::ErrorKind::kUploadElementTypeMismatch)));
  const Observation indeterminate =
      with_fence(rt::FenceQuery(error(rt::ErrorKind::kForeignFence)));

  for (const auto* other : {&succeeded, &indeterminate}) {
    const auto c = cmp(pending, *other);
    CHECK(c.differences.empty());
    CHECK(c.checked.fences == 0);
    CHECK(c.checked.calls == 0);
    CHECK(cmp(*other, pending).differences.empty());
  }
  const auto c = cmp(indeterminate, succeeded);
  CHECK(only(c).kind == DifferenceKind::kFence);
  CHECK(c.checked.fences == 1);
  CHECK(only(cmp(succeeded, failed)).kind == DifferenceKind::kFence);
  CHECK(only(cmp(failed, failed_other)).kind == DifferenceKind::kFence);
  // Two indeterminate answers of different kinds differ; of one kind they do not.
  const Observation indeterminate_other =
      with_fence(rt::FenceQuery(error(rt::ErrorKind::kUploadByteCountMismatch)));
  CHECK(only(cmp(indeterminate, indeterminate_other)).kind == DifferenceKind::kFence);
  CHECK(cmp(indeterminate, with_fence(rt::FenceQuery(error(rt::ErrorKind::kForeignFence, "x"))))
            .differences.empty());
  // Timing measurements are not the contract.
  CHECK(cmp(succeeded, with_fence(terminal(std::nullopt, 123))).differences.empty());
  CHECK(cmp(indeterminate, indeterminate).checked.fences == 1);
}

TEST_CASE("comparator: one attribution field differs", "[replayer][comparator]") {
  const Observation e = with_rows({row(4)});
  const Observation a = with_rows({row(5)});
  const auto c = cmp(e, a);
  const auto d = only(c);
  CHECK(d.kind == DifferenceKind::kAttribution);
  CHECK(d.row == 0u);
  CHECK(d.field == "token_count");
  CHECK(c.checked.attribution_rows == 1);
  CHECK(rp::render(d, e, a).expected.starts_with("row 0 {command 0 node none"));
  CHECK(cmp(e, e).differences.empty());
  Observation none;
  none.attribution = rp::AttributionAnswer{};
  const auto presence = only(cmp(e, none));
  CHECK(presence.kind == DifferenceKind::kAttribution);
  CHECK_FALSE(presence.row.has_value());
  CHECK(rp::render(presence, e, none).actual == "no attribution");
  // A row missing or extra, after equal ones: named by its index, field "rows".
  const Observation two = with_rows({row(4), row(5, 1)});
  REQUIRE(two.attribution->rows.has_value());
  for (const auto& [want, got] : {std::pair{two, e}, std::pair{e, two}}) {
    const auto count = only(cmp(want, got));
    CHECK(count.kind == DifferenceKind::kAttribution);
    CHECK(count.row == 1u);
    CHECK(count.field == "rows");
  }
}

TEST_CASE("comparator: one readback byte differs under bits", "[replayer][comparator]") {
  const auto d = readback_diff({1, 2, 3, 4}, {1, 2, 9, 4}, rt::ElementType::kU8, CheckMode::bits());
  REQUIRE(d.has_value());
  CHECK(d->first_element == 2);
  CHECK(d->differing_elements == 1);
  CHECK_FALSE(readback_diff({1, 2}, {1, 2}, rt::ElementType::kU8, CheckMode::bits()));
  // none compares no bytes and counts no readback.
  const auto c = cmp(with_readback({1}, rt::ElementType::kU8), with_readback({2}, rt::ElementType::kU8),
                     CheckMode::none());
  CHECK(c.differences.empty());
  CHECK(c.checked.readbacks == 0);
}

TEST_CASE("comparator: F16, BF16 and F32 readbacks within and beyond N ULP",
          "[replayer][comparator]") {
  using E = rt::ElementType;
  // 1.0 against 1.0 + 3 ULP, in each type.
  const auto f16 = [](std::uint16_t v) { return bytes_of<std::uint16_t>({v}); };
  const auto f32 = [](std::uint32_t v) { return bytes_of<std::uint32_t>({v}); };
  CHECK_FALSE(readback_diff(f16(0x3C00), f16(0x3C03), E::kF16, CheckMode::ulp(3)));
  auto d = readback_diff(f16(0x3C00), f16(0x3C03), E::kF16, CheckMode::ulp(2));
  REQUIRE(d);
  CHECK(d->ulp == 3u);
  CHECK(d->max_ulp == 3u);
  CHECK_FALSE(readback_diff(f16(0x3F80), f16(0x3F83), E::kBf16, CheckMode::ulp(3)));
  CHECK(readback_diff(f16(0x3F80), f16(0x3F83), E::kBf16, CheckMode::ulp(2)));
  CHECK_FALSE(readback_diff(f32(0x3F800000u), f32(0x3F800003u), E::kF32, CheckMode::ulp(3)));
  d = readback_diff(f32(0x3F800000u), f32(0x3F800003u), E::kF32, CheckMode::ulp(2));
  REQUIRE(d);
  CHECK(d->ulp == 3u);
  // Statistics over several elements: two beyond N, the largest distance reported.
  d = readback_diff(bytes_of<std::uint32_t>({0x3F800000u, 0x3F800000u, 0x40000000u}),
                    bytes_of<std::uint32_t>({0x3F800001u, 0x3F800005u, 0x40000009u}), E::kF32,
                    CheckMode::ulp(1));
  REQUIRE(d);
  CHECK(d->differing_elements == 2);
  CHECK(d->first_element == 1);
  CHECK(d->max_ulp == 9u);
}

TEST_CASE("comparator: +0 and -0 are 0 ULP apart", "[replayer][comparator]") {
  using E = rt::ElementType;
  CHECK_FALSE(readback_diff(bytes_of<std::uint16_t>({0x0000}), bytes_of<std::uint16_t>({0x8000}),
                            E::kF16, CheckMode::ulp(0)));
  CHECK_FALSE(readback_diff(bytes_of<std::uint16_t>({0x0000}), bytes_of<std::uint16_t>({0x8000}),
                            E::kBf16, CheckMode::ulp(0)));
  CHECK_FALSE(readback_diff(bytes_of<std::uint32_t>({0x00000000u}),
                            bytes_of<std::uint32_t>({0x80000000u}), E::kF32, CheckMode::ulp(0)));
  CHECK(readback_diff(bytes_of<std::uint32_t>({0x00000000u}), bytes_of<std::uint32_t>({0x80000000u}),
                      E::kF32, CheckMode::bits()));
}

TEST_CASE("comparator: NaN matches NaN in ulp mode, payloads differ in bits mode",
          "[replayer][comparator]") {
  using E = rt::ElementType;
  const auto f16a = bytes_of<std::uint16_t>({0x7E00});
  const auto f16b = bytes_of<std::uint16_t>({0xFE01});
  const auto bf16a = bytes_of<std::uint16_t>({0x7FC0});
  const auto bf16b = bytes_of<std::uint16_t>({0xFFC1});
  const auto f32a = bytes_of<std::uint32_t>({0x7FC00000u});
  const auto f32b = bytes_of<std::uint32_t>({0xFFC00001u});
  CHECK_FALSE(readback_diff(f16a, f16b, E::kF16, CheckMode::ulp(0)));
  CHECK_FALSE(readback_diff(bf16a, bf16b, E::kBf16, CheckMode::ulp(0)));
  CHECK_FALSE(readback_diff(f32a, f32b, E::kF32, CheckMode::ulp(0)));
  CHECK(readback_diff(f16a, f16b, E::kF16, CheckMode::bits()));
  CHECK(readback_diff(bf16a, bf16b, E::kBf16, CheckMode::bits()));
  CHECK(readback_diff(f32a, f32b, E::kF32, CheckMode::bits()));
}

TEST_CASE("comparator: NaN against a number is always a mismatch", "[replayer][comparator]") {
  using E = rt::ElementType;
  const CheckMode huge = CheckMode::ulp(std::numeric_limits<std::uint64_t>::max());
  auto d = readback_diff(bytes_of<std::uint16_t>({0x7E00}), bytes_of<std::uint16_t>({0x3C00}),
                         E::kF16, huge);
  REQUIRE(d);
  CHECK_FALSE(d->ulp.has_value());
  CHECK(readback_diff(bytes_of<std::uint16_t>({0x3F80}), bytes_of<std::uint16_t>({0x7FC0}),
                      E::kBf16, huge));
  // Patterns that are F16 NaNs but BF16 numbers (2 ULP apart): the BF16 rule applies.
  CHECK(readback_diff(bytes_of<std::uint16_t>({0x7C01}), bytes_of<std::uint16_t>({0x7C03}),
                      E::kBf16, CheckMode::ulp(1)));
  CHECK_FALSE(readback_diff(bytes_of<std::uint16_t>({0x7C01}), bytes_of<std::uint16_t>({0x7C03}),
                            E::kBf16, CheckMode::ulp(2)));
  CHECK(readback_diff(bytes_of<std::uint32_t>({0x7FC00000u}), bytes_of<std::uint32_t>({0x3F800000u}),
                      E::kF32, huge));
  // Infinity is not NaN.
  CHECK(readback_diff(bytes_of<std::uint32_t>({0x7F800000u}), bytes_of<std::uint32_t>({0x7FC00000u}),
                      E::kF32, huge));
}

TEST_CASE(
    "comparator: an infinity matches the same infinity only, not the largest finite value 1 "
    "position away, whatever N is",
    "[replayer][comparator]") {
  using E = rt::ElementType;
  const CheckMode huge = CheckMode::ulp(std::numeric_limits<std::uint64_t>::max());
  const struct {
    E type;
    std::vector<std::uint8_t> max, inf, minus_inf;
  } cases[] = {
      {E::kF16, bytes_of<std::uint16_t>({0x7BFF}), bytes_of<std::uint16_t>({0x7C00}),
       bytes_of<std::uint16_t>({0xFC00})},
      {E::kBf16, bytes_of<std::uint16_t>({0x7F7F}), bytes_of<std::uint16_t>({0x7F80}),
       bytes_of<std::uint16_t>({0xFF80})},
      {E::kF32, bytes_of<std::uint32_t>({0x7F7FFFFFu}), bytes_of<std::uint32_t>({0x7F800000u}),
       bytes_of<std::uint32_t>({0xFF800000u})},
  };
  for (const auto& c : cases) {
    INFO(rt::element_type_name(c.type));
    CHECK_FALSE(readback_diff(c.inf, c.inf, c.type, CheckMode::ulp(0)));
    for (const auto& [e, a] : {std::pair{c.max, c.inf}, std::pair{c.inf, c.max}}) {
      const auto d = readback_diff(e, a, c.type, huge);
      REQUIRE(d);
      CHECK_FALSE(d->ulp.has_value());
      CHECK(d->max_ulp == 0);
      CHECK(d->summary().ends_with("(an infinity against a finite number)"));
    }
    const auto opposite = readback_diff(c.inf, c.minus_inf, c.type, huge);
    REQUIRE(opposite);
    CHECK(opposite->summary().ends_with("(+inf against -inf)"));
  }
}

TEST_CASE("comparator: counter snapshots differ in one counter", "[replayer][comparator]") {
  Observation e;
  e.counters = rt::CounterSnapshot{3, 2, 5, 9, 100, 4, 64};
  Observation a = e;
  a.counters->readback_bytes = 65;
  const auto c = cmp(e, a);
  const auto d = only(c);
  CHECK(d.kind == DifferenceKind::kCounters);
  CHECK(d.counters == std::vector<std::string>{"readback_bytes"});
  CHECK(c.checked.counter_snapshots == 1);
  CHECK(c.checked.calls == 0);
  CHECK(cmp(e, e).differences.empty());
  // Each of the seven counters, alone, is named by its own name.
  const std::pair<std::uint64_t rt::CounterSnapshot::*, const char*> counters[] = {
      {&rt::CounterSnapshot::allocations, "allocations"},
      {&rt::CounterSnapshot::live_allocations, "live_allocations"},
      {&rt::CounterSnapshot::submissions, "submissions"},
      {&rt::CounterSnapshot::commands, "commands"},
      {&rt::CounterSnapshot::uploaded_bytes, "uploaded_bytes"},
      {&rt::CounterSnapshot::dense_linear_launches, "dense_linear_launches"},
      {&rt::CounterSnapshot::readback_bytes, "readback_bytes"}};
  for (const auto& [member, name] : counters) {
    INFO(name);
    Observation one = e;
    ++((*one.counters).*member);
    const auto named = cmp(e, one);
    REQUIRE(named.differences.size() == 1);
    CHECK(named.differences.front().counters == std::vector<std::string>{name});
  }
}

TEST_CASE("comparator: optional-call answers and submit rejection", "[replayer][comparator]") {
  Observation supported;
  supported.supported = true;
  supported.outcome = rp::Outcome{};
  Observation unsupported;
  unsupported.supported = false;
  const auto c = cmp(supported, unsupported);
  CHECK(only(c).kind == DifferenceKind::kSupport);
  CHECK(c.checked.calls == 1);
  CHECK(cmp(unsupported, unsupported).checked.calls == 1);

  Observation flag_true;
  flag_true.flag = true;
  Observation flag_false;
  flag_false.flag = false;
  CHECK(only(cmp(flag_true, flag_false)).kind == DifferenceKind::kFlag);

  Observation rejected = with_outcome({});
  rejected.rejected = true;
  const auto r = only(cmp(rejected, with_outcome({})));
  CHECK(r.kind == DifferenceKind::kRejected);
  CHECK(rp::render(r, rejected, with_outcome({})).actual == "success");
  CHECK(cmp(rejected, rejected).differences.empty());  // rejected on both sides: as recorded

  Observation command = with_outcome({});
  command.returned_command = true;
  Observation no_command = with_outcome({});
  no_command.returned_command = false;
  CHECK(only(cmp(command, no_command)).kind == DifferenceKind::kReturnedCommand);

  Observation described;
  described.described = rp::DescribeAnswer{true, {}};
  Observation not_described;
  not_described.described = rp::DescribeAnswer{std::nullopt, "no"};
  const auto dd = only(cmp(described, not_described));
  CHECK(dd.kind == DifferenceKind::kDescribeReport);
  CHECK(rp::render(dd, described, not_described).actual == "describe_error failed: no");
}

TEST_CASE("comparator: a step that could not run is one difference per problem",
          "[replayer][comparator]") {
  Observation live;
  live.problems.push_back({rp::ExecutionProblem::Kind::kMissingObject,
                           {3, rp::ObjectRef::Space::kOwn}, rp::ObjectKind::kBuffer, 0, {}});
  const Observation recorded = with_outcome({});
  const auto c = cmp(recorded, live);
  const auto d = only(c);
  CHECK(d.kind == DifferenceKind::kNotExecuted);
  CHECK(c.checked.calls == 0);
  const auto text = rp::render(d, recorded, live);
  CHECK(text.expected == "buffer#3 to exist");
  CHECK(text.actual == "it was never created in this replay (see the earlier mismatch)");
  CHECK_FALSE(d.problem_on_expected);  // the live side's problem
  CHECK(only(cmp(live, recorded)).problem_on_expected);
}
