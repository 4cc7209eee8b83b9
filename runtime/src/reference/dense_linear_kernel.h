// The reference dense-linear kernel (spec 11.1), private to the reference runtime.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace vtrace::runtime::reference {

// The bit pattern the kernel writes for every output whose f32 accumulator is NaN (open question
// 15.3): positive quiet NaN without payload, independent of which operand the FPU propagated.
inline constexpr std::uint16_t kDenseLinearNanOutput = 0x7E00;

// out[r][o] = f16(sum over i ascending of f32(in[r][i]) * f32(w[o][i])), f32 accumulator from
// +0, multiply then add (each rounded), one conversion at the end. `input` is rows*in_features
// and `weight` out_features*in_features little-endian F16; `output` receives rows*out_features
// little-endian F16 and must overlap neither operand (the host runtime stages an aliased output).
// Allocates nothing.
void dense_linear_f16_into(std::span<const std::uint8_t> input,
                           std::span<const std::uint8_t> weight, std::span<std::uint8_t> output,
                           std::size_t rows, std::size_t in_features, std::size_t out_features);

// The same, returning the result as a new vector (for tests and benchmarks).
std::vector<std::uint8_t> dense_linear_f16(std::span<const std::uint8_t> input,
                                           std::span<const std::uint8_t> weight, std::size_t rows,
                                           std::size_t in_features, std::size_t out_features);

}  // namespace vtrace::runtime::reference
