// Conformance: error precedence. For every pair of errors whose order the contract fixes, a call
// that triggers both at once must fail with the earlier one; every DefinitelyNotSubmitted leaves
// counters, contents and stream states untouched.
//
// submit (spec 7.4): 1 foreign stream < 2 empty batch < 3a timing != Off < 3b replay-required
//   path < 3c reusable capture < 5 logical-work conflict / foreign-class command (one walk in entry
//   order, the first failing entry wins) < 6 a command holding another runtime's buffer < 7
//   attribution rows (a node-scoped transfer without participants).
// readback (7.3): foreign stream or source < element type < source bounds < destination bounds,
//   and the synchronize side effect only once those four passed.
// encode_copy: bounds < element type (< region rule, which bounds already cover);
// encode_upload: byte count < element type < range overflow < region; encode_zero: overflow <
//   region. Dense linear: no work < launch count < per launch (region resolution < ranges differ
//   < attributes disagree < weight not shared) < token count.
// Orders the spec does not state (a handle of another class against the other checks, the roles
// inside one launch, launches against each other) are tested as the code does them today and
// marked "code order" below.
#include "conformance/conformance.h"

#include <algorithm>
#include <limits>

using namespace vtrace::conformance;
using namespace vtrace::runtime;
using vtrace::runtime::testing::allocate;
using vtrace::runtime::testing::pattern;

namespace {

constexpr std::uint64_t kU64Max = std::numeric_limits<std::uint64_t>::max();

// One cause of a submit failure, in the contract's order.
enum class Cause : int {
  kForeignStream,   // 1
  kEmptyBatch,      // 2
  kTiming,          // 3a
  kReplayPath,      // 3b
  kCapture,         // 3c
  kConflict,        // 5: logical work on a provider command with participants
  kAlienCommand,    // 5: a command of another class
  kForeignBuffer,   // 6
  kAttribution,     // 7: a node-scoped transfer without participants, attribution required
};
constexpr Cause kCauses[] = {Cause::kForeignStream, Cause::kEmptyBatch,   Cause::kTiming,
                             Cause::kReplayPath,    Cause::kCapture,      Cause::kConflict,
                             Cause::kAlienCommand,  Cause::kForeignBuffer, Cause::kAttribution};

const char* cause_name(Cause cause) {
  switch (cause) {
    case Cause::kForeignStream: return "1 foreign stream";
    case Cause::kEmptyBatch: return "2 empty batch";
    case Cause::kTiming: return "3a timing";
    case Cause::kReplayPath: return "3b replay-required path";
    case Cause::kCapture: return "3c reusable capture";
    case Cause::kConflict: return "5 logical-work conflict";
    case Cause::kAlienCommand: return "5 foreign-class command";
    case Cause::kForeignBuffer: return "6 foreign buffer";
    case Cause::kAttribution: return "7 attribution metadata";
  }
  return "?";
}

ErrorKind cause_kind(Cause cause) {
  switch (cause) {
    case Cause::kForeignStream: return ErrorKind::kForeignStream;
    case Cause::kEmptyBatch: return ErrorKind::kEmptyBatch;
    case Cause::kTiming: return ErrorKind::kTimingUnsupported;
    case Cause::kReplayPath: return ErrorKind::kReplayRequiredUnsupported;
    case Cause::kCapture: return ErrorKind::kReusableCaptureUnsupported;
    case Cause::kConflict: return ErrorKind::kLogicalWorkConflict;
    case Cause::kAlienCommand: return ErrorKind::kForeignCommand;
    case Cause::kForeignBuffer: return ErrorKind::kForeignBufferInCommand;
    case Cause::kAttribution: return ErrorKind::kAttributionInvalidMetadata;
  }
  return ErrorKind::kInternal;
}

bool is_entry_cause(Cause cause) {
  return cause == Cause::kConflict || cause == Cause::kAlienCommand ||
         cause == Cause::kForeignBuffer || cause == Cause::kAttribution;
}

// The rig (runtime under test) plus a second instance of it that owns the foreign objects.
struct SubmitFixture {
  Rig& rig;
  std::unique_ptr<DeviceRuntime> other;
  StreamPtr other_stream;
  BufferPtr foreign;
  DenseBuffers dense;

  explicit SubmitFixture(Rig& r) : rig(r) {
    other = open_under_test("device.conformance.1");
    REQUIRE(other != nullptr);
    other_stream = stream_of(*other);
    foreign = allocate(*other, 16, ElementType::kU8);
    dense = dense_buffers(rig.rt(), 1, 2, 2);
    rig.mark();
  }

  void push_entries(CommandBatch& batch, Cause cause) {
    switch (cause) {
      case Cause::kConflict:
        batch.push_node_initialization(0, *LogicalWork::create(BatchingForm::kScalar, 1, 1),
                                       dense_command(rig.rt(), dense));
        break;
      case Cause::kAlienCommand:
        batch.push(std::make_unique<AlienCommand>());
        break;
      case Cause::kForeignBuffer: {
        auto copy = rig.rt().encode_copy(*foreign, *rig.target, region(0, 0, 16));
        REQUIRE(copy.has_value());
        batch.push(std::move(*copy));
        break;
      }
      case Cause::kAttribution: {
        EncodedOperation op;
        op.compute = dense_command(rig.rt(), dense);
        op.result_bindings.push_back(rig.upload_to_target());
        batch.push_operation(4, std::move(op));
        break;
      }
      default:
        break;
    }
  }

  // A batch carrying every cause of `causes`, entry-level causes in the given order.
  CommandBatch batch_with(const std::vector<Cause>& causes) {
    const auto has = [&](Cause c) { return std::find(causes.begin(), causes.end(), c) != causes.end(); };
    CommandBatch batch(has(Cause::kTiming) ? TimingMode::kCompletion : TimingMode::kOff,
                       has(Cause::kReplayPath) ? ComputePathRequirement::kReplayedOnly
                                               : ComputePathRequirement::kAdaptive);
    if (has(Cause::kCapture)) {
      REQUIRE(batch.set_reusable_execution_capture(
          *ReusableExecutionCapture::create(*ProgramId::create("program.p"), 1, {}, {})));
    }
    if (has(Cause::kAttribution)) batch.require_logical_execution_path_attribution();
    if (has(Cause::kEmptyBatch)) return batch;
    bool any_entry = false;
    for (Cause cause : causes) {
      if (!is_entry_cause(cause)) continue;
      push_entries(batch, cause);
      any_entry = true;
    }
    if (!any_entry) batch.push_initialization(rig.upload_to_target());
    return batch;
  }

  void check(const std::vector<Cause>& causes, Cause expected) {
    const bool on_foreign_stream =
        std::find(causes.begin(), causes.end(), Cause::kForeignStream) != causes.end();
    const CounterSnapshot other_before = counters(*other);
    const StreamState other_state = other->stream_state(*other_stream);
    rig.check_not_submitted_on(on_foreign_stream ? *other_stream : *rig.stream, batch_with(causes),
                               cause_kind(expected));
    CHECK(counters(*other) == other_before);
    CHECK(other->stream_state(*other_stream) == other_state);
    rig.mark();  // the readback of check_untouched moved readback_bytes
  }
};

}  // namespace

TEST_CASE("each submit failure cause alone fails with its own kind", "[conformance][precedence][submit]") {
  VTRACE_CONFORMANCE_RIG(rig);
  SubmitFixture fixture(rig);
  for (Cause cause : kCauses) {
    INFO("cause " << cause_name(cause));
    fixture.check({cause}, cause);
  }
}

TEST_CASE("submit: for every ordered pair of causes the earlier step wins, in either entry order",
          "[conformance][precedence][submit]") {
  VTRACE_CONFORMANCE_RIG(rig);
  SubmitFixture fixture(rig);
  std::size_t pairs = 0;
  for (std::size_t i = 0; i < std::size(kCauses); ++i) {
    for (std::size_t j = i + 1; j < std::size(kCauses); ++j) {
      const Cause earlier = kCauses[i];
      const Cause later = kCauses[j];
      // An empty batch has no entries to carry an entry-level cause; it can still require
      // attribution (which would then have no rows).
      if (earlier == Cause::kEmptyBatch && is_entry_cause(later) && later != Cause::kAttribution) {
        continue;
      }
      // Step 5 is one walk in entry order: between its two causes the first entry wins.
      const bool same_step = earlier == Cause::kConflict && later == Cause::kAlienCommand;
      INFO("earlier " << cause_name(earlier) << ", later " << cause_name(later));
      {
        INFO("entries of the earlier cause first");
        fixture.check({earlier, later}, earlier);
      }
      if (is_entry_cause(earlier) && is_entry_cause(later)) {
        INFO("entries of the later cause first");
        fixture.check({later, earlier}, same_step ? later : earlier);
      }
      ++pairs;
    }
  }
  CHECK(pairs == 33);
}

TEST_CASE("submit: every cause together fails with the foreign stream, then peel off one by one",
          "[conformance][precedence][submit]") {
  VTRACE_CONFORMANCE_RIG(rig);
  SubmitFixture fixture(rig);
  // All causes except the empty batch (which would drop the entry-level ones), in reverse entry
  // order; remove the winner each time and the next one in the contract's order must win.
  std::vector<Cause> causes = {Cause::kAttribution, Cause::kForeignBuffer, Cause::kAlienCommand,
                               Cause::kConflict,    Cause::kCapture,       Cause::kReplayPath,
                               Cause::kTiming,      Cause::kForeignStream};
  const std::vector<Cause> winners = {Cause::kForeignStream, Cause::kTiming,      Cause::kReplayPath,
                                      Cause::kCapture,
                                      // alien entry precedes the conflict entry: it wins step 5
                                      Cause::kAlienCommand, Cause::kConflict, Cause::kForeignBuffer,
                                      Cause::kAttribution};
  for (Cause winner : winners) {
    INFO("expected winner " << cause_name(winner));
    fixture.check(causes, winner);
    causes.erase(std::find(causes.begin(), causes.end(), winner));
  }
  // And with the empty batch: it loses only to the foreign stream.
  fixture.check({Cause::kEmptyBatch, Cause::kTiming, Cause::kReplayPath, Cause::kCapture,
                 Cause::kAttribution, Cause::kForeignStream},
                Cause::kForeignStream);
  fixture.check({Cause::kEmptyBatch, Cause::kTiming, Cause::kReplayPath, Cause::kCapture,
                 Cause::kAttribution},
                Cause::kEmptyBatch);
}

TEST_CASE("submit: step 5 binds logical work entry by entry and the first failing entry wins",
          "[conformance][precedence][submit]") {
  VTRACE_CONFORMANCE_RIG(rig);
  SubmitFixture fixture(rig);
  // A valid logical-work binding (a transfer) before a conflict, then after an alien command.
  CommandBatch batch;
  batch.push_node_initialization(1, *LogicalWork::create(BatchingForm::kScalar, 1, 1),
                                 rig.upload_to_target());
  fixture.push_entries(batch, Cause::kConflict);
  fixture.push_entries(batch, Cause::kAlienCommand);
  rig.check_not_submitted(std::move(batch), ErrorKind::kLogicalWorkConflict);
  rig.mark();
  CommandBatch second;
  second.push_node_initialization(1, *LogicalWork::create(BatchingForm::kScalar, 1, 1),
                                  rig.upload_to_target());
  fixture.push_entries(second, Cause::kAlienCommand);
  fixture.push_entries(second, Cause::kConflict);
  rig.check_not_submitted(std::move(second), ErrorKind::kForeignCommand);
}

// ---- readback -----------------------------------------------------------------------------------

TEST_CASE("readback: foreign < element type < source bounds < destination bounds, and synchronize only after them",
          "[conformance][precedence][readback]") {
  VTRACE_CONFORMANCE_RIG(rig);
  VTRACE_CONFORMANCE_OPEN(other, "device.conformance.1");
  auto other_stream = stream_of(*other);
  auto other_buffer = allocate(*other, 16, ElementType::kU8);
  // Leave the stream Submitted (a waited fence does not make it Ready; synchronize does).
  auto fence = rig.rt().submit(*rig.stream, CommandBatch::singleton(rig.upload_to_target(0x11)));
  REQUIRE(fence.has_value());
  REQUIRE(rig.rt().wait_fence(**fence).has_value());
  REQUIRE(rig.rt().stream_state(*rig.stream) == StreamState::kSubmitted);
  const CounterSnapshot before = counters(rig.rt());
  const CounterSnapshot other_before = counters(*other);

  const auto u8 = [](std::uint64_t n) { return layout(ElementType::kU8, n); };
  const auto f16 = [](std::uint64_t n) { return layout(ElementType::kF16, n); };
  struct Case {
    const char* what;
    bool foreign_stream;
    bool foreign_source;
    CopyRegion region;
    HostTransferLayout out;
    ErrorKind expected;
  };
  // Type mismatch: the U8 target read with an F16 layout. Source bounds: source offset 13 with
  // length 4 (16-byte target). Destination bounds: destination offset past the host layout.
  const Case cases[] = {
      {"foreign stream + type", true, false, region(0, 0, 4), f16(2), ErrorKind::kReadbackForeign},
      {"foreign stream + source bounds", true, false, region(13, 0, 4), u8(4), ErrorKind::kReadbackForeign},
      {"foreign stream + destination bounds", true, false, region(0, 1, 4), u8(4), ErrorKind::kReadbackForeign},
      {"foreign source + type", false, true, region(0, 0, 4), f16(2), ErrorKind::kReadbackForeign},
      {"foreign source + source bounds", false, true, region(13, 0, 4), u8(4), ErrorKind::kReadbackForeign},
      {"foreign source + destination bounds", false, true, region(0, 1, 4), u8(4), ErrorKind::kReadbackForeign},
      {"type + source bounds", false, false, region(13, 0, 4), f16(2), ErrorKind::kReadbackElementTypeMismatch},
      {"type + destination bounds", false, false, region(0, 6, 4), f16(2), ErrorKind::kReadbackElementTypeMismatch},
      {"type + both bounds", false, false, region(kU64Max - 4, kU64Max - 4, 4), f16(2),
       ErrorKind::kReadbackElementTypeMismatch},
      {"source bounds + destination bounds", false, false, region(13, 1, 4), u8(4),
       ErrorKind::kReadbackSourceOutOfBounds},
      {"source + destination ends at u64::MAX", false, false, region(kU64Max - 4, kU64Max - 4, 4),
       u8(4), ErrorKind::kReadbackSourceOutOfBounds},
  };
  for (const auto& c : cases) {
    INFO(c.what);
    Stream& stream = c.foreign_stream ? *other_stream : *rig.stream;
    const Buffer& source = c.foreign_source ? *other_buffer : *rig.target;
    check_failed(rig.rt().readback(stream, source, c.region, c.out), c.expected);
    // No synchronize side effect before the four checks passed; nothing counted.
    CHECK(rig.rt().stream_state(*rig.stream) == StreamState::kSubmitted);
    CHECK(counters(rig.rt()) == before);
  }
  CHECK(other->stream_state(*other_stream) == StreamState::kReady);
  CHECK(counters(*other) == other_before);
  // A readback that passes them synchronizes: the stream is Ready afterwards.
  const auto bytes = rig.rt().readback(*rig.stream, *rig.target, region(0, 0, 16), u8(16));
  REQUIRE(bytes.has_value());
  CHECK(*bytes == pattern(16, 0x11));
  CHECK(rig.rt().stream_state(*rig.stream) == StreamState::kReady);
}

// ---- encoders -----------------------------------------------------------------------------------

TEST_CASE("encode_copy: a foreign class before bounds before element types",
          "[conformance][precedence][encode]") {
  VTRACE_CONFORMANCE_RIG(rig);
  auto f16 = allocate(rig.rt(), 16, ElementType::kF16);
  rig.mark();
  // bounds + element type
  check_failed(rig.rt().encode_copy(*rig.target, *f16, region(8, 0, 9)), ErrorKind::kCopyOutOfBounds);
  check_failed(rig.rt().encode_copy(*rig.target, *f16, region(0, kU64Max - 4, 4)),
               ErrorKind::kCopyOutOfBounds);
  // (validate_bounds' "copy range overflows u64" rows cannot be reached: CopyRegion::create
  // already refuses a region whose end overflows.)
  check_failed(rig.rt().encode_copy(*rig.target, *f16, region(kU64Max - 4, kU64Max - 4, 4)),
               ErrorKind::kCopyOutOfBounds);
  // Code order: a handle of another class before bounds and element types.
  check_failed(rig.rt().encode_copy(AlienBuffer{}, *f16, region(8, 0, 9)),
               ErrorKind::kForeignBufferInCommand);
  check_failed(rig.rt().encode_copy(*rig.target, AlienBuffer{}, region(8, 0, 9)),
               ErrorKind::kForeignBufferInCommand);
  rig.check_untouched();
}

TEST_CASE("encode_upload: byte count < element type < range overflow < region",
          "[conformance][precedence][encode]") {
  VTRACE_CONFORMANCE_RIG(rig);
  const auto u8 = [](std::uint64_t n) { return layout(ElementType::kU8, n); };
  const auto f16 = [](std::uint64_t n) { return layout(ElementType::kF16, n); };
  Buffer& target = *rig.target;  // U8, 16 bytes
  // byte count + each later cause
  check_failed(rig.rt().encode_upload(pattern(3), f16(2), target, 0), ErrorKind::kUploadByteCountMismatch);
  check_failed(rig.rt().encode_upload(pattern(3), u8(4), target, kU64Max - 2),
               ErrorKind::kUploadByteCountMismatch);
  check_failed(rig.rt().encode_upload(pattern(3), u8(4), target, 13), ErrorKind::kUploadByteCountMismatch);
  check_failed(rig.rt().encode_upload(pattern(3), f16(2), target, kU64Max - 2),
               ErrorKind::kUploadByteCountMismatch);
  // element type + each later cause
  check_failed(rig.rt().encode_upload(pattern(4), f16(2), target, kU64Max - 2),
               ErrorKind::kUploadElementTypeMismatch);
  check_failed(rig.rt().encode_upload(pattern(4), f16(2), target, 14), ErrorKind::kUploadElementTypeMismatch);
  // range overflow + region (an overflowing range is also out of bounds)
  check_failed(rig.rt().encode_upload(pattern(4), u8(4), target, kU64Max - 2),
               ErrorKind::kUploadRangeOverflow);
  check_failed(rig.rt().encode_upload(pattern(4), u8(4), target, kU64Max),
               ErrorKind::kUploadRangeOverflow);
  // Code order: a handle of another class before everything.
  check_failed(rig.rt().encode_upload(pattern(3), f16(2), AlienBuffer{}, kU64Max - 2),
               ErrorKind::kForeignBufferInCommand);
  rig.check_untouched();
}

TEST_CASE("encode_zero: range overflow < region", "[conformance][precedence][encode]") {
  VTRACE_CONFORMANCE_RIG(rig);
  check_failed(rig.rt().encode_zero(*rig.target, kU64Max, 2), ErrorKind::kZeroRangeOverflow);
  check_failed(rig.rt().encode_zero(*rig.target, kU64Max - 3, 8), ErrorKind::kZeroRangeOverflow);
  // No overflow: the region rule decides (empty, then past the end).
  check_failed(rig.rt().encode_zero(*rig.target, kU64Max, 0), ErrorKind::kRegionOutOfBounds);
  check_failed(rig.rt().encode_zero(*rig.target, kU64Max - 3, 2), ErrorKind::kRegionOutOfBounds);
  // Code order: a handle of another class first.
  check_failed(rig.rt().encode_zero(AlienBuffer{}, kU64Max, 2), ErrorKind::kForeignBufferInCommand);
  rig.check_untouched();
}

// ---- dense linear -------------------------------------------------------------------------------

TEST_CASE("dense linear: no work < launch count < regions < ranges < attributes < shared weight < token count",
          "[conformance][precedence][dense_linear]") {
  VTRACE_CONFORMANCE_RIG(rig);
  auto input = allocate(rig.rt(), 64, ElementType::kF16);
  auto weight = allocate(rig.rt(), 16, ElementType::kF16);
  auto weight2 = allocate(rig.rt(), 16, ElementType::kF16);
  auto output = allocate(rig.rt(), 64, ElementType::kF16);
  rig.mark();
  AlienBuffer alien;
  // Participant p's 2x2 launch (1 row) over rows [p, p+1), the weight's first 8 bytes.
  const auto ok = [&](std::uint64_t p, const Buffer* w = nullptr) {
    return DenseLinearLaunch{{input.get(), 4 * p, 4}, {w != nullptr ? w : weight.get(), 0, 8},
                             {output.get(), 4 * p, 4}, 1, 2, 2};
  };
  const auto with_alien = [&](DenseLinearLaunch l) {
    l.weight.buffer = &alien;
    return l;
  };
  const auto with_oob = [&](DenseLinearLaunch l) {
    l.input.offset_bytes = 62;
    return l;
  };
  const auto with_wrong_ranges = [&](DenseLinearLaunch l) {
    l.output.length_bytes = 2;
    return l;
  };
  const auto check = [&](const char* what, std::vector<DenseLinearLaunch> launches, std::uint32_t n,
                         std::uint64_t tokens, ErrorKind expected) {
    INFO(what);
    check_failed(rig.rt().encode_dense_linear({launches, n, tokens}), expected);
  };
  using K = ErrorKind;
  // no work before everything after it
  check("0 participants + launch count", {ok(0), ok(1)}, 0, 2, K::kDenseLinearNoWork);
  check("0 tokens + launch count", {ok(0), ok(1)}, 3, 0, K::kDenseLinearNoWork);
  check("no launches + launch count", {}, 2, 2, K::kDenseLinearNoWork);
  check("0 participants + foreign class", {with_alien(ok(0))}, 0, 1, K::kDenseLinearNoWork);
  check("0 tokens + out of bounds", {with_oob(ok(0))}, 1, 0, K::kDenseLinearNoWork);
  check("0 tokens + ranges", {with_wrong_ranges(ok(0))}, 1, 0, K::kDenseLinearNoWork);
  check("0 participants + unshared weight", {ok(0), ok(1, weight2.get())}, 0, 2, K::kDenseLinearNoWork);
  check("0 tokens + token count", {ok(0)}, 1, 0, K::kDenseLinearNoWork);
  // launch count before everything after it
  check("launch count + foreign class", {with_alien(ok(0)), ok(1)}, 3, 3, K::kDenseLinearLaunchCount);
  check("launch count + out of bounds", {ok(0), with_oob(ok(1))}, 3, 3, K::kDenseLinearLaunchCount);
  check("launch count + ranges", {with_wrong_ranges(ok(0)), ok(1)}, 3, 3, K::kDenseLinearLaunchCount);
  check("launch count + unshared weight", {ok(0), ok(1, weight2.get())}, 3, 3,
        K::kDenseLinearLaunchCount);
  // (The token-count rule is defined per batching form, so a wrong launch count comes first.)
  check("launch count + token count", {ok(0), ok(1)}, 3, 5, K::kDenseLinearLaunchCount);
  // region resolution before ranges, within one launch
  check("foreign class + ranges", {with_wrong_ranges(with_alien(ok(0)))}, 1, 1,
        K::kForeignBufferInCommand);
  check("out of bounds + ranges", {with_wrong_ranges(with_oob(ok(0)))}, 1, 1, K::kRegionOutOfBounds);
  // code order: the roles of one launch resolve input, weight, output
  {
    DenseLinearLaunch l = with_alien(ok(0));
    l.output.offset_bytes = 62;
    check("code order: foreign weight + out-of-bounds output", {l}, 1, 1, K::kForeignBufferInCommand);
    check("code order: out-of-bounds input + foreign weight", {with_oob(with_alien(ok(0)))}, 1, 1,
          K::kRegionOutOfBounds);
  }
  // ranges before the shared-weight rule, within the launch that uses the other weight
  check("unshared weight + ranges in one launch", {ok(0), with_wrong_ranges(ok(1, weight2.get()))}, 2,
        2, K::kDenseLinearRangesDiffer);
  // code order: launches are validated one after the other, each completely
  check("code order: ranges in launch 0 + foreign class in launch 1", {with_wrong_ranges(ok(0)), with_alien(ok(1))},
        2, 2, K::kDenseLinearRangesDiffer);
  check("code order: unshared weight in launch 1 + ranges in launch 2",
        {ok(0), ok(1, weight2.get()), with_wrong_ranges(ok(2))}, 3, 3, K::kDenseLinearWeightNotShared);
  check("code order: unshared weight in launch 1 + foreign class in launch 2",
        {ok(0), ok(1, weight2.get()), with_alien(ok(2))}, 3, 3, K::kDenseLinearWeightNotShared);
  // Region resolution and ranges before the attribute rule, which comes before the shared
  // weight (spec 8.3: attributes are step 3, the weight step 5): 4->2 then 2->4 over 16 bytes.
  const DenseLinearLaunch a{{input.get(), 0, 8}, {weight.get(), 0, 16}, {output.get(), 0, 4}, 1, 4, 2};
  const DenseLinearLaunch b{{input.get(), 8, 4}, {weight.get(), 0, 16}, {output.get(), 4, 8}, 1, 2, 4};
  DenseLinearLaunch b_other_weight = b;
  b_other_weight.weight.buffer = weight2.get();
  check("attributes + unshared weight", {a, b_other_weight}, 2, 2, K::kDenseLinearAttributesDisagree);
  check("ranges + attributes", {a, with_wrong_ranges(b)}, 2, 2, K::kDenseLinearRangesDiffer);
  DenseLinearLaunch b_oob = b;
  b_oob.input.offset_bytes = 62;
  check("out of bounds + attributes", {a, b_oob}, 2, 2, K::kRegionOutOfBounds);
  check("foreign class + attributes", {a, with_alien(b)}, 2, 2, K::kForeignBufferInCommand);
  check("attributes alone", {a, b}, 2, 2, K::kDenseLinearAttributesDisagree);
  // The token count is checked last, once every launch passed (contract.h order: the rows are
  // known only then): every per-launch error wins over it.
  check("out of bounds + token count", {ok(0), with_oob(ok(1))}, 2, 5, K::kRegionOutOfBounds);
  check("foreign class + token count", {with_alien(ok(0))}, 1, 3, K::kForeignBufferInCommand);
  check("ranges + token count", {with_wrong_ranges(ok(0))}, 1, 3, K::kDenseLinearRangesDiffer);
  check("attributes + token count", {a, b}, 2, 7, K::kDenseLinearAttributesDisagree);
  check("unshared weight + token count", {ok(0), ok(1, weight2.get())}, 2, 7,
        K::kDenseLinearWeightNotShared);
  check("token count alone", {ok(0), ok(1)}, 2, 7, K::kDenseLinearTokenCount);
  rig.check_untouched();
}
