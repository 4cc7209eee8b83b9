#include "vtrace/runtime/registry.h"

#include "vtrace/runtime/cpu/cpu_runtime.h"
#include "vtrace/runtime/reference/reference_runtime.h"
#ifdef VTRACE_HAVE_CUDA
#include "vtrace/runtime/cuda/cuda_runtime.h"
#endif

namespace vtrace::runtime {

bool built_with_cuda() {
#ifdef VTRACE_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

void RuntimeRegistry::add(std::string name, std::string summary, RuntimeFactory factory,
                          OpenOptionsTaken takes) {
  entries_.insert_or_assign(std::move(name),
                            Entry{std::move(summary), std::move(factory), takes});
}

OpenOptionsTaken RuntimeRegistry::takes(std::string_view name) const {
  const auto found = entries_.find(name);
  return found == entries_.end() ? OpenOptionsTaken{} : found->second.takes;
}

Result<std::unique_ptr<DeviceRuntime>> RuntimeRegistry::open(
    std::string_view name, const RuntimeOpenOptions& options) const {
  const auto found = entries_.find(name);
  if (found == entries_.end()) {
    std::string known;
    for (const auto& [entry_name, entry] : entries_) {
      known += known.empty() ? "" : ", ";
      known += entry_name;
    }
    // A CUDA runtime's name in a build without the toolkit says why it is missing.
    const bool missing_cuda = !built_with_cuda() && (name == "cuda" || name == "cuda-cublas");
    return std::unexpected(RuntimeError(
        ErrorKind::kUnknownRuntime,
        "unknown runtime `" + std::string(name) + "`" +
            (missing_cuda
                 ? " (this build has no CUDA runtime: it was configured without the CUDA toolkit)"
                 : "") +
            "; known runtimes: " + known));
  }
  return found->second.factory(options);
}

bool RuntimeRegistry::contains(std::string_view name) const {
  return entries_.find(name) != entries_.end();
}

std::vector<std::string> RuntimeRegistry::names() const {
  std::vector<std::string> result;
  for (const auto& [name, entry] : entries_) result.push_back(name);
  return result;
}

std::string RuntimeRegistry::summary(std::string_view name) const {
  const auto found = entries_.find(name);
  return found == entries_.end() ? std::string() : found->second.summary;
}

namespace {

Result<std::unique_ptr<DeviceRuntime>> open_reference(const RuntimeOpenOptions& options) {
  auto descriptor = reference::reference_descriptor(
      options.device_id, options.device_memory_bytes != 0 ? options.device_memory_bytes
                                                          : reference::kReferenceMemoryBytes);
  if (!descriptor) {
    return std::unexpected(RuntimeError(ErrorKind::kDescriptorInvalid, descriptor.error()));
  }
  auto runtime = reference::ReferenceRuntime::create(std::move(*descriptor));
  if (!runtime) return std::unexpected(runtime.error());
  return std::unique_ptr<DeviceRuntime>(std::move(*runtime));
}

RuntimeFactory cpu_factory(cpu::CpuReduction reduction) {
  return [reduction](const RuntimeOpenOptions& options) -> Result<std::unique_ptr<DeviceRuntime>> {
    auto descriptor = cpu::cpu_descriptor(options.device_id, reduction,
                                          options.device_memory_bytes != 0
                                              ? options.device_memory_bytes
                                              : cpu::kCpuDefaultMemoryBytes);
    if (!descriptor) {
      return std::unexpected(RuntimeError(ErrorKind::kDescriptorInvalid, descriptor.error()));
    }
    auto runtime = cpu::CpuRuntime::create(
        std::move(*descriptor), {.reduction = reduction, .threads = options.threads,
                                 .isa = options.isa});
    if (!runtime) return std::unexpected(runtime.error());
    return std::unique_ptr<DeviceRuntime>(std::move(*runtime));
  };
}

RuntimeRegistry build_default_registry() {
  RuntimeRegistry registry;
  registry.add("reference",
               "synchronous in-memory reference runtime (the numerical oracle; dense linear f16)",
               open_reference);
  registry.add("cpu",
               "multithreaded SIMD host runtime, bit-exact with the reference (k ascending, one "
               "f32 accumulator)",
               cpu_factory(cpu::CpuReduction::kExact), {.threads = true, .isa = true});
  registry.add("cpu-splitk",
               "host runtime with a BLAS-like split-k reduction (k blocks of 256, pairwise tree): "
               "drifts from the reference",
               cpu_factory(cpu::CpuReduction::kSplitK), {.threads = true, .isa = true});
#ifdef VTRACE_HAVE_CUDA
  cuda::register_cuda_runtimes(registry);
#endif
  return registry;
}

}  // namespace

const RuntimeRegistry& default_registry() {
  static const RuntimeRegistry registry = build_default_registry();
  return registry;
}

}  // namespace vtrace::runtime
