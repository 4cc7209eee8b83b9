// The spec's 2x2 example (spec 10 L1 fixture, 11.3): static weights from a real safetensors file,
// one upload, one dense linear, one readback whose value is known analytically.
#include <fmt/format.h>

#include <array>

#include "vtrace/runtime/f16.h"
#include "vtrace/runtime/immediate.h"
#include "vtrace/runtime/safetensors.h"
#include "vtrace/runtime/static_weights.h"
#include "vtrace/workloads/workload.h"
#include "workload_support.h"

namespace vtrace::workloads {

namespace rt = vtrace::runtime;
using detail::fail;

WorkloadResult<WorkloadReport> run_tiny(const WorkloadSpec& /*spec*/, rt::DeviceRuntime& runtime) {
  detail::Observations observed("tiny");
  constexpr std::array<float, 4> kWeight = {2.0f, 1.0f, -1.0f, 3.0f};
  constexpr std::array<float, 2> kInput = {1.5f, -2.0f};
  constexpr std::array<float, 2> kExpected = {1.0f, -7.5f};

  auto dir = detail::TempDir::create("vtrace-tiny");
  if (!dir) return std::unexpected(dir.error());
  const auto model = dir->path() / "model.safetensors";
  if (auto written = rt::write_safetensors(
          model, {{"linear.weight", rt::ElementType::kF16, {2, 2}, rt::to_f16_bytes(kWeight)}});
      !written) {
    return std::unexpected(fail(written.error().message));
  }
  auto file = rt::SafetensorsFile::open(model);
  if (!file) return std::unexpected(fail(file.error().message));
  const std::array<std::uint64_t, 2> shape = {2, 2};
  auto tensor = file->f16_tensor("linear.weight", shape);
  if (!tensor) return std::unexpected(fail(tensor.error().message));

  const auto before = runtime.counter_snapshot();
  auto stream = runtime.create_stream();
  if (!stream) return std::unexpected(fail("create_stream", stream.error()));
  auto weight = rt::immediate::allocate_buffer(
      runtime, "weight.reference.linear", rt::ElementType::kF16, 4, rt::BufferUsage::kWeights, 16);
  if (!weight) return std::unexpected(fail("allocate_buffer(weight)", weight.error()));
  auto input = rt::immediate::allocate_buffer(runtime, "resource.tiny.input", rt::ElementType::kF16,
                                              2, rt::BufferUsage::kActivations, 16);
  if (!input) return std::unexpected(fail("allocate_buffer(input)", input.error()));
  auto output = rt::immediate::allocate_buffer(
      runtime, "resource.tiny.output", rt::ElementType::kF16, 2, rt::BufferUsage::kActivations, 16);
  if (!output) return std::unexpected(fail("allocate_buffer(output)", output.error()));

  auto receipt = rt::initialize_static_buffer(runtime, **stream, **weight, tensor->bytes,
                                              rt::ElementType::kF16);
  if (!receipt) return std::unexpected(fail("initialize_static_buffer", receipt.error()));
  observed.submitted();
  if (receipt->uploaded_bytes != 8) {
    return std::unexpected(
        fail(fmt::format("static upload reported {} bytes, 8 expected", receipt->uploaded_bytes)));
  }

  const auto input_bytes = rt::to_f16_bytes(kInput);
  auto layout = *rt::HostTransferLayout::create(rt::ElementType::kF16, 2);
  auto upload = runtime.encode_upload(input_bytes, layout, **input, 0);
  if (!upload) return std::unexpected(fail("encode_upload(input)", upload.error()));
  const rt::DenseLinearLaunch launch{{input->get(), 0, 4}, {weight->get(), 0, 8},
                                     {output->get(), 0, 4}, 1, 2, 2};
  auto dense = runtime.encode_dense_linear({std::span(&launch, 1), 1, 1});
  if (!dense) return std::unexpected(fail("encode_dense_linear", dense.error()));

  rt::CommandBatch batch;
  batch.push_dynamic_binding(std::move(*upload));
  batch.push_compute(std::move(*dense));
  // The fence lives to the end, as the recorded trace has it (FenceReleased after the readback).
  auto fence = rt::immediate::submit_and_wait(runtime, **stream, std::move(batch));
  if (!fence) return std::unexpected(fail("submit_and_wait", fence.error()));
  observed.submitted();

  auto bytes = runtime.readback(**stream, **output, *rt::CopyRegion::create(0, 0, 4), layout);
  if (!bytes) return std::unexpected(fail("readback(output)", bytes.error()));
  observed.readback(*bytes);
  const auto values = rt::from_f16_bytes(*bytes);
  if (values.size() != 2 || values[0] != kExpected[0] || values[1] != kExpected[1]) {
    return std::unexpected(fail(fmt::format("tiny output is [{}] but [1, -7.5] was expected",
                                            fmt::join(values, ", "))));
  }

  const auto after = runtime.counter_snapshot();
  if (before && after) {
    // Two submits (static init: zero + upload; then upload + dense), 8 + 4 uploaded bytes.
    if (auto wrong = detail::check_counter_delta(*before, *after, {3, 3, 2, 4, 12, 1, 4})) {
      return std::unexpected(fail("tiny counters: " + *wrong));
    }
    observed.counters_checked();
  }
  return observed.finish(runtime);
}

}  // namespace vtrace::workloads
