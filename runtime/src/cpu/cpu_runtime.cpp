#include "vtrace/runtime/cpu/cpu_runtime.h"

#include "cpu/dense_linear_cpu.h"
#include "vtrace/runtime/fingerprint.h"

namespace vtrace::runtime::cpu {

namespace {

constexpr std::string_view kImplementationVersion = "vtrace.cpu.runtime.v1";

DenseLinearShape engine_shape(const contract::DenseLinearLaunchShape& shape) {
  return {static_cast<std::size_t>(shape.rows), static_cast<std::size_t>(shape.in_features),
          static_cast<std::size_t>(shape.out_features)};
}

// Runs the engine's exact or split-k kernel on each launch.
class CpuKernel final : public host::DenseLinearKernel {
 public:
  CpuKernel(CpuReduction reduction, unsigned threads, Isa isa)
      : reduction_(reduction), engine_(threads, isa) {}
  const DenseLinearEngine& engine() const { return engine_; }

  void run(const std::uint8_t* input, const std::uint8_t* weight, std::uint8_t* output,
           const contract::DenseLinearLaunchShape& shape) override {
    // reserve(shape) succeeded in this submit, so the engine allocates nothing and returns true.
    const bool splitk = reduction_ == CpuReduction::kSplitK;
    (void)(splitk ? engine_.dense_linear_splitk(input, weight, output, engine_shape(shape))
                  : engine_.dense_linear_exact(input, weight, output, engine_shape(shape)));
  }
  bool reserve(const contract::DenseLinearLaunchShape& shape) noexcept override {
    return engine_.reserve(engine_shape(shape), reduction_ == CpuReduction::kSplitK);
  }

 private:
  CpuReduction reduction_;
  DenseLinearEngine engine_;
};

}  // namespace

std::string_view runtime_name(CpuReduction reduction) {
  return reduction == CpuReduction::kExact ? "cpu" : "cpu-splitk";
}

VNextResult<DeviceDescriptor> cpu_descriptor(std::string_view device_id, CpuReduction reduction,
                                             std::uint64_t total_memory_bytes) {
  auto id = DeviceId::create(std::string(device_id));
  if (!id) return std::unexpected(id.error());
  DeviceDescriptor descriptor;
  descriptor.id = std::move(*id);
  descriptor.device_class = DeviceClass::kHost;
  descriptor.ordinal = 0;
  descriptor.total_memory_bytes = total_memory_bytes;
  descriptor.runtime_implementation_fingerprint =
      implementation_fingerprint({"vtrace.cpu.runtime", runtime_name(reduction),
                                  reduction == CpuReduction::kExact
                                      ? "dense_linear: one f32 accumulator, k ascending"
                                      : "dense_linear: k blocks of 256, pairwise tree",
                                  kImplementationVersion});
  descriptor.capabilities = {*CapabilityId::create(std::string(kDenseLinearF16CapabilityId))};
  descriptor.dynamic_storage_profiles = {DynamicStorageProfile::linear_contiguous()};
  if (auto valid = descriptor.validate(); !valid) return std::unexpected(valid.error());
  return descriptor;
}

CpuRuntime::CpuRuntime(StatePtr state, CpuReduction reduction, std::string_view isa,
                       unsigned threads)
    : HostRuntime(std::move(state)), reduction_(reduction), isa_(isa), threads_(threads) {}

Result<std::unique_ptr<CpuRuntime>> CpuRuntime::create(DeviceDescriptor descriptor,
                                                       const CpuRuntimeOptions& options) {
  const std::string_view name = runtime_name(options.reduction);
  Isa isa = detect_isa();
  if (!options.isa.empty()) {
    const auto parsed = parse_isa(options.isa);
    if (!parsed) {
      return std::unexpected(RuntimeError(
          ErrorKind::kRuntimeUnavailable,
          std::string(name) + " runtime has no instruction path `" + options.isa +
              "` (known: portable, avx2-f16c, avx512)"));
    }
    if (!isa_supported(*parsed)) {
      return std::unexpected(RuntimeError(ErrorKind::kRuntimeUnavailable,
                                          std::string(name) + " instruction path `" +
                                              options.isa + "` is not supported by this CPU"));
    }
    isa = *parsed;
  }
  if (options.threads > kCpuMaxThreads) {
    return std::unexpected(RuntimeError(
        ErrorKind::kRuntimeUnavailable,
        std::string(name) + " runtime: " + std::to_string(options.threads) +
            " worker threads asked; it takes at most " + std::to_string(kCpuMaxThreads)));
  }
  auto kernel = std::make_unique<CpuKernel>(options.reduction, options.threads, isa);
  if (const auto& failure = kernel->engine().start_failure(); !failure.empty()) {
    return std::unexpected(RuntimeError(
        ErrorKind::kRuntimeUnavailable,
        std::string(name) + " runtime: the system refused to start all its worker threads (" +
            failure + "; " + std::to_string(kernel->engine().threads()) + " were running)"));
  }
  const unsigned threads = kernel->engine().threads();
  host::HostRuntimeConfig config;
  config.label = std::string(name);
  config.error_code = options.reduction == CpuReduction::kExact ? "cpu_runtime"
                                                                : "cpu_splitk_runtime";
  config.device_class = DeviceClass::kHost;
  config.capabilities = {*CapabilityId::create(std::string(kDenseLinearF16CapabilityId))};
  config.kernel = std::move(kernel);
  auto state = make_state(std::move(descriptor), std::move(config));
  if (!state) return std::unexpected(state.error());
  return std::unique_ptr<CpuRuntime>(
      new CpuRuntime(std::move(*state), options.reduction, isa_name(isa), threads));
}

}  // namespace vtrace::runtime::cpu
