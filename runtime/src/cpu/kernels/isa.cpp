// Instruction-path names and run-time detection (CPUID + XGETBV on x86; elsewhere only the
// portable path exists), for dense_linear_cpu.h.
#include <cstdint>

#include "cpu/dense_linear_cpu.h"
#include "cpu/kernels/kernel_set.h"

#if VTRACE_X86_KERNELS
#include <cpuid.h>
#endif

namespace vtrace::runtime::cpu {

namespace {

struct CpuFeatures {
  bool avx2_fma_f16c = false;  // AVX2 + FMA + F16C, YMM state enabled by the OS
  bool avx512 = false;         // AVX-512 F/VL/BW/DQ, ZMM/opmask state enabled by the OS
};

#if VTRACE_X86_KERNELS
std::uint64_t xgetbv0() {
  std::uint32_t lo = 0;
  std::uint32_t hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<std::uint64_t>(hi) << 32) | lo;
}

CpuFeatures probe() {
  CpuFeatures f;
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return f;
  const bool fma = (ecx >> 12) & 1u;
  const bool osxsave = (ecx >> 27) & 1u;
  const bool avx = (ecx >> 28) & 1u;
  const bool f16c = (ecx >> 29) & 1u;
  if (!osxsave || !avx) return f;
  const std::uint64_t xcr0 = xgetbv0();
  const bool ymm_state = (xcr0 & 0x6u) == 0x6u;
  const bool zmm_state = (xcr0 & 0xE6u) == 0xE6u;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return f;
  const bool avx2 = (ebx >> 5) & 1u;
  const bool avx512f = (ebx >> 16) & 1u;
  const bool avx512dq = (ebx >> 17) & 1u;
  const bool avx512bw = (ebx >> 30) & 1u;
  const bool avx512vl = (ebx >> 31) & 1u;
  f.avx2_fma_f16c = ymm_state && avx2 && fma && f16c;
  // The AVX-512 set reuses the AVX2 packing, so it requires the AVX2 path too.
  f.avx512 = f.avx2_fma_f16c && zmm_state && avx512f && avx512dq && avx512bw && avx512vl;
  return f;
}
#else
CpuFeatures probe() { return {}; }
#endif

const CpuFeatures& features() {
  static const CpuFeatures cached = probe();
  return cached;
}

}  // namespace

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::kPortable:
      return "portable";
    case Isa::kAvx2F16c:
      return "avx2-f16c";
    case Isa::kAvx512:
      return "avx512";
  }
  return "unknown";
}

std::optional<Isa> parse_isa(std::string_view name) {
  for (const Isa isa : {Isa::kPortable, Isa::kAvx2F16c, Isa::kAvx512}) {
    if (name == isa_name(isa)) return isa;
  }
  return std::nullopt;
}

bool isa_supported(Isa isa) {
  switch (isa) {
    case Isa::kPortable:
      return true;
    case Isa::kAvx2F16c:
      return features().avx2_fma_f16c;
    case Isa::kAvx512:
      return features().avx512;
  }
  return false;
}

Isa detect_isa() {
  if (isa_supported(Isa::kAvx512)) return Isa::kAvx512;
  if (isa_supported(Isa::kAvx2F16c)) return Isa::kAvx2F16c;
  return Isa::kPortable;
}

}  // namespace vtrace::runtime::cpu
