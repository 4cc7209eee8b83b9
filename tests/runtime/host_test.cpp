// HostRuntime (host/host_runtime.h), the base of reference, cpu and cpu-splitk, with test kernels
// that compute one output at a time in a chosen order, reading the operands as they go.
//
// A DenseLinearKernel may assume its output overlaps neither operand: HostRuntime stages the
// output of an aliased launch. Whether an overlap was missed shows only when the kernel writes a
// shared byte before it reads it, which depends on the order it computes in: the reference kernel
// writes row by row, the cpu engine's threads in any order. These kernels fix the order, so an
// overlap of a single byte at either end of the output fails deterministically when it is missed.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "reference/dense_linear_kernel.h"
#include "runtime_test_support.h"
#include "vtrace/runtime/host/host_runtime.h"

using namespace vtrace::runtime;
using namespace vtrace::runtime::testing;

namespace {

enum class Order { kFirstToLast, kLastToFirst };

// Each output from its own row and weight row through the reference kernel, written at once.
class OrderedKernel final : public host::DenseLinearKernel {
 public:
  explicit OrderedKernel(Order order) : order_(order) {}
  void run(const std::uint8_t* input, const std::uint8_t* weight, std::uint8_t* output,
           const contract::DenseLinearLaunchShape& shape) override {
    const auto rows = static_cast<std::size_t>(shape.rows);
    const auto in = static_cast<std::size_t>(shape.in_features);
    const auto outs = static_cast<std::size_t>(shape.out_features);
    for (std::size_t step = 0; step < rows * outs; ++step) {
      const std::size_t e = order_ == Order::kFirstToLast ? step : rows * outs - 1 - step;
      const std::size_t r = e / outs;
      const std::size_t o = e % outs;
      const auto value = reference::dense_linear_f16({input + 2 * r * in, 2 * in},
                                                     {weight + 2 * o * in, 2 * in}, 1, in, 1);
      std::copy(value.begin(), value.end(), output + 2 * e);
    }
  }

 private:
  Order order_;
};

class OrderedRuntime final : public host::HostRuntime {
 public:
  static std::unique_ptr<OrderedRuntime> create(Order order) {
    auto descriptor = reference::reference_descriptor("device.host.ordered.0");
    REQUIRE(descriptor.has_value());
    host::HostRuntimeConfig config;
    config.label = "ordered";
    config.error_code = "ordered_runtime";
    config.device_class = DeviceClass::kReference;
    config.capabilities = descriptor->capabilities;
    config.kernel = std::make_unique<OrderedKernel>(order);
    auto state = make_state(std::move(*descriptor), std::move(config));
    REQUIRE(state.has_value());
    return std::unique_ptr<OrderedRuntime>(new OrderedRuntime(std::move(*state)));
  }

 private:
  explicit OrderedRuntime(StatePtr state) : HostRuntime(std::move(state)) {}
};

enum class Operand { kInput, kWeight };
// Where the operand lies against the output in their shared buffer: its first byte is the
// output's last, or its last byte is the output's first.
enum class Edge { kOperandStartsAtOutputEnd, kOperandEndsAtOutputStart };

constexpr std::uint64_t kRows = 3;
constexpr std::uint64_t kIn = 5;
constexpr std::uint64_t kOut = 4;

std::vector<std::uint8_t> values(std::size_t count, int step) {
  std::vector<float> v(count);
  for (std::size_t e = 0; e < count; ++e) {
    v[e] = static_cast<float>(static_cast<int>(e) * step % 23 - 11) / 8.0f;
  }
  return f16_bytes(v);
}

// Runs the launch with `operand` sharing one byte with the output at `edge`, the other operand in
// a buffer of its own, and checks the shared buffer: the original operand bytes with the reference
// kernel's result written over them (the output's byte wins the shared one).
void check_one_byte_overlap(Order order, Operand operand, Edge edge) {
  auto runtime = OrderedRuntime::create(order);
  auto stream = std::move(*runtime->create_stream());
  const auto input = values(kRows * kIn, 7);
  const auto weight = values(kOut * kIn, 5);
  const std::uint64_t output_bytes = kRows * kOut * 2;

  auto separate_input = allocate(*runtime, input.size(), ElementType::kF16);
  auto separate_weight = allocate(*runtime, weight.size(), ElementType::kF16);
  fill(*runtime, *stream, *separate_input, input);
  fill(*runtime, *stream, *separate_weight, weight);
  const BufferRegionRef separate_input_region{separate_input.get(), 0, input.size()};
  const BufferRegionRef separate_weight_region{separate_weight.get(), 0, weight.size()};
  const auto result = reference::dense_linear_f16(input, weight, kRows, kIn, kOut);

  const auto& shared_bytes = operand == Operand::kInput ? input : weight;
  const bool starts_at_end = edge == Edge::kOperandStartsAtOutputEnd;
  const std::uint64_t operand_offset = starts_at_end ? output_bytes - 1 : 0;
  const std::uint64_t output_offset = starts_at_end ? 0 : shared_bytes.size() - 1;
  std::vector<std::uint8_t> original(output_bytes + shared_bytes.size(), 0);  // one spare byte
  std::copy(shared_bytes.begin(), shared_bytes.end(),
            original.begin() + static_cast<std::ptrdiff_t>(operand_offset));
  // The shared byte must change when the output is written, or a missed overlap could not show.
  const std::size_t shared_at = starts_at_end ? operand_offset : output_offset;
  const std::uint8_t written = starts_at_end ? result.back() : result.front();
  REQUIRE(original[shared_at] != written);

  auto shared = allocate(*runtime, original.size(), ElementType::kF16);
  fill(*runtime, *stream, *shared, original);
  const BufferRegionRef shared_operand{shared.get(), operand_offset, shared_bytes.size()};
  const DenseLinearLaunch launch{
      operand == Operand::kInput ? shared_operand : separate_input_region,
      operand == Operand::kWeight ? shared_operand : separate_weight_region,
      {shared.get(), output_offset, output_bytes},
      kRows,
      kIn,
      kOut};
  auto command = runtime->encode_dense_linear({{&launch, 1}, 1, kRows});
  REQUIRE(command.has_value());
  submit_ok(*runtime, *stream, CommandBatch::singleton(std::move(*command)));

  std::vector<std::uint8_t> expected = original;
  std::copy(result.begin(), result.end(),
            expected.begin() + static_cast<std::ptrdiff_t>(output_offset));
  CHECK(contents(*runtime, *stream, *shared) == expected);
}

void check_every_order_and_operand(Edge edge) {
  for (const Order order : {Order::kFirstToLast, Order::kLastToFirst}) {
    for (const Operand operand : {Operand::kInput, Operand::kWeight}) {
      INFO("order " << (order == Order::kFirstToLast ? "first to last" : "last to first")
                    << ", operand " << (operand == Operand::kInput ? "input" : "weight"));
      check_one_byte_overlap(order, operand, edge);
    }
  }
}

}  // namespace

TEST_CASE("an output whose last byte is an operand's first is staged, whatever the kernel's order",
          "[host][dense_linear]") {
  check_every_order_and_operand(Edge::kOperandStartsAtOutputEnd);
}

TEST_CASE("an output whose first byte is an operand's last is staged, whatever the kernel's order",
          "[host][dense_linear]") {
  check_every_order_and_operand(Edge::kOperandEndsAtOutputStart);
}
