// The immediate operations (vtrace/runtime/immediate.h): each makes exactly its documented public
// calls, gives the bits the raw calls give on every host runtime, mixes with raw calls, and hands
// back the contract's own error for every wrong size, type or owner (never a crash, never a
// submit after a failed encode), with the f16 packing helpers they are used with.
#include "vtrace/runtime/immediate.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "runtime_test_support.h"
#include "support/failing_waits.h"
#include "vtrace/runtime/f16.h"
#include "vtrace/runtime/forwarding_runtime.h"
#include "vtrace/runtime/registry.h"

using namespace vtrace::runtime;
using namespace vtrace::runtime::testing;

namespace {

constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();

std::unique_ptr<DeviceRuntime> open(const std::string& name) {
  auto runtime = default_registry().open(name);
  REQUIRE(runtime.has_value());
  return std::move(*runtime);
}

// Every public call that reaches the runtime, by name, and the phase of each submitted entry.
class CallLog final : public ForwardingRuntime {
 public:
  explicit CallLog(std::unique_ptr<DeviceRuntime> inner) : ForwardingRuntime(std::move(inner)) {}
  // Mutable: buffer_descriptor is const, and the log is the test's, not the runtime's state.
  mutable std::vector<std::string> calls;

  Result<AllocationPermit> admit(const BufferRequest& request) override {
    calls.push_back("admit");
    return ForwardingRuntime::admit(request);
  }
  Result<BufferPtr> allocate(AllocationPermit permit) override {
    calls.push_back("allocate");
    return ForwardingRuntime::allocate(std::move(permit));
  }
  BufferDescriptor buffer_descriptor(const Buffer& buffer) const override {
    calls.push_back("buffer_descriptor");
    return ForwardingRuntime::buffer_descriptor(buffer);
  }
  Result<CommandPtr> encode_upload(std::span<const std::uint8_t> source,
                                   const HostTransferLayout& layout, const Buffer& destination,
                                   std::uint64_t offset) override {
    calls.push_back("encode_upload");
    return ForwardingRuntime::encode_upload(source, layout, destination, offset);
  }
  Result<CommandPtr> encode_dense_linear(const DenseLinearRequest& request) override {
    calls.push_back("encode_dense_linear");
    return ForwardingRuntime::encode_dense_linear(request);
  }
  std::expected<FencePtr, DefinitelyNotSubmitted> submit(Stream& stream,
                                                         CommandBatch batch) override {
    std::string call = "submit";
    for (const auto& entry : batch.entries()) {
      call += entry.phase == CommandPhase::kDynamicBinding ? " dynamic_binding"
              : entry.phase == CommandPhase::kCompute      ? " compute"
                                                           : " other";
    }
    calls.push_back(call);
    return ForwardingRuntime::submit(stream, std::move(batch));
  }
  std::expected<TerminalReceipt, FenceIndeterminate> wait_fence(const Fence& fence) override {
    calls.push_back("wait_fence");
    return ForwardingRuntime::wait_fence(fence);
  }
  Result<std::vector<std::uint8_t>> readback(Stream& stream, const Buffer& source,
                                             const CopyRegion& region,
                                             const HostTransferLayout& layout) override {
    calls.push_back("readback");
    return ForwardingRuntime::readback(stream, source, region, layout);
  }
};

// Seeded f16 values in [-1, 1) with odd shapes (no multiple of a SIMD width).
std::vector<std::uint8_t> seeded_f16(std::uint64_t count, std::uint64_t seed) {
  std::vector<float> values(count);
  std::uint64_t state = seed;
  for (auto& value : values) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    value = static_cast<float>(static_cast<std::int64_t>(state >> 40) - (1 << 23)) / (1 << 23);
  }
  return to_f16_bytes(values);
}

struct Shape {
  std::uint64_t rows, in, out;
};
constexpr Shape kShape{3, 37, 19};

// The raw path: what a product writes without immediate.h.
std::vector<std::uint8_t> raw_path(DeviceRuntime& runtime, const std::vector<std::uint8_t>& x,
                                   const std::vector<std::uint8_t>& w) {
  auto stream = runtime.create_stream();
  REQUIRE(stream.has_value());
  auto input = allocate(runtime, 2 * kShape.rows * kShape.in, ElementType::kF16, 64, "resource.x");
  auto weight = allocate(runtime, 2 * kShape.out * kShape.in, ElementType::kF16, 64, "weight.w");
  auto output =
      allocate(runtime, 2 * kShape.rows * kShape.out, ElementType::kF16, 64, "resource.y");
  for (auto [buffer, bytes] : {std::pair{input.get(), &x}, std::pair{weight.get(), &w}}) {
    auto layout = HostTransferLayout::create(ElementType::kF16, bytes->size() / 2);
    REQUIRE(layout.has_value());
    auto upload = runtime.encode_upload(*bytes, *layout, *buffer, 0);
    REQUIRE(upload.has_value());
    CommandBatch batch;
    batch.push_dynamic_binding(std::move(*upload));
    submit_ok(runtime, **stream, std::move(batch));
  }
  const DenseLinearLaunch launch{{input.get(), 0, 2 * kShape.rows * kShape.in},
                                 {weight.get(), 0, 2 * kShape.out * kShape.in},
                                 {output.get(), 0, 2 * kShape.rows * kShape.out},
                                 kShape.rows,
                                 kShape.in,
                                 kShape.out};
  auto dense = runtime.encode_dense_linear({std::span(&launch, 1), 1, kShape.rows});
  REQUIRE(dense.has_value());
  submit_ok(runtime, **stream, CommandBatch::singleton(std::move(*dense)));
  return contents(runtime, **stream, *output);
}

std::vector<std::uint8_t> immediate_path(DeviceRuntime& runtime, const std::vector<std::uint8_t>& x,
                                         const std::vector<std::uint8_t>& w) {
  auto stream = runtime.create_stream();
  REQUIRE(stream.has_value());
  auto input = immediate::allocate_buffer(runtime, "resource.x", ElementType::kF16,
                                          kShape.rows * kShape.in, BufferUsage::kActivations);
  auto weight = immediate::allocate_buffer(runtime, "weight.w", ElementType::kF16,
                                           kShape.out * kShape.in, BufferUsage::kActivations);
  auto output = immediate::allocate_buffer(runtime, "resource.y", ElementType::kF16,
                                           kShape.rows * kShape.out, BufferUsage::kActivations);
  REQUIRE(input.has_value());
  REQUIRE(weight.has_value());
  REQUIRE(output.has_value());
  REQUIRE(immediate::upload(runtime, **stream, **input, x).has_value());
  REQUIRE(immediate::upload(runtime, **stream, **weight, w).has_value());
  REQUIRE(immediate::dense_linear(runtime, **stream, **input, **weight, **output,
                                  {kShape.rows, kShape.in, kShape.out})
              .has_value());
  auto bytes = immediate::readback(runtime, **stream, **output);
  REQUIRE(bytes.has_value());
  return std::move(*bytes);
}

// A reference runtime with a stream, for the error tests.
struct Fixture {
  Fixture() {
    auto made = runtime->create_stream();
    REQUIRE(made.has_value());
    stream = std::move(*made);
  }
  std::unique_ptr<DeviceRuntime> runtime = open("reference");
  StreamPtr stream;
  BufferPtr buffer(ElementType type, std::uint64_t elements, const std::string& name) {
    auto made =
        immediate::allocate_buffer(*runtime, name, type, elements, BufferUsage::kActivations);
    REQUIRE(made.has_value());
    return std::move(*made);
  }
  std::uint64_t submissions() const { return runtime->counter_snapshot()->submissions; }
};

template <typename T>
ErrorKind kind_of(const Result<T>& result) {
  REQUIRE_FALSE(result.has_value());
  return result.error().kind();
}

}  // namespace

TEST_CASE("immediate: allocate_buffer admits N elements of the type, id, usage and alignment") {
  auto runtime = open("reference");
  const auto before = *runtime->counter_snapshot();
  auto buffer = immediate::allocate_buffer(*runtime, "state.cache:0/k", ElementType::kF32, 10,
                                           BufferUsage::kState, 256);
  REQUIRE(buffer.has_value());
  const BufferDescriptor descriptor = runtime->buffer_descriptor(**buffer);
  CHECK(descriptor.resource_id.str() == "state.cache:0/k");
  CHECK(descriptor.size_bytes == 40);
  CHECK(descriptor.alignment_bytes == 256);
  CHECK(descriptor.usage == BufferUsage::kState);
  CHECK(descriptor.element_type == ElementType::kF32);
  CHECK(runtime->counter_snapshot()->allocations == before.allocations + 1);

  auto defaulted = immediate::allocate_buffer(*runtime, "resource.d", ElementType::kU8, 3,
                                              BufferUsage::kScratch);
  REQUIRE(defaulted.has_value());
  CHECK(runtime->buffer_descriptor(**defaulted).alignment_bytes ==
        immediate::kDefaultAlignmentBytes);
}

TEST_CASE("immediate: each operation is exactly its documented public calls") {
  auto log = std::make_unique<CallLog>(open("reference"));
  CallLog& calls = *log;
  auto stream = calls.create_stream();
  REQUIRE(stream.has_value());

  auto x = immediate::allocate_buffer(calls, "resource.x", ElementType::kF16, 2,
                                      BufferUsage::kActivations);
  auto w =
      immediate::allocate_buffer(calls, "weight.w", ElementType::kF16, 4, BufferUsage::kWeights);
  auto y = immediate::allocate_buffer(calls, "resource.y", ElementType::kF16, 2,
                                      BufferUsage::kActivations);
  REQUIRE((x && w && y));
  CHECK(calls.calls ==
        std::vector<std::string>{"admit", "allocate", "admit", "allocate", "admit", "allocate"});

  calls.calls.clear();
  REQUIRE(immediate::upload(calls, **stream, **x, to_f16_bytes(std::vector{1.5f, -2.0f})));
  CHECK(calls.calls == std::vector<std::string>{"buffer_descriptor", "encode_upload",
                                                "submit dynamic_binding", "wait_fence"});
  REQUIRE(
      immediate::upload(calls, **stream, **w, to_f16_bytes(std::vector{2.0f, 1.0f, -1.0f, 3.0f})));

  calls.calls.clear();
  REQUIRE(immediate::dense_linear(calls, **stream, **x, **w, **y, {1, 2, 2}));
  CHECK(calls.calls ==
        std::vector<std::string>{"encode_dense_linear", "submit compute", "wait_fence"});

  calls.calls.clear();
  auto bytes = immediate::readback(calls, **stream, **y);
  REQUIRE(bytes.has_value());
  CHECK(calls.calls == std::vector<std::string>{"buffer_descriptor", "readback"});
  CHECK(from_f16_bytes(*bytes) == std::vector{1.0f, -7.5f});  // the spec's 2x2 example
}

TEST_CASE("immediate: the same bits and counters as the raw calls, on every host runtime") {
  const auto x = seeded_f16(kShape.rows * kShape.in, 1);
  const auto w = seeded_f16(kShape.out * kShape.in, 2);
  for (const std::string name : {"reference", "cpu", "cpu-splitk"}) {
    INFO("runtime " << name);
    auto raw_runtime = open(name);
    auto immediate_runtime = open(name);
    const auto raw = raw_path(*raw_runtime, x, w);
    const auto via_immediate = immediate_path(*immediate_runtime, x, w);
    REQUIRE(raw.size() == 2 * kShape.rows * kShape.out);
    CHECK(via_immediate == raw);
    CHECK(immediate_runtime->counter_snapshot() == raw_runtime->counter_snapshot());
  }
}

TEST_CASE("immediate: mixes with raw calls on the same runtime, stream and buffers") {
  Fixture f;
  auto a = f.buffer(ElementType::kU8, 16, "resource.a");
  auto b = f.buffer(ElementType::kU8, 16, "resource.b");
  REQUIRE(immediate::upload(*f.runtime, *f.stream, *a, pattern(16)));
  // A raw copy, submitted and waited on through submit_and_wait, whose fence the caller keeps.
  auto copy = f.runtime->encode_copy(*a, *b, *CopyRegion::create(4, 0, 8));
  REQUIRE(copy.has_value());
  auto fence =
      immediate::submit_and_wait(*f.runtime, *f.stream, CommandBatch::singleton(std::move(*copy)));
  REQUIRE(fence.has_value());
  CHECK(std::holds_alternative<TerminalReceipt>(f.runtime->query_fence(**fence)));
  // A raw readback of what immediate::upload wrote, and immediate::readback of the raw copy.
  auto region = f.runtime->readback(*f.stream, *a, *CopyRegion::create(0, 0, 16),
                                    *HostTransferLayout::create(ElementType::kU8, 16));
  REQUIRE(region.has_value());
  CHECK(*region == pattern(16));
  auto copied = immediate::readback(*f.runtime, *f.stream, *b);
  REQUIRE(copied.has_value());
  const auto source = pattern(16);
  std::vector<std::uint8_t> expected(source.begin() + 4, source.begin() + 12);
  expected.resize(16, 0);
  CHECK(*copied == expected);
  // An upload at an offset lands there.
  REQUIRE(immediate::upload(*f.runtime, *f.stream, *b, std::vector<std::uint8_t>{9, 9}, 14));
  CHECK((*immediate::readback(*f.runtime, *f.stream, *b))[15] == 9);
}

TEST_CASE("immediate: allocate_buffer's errors are the contract's and admit nothing") {
  Fixture f;
  auto& rt = *f.runtime;
  const auto before = *rt.counter_snapshot();
  const auto usage = BufferUsage::kActivations;
  CHECK(kind_of(immediate::allocate_buffer(rt, "", ElementType::kU8, 1, usage)) ==
        ErrorKind::kContractValue);
  CHECK(kind_of(immediate::allocate_buffer(rt, "no spaces", ElementType::kU8, 1, usage)) ==
        ErrorKind::kContractValue);
  CHECK(kind_of(immediate::allocate_buffer(rt, "resource.z", ElementType::kU8, 0, usage)) ==
        ErrorKind::kContractValue);
  CHECK(kind_of(immediate::allocate_buffer(rt, "resource.z", ElementType::kU8, 1, usage, 3)) ==
        ErrorKind::kContractValue);
  auto overflow = immediate::allocate_buffer(rt, "resource.z", ElementType::kF32, kMax / 2, usage);
  CHECK(kind_of(overflow) == ErrorKind::kContractValue);
  CHECK(overflow.error().message() ==
        "invalid execution plan: buffer request has invalid size or alignment");
  // The reference device holds 64 MiB: 64 Mi f16 elements are 128 MiB.
  CHECK(kind_of(immediate::allocate_buffer(rt, "resource.z", ElementType::kF16, 64ull << 20,
                                           usage)) == ErrorKind::kAdmissionOverCapacity);
  CHECK(*rt.counter_snapshot() == before);
}

TEST_CASE("immediate: upload's errors are the contract's and nothing is submitted") {
  Fixture f;
  auto& rt = *f.runtime;
  auto half = f.buffer(ElementType::kF16, 4, "resource.h");  // 8 bytes
  const std::uint64_t submissions = f.submissions();
  const std::vector<std::uint8_t> three(3, 1), ten(10, 1), one(1, 1), two(2, 1);
  CHECK(kind_of(immediate::upload(rt, *f.stream, *half, three)) ==
        ErrorKind::kUploadByteCountMismatch);
  CHECK(kind_of(immediate::upload(rt, *f.stream, *half, one)) == ErrorKind::kContractValue);
  CHECK(kind_of(immediate::upload(rt, *f.stream, *half, {})) == ErrorKind::kContractValue);
  CHECK(kind_of(immediate::upload(rt, *f.stream, *half, ten)) == ErrorKind::kRegionOutOfBounds);
  CHECK(kind_of(immediate::upload(rt, *f.stream, *half, two, 8)) == ErrorKind::kRegionOutOfBounds);
  CHECK(kind_of(immediate::upload(rt, *f.stream, *half, two, kMax)) ==
        ErrorKind::kUploadRangeOverflow);
  CHECK(f.submissions() == submissions);
  // The raw call gives the same kind for the same mistake.
  auto raw = rt.encode_upload(three, *HostTransferLayout::create(ElementType::kF16, 1), *half, 0);
  CHECK(kind_of(raw) == ErrorKind::kUploadByteCountMismatch);
}

TEST_CASE("immediate: dense_linear's errors are the contract's and nothing is submitted") {
  Fixture f;
  auto& rt = *f.runtime;
  auto x = f.buffer(ElementType::kF16, 2, "resource.x");
  auto w = f.buffer(ElementType::kF16, 4, "weight.w");
  auto y = f.buffer(ElementType::kF16, 2, "resource.y");
  auto small = f.buffer(ElementType::kF16, 1, "resource.small");
  auto bytes = f.buffer(ElementType::kU8, 4, "resource.u8");
  const std::uint64_t submissions = f.submissions();
  auto run = [&](const Buffer& in, const Buffer& weight, const Buffer& out,
                 immediate::DenseLinearShape shape) {
    return immediate::dense_linear(rt, *f.stream, in, weight, out, shape);
  };
  CHECK(kind_of(run(*x, *w, *y, {0, 2, 2})) == ErrorKind::kDenseLinearNoWork);
  CHECK(kind_of(run(*x, *w, *y, {1, 0, 2})) == ErrorKind::kRegionOutOfBounds);  // empty regions
  CHECK(kind_of(run(*x, *w, *small, {1, 2, 2})) == ErrorKind::kRegionOutOfBounds);
  CHECK(kind_of(run(*x, *w, *y, {2, 2, 2})) == ErrorKind::kRegionOutOfBounds);        // 2 rows of 1
  CHECK(kind_of(run(*x, *w, *y, {kMax, kMax, 2})) == ErrorKind::kRegionOutOfBounds);  // overflow
  CHECK(kind_of(run(*x, *w, *bytes, {1, 2, 2})) == ErrorKind::kDenseLinearRangesDiffer);  // u8
  CHECK(f.submissions() == submissions);

  // A buffer of another runtime instance is the contract's foreign buffer, whichever call says so.
  Fixture other;
  auto foreign = other.buffer(ElementType::kF16, 4, "weight.foreign");
  CHECK(kind_of(run(*x, *foreign, *y, {1, 2, 2})) == ErrorKind::kForeignBufferInCommand);
  CHECK(f.submissions() == submissions);
}

TEST_CASE("immediate: readback's and submit_and_wait's errors are the contract's") {
  Fixture f;
  auto& rt = *f.runtime;
  auto odd = f.buffer(ElementType::kU8, 3, "resource.odd");
  // A 3-byte buffer typed f16 exists (admission takes any size); it is not whole elements.
  auto odd_f16 = BufferRequest::create(*ResourceId::create("resource.odd16"), 3, 16,
                                       BufferUsage::kActivations, ElementType::kF16);
  REQUIRE(odd_f16.has_value());
  auto odd_half = rt.allocate(*rt.admit(*odd_f16));
  REQUIRE(odd_half.has_value());
  CHECK(kind_of(immediate::readback(rt, *f.stream, **odd_half)) ==
        ErrorKind::kReadbackDestinationOutOfBounds);
  auto one_byte = BufferRequest::create(*ResourceId::create("resource.one"), 1, 16,
                                        BufferUsage::kActivations, ElementType::kF16);
  REQUIRE(one_byte.has_value());
  auto one_half = rt.allocate(*rt.admit(*one_byte));
  REQUIRE(one_half.has_value());
  CHECK(kind_of(immediate::readback(rt, *f.stream, **one_half)) == ErrorKind::kContractValue);
  CHECK(immediate::readback(rt, *f.stream, *odd)->size() == 3);

  Fixture other;
  auto foreign = other.buffer(ElementType::kU8, 4, "resource.foreign");
  CHECK(kind_of(immediate::readback(rt, *f.stream, *foreign)) == ErrorKind::kReadbackForeign);

  const std::uint64_t submissions = f.submissions();
  CHECK(kind_of(immediate::submit_and_wait(rt, *f.stream, CommandBatch())) ==
        ErrorKind::kEmptyBatch);
  CHECK(f.submissions() == submissions);
}

TEST_CASE("immediate: a batch that runs and fails is submit_and_wait's error, and upload's and "
          "dense_linear's") {
  vtrace::test::FailingWaits failing(open("reference"));
  auto stream = failing.create_stream();
  REQUIRE(stream.has_value());
  auto buffer = immediate::allocate_buffer(failing, "resource.f16", ElementType::kF16, 4,
                                           BufferUsage::kActivations);
  REQUIRE(buffer.has_value());
  const std::vector<std::uint8_t> bytes(8, 0x3c);
  REQUIRE(immediate::upload(failing, **stream, **buffer, bytes).has_value());

  failing.fail_waits = true;
  auto zero = failing.encode_zero(**buffer, 0, 8);
  REQUIRE(zero.has_value());
  auto fence =
      immediate::submit_and_wait(failing, **stream, CommandBatch::singleton(std::move(*zero)));
  REQUIRE_FALSE(fence.has_value());
  CHECK(fence.error().kind() == ErrorKind::kInternal);
  CHECK(fence.error().message() == "injected: the batch failed on the device");
  CHECK(kind_of(immediate::upload(failing, **stream, **buffer, bytes)) == ErrorKind::kInternal);
  const immediate::DenseLinearShape shape{1, 2, 2};
  CHECK(kind_of(immediate::dense_linear(failing, **stream, **buffer, **buffer, **buffer, shape)) ==
        ErrorKind::kInternal);
}

TEST_CASE("immediate: to_f16_bytes and from_f16_bytes are the scalar conversions, little-endian") {
  const std::vector<float> values{1.0f, -7.5f, 65504.0f, 0x1.0p-24f};
  const auto bytes = to_f16_bytes(values);
  REQUIRE(bytes.size() == 8);
  CHECK(bytes[0] == 0x00);  // 1.0 = 0x3C00
  CHECK(bytes[1] == 0x3C);
  for (std::size_t i = 0; i < values.size(); ++i) {
    CHECK((bytes[2 * i] | (bytes[2 * i + 1] << 8)) == f32_to_f16(values[i]));
  }
  CHECK(from_f16_bytes(bytes) == values);  // all four are exact in f16
  std::vector<std::uint8_t> odd = bytes;
  odd.push_back(0xFF);
  CHECK(from_f16_bytes(odd) == values);  // the odd last byte is ignored
  CHECK(to_f16_bytes(std::vector<float>{}).empty());
}
