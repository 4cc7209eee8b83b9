// The decode workload (decode_workload.h): static weights once, then one batch per step.
#include <fmt/format.h>

#include <array>
#include <cmath>
#include <limits>

#include "vtrace/runtime/f16.h"
#include "vtrace/runtime/immediate.h"
#include "vtrace/runtime/safetensors.h"
#include "vtrace/runtime/static_weights.h"
#include "vtrace/workloads/workload.h"
#include "workload_support.h"

namespace vtrace::workloads {

namespace rt = vtrace::runtime;
using detail::fail;

namespace {

struct Linear {
  std::string name;
  std::uint64_t in = 0;
  std::uint64_t out = 0;
  rt::BufferPtr weight;
};

std::uint64_t f16_bytes(std::uint64_t elements) { return elements * 2; }

// The weight tensors of the shape, in upload order: per layer up then down, then the head.
std::vector<Linear> weight_tensors(const DecodeOptions& o) {
  std::vector<Linear> linears;
  for (std::uint32_t layer = 0; layer < o.layers; ++layer) {
    linears.push_back({fmt::format("layers.{}.up.weight", layer), o.hidden, o.ffn, nullptr});
    linears.push_back({fmt::format("layers.{}.down.weight", layer), o.ffn, o.hidden, nullptr});
  }
  linears.push_back({"head.weight", o.hidden, o.hidden, nullptr});
  return linears;
}

// The tensor of `linear` in `file`: F16 of shape [out][in].
WorkloadResult<rt::TensorView> weight_of(const rt::SafetensorsFile& file, const Linear& linear) {
  const std::array<std::uint64_t, 2> shape = {linear.out, linear.in};
  auto tensor = file.f16_tensor(linear.name, shape);
  if (!tensor) return std::unexpected(fail("decode weights: " + tensor.error().message));
  return *tensor;
}

WorkloadResult<rt::SafetensorsFile> open_weights(const std::filesystem::path& path) {
  auto file = rt::SafetensorsFile::open(path);
  if (!file) return std::unexpected(fail("decode weights: " + file.error().message));
  return std::move(*file);
}

}  // namespace

WorkloadResult<void> check_decode_shape(const DecodeOptions& o) {
  auto in_range = [](std::uint32_t v, std::uint32_t lo, std::uint32_t hi) {
    return v >= lo && v <= hi;
  };
  if (!in_range(o.hidden, 1, 65536) || !in_range(o.ffn, 1, 65536)) {
    return std::unexpected(fail(fmt::format(
        "decode takes hidden and ffn from 1 to 65536, not hidden {} and ffn {}", o.hidden, o.ffn)));
  }
  if (!in_range(o.layers, 1, 64)) {
    return std::unexpected(fail(fmt::format("decode takes 1 to 64 layers, not {}", o.layers)));
  }
  if (!in_range(o.participants, 1, 8)) {
    return std::unexpected(
        fail(fmt::format("decode takes 1 to 8 participants, not {}", o.participants)));
  }
  if (o.steps == 0) return std::unexpected(fail("decode takes at least 1 step, not 0"));
  if (o.nan_at_step && *o.nan_at_step >= o.steps) {
    return std::unexpected(
        fail(fmt::format("--nan-at-step {} names no step of a {}-step run (steps are 0 to {})",
                         *o.nan_at_step, o.steps, o.steps - 1)));
  }
  return {};
}

WorkloadResult<void> check_decode_weights(const DecodeOptions& o) {
  auto file = open_weights(o.weights);
  if (!file) return std::unexpected(file.error());
  for (const auto& linear : weight_tensors(o)) {
    if (auto tensor = weight_of(*file, linear); !tensor) return std::unexpected(tensor.error());
  }
  return {};
}

namespace {

// The seeded weights file: uniform in +-sqrt(3/in) keeps unit variance through each linear.
WorkloadResult<void> generate_weights(const std::filesystem::path& path, const DecodeOptions& o,
                                      std::uint64_t seed) {
  detail::SplitMix64 rng(seed ^ 0x5745494748545321ull);
  std::vector<rt::TensorToWrite> tensors;
  for (const auto& linear : weight_tensors(o)) {
    std::vector<float> values(linear.out * linear.in);
    const float amplitude = std::sqrt(3.0f / static_cast<float>(linear.in));
    for (auto& v : values) v = rng.symmetric(amplitude);
    tensors.push_back(
        {linear.name, rt::ElementType::kF16, {linear.out, linear.in}, rt::to_f16_bytes(values)});
  }
  if (auto written = rt::write_safetensors(path, tensors); !written) {
    return std::unexpected(fail(written.error().message));
  }
  return {};
}

}  // namespace

std::uint64_t decode_device_bytes(const DecodeOptions& o) {
  std::uint64_t tokens = 0;
  for (std::uint32_t p = 0; p < o.participants; ++p) tokens += 1 + p % 2;
  const std::uint64_t hidden = o.hidden;
  const std::uint64_t ffn = o.ffn;
  const std::uint64_t weights = o.layers * f16_bytes(2 * hidden * ffn) + f16_bytes(hidden * hidden);
  const std::uint64_t activations = 3 * f16_bytes(tokens * hidden) + f16_bytes(tokens * ffn);
  return weights + activations;
}

WorkloadResult<void> check_decode_fits(const DecodeOptions& o, std::uint64_t device_memory_bytes) {
  const std::uint64_t need = decode_device_bytes(o);
  if (need <= device_memory_bytes) return {};
  const auto mib = [](std::uint64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); };
  return std::unexpected(fail(fmt::format(
      "decode with hidden {} and ffn {} over {} layers needs {:.2f} MiB of device memory but the "
      "device has {:.2f} MiB: pass --device-memory {} or more",
      o.hidden, o.ffn, o.layers, mib(need), mib(device_memory_bytes), need)));
}

WorkloadResult<WorkloadReport> run_decode(const WorkloadSpec& spec, rt::DeviceRuntime& runtime,
                                          const StopRequested& stop) {
  const DecodeOptions& o = spec.decode;
  if (auto valid = check_decode_shape(o); !valid) return std::unexpected(valid.error());
  // Before any weight is generated: a shape the device cannot hold fails now, in one sentence.
  if (auto fits = check_decode_fits(o, runtime.descriptor().total_memory_bytes); !fits) {
    return std::unexpected(fits.error());
  }
  detail::Observations observed("decode");
  // Stopping (before the weights, between weight uploads or steps): every submit so far was
  // waited for, and the handles are released as this function returns.
  const auto stopped = [&] {
    auto report = observed.finish(runtime);
    report.stopped = true;
    return report;
  };
  if (stop()) return stopped();

  std::optional<detail::TempDir> dir;
  std::filesystem::path weights_path = o.weights;
  if (weights_path.empty()) {
    auto made = detail::TempDir::create("vtrace-decode");
    if (!made) return std::unexpected(made.error());
    dir.emplace(std::move(*made));
    weights_path = dir->path() / "model.safetensors";
    if (auto generated = generate_weights(weights_path, o, spec.seed); !generated) {
      return std::unexpected(generated.error());
    }
  }
  auto file = open_weights(weights_path);
  if (!file) return std::unexpected(file.error());

  // Participant p holds 1 + p % 2 tokens; its rows start at token_start[p].
  std::vector<std::uint64_t> token_start;
  std::vector<std::uint64_t> token_rows;
  std::uint64_t tokens = 0;
  for (std::uint32_t p = 0; p < o.participants; ++p) {
    token_start.push_back(tokens);
    token_rows.push_back(1 + p % 2);
    tokens += 1 + p % 2;
  }
  const std::uint64_t hidden = o.hidden;
  const std::uint64_t ffn = o.ffn;

  auto stream = runtime.create_stream();
  if (!stream) return std::unexpected(fail("create_stream", stream.error()));

  // Static weights: allocate, then zero-then-upload each through the portable path.
  std::vector<Linear> linears = weight_tensors(o);
  for (auto& linear : linears) {
    if (stop()) return stopped();
    auto tensor = weight_of(*file, linear);
    if (!tensor) return std::unexpected(tensor.error());
    auto buffer = rt::immediate::allocate_buffer(runtime, "weight.decode." + linear.name,
                                                 rt::ElementType::kF16, linear.out * linear.in,
                                                 rt::BufferUsage::kWeights, 64);
    if (!buffer) {
      return std::unexpected(fail("allocate_buffer(" + linear.name + ")", buffer.error()));
    }
    auto receipt = rt::initialize_static_buffer(runtime, **stream, **buffer, tensor->bytes,
                                                rt::ElementType::kF16);
    if (!receipt) {
      return std::unexpected(fail("initialize_static_buffer(" + linear.name + ")", receipt.error()));
    }
    observed.submitted();
    linear.weight = std::move(*buffer);
  }

  // Activations ping-pong between x and y; the ffn intermediate lives in h.
  auto activation = [&](std::string_view name, std::uint64_t elements,
                        rt::BufferUsage usage) -> WorkloadResult<rt::BufferPtr> {
    auto buffer = rt::immediate::allocate_buffer(runtime, fmt::format("resource.decode.{}", name),
                                                 rt::ElementType::kF16, elements, usage, 64);
    if (!buffer) {
      return std::unexpected(fail(fmt::format("allocate_buffer({})", name), buffer.error()));
    }
    return std::move(*buffer);
  };
  auto x = activation("x", tokens * hidden, rt::BufferUsage::kActivations);
  if (!x) return std::unexpected(x.error());
  auto y = activation("y", tokens * hidden, rt::BufferUsage::kActivations);
  if (!y) return std::unexpected(y.error());
  auto h = activation("h", tokens * ffn, rt::BufferUsage::kScratch);
  if (!h) return std::unexpected(h.error());
  auto logits = activation("logits", tokens * hidden, rt::BufferUsage::kActivations);
  if (!logits) return std::unexpected(logits.error());

  detail::SplitMix64 rng(spec.seed ^ 0x4143544956415445ull);
  const auto activation_layout = *rt::HostTransferLayout::create(rt::ElementType::kF16,
                                                                 tokens * hidden);
  for (std::uint32_t step = 0; step < o.steps; ++step) {
    if (stop()) return stopped();
    const bool packed = o.participants == 1 || step % 2 == 0;
    const bool with_logical_work = step % 2 == 0;
    const bool with_attribution = step % 3 == 0;
    const rt::BatchingForm form = o.participants == 1 ? rt::BatchingForm::kScalar
                                  : packed           ? rt::BatchingForm::kPacked
                                                     : rt::BatchingForm::kParticipantLoop;
    const auto before = runtime.counter_snapshot();

    std::vector<float> activations(tokens * hidden);
    for (auto& v : activations) v = rng.symmetric(1.0f);
    const bool injected = o.nan_at_step == step;
    if (injected) activations[0] = std::numeric_limits<float>::quiet_NaN();
    const auto activation_bytes = rt::to_f16_bytes(activations);
    auto upload = runtime.encode_upload(activation_bytes, activation_layout, **x, 0);
    if (!upload) {
      return std::unexpected(fail(fmt::format("step {}: encode_upload(x)", step), upload.error()));
    }

    rt::CommandBatch batch;
    if (with_attribution) batch.require_logical_execution_path_attribution();
    if (with_logical_work) {
      auto work = rt::LogicalWork::create(form, o.participants, tokens);
      if (!work) return std::unexpected(fail(work.error().display()));
      batch.push_node_initialization(0, *work, std::move(*upload));
    } else {
      batch.push_dynamic_binding(std::move(*upload));
    }

    std::uint32_t node = 1;
    std::uint64_t launches_per_linear = packed ? 1 : o.participants;
    auto push_linear = [&](const Linear& linear, const rt::Buffer& in,
                           const rt::Buffer& out) -> WorkloadResult<void> {
      std::vector<rt::DenseLinearLaunch> launches;
      const rt::BufferRegionRef weight{linear.weight.get(), 0, f16_bytes(linear.out * linear.in)};
      if (packed) {
        launches.push_back({{&in, 0, f16_bytes(tokens * linear.in)},
                            weight,
                            {&out, 0, f16_bytes(tokens * linear.out)},
                            tokens,
                            linear.in,
                            linear.out});
      } else {
        for (std::uint32_t p = 0; p < o.participants; ++p) {
          launches.push_back(
              {{&in, f16_bytes(token_start[p] * linear.in), f16_bytes(token_rows[p] * linear.in)},
               weight,
               {&out, f16_bytes(token_start[p] * linear.out),
                f16_bytes(token_rows[p] * linear.out)},
               token_rows[p],
               linear.in,
               linear.out});
        }
      }
      auto command = runtime.encode_dense_linear({launches, o.participants, tokens});
      if (!command) {
        return std::unexpected(
            fail(fmt::format("step {}: encode_dense_linear({})", step, linear.name),
                 command.error()));
      }
      if (with_attribution) {
        rt::EncodedOperation op;
        op.compute = std::move(*command);
        batch.push_operation(node, std::move(op));
      } else {
        batch.push_compute(std::move(*command));
      }
      ++node;
      return {};
    };
    const rt::Buffer* current = x->get();
    const rt::Buffer* other = y->get();
    for (std::uint32_t layer = 0; layer < o.layers; ++layer) {
      if (auto pushed = push_linear(linears[2 * layer], *current, **h); !pushed) {
        return std::unexpected(pushed.error());
      }
      if (auto pushed = push_linear(linears[2 * layer + 1], **h, *other); !pushed) {
        return std::unexpected(pushed.error());
      }
      std::swap(current, other);
    }
    if (auto pushed = push_linear(linears.back(), *current, **logits); !pushed) {
      return std::unexpected(pushed.error());
    }

    const std::uint64_t entries = batch.size();
    auto fence = rt::immediate::submit_and_wait(runtime, **stream, std::move(batch));
    if (!fence) {
      return std::unexpected(fail(fmt::format("step {}: submit_and_wait", step), fence.error()));
    }
    observed.submitted();
    if (with_attribution) {
      // A runtime may not offer attribution (nullopt); one that does gives a row per entry.
      if (auto attribution = runtime.submission_attribution(**fence);
          attribution && attribution->commands().size() != entries) {
        return std::unexpected(fail(fmt::format("step {}: attribution has {} rows for {} entries",
                                                step, attribution->commands().size(), entries)));
      }
    }

    const std::uint64_t logit_bytes = f16_bytes(tokens * hidden);
    auto bytes = runtime.readback(**stream, **logits, *rt::CopyRegion::create(0, 0, logit_bytes),
                                  activation_layout);
    if (!bytes) {
      return std::unexpected(fail(fmt::format("step {}: readback(logits)", step), bytes.error()));
    }
    observed.readback(*bytes);
    for (float v : rt::from_f16_bytes(*bytes)) {
      if (!std::isfinite(v) && !injected) {
        return std::unexpected(fail(fmt::format("step {}: logits hold a non-finite value", step)));
      }
    }

    const auto after = runtime.counter_snapshot();
    if (before && after) {
      const detail::CounterDelta expected{0, 0, 1, entries, f16_bytes(tokens * hidden),
                                          launches_per_linear * linears.size(), logit_bytes};
      if (auto wrong = detail::check_counter_delta(*before, *after, expected)) {
        return std::unexpected(fail(fmt::format("step {}: counters: {}", step, *wrong)));
      }
      observed.counters_checked();
    }
  }
  return observed.finish(runtime);
}

}  // namespace vtrace::workloads
