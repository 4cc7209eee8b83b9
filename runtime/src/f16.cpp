#include "vtrace/runtime/f16.h"

#include "vtrace/runtime/f16_bits.h"

namespace vtrace::runtime {

float f16_to_f32(std::uint16_t bits) { return f16_bits::to_f32(bits); }

std::uint16_t f32_to_f16(float value) { return f16_bits::from_f32(value); }

std::vector<std::uint8_t> to_f16_bytes(std::span<const float> values) {
  std::vector<std::uint8_t> bytes(values.size() * 2);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::uint16_t h = f32_to_f16(values[i]);
    bytes[2 * i] = static_cast<std::uint8_t>(h & 0xFFu);
    bytes[2 * i + 1] = static_cast<std::uint8_t>(h >> 8);
  }
  return bytes;
}

std::vector<float> from_f16_bytes(std::span<const std::uint8_t> bytes) {
  std::vector<float> values(bytes.size() / 2);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const auto h = static_cast<std::uint16_t>(bytes[2 * i] | (bytes[2 * i + 1] << 8));
    values[i] = f16_to_f32(h);
  }
  return values;
}

}  // namespace vtrace::runtime
