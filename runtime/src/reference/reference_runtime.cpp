// The reference runtime: HostRuntime with the reference kernel and the fixed descriptor.
// The spec points decided differently from upstream are listed in host/host_runtime.cpp.
#include "vtrace/runtime/reference/reference_runtime.h"

#include "reference/dense_linear_kernel.h"
#include "vtrace/runtime/fingerprint.h"

namespace vtrace::runtime::reference {

namespace {

constexpr std::string_view kImplementationVersion = "vtrace.reference.runtime.v1";

// spec 11.1 through dense_linear_f16_into, straight into the output (HostRuntime stages an
// output that aliases an operand); needs no scratch.
class ReferenceKernel final : public host::DenseLinearKernel {
 public:
  void run(const std::uint8_t* input, const std::uint8_t* weight, std::uint8_t* output,
           const contract::DenseLinearLaunchShape& shape) override {
    const auto rows = static_cast<std::size_t>(shape.rows);
    const auto in = static_cast<std::size_t>(shape.in_features);
    const auto out = static_cast<std::size_t>(shape.out_features);
    dense_linear_f16_into({input, rows * in * 2}, {weight, out * in * 2}, {output, rows * out * 2},
                          rows, in, out);
  }
};

}  // namespace

VNextResult<DeviceDescriptor> reference_descriptor(std::string_view device_id,
                                                 std::uint64_t total_memory_bytes) {
  auto id = DeviceId::create(std::string(device_id));
  if (!id) return std::unexpected(id.error());
  auto capability = CapabilityId::create(std::string(kDenseLinearF16CapabilityId));
  DeviceDescriptor descriptor;
  descriptor.id = std::move(*id);
  descriptor.device_class = DeviceClass::kReference;
  descriptor.ordinal = 0;
  descriptor.total_memory_bytes = total_memory_bytes;
  descriptor.runtime_implementation_fingerprint = implementation_fingerprint(
      {"vtrace.reference.runtime", "vtrace.reference.dense_linear", kImplementationVersion});
  descriptor.capabilities = {*capability};
  descriptor.dynamic_storage_profiles = {DynamicStorageProfile::linear_contiguous()};
  if (auto valid = descriptor.validate(); !valid) return std::unexpected(valid.error());
  return descriptor;
}

ReferenceRuntime::ReferenceRuntime(StatePtr state)
    : HostRuntime(std::move(state)) {}

Result<std::unique_ptr<ReferenceRuntime>> ReferenceRuntime::create(DeviceDescriptor descriptor) {
  host::HostRuntimeConfig config;
  config.label = "reference";
  config.error_code = std::string(kReferenceRuntimeErrorCode);
  config.device_class = DeviceClass::kReference;
  config.capabilities = {*CapabilityId::create(std::string(kDenseLinearF16CapabilityId))};
  config.kernel = std::make_unique<ReferenceKernel>();
  auto state = make_state(std::move(descriptor), std::move(config));
  if (!state) return std::unexpected(state.error());
  return std::unique_ptr<ReferenceRuntime>(new ReferenceRuntime(std::move(*state)));
}

}  // namespace vtrace::runtime::reference
