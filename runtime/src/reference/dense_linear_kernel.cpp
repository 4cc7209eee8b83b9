#include "reference/dense_linear_kernel.h"

#include <cmath>

#include "vtrace/runtime/f16.h"

namespace vtrace::runtime::reference {

namespace {

float load_f16(std::span<const std::uint8_t> bytes, std::size_t element) {
  const auto low = bytes[2 * element];
  const auto high = bytes[2 * element + 1];
  return f16_to_f32(static_cast<std::uint16_t>(low | (high << 8)));
}

}  // namespace

void dense_linear_f16_into(std::span<const std::uint8_t> input,
                           std::span<const std::uint8_t> weight, std::span<std::uint8_t> output,
                           std::size_t rows, std::size_t in_features, std::size_t out_features) {
  for (std::size_t row = 0; row < rows; ++row) {
    for (std::size_t o = 0; o < out_features; ++o) {
      float acc = +0.0f;
      for (std::size_t i = 0; i < in_features; ++i) {
        const float a = load_f16(input, row * in_features + i);
        const float w = load_f16(weight, o * in_features + i);
        // Rounded multiply, then rounded add: the build passes -ffp-contract=off (no FMA).
        acc = acc + a * w;
      }
      const std::uint16_t bits = std::isnan(acc) ? kDenseLinearNanOutput : f32_to_f16(acc);
      const std::size_t element = row * out_features + o;
      output[2 * element] = static_cast<std::uint8_t>(bits & 0xFF);
      output[2 * element + 1] = static_cast<std::uint8_t>(bits >> 8);
    }
  }
}

std::vector<std::uint8_t> dense_linear_f16(std::span<const std::uint8_t> input,
                                           std::span<const std::uint8_t> weight, std::size_t rows,
                                           std::size_t in_features, std::size_t out_features) {
  std::vector<std::uint8_t> output(rows * out_features * 2);
  dense_linear_f16_into(input, weight, output, rows, in_features, out_features);
  return output;
}

}  // namespace vtrace::runtime::reference
