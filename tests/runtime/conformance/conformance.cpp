// The conformance suite's support: the runtime under test, its traits, the scalar models.
#include "conformance/conformance.h"

#include <cmath>
#include <cstdlib>
#include <limits>

#include "vtrace/runtime/f16.h"

#ifdef VTRACE_CONFORMANCE_CUDA_EMULATED
#include "cuda_emulator/cuda_emulator.h"
#endif

namespace vtrace::conformance {

namespace {

std::string known_runtimes() {
  std::string known;
  for (const auto& name : rt::default_registry().names()) {
    known += known.empty() ? "" : ", ";
    known += name;
  }
  return known;
}

// What conforming runtimes may differ in, per registry name. Add a runtime here when it is added
// to VTRACE_CONFORMANCE_RUNTIMES (tests/runtime/CMakeLists.txt).
constexpr RuntimeTraits kTraits[] = {
    {.name = "reference",
     .bit_exact = true,
     .model = reference_model,
     .fences_terminal_at_submit = true,
     .reference_messages = true},
    {.name = "cpu",
     .bit_exact = true,
     .model = reference_model,
     .fences_terminal_at_submit = false,
     .reference_messages = false},
    {.name = "cpu-splitk",
     .bit_exact = false,
     .model = splitk_model,
     .fences_terminal_at_submit = false,
     .reference_messages = false},
    {.name = "cuda",
     .bit_exact = true,
     .model = reference_model,
     .fences_terminal_at_submit = false,
     .runs_after_submit = true,
     .reference_messages = false},
    {.name = "cuda-cublas",
     .bit_exact = false,
     .model = reference_model,
     .fences_terminal_at_submit = false,
     .runs_after_submit = true,
     .reference_messages = false,
     .approximate = true},
};

float load_f32(std::span<const std::uint8_t> bytes, std::size_t element) {
  return rt::f16_to_f32(load_u16(bytes, element));
}

void store_result(std::vector<std::uint8_t>& output, std::size_t element, float acc) {
  const std::uint16_t bits = std::isnan(acc) ? std::uint16_t{0x7E00} : rt::f32_to_f16(acc);
  output[2 * element] = static_cast<std::uint8_t>(bits & 0xFF);
  output[2 * element + 1] = static_cast<std::uint8_t>(bits >> 8);
}

}  // namespace

std::vector<std::uint8_t> reference_model(std::span<const std::uint8_t> input,
                                          std::span<const std::uint8_t> weight, std::size_t rows,
                                          std::size_t in_features, std::size_t out_features) {
  std::vector<std::uint8_t> output(rows * out_features * 2);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t o = 0; o < out_features; ++o) {
      float acc = +0.0f;
      for (std::size_t k = 0; k < in_features; ++k) {
        const float product = load_f32(input, r * in_features + k) * load_f32(weight, o * in_features + k);
        acc = acc + product;
      }
      store_result(output, r * out_features + o, acc);
    }
  }
  return output;
}

std::vector<std::uint8_t> splitk_model(std::span<const std::uint8_t> input,
                                       std::span<const std::uint8_t> weight, std::size_t rows,
                                       std::size_t in_features, std::size_t out_features) {
  std::vector<std::uint8_t> output(rows * out_features * 2);
  std::vector<float> partials;
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t o = 0; o < out_features; ++o) {
      partials.clear();
      for (std::size_t begin = 0; begin < in_features; begin += kSplitKModelBlock) {
        const std::size_t end = std::min(begin + kSplitKModelBlock, in_features);
        float partial = +0.0f;
        for (std::size_t k = begin; k < end; ++k) {
          const float product =
              load_f32(input, r * in_features + k) * load_f32(weight, o * in_features + k);
          partial = partial + product;
        }
        partials.push_back(partial);
      }
      if (partials.empty()) partials.push_back(+0.0f);
      // Pairwise tree, level by level: q_i = p_2i + p_2i+1, an odd last one carried up.
      while (partials.size() > 1) {
        std::vector<float> next;
        for (std::size_t i = 0; i + 1 < partials.size(); i += 2) next.push_back(partials[i] + partials[i + 1]);
        if (partials.size() % 2 == 1) next.push_back(partials.back());
        partials = std::move(next);
      }
      store_result(output, r * out_features + o, partials.front());
    }
  }
  return output;
}

std::vector<float> order_allowance(std::span<const std::uint8_t> input,
                                   std::span<const std::uint8_t> weight, std::size_t rows,
                                   std::size_t in_features, std::size_t out_features) {
  std::vector<float> allowance(rows * out_features);
  const double per_order =
      2.0 * static_cast<double>(in_features > 0 ? in_features - 1 : 0) * 0x1p-24;
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t o = 0; o < out_features; ++o) {
      double magnitude = 0.0;
      for (std::size_t k = 0; k < in_features; ++k) {
        magnitude += std::fabs(static_cast<double>(load_f32(input, r * in_features + k)) *
                               static_cast<double>(load_f32(weight, o * in_features + k)));
      }
      // NaN (a NaN or 0 * inf product) and infinity both mean: compare exactly.
      allowance[r * out_features + o] = std::isfinite(magnitude)
                                            ? static_cast<float>(4.0 * per_order * magnitude)
                                            : std::numeric_limits<float>::infinity();
    }
  }
  return allowance;
}

std::size_t wrong_elements(std::span<const std::uint8_t> actual,
                           std::span<const std::uint8_t> expected,
                           std::span<const float> allowance) {
  const bool approximate = traits().approximate;
  const auto value = [](std::uint16_t bits) {
    const float v = rt::f16_to_f32(bits);
    return std::isinf(v) ? std::copysign(65536.0f, v) : v;
  };
  std::size_t wrong = actual.size() == expected.size() ? 0 : 1;
  const std::size_t elements = std::min(actual.size(), expected.size()) / 2;
  if (approximate) REQUIRE(allowance.size() == expected.size() / 2);
  for (std::size_t e = 0; e < elements; ++e) {
    const std::uint16_t a = load_u16(actual, e);
    const std::uint16_t x = load_u16(expected, e);
    if (a == x) continue;
    if (!approximate) {
      ++wrong;
      continue;
    }
    if (is_f16_nan(a) && is_f16_nan(x)) continue;
    if (is_f16_nan(a) || is_f16_nan(x) || std::isinf(allowance[e])) {
      ++wrong;
      continue;
    }
    const float va = value(a);
    const float vx = value(x);
    const float larger = std::max(std::fabs(va), std::fabs(vx));
    // One f16 ulp at `larger` (2^-24 below the normal range).
    const float ulp = larger < 0x1p-14f ? 0x1p-24f : std::ldexp(1.0f, std::ilogb(larger) - 10);
    if (std::fabs(va - vx) > allowance[e] + ulp + 0x1p-14f) ++wrong;
  }
  return wrong;
}

std::size_t wrong_outputs(std::span<const std::uint8_t> actual, std::span<const std::uint8_t> input,
                          std::span<const std::uint8_t> weight, std::size_t rows,
                          std::size_t in_features, std::size_t out_features) {
  const RuntimeTraits& t = traits();
  const auto expected = t.model(input, weight, rows, in_features, out_features);
  if (!t.approximate) return wrong_elements(actual, expected);
  return wrong_elements(actual, expected,
                        order_allowance(input, weight, rows, in_features, out_features));
}

void hold_emulated_streams() {
#ifdef VTRACE_CONFORMANCE_CUDA_EMULATED
  vtrace::testing::cuda_emulator::hold_all();
#endif
}

void release_emulated_streams() {
#ifdef VTRACE_CONFORMANCE_CUDA_EMULATED
  vtrace::testing::cuda_emulator::release_all();
#endif
}

std::string test_data_dir() {
  const char* dir = std::getenv("VTRACE_TEST_DATA_DIR");
  return dir != nullptr && *dir != '\0' ? std::string(dir) : std::string(VTRACE_TEST_DATA_DIR);
}

std::string runtime_name() {
  const char* name = std::getenv("VTRACE_CONFORMANCE_RUNTIME");
  if (name == nullptr || *name == '\0') {
    FAIL("VTRACE_CONFORMANCE_RUNTIME is not set: it must name the runtime under test, one of the "
         "registered runtimes ("
         << known_runtimes() << "); ctest sets it per instance");
  }
  return name;
}

const RuntimeTraits& traits() {
  const std::string name = runtime_name();
  for (const auto& entry : kTraits) {
    if (entry.name == name) return entry;
  }
  FAIL("the conformance suite has no traits for runtime `"
       << name << "`: add it to kTraits in tests/runtime/conformance/conformance.cpp");
  return kTraits[0];  // not reached: FAIL throws
}

std::unique_ptr<rt::DeviceRuntime> open_under_test(const std::string& device_id,
                                                   rt::RuntimeOpenOptions options) {
  const std::string name = runtime_name();
  if (!rt::default_registry().contains(name)) {
    FAIL("VTRACE_CONFORMANCE_RUNTIME names `" << name
                                              << "`, which is not a registered runtime (known: "
                                              << known_runtimes() << ")");
  }
  options.device_id = device_id;
  auto opened = rt::default_registry().open(name, options);
  if (!opened) {
    if (opened.error().kind() == rt::ErrorKind::kRuntimeUnavailable && !kCudaEmulated) {
      vtrace::testing::mark_skipped("runtime `" + name +
                                    "` is unavailable here: " + opened.error().message());
      return nullptr;
    }
    FAIL("opening runtime `" << name << "` failed: "
                             << rt::error_kind_name(opened.error().kind()) << ": "
                             << opened.error().message());
  }
  (void)traits();  // a runtime without traits fails here, before any check
  return std::move(*opened);
}

std::unique_ptr<rt::DeviceRuntime> open_named(std::string_view name, const std::string& device_id) {
  auto opened = rt::default_registry().open(name, {.device_id = device_id});
  if (!opened) {
    FAIL("opening runtime `" << name << "` failed: " << opened.error().message());
  }
  return std::move(*opened);
}

rt::CounterSnapshot counters(const rt::DeviceRuntime& runtime) {
  const auto snapshot = runtime.counter_snapshot();
  REQUIRE(snapshot.has_value());
  return *snapshot;
}

void check_error(const rt::RuntimeError& error, rt::ErrorKind kind,
                 std::string_view reference_message) {
  INFO("error: " << rt::error_kind_name(error.kind()) << ": " << error.message());
  CHECK(rt::error_kind_name(error.kind()) == rt::error_kind_name(kind));
  if (!reference_message.empty() && traits().reference_messages) {
    CHECK(error.message() == reference_message);
  }
}

rt::AllocationPermit admit(rt::DeviceRuntime& runtime, std::uint64_t size, rt::ElementType type,
                           const std::string& name) {
  auto request = rt::BufferRequest::create(*rt::ResourceId::create(name), size, 16,
                                           rt::BufferUsage::kActivations, type);
  REQUIRE(request.has_value());
  auto permit = runtime.admit(*request);
  REQUIRE(permit.has_value());
  return std::move(*permit);
}

Rig::Rig(const std::string& device_id) {
  runtime = open_under_test(device_id);
  if (!runtime) return;
  stream = stream_of(*runtime);
  target = rt::testing::allocate(*runtime, 16, rt::ElementType::kU8);
  rt::testing::fill(*runtime, *stream, *target, target_bytes);
  mark();
}

void Rig::mark() {
  before = counters(*runtime);
  stream_before = runtime->stream_state(*stream);
}

rt::CommandPtr Rig::upload_to_target(std::uint8_t seed) {
  auto upload = runtime->encode_upload(rt::testing::pattern(16, seed),
                                       layout(rt::ElementType::kU8, 16), *target, 0);
  REQUIRE(upload.has_value());
  return std::move(*upload);
}

void Rig::check_untouched() {
  CHECK(counters(*runtime) == before);
  CHECK(runtime->stream_state(*stream) == stream_before);
  CHECK(rt::testing::contents(*runtime, *stream, *target) == target_bytes);
  mark();  // that readback moved readback_bytes and made the stream Ready
}

void Rig::check_not_submitted(rt::CommandBatch batch, rt::ErrorKind kind,
                              std::string_view reference_message) {
  check_not_submitted_on(*stream, std::move(batch), kind, reference_message);
}

void Rig::check_not_submitted_on(rt::Stream& on, rt::CommandBatch batch, rt::ErrorKind kind,
                                 std::string_view reference_message) {
  auto result = runtime->submit(on, std::move(batch));
  REQUIRE_FALSE(result.has_value());
  check_error(result.error().error(), kind, reference_message);
  check_untouched();
}

rt::DenseLinearLaunch DenseBuffers::launch() const {
  return {{input.get(), 0, rows * in * 2}, {weight.get(), 0, out * in * 2},
          {output.get(), 0, rows * out * 2}, rows, in, out};
}

DenseBuffers dense_buffers(rt::DeviceRuntime& runtime, std::uint64_t rows, std::uint64_t in,
                           std::uint64_t out) {
  DenseBuffers buffers;
  buffers.input = rt::testing::allocate(runtime, rows * in * 2, rt::ElementType::kF16);
  buffers.weight = rt::testing::allocate(runtime, out * in * 2, rt::ElementType::kF16);
  buffers.output = rt::testing::allocate(runtime, rows * out * 2, rt::ElementType::kF16);
  buffers.rows = rows;
  buffers.in = in;
  buffers.out = out;
  return buffers;
}

rt::CommandPtr dense_command(rt::DeviceRuntime& runtime, const DenseBuffers& buffers) {
  const rt::DenseLinearLaunch launch = buffers.launch();
  auto command = runtime.encode_dense_linear({{&launch, 1}, 1, buffers.rows});
  REQUIRE(command.has_value());
  return std::move(*command);
}

std::uint16_t load_u16(std::span<const std::uint8_t> bytes, std::size_t element) {
  return static_cast<std::uint16_t>(bytes[2 * element] | (bytes[2 * element + 1] << 8));
}

bool is_f16_nan(std::uint16_t bits) { return (bits & 0x7C00) == 0x7C00 && (bits & 0x3FF) != 0; }

std::vector<std::uint8_t> from_hex(const std::string& hex) {
  std::vector<std::uint8_t> bytes;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    bytes.push_back(static_cast<std::uint8_t>(std::stoul(hex.substr(i, 2), nullptr, 16)));
  }
  return bytes;
}

std::vector<std::uint8_t> raw_f16(const std::vector<std::uint16_t>& values) {
  std::vector<std::uint8_t> bytes;
  for (auto v : values) {
    bytes.push_back(static_cast<std::uint8_t>(v & 0xFF));
    bytes.push_back(static_cast<std::uint8_t>(v >> 8));
  }
  return bytes;
}

}  // namespace vtrace::conformance
