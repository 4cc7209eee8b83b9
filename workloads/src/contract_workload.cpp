// The contract workload (contract_workload.h): probes, each one scenario of valid and invalid
// calls with its expected outcome. Probe order and parameters come from the seed.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <limits>

#include "vtrace/runtime/f16.h"
#include "vtrace/runtime/immediate.h"
#include "vtrace/workloads/workload.h"
#include "workload_support.h"

namespace vtrace::workloads {

namespace rt = vtrace::runtime;
using detail::fail;
using rt::ErrorKind;

namespace {

constexpr std::uint64_t kBytes = 64;  // size of every small probe buffer
constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();

class ContractRun {
 public:
  ContractRun(rt::DeviceRuntime& runtime, rt::DeviceRuntime& foreign, std::uint64_t seed)
      : rt_(runtime), foreign_(foreign), rng_(seed ^ 0x434F4E5452414354ull), observed_("contract") {}

  WorkloadResult<WorkloadReport> run(std::uint32_t rounds, const StopRequested& stop);

 private:
  using Probe = std::function<WorkloadResult<void>()>;
  struct NamedProbe {
    std::string_view name;
    Probe probe;
  };

  WorkloadResult<void> setup();
  std::vector<NamedProbe> probes();

  // Expects `result` to have failed with `kind`.
  template <typename T>
  WorkloadResult<void> expect_error(std::string_view call, const rt::Result<T>& result,
                                    ErrorKind kind) {
    if (result) return std::unexpected(fail(fmt::format("{} succeeded but {} was expected", call,
                                                        rt::error_kind_name(kind))));
    return expect_kind(call, result.error(), kind);
  }
  WorkloadResult<void> expect_kind(std::string_view call, const rt::RuntimeError& error,
                                   ErrorKind kind) {
    if (error.kind() != kind) {
      return std::unexpected(fail(fmt::format("{} failed with {} ({}) but {} was expected", call,
                                              rt::error_kind_name(error.kind()), error.message(),
                                              rt::error_kind_name(kind))));
    }
    observed_.expected_error(kind);
    last_error_ = error;
    return {};
  }
  WorkloadResult<void> expect_not_submitted(std::string_view call, rt::CommandBatch batch,
                                            ErrorKind kind, rt::Stream* stream = nullptr) {
    auto fence = rt_.submit(stream ? *stream : *stream_, std::move(batch));
    if (fence) return std::unexpected(fail(fmt::format("{} was submitted but {} was expected",
                                                       call, rt::error_kind_name(kind))));
    return expect_kind(call, fence.error().error(), kind);
  }

  // A valid command that needs nothing else: zero a random slice of `a`.
  WorkloadResult<rt::CommandPtr> zero_command();
  WorkloadResult<rt::CommandPtr> dense_command(std::uint64_t rows);
  // immediate::submit_and_wait, then the fence queried and, when the batch required them, its
  // attribution rows counted (`expected_rows`).
  WorkloadResult<void> submit_and_wait(std::string_view call, rt::CommandBatch batch,
                                       std::uint64_t expected_rows = 0);
  WorkloadResult<void> read_and_observe(std::string_view call, const rt::Buffer& buffer,
                                        rt::ElementType type, std::uint64_t offset,
                                        std::uint64_t length);
  std::vector<std::uint8_t> random_bytes(std::uint64_t n) {
    std::vector<std::uint8_t> bytes(n);
    for (auto& b : bytes) b = static_cast<std::uint8_t>(rng_.next() >> 56);
    return bytes;
  }
  // A random f16 vector in [-1, 1).
  std::vector<std::uint8_t> random_f16(std::uint64_t elements) {
    std::vector<float> values(elements);
    for (auto& v : values) v = rng_.symmetric(1.0f);
    return rt::to_f16_bytes(values);
  }
  rt::HostTransferLayout layout(rt::ElementType type, std::uint64_t count) {
    return *rt::HostTransferLayout::create(type, count);
  }
  rt::CopyRegion region(std::uint64_t src, std::uint64_t dst, std::uint64_t len) {
    return *rt::CopyRegion::create(src, dst, len);
  }

  rt::DeviceRuntime& rt_;
  rt::DeviceRuntime& foreign_;
  detail::SplitMix64 rng_;
  detail::Observations observed_;
  std::optional<rt::RuntimeError> last_error_;

  rt::StreamPtr stream_;
  rt::BufferPtr a_, b_;               // u8 [64]
  rt::BufferPtr f16_;                 // f16 [32]
  rt::BufferPtr weight_, input_, output_, weight2_;  // f16 dense operands (4x4 weight, 4 rows)
  rt::StreamPtr foreign_stream_;
  rt::BufferPtr foreign_buffer_;
  rt::FencePtr foreign_fence_;
  std::uint64_t scratch_serial_ = 0;
};

WorkloadResult<void> ContractRun::setup() {
  auto stream = rt_.create_stream();
  if (!stream) return std::unexpected(fail("create_stream", stream.error()));
  stream_ = std::move(*stream);
  struct Want {
    rt::BufferPtr* slot;
    std::string_view name;
    std::uint64_t elements;
    rt::BufferUsage usage;
    rt::ElementType type;
  };
  const Want wants[] = {
      {&a_, "resource.contract.a", kBytes, rt::BufferUsage::kActivations, rt::ElementType::kU8},
      {&b_, "resource.contract.b", kBytes, rt::BufferUsage::kScratch, rt::ElementType::kU8},
      {&f16_, "resource.contract.f16", kBytes / 2, rt::BufferUsage::kState, rt::ElementType::kF16},
      {&weight_, "weight.contract.w", 16, rt::BufferUsage::kWeights, rt::ElementType::kF16},
      {&weight2_, "weight.contract.w2", 16, rt::BufferUsage::kWeights, rt::ElementType::kF16},
      {&input_, "resource.contract.in", 16, rt::BufferUsage::kActivations, rt::ElementType::kF16},
      {&output_, "resource.contract.out", 16, rt::BufferUsage::kActivations, rt::ElementType::kF16},
  };
  for (const auto& want : wants) {
    auto buffer =
        rt::immediate::allocate_buffer(rt_, want.name, want.type, want.elements, want.usage, 16);
    if (!buffer) {
      return std::unexpected(fail(fmt::format("allocate_buffer({})", want.name), buffer.error()));
    }
    *want.slot = std::move(*buffer);
  }
  // Weights and inputs hold seeded values so dense probes compute something visible.
  rt::CommandBatch init;
  for (auto* buffer : {weight_.get(), weight2_.get(), input_.get()}) {
    auto upload = rt_.encode_upload(random_f16(16), layout(rt::ElementType::kF16, 16), *buffer, 0);
    if (!upload) return std::unexpected(fail("encode_upload(setup)", upload.error()));
    init.push_initialization(std::move(*upload));
  }
  if (auto done = submit_and_wait("submit(setup)", std::move(init)); !done) return done;

  // Foreign objects come from a second runtime instance of the same kind.
  auto foreign_stream = foreign_.create_stream();
  if (!foreign_stream) return std::unexpected(fail("foreign create_stream", foreign_stream.error()));
  foreign_stream_ = std::move(*foreign_stream);
  auto foreign_buffer =
      rt::immediate::allocate_buffer(foreign_, "resource.contract.foreign", rt::ElementType::kU8,
                                     kBytes, rt::BufferUsage::kActivations, 16);
  if (!foreign_buffer) {
    return std::unexpected(fail("foreign allocate_buffer", foreign_buffer.error()));
  }
  foreign_buffer_ = std::move(*foreign_buffer);
  auto zero = foreign_.encode_zero(*foreign_buffer_, 0, kBytes);
  if (!zero) return std::unexpected(fail("foreign encode_zero", zero.error()));
  auto fence = foreign_.submit(*foreign_stream_, rt::CommandBatch::singleton(std::move(*zero)));
  if (!fence) return std::unexpected(fail("foreign submit", fence.error().error()));
  foreign_fence_ = std::move(*fence);
  return {};
}

WorkloadResult<rt::CommandPtr> ContractRun::zero_command() {
  const std::uint64_t offset = rng_.below(kBytes);
  const std::uint64_t length = 1 + rng_.below(kBytes - offset);
  auto command = rt_.encode_zero(*a_, offset, length);
  if (!command) return std::unexpected(fail("encode_zero", command.error()));
  return std::move(*command);
}

// rows in 1..2 of the 4-feature input times the 4x4 weight.
WorkloadResult<rt::CommandPtr> ContractRun::dense_command(std::uint64_t rows) {
  const rt::DenseLinearLaunch launch{{input_.get(), 0, rows * 8}, {weight_.get(), 0, 32},
                                     {output_.get(), 0, rows * 8}, rows, 4, 4};
  auto command = rt_.encode_dense_linear({std::span(&launch, 1), 1, rows});
  if (!command) return std::unexpected(fail("encode_dense_linear", command.error()));
  return std::move(*command);
}

WorkloadResult<void> ContractRun::submit_and_wait(std::string_view call, rt::CommandBatch batch,
                                                  std::uint64_t expected_rows) {
  const bool attributed =
      batch.attribution_requirement() == rt::AttributionRequirement::kLogicalExecutionPath;
  auto fence = rt::immediate::submit_and_wait(rt_, *stream_, std::move(batch));
  if (!fence) return std::unexpected(fail(call, fence.error()));
  observed_.submitted();
  auto query = rt_.query_fence(**fence);
  if (std::holds_alternative<rt::RuntimeError>(query)) {
    return std::unexpected(fail("query_fence", std::get<rt::RuntimeError>(query)));
  }
  if (attributed) {
    auto attribution = rt_.submission_attribution(**fence);
    if (attribution && attribution->commands().size() != expected_rows) {
      return std::unexpected(fail(fmt::format("{}: {} attribution rows, {} expected", call,
                                              attribution->commands().size(), expected_rows)));
    }
  }
  return {};
}

WorkloadResult<void> ContractRun::read_and_observe(std::string_view call, const rt::Buffer& buffer,
                                                   rt::ElementType type, std::uint64_t offset,
                                                   std::uint64_t length) {
  const std::uint64_t element = rt::element_size_bytes(type);
  const std::uint64_t out_elements = (length + element - 1) / element + 1;
  auto bytes = rt_.readback(*stream_, buffer, region(offset, 0, length), layout(type, out_elements));
  if (!bytes) return std::unexpected(fail(call, bytes.error()));
  observed_.readback(*bytes);
  return {};
}

std::vector<ContractRun::NamedProbe> ContractRun::probes() {
  using K = ErrorKind;
  using ET = rt::ElementType;
  std::vector<NamedProbe> list;
  auto add = [&](std::string_view name, Probe probe) { list.push_back({name, std::move(probe)}); };

  // ---- valid paths ----
  add("upload then readback", [this]() -> WorkloadResult<void> {
    const std::uint64_t offset = rng_.below(kBytes);
    const std::uint64_t length = 1 + rng_.below(kBytes - offset);
    auto upload = rt_.encode_upload(random_bytes(length), layout(ET::kU8, length), *a_, offset);
    if (!upload) return std::unexpected(fail("encode_upload", upload.error()));
    rt::CommandBatch batch;
    batch.push_dynamic_binding(std::move(*upload));
    if (auto done = submit_and_wait("submit(upload)", std::move(batch)); !done) return done;
    return read_and_observe("readback(a)", *a_, ET::kU8, offset, length);
  });
  add("copy then readback", [this]() -> WorkloadResult<void> {
    const std::uint64_t length = 1 + rng_.below(kBytes);
    const std::uint64_t src = rng_.below(kBytes - length + 1);
    const std::uint64_t dst = rng_.below(kBytes - length + 1);
    auto copy = rt_.encode_copy(*a_, *b_, region(src, dst, length));
    if (!copy) return std::unexpected(fail("encode_copy", copy.error()));
    if (auto done = submit_and_wait("submit(copy)", rt::CommandBatch::singleton(std::move(*copy)));
        !done) {
      return done;
    }
    return read_and_observe("readback(b)", *b_, ET::kU8, 0, kBytes);
  });
  add("zero then readback", [this]() -> WorkloadResult<void> {
    auto zero = zero_command();
    if (!zero) return std::unexpected(zero.error());
    if (auto done = submit_and_wait("submit(zero)", rt::CommandBatch::singleton(std::move(*zero)));
        !done) {
      return done;
    }
    return read_and_observe("readback(a)", *a_, ET::kU8, 0, kBytes);
  });
  add("attributed dense linear with logical work", [this]() -> WorkloadResult<void> {
    const std::uint64_t rows = 1 + rng_.below(2);
    auto upload = rt_.encode_upload(random_f16(rows * 4), layout(ET::kF16, rows * 4), *input_, 0);
    if (!upload) return std::unexpected(fail("encode_upload(input)", upload.error()));
    auto dense = dense_command(rows);
    if (!dense) return std::unexpected(dense.error());
    rt::CommandBatch batch;
    batch.require_logical_execution_path_attribution();
    batch.push_node_initialization(0, *rt::LogicalWork::create(rt::BatchingForm::kScalar, 1, rows),
                                   std::move(*upload));
    rt::EncodedOperation op;
    op.compute = std::move(*dense);
    batch.push_operation(1, std::move(op));
    if (auto done = submit_and_wait("submit(dense)", std::move(batch), 2); !done) return done;
    return read_and_observe("readback(out)", *output_, ET::kF16, 0, rows * 8);
  });
  add("participant loop dense linear", [this]() -> WorkloadResult<void> {
    const rt::DenseLinearLaunch launches[] = {
        {{input_.get(), 0, 8}, {weight_.get(), 0, 32}, {output_.get(), 0, 8}, 1, 4, 4},
        {{input_.get(), 8, 8}, {weight_.get(), 0, 32}, {output_.get(), 8, 8}, 1, 4, 4}};
    auto dense = rt_.encode_dense_linear({launches, 2, 2});
    if (!dense) return std::unexpected(fail("encode_dense_linear(loop)", dense.error()));
    if (auto done = submit_and_wait("submit(loop)", rt::CommandBatch::singleton(std::move(*dense)));
        !done) {
      return done;
    }
    return read_and_observe("readback(out)", *output_, ET::kF16, 0, 16);
  });
  add("stream, descriptor and error queries", [this]() -> WorkloadResult<void> {
    if (rt_.stream_state(*foreign_stream_) != rt::StreamState::kFailed) {
      return std::unexpected(fail("stream_state of a foreign stream is not failed"));
    }
    (void)rt_.stream_state(*stream_);
    if (rt_.buffer_descriptor(*f16_).element_type != ET::kF16) {
      return std::unexpected(fail("buffer_descriptor(f16) has the wrong element type"));
    }
    if (auto sync = rt_.synchronize(*stream_); !sync) {
      return std::unexpected(fail("synchronize", sync.error()));
    }
    if (last_error_) (void)rt_.describe_error(*last_error_);
    (void)rt_.counter_snapshot();
    return {};
  });
  add("buffer released and reallocated", [this]() -> WorkloadResult<void> {
    auto buffer = rt::immediate::allocate_buffer(
        rt_, fmt::format("resource.contract.scratch.{}", scratch_serial_++), ET::kU8,
        1 + rng_.below(256), rt::BufferUsage::kScratch, 64);
    if (!buffer) return std::unexpected(fail("allocate_buffer(scratch)", buffer.error()));
    auto zero = rt_.encode_zero(**buffer, 0, 1);
    if (!zero) return std::unexpected(fail("encode_zero(scratch)", zero.error()));
    buffer->reset();  // the unsubmitted command keeps the storage alive until it is dropped
    zero->reset();
    return {};
  });

  // ---- regions and encoders ----
  add("empty zero region", [this]() {
    return expect_error("encode_zero(len 0)", rt_.encode_zero(*a_, rng_.below(kBytes), 0),
                        K::kRegionOutOfBounds);
  });
  add("zero past the end", [this]() {
    const std::uint64_t offset = rng_.below(kBytes);
    return expect_error("encode_zero(past end)",
                        rt_.encode_zero(*a_, offset, kBytes - offset + 1 + rng_.below(8)),
                        K::kRegionOutOfBounds);
  });
  add("zero range overflow", [this]() {
    return expect_error("encode_zero(overflow)", rt_.encode_zero(*a_, kMax - rng_.below(4), 8),
                        K::kZeroRangeOverflow);
  });
  add("copy past a boundary", [this]() {
    const std::uint64_t length = 1 + rng_.below(kBytes);
    return expect_error("encode_copy(out of bounds)",
                        rt_.encode_copy(*a_, *b_, region(kBytes - length + 1, 0, length)),
                        K::kCopyOutOfBounds);
  });
  add("copy between element types", [this]() {
    return expect_error("encode_copy(u8 -> f16)",
                        rt_.encode_copy(*a_, *f16_, region(0, 0, 2 + 2 * rng_.below(8))),
                        K::kCopyElementTypeMismatch);
  });
  add("upload byte count differs from layout", [this]() {
    const std::uint64_t count = 1 + rng_.below(16);
    return expect_error("encode_upload(count)",
                        rt_.encode_upload(random_bytes(count + 1), layout(ET::kU8, count), *a_, 0),
                        K::kUploadByteCountMismatch);
  });
  add("upload element type differs from destination", [this]() {
    return expect_error("encode_upload(f16 -> u8)",
                        rt_.encode_upload(random_f16(4), layout(ET::kF16, 4), *a_, 0),
                        K::kUploadElementTypeMismatch);
  });
  add("upload range overflow", [this]() {
    return expect_error("encode_upload(overflow)",
                        rt_.encode_upload(random_bytes(4), layout(ET::kU8, 4), *a_, kMax - 1),
                        K::kUploadRangeOverflow);
  });
  add("upload past the end", [this]() {
    return expect_error("encode_upload(past end)",
                        rt_.encode_upload(random_bytes(8), layout(ET::kU8, 8), *a_,
                                          kBytes - 7 + rng_.below(7)),
                        K::kRegionOutOfBounds);
  });

  // ---- dense linear encoding ----
  add("dense linear without work", [this]() {
    const rt::DenseLinearLaunch launch{{input_.get(), 0, 8}, {weight_.get(), 0, 32},
                                       {output_.get(), 0, 8}, 1, 4, 4};
    return expect_error("encode_dense_linear(no participants)",
                        rt_.encode_dense_linear({std::span(&launch, 1), 0, 1}),
                        K::kDenseLinearNoWork);
  });
  add("dense linear with the wrong launch count", [this]() {
    const rt::DenseLinearLaunch launch{{input_.get(), 0, 8}, {weight_.get(), 0, 32},
                                       {output_.get(), 0, 8}, 1, 4, 4};
    const rt::DenseLinearLaunch launches[] = {launch, launch};
    return expect_error("encode_dense_linear(2 launches, 3 participants)",
                        rt_.encode_dense_linear({launches, 3, 3}), K::kDenseLinearLaunchCount);
  });
  add("dense linear ranges differ from the work", [this]() {
    const rt::DenseLinearLaunch launch{{input_.get(), 0, 8}, {weight_.get(), 0, 24},
                                       {output_.get(), 0, 8}, 1, 4, 4};
    return expect_error("encode_dense_linear(short weight)",
                        rt_.encode_dense_linear({std::span(&launch, 1), 1, 1}),
                        K::kDenseLinearRangesDiffer);
  });
  add("dense linear participants with two weights", [this]() {
    const rt::DenseLinearLaunch launches[] = {
        {{input_.get(), 0, 8}, {weight_.get(), 0, 32}, {output_.get(), 0, 8}, 1, 4, 4},
        {{input_.get(), 8, 8}, {weight2_.get(), 0, 32}, {output_.get(), 8, 8}, 1, 4, 4}};
    return expect_error("encode_dense_linear(two weights)",
                        rt_.encode_dense_linear({launches, 2, 2}), K::kDenseLinearWeightNotShared);
  });

  // ---- submit ----
  add("empty batch", [this]() {
    return expect_not_submitted("submit(empty)", rt::CommandBatch(), K::kEmptyBatch);
  });
  add("submit on a foreign stream", [this]() -> WorkloadResult<void> {
    auto zero = zero_command();
    if (!zero) return std::unexpected(zero.error());
    return expect_not_submitted("submit(foreign stream)",
                                rt::CommandBatch::singleton(std::move(*zero)), K::kForeignStream,
                                foreign_stream_.get());
  });
  add("timing mode", [this]() -> WorkloadResult<void> {
    auto zero = zero_command();
    if (!zero) return std::unexpected(zero.error());
    const auto mode = static_cast<rt::TimingMode>(1 + rng_.below(4));
    rt::CommandBatch batch(mode);
    batch.push_compute(std::move(*zero));
    return expect_not_submitted("submit(timing)", std::move(batch), K::kTimingUnsupported);
  });
  add("replay-required path", [this]() -> WorkloadResult<void> {
    auto zero = zero_command();
    if (!zero) return std::unexpected(zero.error());
    const bool declared = rng_.below(2) == 1;
    rt::CommandBatch batch(rt::TimingMode::kOff,
                           declared ? rt::ComputePathRequirement::kReplayedWithDeclaredEagerBoundaries
                                    : rt::ComputePathRequirement::kReplayedOnly);
    if (declared) (void)batch.set_declared_eager_compute_node_indices({0});
    batch.push_compute(std::move(*zero));
    return expect_not_submitted("submit(replay required)", std::move(batch),
                                K::kReplayRequiredUnsupported);
  });
  add("reusable capture", [this]() -> WorkloadResult<void> {
    auto zero = zero_command();
    if (!zero) return std::unexpected(zero.error());
    auto capture = rt::ReusableExecutionCapture::create(
        *rt::ProgramId::create("program.contract.capture"), 2, {0}, {1});
    if (!capture) return std::unexpected(fail(capture.error().display()));
    rt::CommandBatch batch;
    (void)batch.set_reusable_execution_capture(std::move(*capture));
    batch.push_compute(std::move(*zero));
    return expect_not_submitted("submit(capture)", std::move(batch),
                                K::kReusableCaptureUnsupported);
  });
  add("logical work on a provider command", [this]() -> WorkloadResult<void> {
    auto dense = dense_command(1);
    if (!dense) return std::unexpected(dense.error());
    rt::CommandBatch batch;
    batch.push_node_initialization(0, *rt::LogicalWork::create(rt::BatchingForm::kScalar, 1, 1),
                                   std::move(*dense));
    return expect_not_submitted("submit(logical work conflict)", std::move(batch),
                                K::kLogicalWorkConflict);
  });
  add("command with a foreign buffer", [this]() -> WorkloadResult<void> {
    auto copy = rt_.encode_copy(*foreign_buffer_, *a_, region(0, 0, 1 + rng_.below(kBytes)));
    if (!copy) return std::unexpected(fail("encode_copy(foreign source)", copy.error()));
    return expect_not_submitted("submit(foreign buffer)",
                                rt::CommandBatch::singleton(std::move(*copy)),
                                K::kForeignBufferInCommand);
  });
  // A command encoded by another instance of the same kind carries that instance's regions, so the
  // contract answers kForeignBufferInCommand (kForeignCommand is for a command of another class,
  // which no runtime opened through the registry can hand out).
  add("command of another runtime", [this]() -> WorkloadResult<void> {
    auto command = foreign_.encode_zero(*foreign_buffer_, 0, 1 + rng_.below(kBytes));
    if (!command) return std::unexpected(fail("foreign encode_zero", command.error()));
    return expect_not_submitted("submit(foreign command)",
                                rt::CommandBatch::singleton(std::move(*command)),
                                K::kForeignBufferInCommand);
  });
  add("node-scoped transfer without logical work under attribution",
      [this]() -> WorkloadResult<void> {
        auto upload = rt_.encode_upload(random_f16(4), layout(ET::kF16, 4), *input_, 0);
        if (!upload) return std::unexpected(fail("encode_upload(input)", upload.error()));
        auto dense = dense_command(1);
        if (!dense) return std::unexpected(dense.error());
        rt::EncodedOperation op;
        op.dynamic_bindings.push_back(std::move(*upload));
        op.compute = std::move(*dense);
        rt::CommandBatch batch;
        batch.require_logical_execution_path_attribution();
        batch.push_operation(0, std::move(op));
        return expect_not_submitted("submit(node-scoped transfer)", std::move(batch),
                                    K::kAttributionInvalidMetadata);
      });

  // ---- fences, streams, readback ----
  add("wait on a foreign fence", [this]() -> WorkloadResult<void> {
    auto wait = rt_.wait_fence(*foreign_fence_);
    if (wait) return std::unexpected(fail("wait_fence(foreign) succeeded"));
    if (auto ok = expect_kind("wait_fence(foreign)", wait.error().error(), K::kForeignFence); !ok) {
      return ok;
    }
    auto query = rt_.query_fence(*foreign_fence_);
    if (!std::holds_alternative<rt::RuntimeError>(query)) {
      return std::unexpected(fail("query_fence(foreign) was not indeterminate"));
    }
    return expect_kind("query_fence(foreign)", std::get<rt::RuntimeError>(query), K::kForeignFence);
  });
  add("synchronize a foreign stream", [this]() {
    return expect_error("synchronize(foreign)", rt_.synchronize(*foreign_stream_),
                        K::kForeignStream);
  });
  add("readback on a foreign stream", [this]() {
    return expect_error("readback(foreign stream)",
                        rt_.readback(*foreign_stream_, *a_, region(0, 0, 4), layout(ET::kU8, 4)),
                        K::kReadbackForeign);
  });
  add("readback of a foreign buffer", [this]() {
    return expect_error("readback(foreign buffer)",
                        rt_.readback(*stream_, *foreign_buffer_, region(0, 0, 4), layout(ET::kU8, 4)),
                        K::kReadbackForeign);
  });
  add("readback with another element type", [this]() {
    return expect_error("readback(f16 of u8)",
                        rt_.readback(*stream_, *a_, region(0, 0, 4), layout(ET::kF16, 2)),
                        K::kReadbackElementTypeMismatch);
  });
  add("readback past the source", [this]() {
    const std::uint64_t length = 1 + rng_.below(8);
    return expect_error("readback(source past end)",
                        rt_.readback(*stream_, *a_, region(kBytes - length + 1, 0, length),
                                     layout(ET::kU8, 16)),
                        K::kReadbackSourceOutOfBounds);
  });
  add("readback past the host layout", [this]() {
    const std::uint64_t length = 2 + rng_.below(8);
    return expect_error("readback(destination past layout)",
                        rt_.readback(*stream_, *a_, region(0, 1, length), layout(ET::kU8, length)),
                        K::kReadbackDestinationOutOfBounds);
  });

  // ---- admission ----
  add("admission over capacity", [this]() -> WorkloadResult<void> {
    const std::uint64_t capacity = rt_.descriptor().total_memory_bytes;
    auto request = rt::BufferRequest::create(*rt::ResourceId::create("resource.contract.huge"),
                                             capacity + 1 + rng_.below(1024), 64,
                                             rt::BufferUsage::kScratch, ET::kU8);
    if (!request) return std::unexpected(fail(request.error().display()));
    return expect_error("admit(over capacity)", rt_.admit(*request), K::kAdmissionOverCapacity);
  });
  add("allocate with a consumed permit", [this]() -> WorkloadResult<void> {
    auto request = rt::BufferRequest::create(*rt::ResourceId::create("resource.contract.permit"),
                                             16, 16, rt::BufferUsage::kScratch, ET::kU8);
    if (!request) return std::unexpected(fail(request.error().display()));
    auto permit = rt_.admit(*request);
    if (!permit) return std::unexpected(fail("admit(permit)", permit.error()));
    auto buffer = rt_.allocate(std::move(*permit));
    if (!buffer) return std::unexpected(fail("allocate(permit)", buffer.error()));
    // The moved-from permit is consumed; the contract answers with an error, not UB.
    return expect_error("allocate(consumed permit)", rt_.allocate(std::move(*permit)),
                        K::kAdmissionInvalidRequest);
  });

  // ---- the optional methods (spec 5.2): each is called, whatever this runtime supports ----
  add("optional methods", [this]() -> WorkloadResult<void> {
    (void)rt_.supports_guarded_submission();
    if (auto session = rt_.begin_static_weight_import(); session && *session) {
      const auto bytes = random_bytes(8);
      (void)(*session)->get()->import_component(bytes, *b_, rng_.below(kBytes - 8));
      (void)(*session)->get()->seal();
    }
    (void)rt_.encode_static_weight_transform(
        {weight_.get(), weight2_.get(), "transform.contract.identity"});
    auto plan = rt::ReusableExecutionPlan::create(1 + rng_.below(8));
    if (!plan) return std::unexpected(fail(plan.error().display()));
    (void)rt_.configure_reusable_executables(*stream_, *plan);
    (void)rt_.seal_reusable_executables(*stream_);
    (void)rt_.reusable_executable_preparation(*stream_);
    (void)rt_.reusable_execution_catalog(*stream_);
    (void)rt_.encode_reusable_execution({"program.contract", static_cast<std::uint32_t>(rng_.below(4))});
    (void)rt_.trim_reusable_executables(*stream_);
    // Two commands coalesced, submitted, and their effect read back.
    std::vector<rt::CommandPtr> commands;
    auto zero = zero_command();
    if (!zero) return std::unexpected(zero.error());
    commands.push_back(std::move(*zero));
    const std::uint64_t length = 1 + rng_.below(kBytes);
    auto upload = rt_.encode_upload(random_bytes(length), layout(ET::kU8, length), *a_, 0);
    if (!upload) return std::unexpected(fail("encode_upload", upload.error()));
    commands.push_back(std::move(*upload));
    auto coalesced = rt_.coalesce_program_bindings(std::move(commands));
    if (!coalesced) return std::unexpected(fail("coalesce_program_bindings", coalesced.error()));
    rt::CommandBatch batch;
    for (auto& c : *coalesced) batch.push(std::move(c));
    if (auto done = submit_and_wait("submit(coalesced)", std::move(batch)); !done) return done;
    return read_and_observe("readback(a)", *a_, ET::kU8, 0, kBytes);
  });
  return list;
}

WorkloadResult<WorkloadReport> ContractRun::run(std::uint32_t rounds, const StopRequested& stop) {
  if (auto ready = setup(); !ready) return std::unexpected(ready.error());
  auto list = probes();
  // Every probe once, in a seeded order (Fisher-Yates), then `rounds` seeded draws.
  std::vector<std::size_t> order(list.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  for (std::size_t i = order.size(); i > 1; --i) {
    std::swap(order[i - 1], order[rng_.below(i)]);
  }
  for (std::uint32_t r = 0; r < rounds; ++r) order.push_back(rng_.below(list.size()));
  for (std::size_t step = 0; step < order.size(); ++step) {
    if (stop()) {
      auto report = observed_.finish(rt_);
      report.stopped = true;
      return report;
    }
    const auto& probe = list[order[step]];
    if (auto done = probe.probe(); !done) {
      return std::unexpected(
          fail(fmt::format("contract step {} ({}): {}", step, probe.name, done.error().message)));
    }
  }
  return observed_.finish(rt_);
}

}  // namespace

WorkloadResult<WorkloadReport> run_contract(const WorkloadSpec& spec, rt::DeviceRuntime& runtime,
                                            rt::DeviceRuntime& foreign, const StopRequested& stop) {
  ContractRun run(runtime, foreign, spec.seed);
  return run.run(spec.contract.rounds, stop);
}

}  // namespace vtrace::workloads
