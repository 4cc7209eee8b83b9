// Conformance: dense-linear numerics through the runtime (spec 8.5, 11). Bit-exact runtimes
// equal the reference runtime (and its kernel) bit for bit; cpu-splitk equals its own documented
// order (splitk_model in conformance.cpp). Shared vectors, batching forms, aliasing, pinned NaN,
// a randomized differential test over shapes, data classes, alignments and offsets.
#include "conformance/conformance.h"

#include <cmath>
#include <random>

#include <nlohmann/json.hpp>

#include "reference/dense_linear_kernel.h"
#include "vtrace/runtime/f16.h"

using namespace vtrace::conformance;
using namespace vtrace::runtime;
using vtrace::runtime::testing::allocate;
using vtrace::runtime::testing::contents;
using vtrace::runtime::testing::f16_bytes;
using vtrace::runtime::testing::f16_values;
using vtrace::runtime::testing::fill;
using vtrace::runtime::testing::submit_ok;

namespace {

// Runs one Scalar dense-linear request on fresh, exactly sized buffers; returns the output.
std::vector<std::uint8_t> run_dense(DeviceRuntime& runtime, Stream& stream,
                                    const std::vector<std::uint8_t>& input,
                                    const std::vector<std::uint8_t>& weight, std::uint64_t rows,
                                    std::uint64_t in, std::uint64_t out) {
  const auto buffers = dense_buffers(runtime, rows, in, out);
  fill(runtime, stream, *buffers.input, input);
  fill(runtime, stream, *buffers.weight, weight);
  submit_ok(runtime, stream, CommandBatch::singleton(dense_command(runtime, buffers)));
  return contents(runtime, stream, *buffers.output);
}

// Number of f16 elements that differ (first one reported through `first`).
std::size_t differing_elements(std::span<const std::uint8_t> a, std::span<const std::uint8_t> b,
                               std::size_t* first = nullptr) {
  std::size_t count = 0;
  for (std::size_t e = 0; e < std::min(a.size(), b.size()) / 2; ++e) {
    if (load_u16(a, e) != load_u16(b, e)) {
      if (count == 0 && first != nullptr) *first = e;
      ++count;
    }
  }
  return count + (a.size() == b.size() ? 0 : 1);
}

// ---- randomized cases ---------------------------------------------------------------------------

enum class Form : std::uint8_t { kScalar, kPacked, kLoop };
enum class Data : std::uint8_t { kGaussian, kSubnormal, kSpecial, kOverflow };

const char* form_name(Form f) {
  return f == Form::kScalar ? "scalar" : f == Form::kPacked ? "packed" : "participant-loop";
}
const char* data_name(Data d) {
  return d == Data::kGaussian ? "gaussian" : d == Data::kSubnormal ? "subnormal"
         : d == Data::kSpecial ? "inf/nan" : "overflowing";
}

enum class Alias { kNone, kInput, kWeight };

struct Case {
  std::uint32_t seed = 0;
  std::size_t rows = 1, in = 1, out = 1;
  Form form = Form::kScalar;
  std::uint32_t participants = 1;
  Data data = Data::kGaussian;
  std::uint64_t alignment = 16;
  std::uint64_t offset = 0;  // of every region inside its (larger) buffer
  // The output region lies over an operand's: the input's (in == out), or the weight's (one
  // launch, rows <= in).
  Alias alias = Alias::kNone;
};

std::ostream& operator<<(std::ostream& os, const Case& c) {
  return os << "seed " << c.seed << ": rows " << c.rows << " in " << c.in << " out " << c.out
            << ", " << form_name(c.form) << " x" << c.participants << ", " << data_name(c.data)
            << ", alignment " << c.alignment << ", offset " << c.offset
            << (c.alias == Alias::kInput    ? ", output aliases input"
                : c.alias == Alias::kWeight ? ", output aliases weight"
                                            : "");
}

// One launch of a case: its rows and byte offsets inside the buffers.
struct Part {
  std::size_t rows = 0;
  std::uint64_t input_offset = 0;
  std::uint64_t output_offset = 0;
};

// A case made concrete: the initial bytes of its three buffers and its launches.
struct Prepared {
  std::vector<std::uint8_t> input, weight, output;
  std::vector<Part> parts;
};

std::uint16_t random_f16(std::mt19937& rng, Data data, float scale) {
  std::uniform_int_distribution<int> percent(0, 99);
  std::normal_distribution<float> normal(0.0f, scale);
  switch (data) {
    case Data::kGaussian:
      return f32_to_f16(normal(rng));
    case Data::kSubnormal: {
      std::uniform_int_distribution<int> mantissa(1, 0x3FF);
      return static_cast<std::uint16_t>((percent(rng) < 50 ? 0x8000 : 0) | mantissa(rng));
    }
    case Data::kSpecial: {
      const int p = percent(rng);
      if (p < 3) return 0x7C00;                          // +inf
      if (p < 6) return 0xFC00;                          // -inf
      if (p < 8) return 0x7E00;                          // quiet NaN
      if (p < 9) return 0x7C01;                          // signalling NaN
      if (p < 10) return 0xFE3F;                         // negative NaN with payload
      if (p < 12) return 0x7BFF;                         // max finite
      return f32_to_f16(normal(rng));
    }
    case Data::kOverflow: {
      std::uniform_real_distribution<float> big(20000.0f, 65504.0f);
      const float v = big(rng);
      return f32_to_f16(percent(rng) < 70 ? v : -v);
    }
  }
  return 0;
}

Prepared prepare(const Case& c) {
  std::mt19937 rng(c.seed);
  Prepared p;
  const std::uint64_t tail = c.offset % 2 == 1 ? 5 : 6;  // keeps every F16 buffer an even size
  const auto guarded = [&](std::uint64_t payload) {
    return std::vector<std::uint8_t>(c.offset + payload + tail, 0xA5);
  };
  p.input = guarded(c.rows * c.in * 2);
  p.weight = guarded(c.out * c.in * 2);
  p.output = guarded(c.rows * c.out * 2);
  const auto put = [](std::vector<std::uint8_t>& bytes, std::uint64_t at, std::uint16_t v) {
    bytes[at] = static_cast<std::uint8_t>(v & 0xFF);
    bytes[at + 1] = static_cast<std::uint8_t>(v >> 8);
  };
  for (std::size_t e = 0; e < c.rows * c.in; ++e) put(p.input, c.offset + 2 * e, random_f16(rng, c.data, 1.0f));
  const Data weight_data = c.data == Data::kSubnormal ? Data::kGaussian : c.data;
  const float weight_scale = 1.0f / std::sqrt(static_cast<float>(c.in));
  for (std::size_t e = 0; e < c.out * c.in; ++e) {
    put(p.weight, c.offset + 2 * e, random_f16(rng, weight_data, weight_scale));
  }
  if (c.form == Form::kLoop) {
    // Unequal consecutive slices, each at least one row.
    std::size_t start = 0;
    for (std::uint32_t i = 0; i < c.participants; ++i) {
      const std::size_t remaining_parts = c.participants - i;
      std::size_t rows = (c.rows - start) / remaining_parts;
      if (i % 2 == 1 && rows > 1 && remaining_parts > 1) --rows;
      if (i + 1 == c.participants) rows = c.rows - start;
      p.parts.push_back({rows, c.offset + start * c.in * 2, c.offset + start * c.out * 2});
      start += rows;
    }
  } else {
    p.parts.push_back({c.rows, c.offset, c.offset});
  }
  return p;
}

struct Buffers {
  std::vector<std::uint8_t> input, weight, output;
  std::uint64_t launches_counted = 0;
};

// The buffer a case's launches write: the output, or the operand it aliases.
template <typename B>
auto& aliased_target(B& buffers, const Case& c) {
  return c.alias == Alias::kInput    ? buffers.input
         : c.alias == Alias::kWeight ? buffers.weight
                                     : buffers.output;
}

// Runs the case on `runtime`; returns the three buffers' final contents.
Buffers execute(DeviceRuntime& runtime, const Case& c, const Prepared& p) {
  auto stream = stream_of(runtime);
  auto input = allocate(runtime, p.input.size(), ElementType::kF16, c.alignment, "resource.in");
  auto weight = allocate(runtime, p.weight.size(), ElementType::kF16, c.alignment, "resource.w");
  auto output = allocate(runtime, p.output.size(), ElementType::kF16, c.alignment, "resource.out");
  fill(runtime, *stream, *input, p.input);
  fill(runtime, *stream, *weight, p.weight);
  fill(runtime, *stream, *output, p.output);
  const Buffer* out_buffer = c.alias == Alias::kInput    ? input.get()
                            : c.alias == Alias::kWeight ? weight.get()
                                                        : output.get();
  std::vector<DenseLinearLaunch> launches;
  for (const auto& part : p.parts) {
    launches.push_back({{input.get(), part.input_offset, part.rows * c.in * 2},
                        {weight.get(), c.offset, c.out * c.in * 2},
                        {out_buffer, part.output_offset, part.rows * c.out * 2},
                        part.rows,
                        c.in,
                        c.out});
  }
  const auto before = counters(runtime);
  auto command = runtime.encode_dense_linear({launches, c.participants, c.rows});
  REQUIRE(command.has_value());
  submit_ok(runtime, *stream, CommandBatch::singleton(std::move(*command)));
  Buffers result;
  result.launches_counted = counters(runtime).dense_linear_launches - before.dense_linear_launches;
  result.input = contents(runtime, *stream, *input);
  result.weight = contents(runtime, *stream, *weight);
  result.output = contents(runtime, *stream, *output);
  return result;
}

// What the buffers must hold afterwards if every launch computes `model` on the original input.
Buffers expected_with(DenseModel model, const Case& c, const Prepared& p) {
  Buffers result{p.input, p.weight, p.output, p.parts.size()};
  const std::span<const std::uint8_t> weight(p.weight.data() + c.offset, c.out * c.in * 2);
  for (const auto& part : p.parts) {
    const std::span<const std::uint8_t> in(p.input.data() + part.input_offset, part.rows * c.in * 2);
    const auto out = model(in, weight, part.rows, c.in, c.out);
    auto& target = aliased_target(result, c);
    std::copy(out.begin(), out.end(), target.begin() + static_cast<std::ptrdiff_t>(part.output_offset));
  }
  return result;
}

// For an approximate runtime (traits().approximate): each launch's output region within
// wrong_elements' tolerance, its elements counted from the region's start (an odd offset puts
// them at odd bytes of the buffer); every other byte of the three buffers, and the launch
// count, exact.
void check_close(const Buffers& actual, const Buffers& expected, const Case& c, const Prepared& p) {
  INFO("compared with the runtime's model within its tolerance");
  Buffers rest = actual;  // actual, with the launches' output regions taken from `expected`
  const auto& actual_target = aliased_target(actual, c);
  const auto& expected_target = aliased_target(expected, c);
  auto& rest_target = aliased_target(rest, c);
  const std::span<const std::uint8_t> weight(p.weight.data() + c.offset, c.out * c.in * 2);
  for (const auto& part : p.parts) {
    const std::size_t bytes = part.rows * c.out * 2;
    REQUIRE(part.output_offset + bytes <= std::min(actual_target.size(), expected_target.size()));
    const std::span<const std::uint8_t> input(p.input.data() + part.input_offset,
                                              part.rows * c.in * 2);
    CHECK(wrong_elements(std::span(actual_target).subspan(part.output_offset, bytes),
                         std::span(expected_target).subspan(part.output_offset, bytes),
                         order_allowance(input, weight, part.rows, c.in, c.out)) == 0);
    std::copy_n(expected_target.begin() + static_cast<std::ptrdiff_t>(part.output_offset), bytes,
                rest_target.begin() + static_cast<std::ptrdiff_t>(part.output_offset));
  }
  CHECK(rest.input == expected.input);
  CHECK(rest.output == expected.output);
  CHECK(rest.weight == expected.weight);  // the target when the output lies over the weight
  CHECK(actual.launches_counted == expected.launches_counted);
}

void check_same(const Buffers& actual, const Buffers& expected, const char* against) {
  INFO("compared with " << against);
  std::size_t first = 0;
  const std::size_t in_diff = differing_elements(actual.input, expected.input, &first);
  INFO("input buffer: " << in_diff << " differing f16 slots, first " << first);
  const std::size_t out_diff = differing_elements(actual.output, expected.output, &first);
  INFO("output buffer: " << out_diff << " differing f16 slots, first " << first);
  CHECK(actual.input == expected.input);
  CHECK(actual.output == expected.output);
  CHECK(actual.weight == expected.weight);
  CHECK(actual.launches_counted == expected.launches_counted);
}

std::vector<Case> differential_cases() {
  std::vector<Case> cases;
  std::uint32_t seed = 0x5EED0000;
  const auto add = [&](std::size_t rows, std::size_t in, std::size_t out, Form form,
                       std::uint32_t participants, Data data, std::uint64_t alignment,
                       std::uint64_t offset, Alias alias) {
    cases.push_back({seed++, rows, in, out, form, participants, data, alignment, offset, alias});
  };
  // Hand-picked: 1 row, rows and features off every vector width, long k, every data class.
  add(1, 1, 1, Form::kScalar, 1, Data::kGaussian, 1, 0, Alias::kNone);
  add(1, 3, 7, Form::kScalar, 1, Data::kGaussian, 2, 1, Alias::kNone);
  add(3, 7, 9, Form::kPacked, 3, Data::kGaussian, 16, 2, Alias::kNone);
  add(5, 17, 31, Form::kLoop, 2, Data::kGaussian, 64, 6, Alias::kNone);
  add(7, 33, 65, Form::kLoop, 7, Data::kGaussian, 4096, 34, Alias::kNone);
  add(9, 65, 33, Form::kPacked, 4, Data::kGaussian, 1, 3, Alias::kNone);
  add(13, 31, 17, Form::kLoop, 3, Data::kGaussian, 2, 130, Alias::kNone);
  add(11, 9, 3, Form::kScalar, 1, Data::kGaussian, 16, 0, Alias::kNone);
  add(1, 16384, 17, Form::kScalar, 1, Data::kGaussian, 64, 2, Alias::kNone);
  add(3, 16384, 9, Form::kLoop, 3, Data::kGaussian, 4096, 0, Alias::kNone);
  add(2, 4097, 31, Form::kPacked, 2, Data::kGaussian, 16, 8, Alias::kNone);
  add(1, 1025, 65, Form::kScalar, 1, Data::kGaussian, 2, 1, Alias::kNone);
  add(4, 257, 33, Form::kLoop, 2, Data::kGaussian, 1, 5, Alias::kNone);
  add(6, 255, 32, Form::kPacked, 6, Data::kGaussian, 64, 0, Alias::kNone);
  add(7, 256, 16, Form::kScalar, 1, Data::kGaussian, 16, 0, Alias::kNone);
  add(5, 33, 31, Form::kScalar, 1, Data::kSubnormal, 16, 0, Alias::kNone);
  add(7, 1024, 9, Form::kLoop, 3, Data::kSubnormal, 2, 2, Alias::kNone);
  add(6, 31, 33, Form::kScalar, 1, Data::kSpecial, 16, 0, Alias::kNone);
  add(9, 513, 7, Form::kPacked, 3, Data::kSpecial, 1, 1, Alias::kNone);
  add(5, 17, 9, Form::kScalar, 1, Data::kOverflow, 16, 0, Alias::kNone);
  add(3, 2049, 5, Form::kLoop, 2, Data::kOverflow, 64, 4, Alias::kNone);
  // Aliasing: output is the input region.
  add(3, 17, 17, Form::kScalar, 1, Data::kGaussian, 16, 0, Alias::kInput);
  add(7, 33, 33, Form::kLoop, 3, Data::kGaussian, 1, 3, Alias::kInput);
  add(5, 300, 300, Form::kPacked, 5, Data::kSpecial, 4096, 2, Alias::kInput);
  // Aliasing: the output lies over the weight, in one launch (rows <= in).
  add(3, 17, 9, Form::kScalar, 1, Data::kGaussian, 16, 0, Alias::kWeight);
  add(6, 65, 33, Form::kPacked, 6, Data::kGaussian, 2, 3, Alias::kWeight);
  add(4, 300, 7, Form::kScalar, 1, Data::kSpecial, 64, 2, Alias::kWeight);
  // Seeded random shapes.
  std::mt19937 rng(20240601);
  const std::size_t ks[] = {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 65, 127, 129,
                            255, 256, 257, 300, 511, 513, 1000, 1023, 1025, 2047, 4096, 8193};
  const std::size_t outs[] = {1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 65};
  const std::uint64_t alignments[] = {1, 2, 16, 64, 4096};
  const std::uint64_t offsets[] = {0, 0, 1, 2, 6, 16, 34, 130};
  const auto pick = [&](auto& array) { return array[std::uniform_int_distribution<std::size_t>(0, std::size(array) - 1)(rng)]; };
  for (int i = 0; i < 48; ++i) {
    const std::size_t in = pick(ks);
    std::size_t out = pick(outs);
    std::size_t rows = std::uniform_int_distribution<std::size_t>(1, in > 1024 ? 3 : 13)(rng);
    const Form form = static_cast<Form>(std::uniform_int_distribution<int>(0, 2)(rng));
    std::uint32_t participants = 1;
    if (form != Form::kScalar) {
      rows = std::max<std::size_t>(rows, 2);
      participants = std::uniform_int_distribution<std::uint32_t>(2, static_cast<std::uint32_t>(std::min<std::size_t>(rows, 5)))(rng);
    }
    const Data data = static_cast<Data>(std::uniform_int_distribution<int>(0, 3)(rng));
    const bool alias = in <= 1024 && std::uniform_int_distribution<int>(0, 7)(rng) == 0;
    if (alias) out = in;
    add(rows, in, out, participants == 1 ? Form::kScalar : form, participants, data, pick(alignments),
        pick(offsets), alias ? Alias::kInput : Alias::kNone);
  }
  return cases;
}

}  // namespace

TEST_CASE("the runtime computes the spec's 2x2 example", "[conformance][dense_linear]") {
  VTRACE_CONFORMANCE_OPEN(runtime, "device.conformance.0");
  auto stream = stream_of(*runtime);
  const auto out = run_dense(*runtime, *stream, f16_bytes({1.5f, -2.0f}),
                             f16_bytes({2.0f, 1.0f, -1.0f, 3.0f}), 1, 2, 2);
  CHECK(f16_values(out) == std::vector<float>{1.0f, -7.5f});
  CHECK(counters(*runtime).dense_linear_launches == 1);
}

TEST_CASE(
    "NaN outputs are pinned to 0x7E00 whatever produced them (any NaN from an approximate runtime) "
    "and infinities stay infinite",
    "[conformance][dense_linear]") {
  VTRACE_CONFORMANCE_OPEN(runtime, "device.conformance.0");
  auto stream = stream_of(*runtime);
  // Weight [[1, 0], [1, 1]] as [out][in].
  // Row 0 [NaN, 1]: NaN input in both outputs.
  // Row 1 [1, inf]: o0 = 1 + inf*0 (NaN), o1 = 1 + inf (inf).
  // Row 2 [inf, -inf]: o0 = inf + (-inf*0) (NaN), o1 = inf + -inf (NaN).
  // Row 3 [-inf, 1]: both stay -inf.
  // Row 4 [sNaN, 0]: a signalling NaN input is a NaN output too.
  const auto input =
      raw_f16({0xFE3F, 0x3C00, 0x3C00, 0x7C00, 0x7C00, 0xFC00, 0xFC00, 0x3C00, 0x7C01, 0x0000});
  const auto weight = raw_f16({0x3C00, 0x0000, 0x3C00, 0x3C00});
  const auto out = run_dense(*runtime, *stream, input, weight, 5, 2, 2);
  REQUIRE(out.size() == 20);
  const std::uint16_t nan = 0x7E00;
  const std::vector<std::uint16_t> expected = {nan, nan, nan, 0x7C00, nan, nan, 0xFC00, 0xFC00, nan, nan};
  for (std::size_t e = 0; e < expected.size(); ++e) {
    INFO("element " << e);
    if (traits().approximate && expected[e] == nan) {
      // cuBLAS writes its own NaN: a NaN, of any sign and payload, is what it owes.
      CHECK(is_f16_nan(load_u16(out, e)));
    } else {
      CHECK(load_u16(out, e) == expected[e]);
    }
  }
}

TEST_CASE("an output region aliasing the input still computes from the original input",
          "[conformance][dense_linear]") {
  VTRACE_CONFORMANCE_OPEN(runtime, "device.conformance.0");
  auto stream = stream_of(*runtime);
  auto activations = allocate(*runtime, 4, ElementType::kF16);
  auto weight = allocate(*runtime, 8, ElementType::kF16);
  fill(*runtime, *stream, *activations, f16_bytes({1.5f, -2.0f}));
  fill(*runtime, *stream, *weight, f16_bytes({2.0f, 1.0f, -1.0f, 3.0f}));
  const DenseLinearLaunch launch{{activations.get(), 0, 4}, {weight.get(), 0, 8},
                                 {activations.get(), 0, 4}, 1, 2, 2};
  auto command = runtime->encode_dense_linear({{&launch, 1}, 1, 1});
  REQUIRE(command.has_value());
  submit_ok(*runtime, *stream, CommandBatch::singleton(std::move(*command)));
  CHECK(f16_values(contents(*runtime, *stream, *activations)) == std::vector<float>{1.0f, -7.5f});
}

// A rows x in x out dense linear whose output lies at `output_offset` of the buffer that holds
// its input (`over_weight` false) or its weight: the buffer must end as the original operand with
// the answer computed on separate buffers written over it. A runtime that writes outputs while
// operand elements are still to be read (row blocks or output blocks on several threads, a kernel
// that reads as it goes) reads its own outputs unless it stages them.
void check_output_over_operand(DeviceRuntime& runtime, Stream& stream, std::uint64_t rows,
                               std::uint64_t in, std::uint64_t out, bool over_weight,
                               std::uint64_t output_offset) {
  const auto value = [](std::size_t e, std::size_t step, int modulus, float scale) {
    return static_cast<float>(static_cast<int>(e * step % static_cast<std::size_t>(modulus)) -
                              modulus / 2) /
           scale;
  };
  std::vector<float> input_values(rows * in);
  for (std::size_t e = 0; e < input_values.size(); ++e) input_values[e] = value(e, 7919, 257, 64);
  std::vector<float> weight_values(out * in);
  for (std::size_t e = 0; e < weight_values.size(); ++e) {
    weight_values[e] = value(e, 104729, 61, 128.0f * std::sqrt(static_cast<float>(in)) / 8);
  }
  const auto input = f16_bytes(input_values);
  const auto weight = f16_bytes(weight_values);
  const auto separate = run_dense(runtime, stream, input, weight, rows, in, out);
  const std::uint64_t output_bytes = rows * out * 2;

  std::vector<std::uint8_t> original = over_weight ? weight : input;
  original.resize(std::max<std::size_t>(original.size(), output_offset + output_bytes), 0);
  auto shared = allocate(runtime, original.size(), ElementType::kF16);
  fill(runtime, stream, *shared, original);
  // The other operand lies past the output's byte range of its own buffer: only the shared
  // buffer's overlap can tell the runtime to stage.
  const std::uint64_t other_offset = output_offset + output_bytes;
  std::vector<std::uint8_t> other_bytes(other_offset, 0);
  const auto& other_operand = over_weight ? input : weight;
  other_bytes.insert(other_bytes.end(), other_operand.begin(), other_operand.end());
  auto other = allocate(runtime, other_bytes.size(), ElementType::kF16);
  fill(runtime, stream, *other, other_bytes);
  const BufferRegionRef shared_operand{shared.get(), 0, over_weight ? weight.size() : input.size()};
  const BufferRegionRef other_region{other.get(), other_offset, other_operand.size()};
  const DenseLinearLaunch launch{over_weight ? other_region : shared_operand,
                                 over_weight ? shared_operand : other_region,
                                 {shared.get(), output_offset, output_bytes},
                                 rows,
                                 in,
                                 out};
  auto command = runtime.encode_dense_linear({{&launch, 1}, 1, rows});
  REQUIRE(command.has_value());
  submit_ok(runtime, stream, CommandBatch::singleton(std::move(*command)));

  std::vector<std::uint8_t> expected = original;
  std::copy(separate.begin(), separate.end(),
            expected.begin() + static_cast<std::ptrdiff_t>(output_offset));
  std::size_t first = 0;
  const std::size_t differing =
      differing_elements(contents(runtime, stream, *shared), expected, &first);
  INFO(differing << " differing f16 slots of the shared buffer, first " << first);
  CHECK(differing == 0);
}

TEST_CASE("an output region over the input one row later still computes from the original input",
          "[conformance][dense_linear]") {
  VTRACE_CONFORMANCE_OPEN(runtime, "device.conformance.0");
  auto stream = stream_of(*runtime);
  // Output row r lies over input row r + 1.
  check_output_over_operand(*runtime, *stream, 300, 40, 40, false, 40 * 2);
}

TEST_CASE("an output region over the weight's first rows still computes from the original weight",
          "[conformance][dense_linear]") {
  VTRACE_CONFORMANCE_OPEN(runtime, "device.conformance.0");
  auto stream = stream_of(*runtime);
  // The output covers the whole weight: output row r lies over weight rows 16r to 16r + 15,
  // which the blocks of later outputs read.
  check_output_over_operand(*runtime, *stream, 256, 64, 4096, true, 0);
}

TEST_CASE("all shared dense-linear vectors match through the runtime",
          "[conformance][dense_linear][vectors]") {
  VTRACE_CONFORMANCE_OPEN(runtime, "device.conformance.0");
  const RuntimeTraits& t = traits();
  auto file = vtrace::testing::open_fixture(test_data_dir() + "/vectors/dense_linear_f16.jsonl");
  auto stream = stream_of(*runtime);
  std::size_t cases = 0;
  std::size_t nan_outputs = 0;
  std::size_t splitk_checked = 0;
  std::string line;
  while (std::getline(file, line)) {
    if (line.empty()) continue;
    const auto json = nlohmann::json::parse(line);
    const auto rows = json.at("rows").get<std::size_t>();
    const auto in = json.at("in_features").get<std::size_t>();
    const auto out = json.at("out_features").get<std::size_t>();
    const auto input = from_hex(json.at("input").get<std::string>());
    const auto weight = from_hex(json.at("weight").get<std::string>());
    const auto expected = from_hex(json.at("output").get<std::string>());
    const auto actual = run_dense(*runtime, *stream, input, weight, rows, in, out);
    INFO("case " << cases << " kind " << json.at("kind").get<std::string>() << " rows " << rows
                 << " in " << in << " out " << out);
    REQUIRE(actual.size() == expected.size());
    // The vector (NaN expected outputs pinned to 0x7E00) is the reference's answer; the suite's
    // scalar reference model must reproduce it, or the models below prove nothing.
    std::vector<std::uint8_t> pinned = expected;
    for (std::size_t e = 0; e < expected.size() / 2; ++e) {
      if (is_f16_nan(load_u16(expected, e))) {
        ++nan_outputs;
        pinned[2 * e] = 0x00;
        pinned[2 * e + 1] = 0x7E;
      }
    }
    const auto reference = reference_model(input, weight, rows, in, out);
    CHECK(differing_elements(reference, pinned) == 0);
    if (in <= kSplitKModelBlock) {
      CHECK(differing_elements(splitk_model(input, weight, rows, in, out), reference) == 0);
      ++splitk_checked;
    }
    if (t.bit_exact) {
      CHECK(differing_elements(actual, pinned) == 0);
    } else {
      CHECK(wrong_outputs(actual, input, weight, rows, in, out) == 0);
    }
    ++cases;
  }
  CHECK(cases == 380);
  CHECK(nan_outputs > 0);
  CHECK(splitk_checked > 0);
  CHECK(counters(*runtime).dense_linear_launches == 380);
  CHECK(counters(*runtime).live_allocations == 0);
}

// Every one of the 65536 f16 bit patterns through the runtime's dense linear: as an input of a
// many-row launch (k = 1, so each output is one product: the f16 -> f32 staging, the product and
// the f32 -> f16 rounding of every pattern, scaled into overflow and subnormal rounding), and as
// a weight of a few-row launch (a decode shape: rows <= 8) and of a many-row one (the two shape
// classes a GPU runtime may send to different kernels). Exact runtimes: bit for bit the model;
// an approximate one within wrong_elements' tolerance.
TEST_CASE(
    "every f16 pattern as an input and as a weight equals the model, in few-row and many-row "
    "launches",
    "[conformance][dense_linear][patterns]") {
  VTRACE_CONFORMANCE_OPEN(runtime, "device.conformance.0");
  const RuntimeTraits& t = traits();
  auto stream = stream_of(*runtime);
  constexpr std::size_t kPatterns = 65536;
  {
    // Weights 1, -1, 0.5, 2, 0 and 65504 (the largest finite f16).
    const std::vector<std::uint16_t> scales = {0x3C00, 0xBC00, 0x3800, 0x4000, 0x0000, 0x7BFF};
    std::vector<std::uint16_t> patterns(kPatterns);
    for (std::size_t i = 0; i < kPatterns; ++i) patterns[i] = static_cast<std::uint16_t>(i);
    const auto input = raw_f16(patterns);
    const auto weight = raw_f16(scales);
    const auto actual = run_dense(*runtime, *stream, input, weight, kPatterns, 1, scales.size());
    REQUIRE(actual.size() == kPatterns * scales.size() * 2);
    CHECK(wrong_outputs(actual, input, weight, kPatterns, 1, scales.size()) == 0);
    // Independently of any model: +0 + x * 1 is x (a NaN comes out as a NaN; -0 as +0, the sum
    // of +0 and -0), so the f16 -> f32 -> f16 path of every pattern is the identity. Exact
    // runtimes only: an approximate one (cuBLAS) owes only the tolerance, which lets it write
    // -0, or flush a subnormal.
    std::size_t not_identity = 0;
    for (std::size_t x = 0; x < kPatterns; ++x) {
      const std::uint16_t got = load_u16(actual, x * scales.size());
      const auto bits = static_cast<std::uint16_t>(x);
      const std::uint16_t want = bits == 0x8000 ? std::uint16_t{0} : bits;
      if (is_f16_nan(bits) ? !is_f16_nan(got) : got != want) ++not_identity;
    }
    if (!t.approximate) CHECK(not_identity == 0);
  }
  for (const std::size_t rows : {std::size_t{5}, std::size_t{9}}) {
    INFO("every pattern as a weight, rows " << rows);
    // Weight line o: the pattern o, a scrambled pattern and o with its sign flipped.
    std::vector<std::uint16_t> weights(kPatterns * 3);
    for (std::size_t o = 0; o < kPatterns; ++o) {
      weights[3 * o] = static_cast<std::uint16_t>(o);
      weights[3 * o + 1] = static_cast<std::uint16_t>((o * 40503 + 1) & 0xFFFF);
      weights[3 * o + 2] = static_cast<std::uint16_t>(o ^ 0x8000);
    }
    // Rows: picks the first weight alone, sums all three, and mixes scales, extremes, subnormal
    // and infinite inputs.
    const std::vector<std::uint16_t> lines = {
        0x3C00, 0x0000, 0x0000,  // 1, 0, 0
        0x3C00, 0x3C00, 0x3C00,  // 1, 1, 1
        0x3800, 0xC200, 0x1419,  // 0.5, -3, ~0.001
        0x7BFF, 0x0001, 0x8000,  // 65504, 2^-24, -0
        0x0200, 0x7C00, 0x3C01,  // a subnormal, inf, 1 + 2^-10
        0xBC00, 0x0000, 0x0000,  // -1, 0, 0
        0x4000, 0x3555, 0xB400,  // 2, ~1/3, -0.25
        0x0000, 0x0000, 0x0000,  // zeros
        0x3A00, 0xFBFF, 0x03FF,  // 0.75, -65504, the largest subnormal
    };
    const std::vector<std::uint16_t> used(lines.begin(),
                                          lines.begin() + static_cast<std::ptrdiff_t>(3 * rows));
    const auto input = raw_f16(used);
    const auto weight = raw_f16(weights);
    const auto actual = run_dense(*runtime, *stream, input, weight, rows, 3, kPatterns);
    REQUIRE(actual.size() == rows * kPatterns * 2);
    CHECK(wrong_outputs(actual, input, weight, rows, 3, kPatterns) == 0);
    // Row 0 (1, 0, 0) gives every pattern back, but where 0 * inf or 0 * NaN in the other two
    // weights makes the sum NaN: a finite second and third weight leave the first alone. Exact
    // runtimes only, as above.
    std::size_t not_identity = 0;
    std::size_t checked = 0;
    for (std::size_t o = 0; o < kPatterns; ++o) {
      const auto finite = [](std::uint16_t b) { return (b & 0x7C00) != 0x7C00; };
      if (!finite(weights[3 * o + 1]) || !finite(weights[3 * o + 2])) continue;
      const std::uint16_t got = load_u16(actual, o);
      const std::uint16_t bits = weights[3 * o];
      // -0 * 1 + 0 * w + 0 * w' starts from +0: the sum of +0 and -0 is +0.
      const std::uint16_t want = bits == 0x8000 ? std::uint16_t{0} : bits;
      if (is_f16_nan(bits) ? !is_f16_nan(got) : got != want) ++not_identity;
      ++checked;
    }
    CHECK(checked > 60000);
    if (!t.approximate) CHECK(not_identity == 0);
  }
}

TEST_CASE("packed and participant-loop batches bit-equal single-participant runs and the analytic values",
          "[conformance][dense_linear][mixed][counters]") {
  VTRACE_CONFORMANCE_OPEN(runtime, "device.conformance.0");
  auto stream = stream_of(*runtime);
  // Rows (x, y) with x = k/8 for k in -32..32 and y a permutation of the same grid.
  std::vector<float> inputs;
  for (int k = -32; k <= 32; ++k) {
    inputs.push_back(static_cast<float>(k) / 8.0f);
    inputs.push_back(static_cast<float>(((k + 32) * 7) % 65 - 32) / 8.0f);
  }
  const std::size_t rows = inputs.size() / 2;
  const auto weight_bytes = f16_bytes({2.0f, 1.0f, -1.0f, 3.0f});

  // Analytic: f16(2x + y), f16(-x + 3y), products and sums in f32 in the kernel's order (k = 2:
  // every runtime's order is the reference's).
  std::vector<std::uint8_t> analytic;
  for (std::size_t r = 0; r < rows; ++r) {
    const float x = f16_to_f32(f32_to_f16(inputs[2 * r]));
    const float y = f16_to_f32(f32_to_f16(inputs[2 * r + 1]));
    const float o0 = (0.0f + x * 2.0f) + y * 1.0f;
    const float o1 = (0.0f + x * -1.0f) + y * 3.0f;
    const auto bytes = f16_bytes({o0, o1});
    analytic.insert(analytic.end(), bytes.begin(), bytes.end());
  }

  // Single-participant runs, one row each.
  std::vector<std::uint8_t> single;
  for (std::size_t r = 0; r < rows; ++r) {
    const auto out = run_dense(*runtime, *stream, f16_bytes({inputs[2 * r], inputs[2 * r + 1]}),
                               weight_bytes, 1, 2, 2);
    single.insert(single.end(), out.begin(), out.end());
  }
  CHECK(single == analytic);

  auto input_buffer = allocate(*runtime, rows * 4, ElementType::kF16);
  auto weight_buffer = allocate(*runtime, 8, ElementType::kF16);
  fill(*runtime, *stream, *input_buffer, f16_bytes(inputs));
  fill(*runtime, *stream, *weight_buffer, weight_bytes);
  for (std::uint32_t participants : {2u, 3u, 4u}) {
    // Split the rows into `participants` consecutive, unequal slices.
    std::vector<std::uint64_t> starts;
    for (std::uint32_t p = 0; p < participants; ++p) starts.push_back(rows * p / participants + p);
    starts.push_back(rows);
    for (bool packed : {true, false}) {
      INFO(participants << " participants, " << (packed ? "packed" : "participant loop"));
      auto output_buffer = allocate(*runtime, rows * 4, ElementType::kF16);
      std::vector<DenseLinearLaunch> launches;
      if (packed) {
        launches.push_back({{input_buffer.get(), 0, rows * 4}, {weight_buffer.get(), 0, 8},
                            {output_buffer.get(), 0, rows * 4}, rows, 2, 2});
      } else {
        for (std::uint32_t p = 0; p < participants; ++p) {
          const std::uint64_t begin = starts[p];
          const std::uint64_t count = starts[p + 1] - begin;
          launches.push_back({{input_buffer.get(), begin * 4, count * 4},
                              {weight_buffer.get(), 0, 8},
                              {output_buffer.get(), begin * 4, count * 4}, count, 2, 2});
        }
      }
      const auto before = counters(*runtime);
      auto command = runtime->encode_dense_linear({launches, participants, rows});
      REQUIRE(command.has_value());
      CommandBatch batch;
      batch.require_logical_execution_path_attribution();
      batch.push_operation(0, EncodedOperation{{}, {}, std::move(*command), {}});
      auto fence = runtime->submit(*stream, std::move(batch));
      REQUIRE(fence.has_value());
      REQUIRE(runtime->wait_fence(**fence).has_value());
      const auto after = counters(*runtime);
      CHECK(after.submissions == before.submissions + 1);
      CHECK(after.commands == before.commands + 1);
      // A packed launch counts 1, a participant loop one per participant.
      CHECK(after.dense_linear_launches == before.dense_linear_launches + (packed ? 1 : participants));
      const auto attribution = runtime->submission_attribution(**fence);
      REQUIRE(attribution.has_value());
      REQUIRE(attribution->commands().size() == 1);
      const auto& row = attribution->commands()[0];
      CHECK(row.batching_form() == (packed ? BatchingForm::kPacked : BatchingForm::kParticipantLoop));
      CHECK(row.participant_count() == participants);
      CHECK(row.participant_start() == 0);
      CHECK(row.token_count() == rows);
      CHECK(row.compute_dispatch_count() == launches.size());
      CHECK(row.transfer_command_count() == 0);
      CHECK(row.node_index() == 0u);
      CHECK(contents(*runtime, *stream, *output_buffer) == single);
    }
  }
}

TEST_CASE("randomized differential: shapes, data classes, batching forms, alignments, offsets and aliasing",
          "[conformance][dense_linear][differential]") {
  VTRACE_CONFORMANCE_OPEN(runtime, "device.conformance.0");
  const RuntimeTraits& t = traits();
  // A bit-exact runtime other than the reference is compared with a reference runtime run on the
  // same layout; the reference itself with its kernel (reference::dense_linear_f16).
  std::unique_ptr<DeviceRuntime> reference;
  if (t.bit_exact && runtime_name() != "reference") {
    reference = open_named("reference", "device.conformance.oracle.0");
  }
  for (const Case& c : differential_cases()) {
    INFO(c);
    const Prepared p = prepare(c);
    const Buffers actual = execute(*runtime, c, p);
    if (t.approximate) {
      check_close(actual, expected_with(t.model, c, p), c, p);
    } else {
      check_same(actual, expected_with(t.model, c, p), "the runtime's model");
    }
    if (t.bit_exact) {
      check_same(actual, expected_with(&reference::dense_linear_f16, c, p), "the reference kernel");
      if (reference) check_same(actual, execute(*reference, c, p), "the reference runtime");
    }
  }
  CHECK(counters(*runtime).live_allocations == 0);
}

TEST_CASE("long reductions: bit-exact runtimes equal the reference, cpu-splitk differs but equals its split-k order",
          "[conformance][dense_linear][splitk]") {
  VTRACE_CONFORMANCE_OPEN(runtime, "device.conformance.0");
  const RuntimeTraits& t = traits();
  auto stream = stream_of(*runtime);
  struct Shape {
    std::size_t rows, in, out;
  };
  for (const Shape s : {Shape{8, 1024, 256}, Shape{5, 1500, 129}, Shape{8, 4096, 256},
                        Shape{4, 16384, 128}}) {
    INFO("rows " << s.rows << " in " << s.in << " out " << s.out);
    // Typical data: independent standard normal inputs and weights, so that the running sums
    // are large against each product and the two summation orders round differently somewhere.
    std::mt19937 rng(static_cast<std::uint32_t>(0xC0FFEE + s.in));
    const auto gaussian = [&rng](std::size_t count) {
      std::vector<std::uint8_t> bytes;
      for (std::size_t e = 0; e < count; ++e) {
        const std::uint16_t bits = random_f16(rng, Data::kGaussian, 1.0f);
        bytes.push_back(static_cast<std::uint8_t>(bits & 0xFF));
        bytes.push_back(static_cast<std::uint8_t>(bits >> 8));
      }
      return bytes;
    };
    const auto input = gaussian(s.rows * s.in);
    const auto weight = gaussian(s.out * s.in);
    const auto actual = run_dense(*runtime, *stream, input, weight, s.rows, s.in, s.out);
    const auto reference = reference_model(input, weight, s.rows, s.in, s.out);
    const auto splitk = splitk_model(input, weight, s.rows, s.in, s.out);
    // The data is typical enough that the two orders differ somewhere (else this proves nothing).
    const std::size_t orders_differ = differing_elements(splitk, reference);
    INFO("split-k and reference orders differ in " << orders_differ << " outputs");
    CHECK(orders_differ > 0);
    const std::size_t from_reference = differing_elements(actual, reference);
    INFO("the runtime differs from the reference in " << from_reference << " of " << s.rows * s.out);
    if (t.bit_exact) {
      CHECK(from_reference == 0);
    } else if (!t.approximate) {
      CHECK(from_reference > 0);
      CHECK(differing_elements(actual, splitk) == 0);
    }
    CHECK(wrong_outputs(actual, input, weight, s.rows, s.in, s.out) == 0);
  }
}

TEST_CASE(
    "short reductions (k <= 256) equal the reference on every runtime (an approximate one within "
    "its tolerance)",
    "[conformance][dense_linear][splitk]") {
  VTRACE_CONFORMANCE_OPEN(runtime, "device.conformance.0");
  auto stream = stream_of(*runtime);
  for (const std::size_t in : {1u, 7u, 64u, 129u, 255u, 256u}) {
    INFO("in " << in);
    Case c;
    c.seed = static_cast<std::uint32_t>(0xABC + in);
    c.rows = 5;
    c.in = in;
    c.out = 19;
    const Prepared p = prepare(c);
    const std::vector<std::uint8_t> input(p.input.begin(), p.input.begin() + static_cast<std::ptrdiff_t>(c.rows * in * 2));
    const std::vector<std::uint8_t> weight(p.weight.begin(), p.weight.begin() + static_cast<std::ptrdiff_t>(c.out * in * 2));
    const auto actual = run_dense(*runtime, *stream, input, weight, c.rows, in, c.out);
    // Exact for every runtime but an approximate one (cuda-cublas: wrong_elements' tolerance).
    const auto reference = reference_model(input, weight, c.rows, in, c.out);
    if (traits().approximate) {
      CHECK(wrong_elements(actual, reference, order_allowance(input, weight, c.rows, in, c.out)) ==
            0);
    } else {
      CHECK(wrong_elements(actual, reference) == 0);
    }
    CHECK(differing_elements(splitk_model(input, weight, c.rows, in, c.out),
                             reference_model(input, weight, c.rows, in, c.out)) == 0);
  }
}
