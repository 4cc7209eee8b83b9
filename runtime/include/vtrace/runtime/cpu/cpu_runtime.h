// The cpu and cpu-splitk runtimes: HostRuntime (the shared contract checks, host storage,
// synchronous execution, the reference's counters) with fast dense-linear kernels.
//
// - cpu (CpuReduction::kExact): multithreaded, vectorized across outputs and rows (AVX-512,
//   AVX2+F16C+FMA or portable, chosen at run time from CPUID), bit for bit equal to the
//   reference: one f32 accumulator per output, k ascending, no k split.
// - cpu-splitk (CpuReduction::kSplitK): the same kernels with a BLAS's reduction order: k cut
//   into blocks of 256, block partials combined as a pairwise tree (exactly as documented at
//   DenseLinearEngine::dense_linear_splitk in src/cpu/dense_linear_cpu.h and in
//   docs/ARCHITECTURE.md). Close to the reference, not bit-exact: the drifting backend the drift
//   tools are tested on.
//
// Descriptors (cpu_descriptor): class Host, capability dense_linear.f16, LinearArena+Contiguous,
// a fingerprint per reduction (the instruction path is not part of it: every path gives the same
// bits), and a configurable capacity (4 GiB by default) so shapes larger than the reference's
// 64 MiB fit.
//
// Ownership, thread rules, errors: those of HostRuntime (messages start with "cpu" or
// "cpu-splitk"); the runtime owns a worker pool of `threads` threads, joined when it dies.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "vtrace/runtime/host/host_runtime.h"

namespace vtrace::runtime::cpu {

inline constexpr std::uint64_t kCpuDefaultMemoryBytes = 4ull * 1024 * 1024 * 1024;

enum class CpuReduction : std::uint8_t { kExact, kSplitK };

// The most worker threads a cpu runtime takes (--threads): beyond any machine's cores, and a
// bound on the scratch each worker holds.
inline constexpr unsigned kCpuMaxThreads = 1024;

struct CpuRuntimeOptions {
  CpuReduction reduction = CpuReduction::kExact;
  // Worker threads; 0 = std::thread::hardware_concurrency(). More than kCpuMaxThreads, or more
  // than the system lets the process start, fails create() with kRuntimeUnavailable.
  unsigned threads = 0;
  // "portable", "avx2-f16c", "avx512"; empty = the best this CPU supports.
  std::string isa{};
};

// The registry name of a reduction: "cpu" or "cpu-splitk".
std::string_view runtime_name(CpuReduction reduction);

// The descriptor of a cpu runtime for `device_id`. Fails on an invalid identity or capacity 0.
VNextResult<DeviceDescriptor> cpu_descriptor(std::string_view device_id, CpuReduction reduction,
                                             std::uint64_t total_memory_bytes =
                                                 kCpuDefaultMemoryBytes);

class CpuRuntime final : public host::HostRuntime {
 public:
  // Checks the descriptor like the reference does (class Host, exact capabilities) and the
  // instruction path: an unknown name or a path this CPU lacks fails with kRuntimeUnavailable.
  static Result<std::unique_ptr<CpuRuntime>> create(DeviceDescriptor descriptor,
                                                    const CpuRuntimeOptions& options);

  CpuReduction reduction() const { return reduction_; }
  // The instruction path that runs ("avx2-f16c", ...) and the worker count.
  std::string_view isa() const { return isa_; }
  unsigned threads() const { return threads_; }

 private:
  CpuRuntime(StatePtr state, CpuReduction reduction, std::string_view isa,
             unsigned threads);
  CpuReduction reduction_;
  std::string_view isa_;
  unsigned threads_;
};

}  // namespace vtrace::runtime::cpu
