// tiny_product: what a product embedding vtrace looks like. It opens its runtime by name through
// vtrace::recorder::open_runtime (so `VTRACE_CAPTURE=run.vtrace tiny_product` records it without a
// code change), runs a three-layer f16 MLP on two rows with the immediate operations
// (vtrace/runtime/immediate.h), mixed with raw DeviceRuntime calls, and prints a checksum of its
// output. The same runtime and inputs give the same checksum on every run, captured or not.
//
// Usage: tiny_product [RUNTIME]   (default: reference; `vtrace list-runtimes` names the others)
// Exit codes: 0 done, 1 a runtime call failed, 3 the runtime cannot be opened here.
#include <array>
#include <cstdint>
#include <cstdio>
#include <expected>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "vtrace/recorder/open.h"
#include "vtrace/runtime/f16.h"
#include "vtrace/runtime/immediate.h"

namespace vr = vtrace::runtime;
namespace immediate = vtrace::runtime::immediate;

namespace {

constexpr std::uint64_t kRows = 2;
struct Layer {
  std::uint64_t in_features;
  std::uint64_t out_features;
};
constexpr std::array<Layer, 3> kLayers = {{{8, 16}, {16, 8}, {8, 4}}};
constexpr std::uint64_t kWidest = 16;  // the largest feature count, for the activation buffers

// Small exact values (multiples of 1/8), the same on every run.
std::vector<float> weights(const Layer& layer, std::uint64_t seed) {
  std::vector<float> values(layer.out_features * layer.in_features);
  for (std::uint64_t i = 0; i < values.size(); ++i) {
    values[i] = static_cast<float>(static_cast<int>((i * 7 + seed * 3) % 11) - 5) / 8.0f;
  }
  return values;
}

// FNV-1a over the output bytes.
std::uint64_t checksum(std::span<const std::uint8_t> bytes) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (std::uint8_t byte : bytes) hash = (hash ^ byte) * 0x100000001b3ull;
  return hash;
}

// The product's work: returns the checksum of the last layer's output, or the first error.
vr::Result<std::uint64_t> run(vr::DeviceRuntime& runtime) {
  auto stream = runtime.create_stream();  // a raw call: the immediate operations use it
  if (!stream) return std::unexpected(stream.error());

  std::vector<vr::BufferPtr> layer_weights;
  for (std::uint64_t l = 0; l < kLayers.size(); ++l) {
    auto weight = immediate::allocate_buffer(
        runtime, "weight.tiny_product.layer" + std::to_string(l), vr::ElementType::kF16,
        kLayers[l].out_features * kLayers[l].in_features, vr::BufferUsage::kWeights);
    if (!weight) return std::unexpected(weight.error());
    if (auto uploaded = immediate::upload(runtime, **stream, **weight,
                                          vr::to_f16_bytes(weights(kLayers[l], l)));
        !uploaded) {
      return std::unexpected(uploaded.error());
    }
    layer_weights.push_back(std::move(*weight));
  }

  // Activations ping-pong between two buffers wide enough for every layer; the last layer writes
  // an output buffer of its own size. dense_linear uses the first rows x features elements.
  auto a = immediate::allocate_buffer(runtime, "resource.tiny_product.a", vr::ElementType::kF16,
                                      kRows * kWidest, vr::BufferUsage::kActivations);
  if (!a) return std::unexpected(a.error());
  auto b = immediate::allocate_buffer(runtime, "resource.tiny_product.b", vr::ElementType::kF16,
                                      kRows * kWidest, vr::BufferUsage::kActivations);
  if (!b) return std::unexpected(b.error());
  auto output = immediate::allocate_buffer(
      runtime, "resource.tiny_product.output", vr::ElementType::kF16,
      kRows * kLayers.back().out_features, vr::BufferUsage::kActivations);
  if (!output) return std::unexpected(output.error());

  std::vector<float> input(kRows * kLayers.front().in_features);
  for (std::uint64_t i = 0; i < input.size(); ++i) {
    input[i] = static_cast<float>(static_cast<int>(i % 9) - 4) / 4.0f;
  }
  if (auto uploaded = immediate::upload(runtime, **stream, **a, vr::to_f16_bytes(input));
      !uploaded) {
    return std::unexpected(uploaded.error());
  }

  const vr::Buffer* current = a->get();
  const vr::Buffer* next = b->get();
  for (std::uint64_t l = 0; l < kLayers.size(); ++l) {
    const bool last = l + 1 == kLayers.size();
    const vr::Buffer& destination = last ? **output : *next;
    if (auto ran =
            immediate::dense_linear(runtime, **stream, *current, *layer_weights[l], destination,
                                    {kRows, kLayers[l].in_features, kLayers[l].out_features});
        !ran) {
      return std::unexpected(ran.error());
    }
    std::swap(current, next);
  }

  auto bytes = immediate::readback(runtime, **stream, **output);
  if (!bytes) return std::unexpected(bytes.error());
  const std::vector<float> values = vr::from_f16_bytes(*bytes);
  std::printf("output:");
  for (float value : values) std::printf(" %g", static_cast<double>(value));
  std::printf("\n");
  return checksum(*bytes);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string name = argc > 1 ? argv[1] : "reference";
  auto runtime = vtrace::recorder::open_runtime(name);
  if (!runtime) {
    std::fprintf(stderr, "tiny_product: cannot open runtime %s: %s\n", name.c_str(),
                 runtime.error().message().c_str());
    const auto kind = runtime.error().kind();
    return kind == vr::ErrorKind::kRuntimeUnavailable || kind == vr::ErrorKind::kUnknownRuntime ? 3
                                                                                                : 1;
  }
  auto sum = run(**runtime);
  if (!sum) {
    std::fprintf(stderr, "tiny_product: %s: %s\n",
                 std::string(vr::error_kind_name(sum.error().kind())).c_str(),
                 sum.error().message().c_str());
    return 1;
  }
  if (auto counters = (*runtime)->counter_snapshot()) {  // raw again: the runtime's own counters
    std::printf("submissions: %llu, dense linear launches: %llu\n",
                static_cast<unsigned long long>(counters->submissions),
                static_cast<unsigned long long>(counters->dense_linear_launches));
  }
  std::printf("tiny_product on %s: checksum %016llx\n", name.c_str(),
              static_cast<unsigned long long>(*sum));
  return 0;
}
