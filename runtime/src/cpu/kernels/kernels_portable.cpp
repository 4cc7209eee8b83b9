// The portable kernel set: plain C++ (no intrinsics), the same blocking as the SIMD sets.
// Multiply then add, each rounded (the build passes -ffp-contract=off), which equals FMA here
// because the product of two f16 values is exact in f32.
#include <cmath>
#include <cstring>

#include "cpu/kernels/kernel_set.h"
#include "vtrace/runtime/f16.h"

namespace vtrace::runtime::cpu::kernels {

namespace {

constexpr std::size_t kNr = 16;

float load_f16(const std::uint8_t* p) {
  return f16_to_f32(static_cast<std::uint16_t>(p[0] | (p[1] << 8)));
}

void convert_input(const std::uint8_t* src, float* dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = load_f16(src + 2 * i);
}

void pack_weight(const std::uint8_t* weight, std::size_t ldw, std::size_t nb, std::size_t kc,
                 float* dst, std::size_t panel_stride, std::size_t nr, const std::uint8_t*) {
  const std::size_t panels = (nb + nr - 1) / nr;
  for (std::size_t o = 0; o < panels * nr; ++o) {
    float* d = dst + (o / nr) * panel_stride + o % nr;
    if (o >= nb) {
      for (std::size_t k = 0; k < kc; ++k) d[k * nr] = 0.0f;
      continue;
    }
    const std::uint8_t* w = weight + 2 * o * ldw;
    for (std::size_t k = 0; k < kc; ++k) d[k * nr] = load_f16(w + 2 * k);
  }
}

template <std::size_t MR, std::size_t NP>
void micro(const float* a, std::size_t lda, const float* b, std::size_t panel_stride,
           std::size_t kc, float* c, std::size_t ldc, bool accumulate) {
  float acc[MR][NP][kNr];
  for (std::size_t r = 0; r < MR; ++r) {
    for (std::size_t p = 0; p < NP; ++p) {
      for (std::size_t j = 0; j < kNr; ++j) {
        acc[r][p][j] = accumulate ? c[r * ldc + p * kNr + j] : +0.0f;
      }
    }
  }
  for (std::size_t k = 0; k < kc; ++k) {
    for (std::size_t r = 0; r < MR; ++r) {
      const float x = a[r * lda + k];
      for (std::size_t p = 0; p < NP; ++p) {
        const float* bk = b + p * panel_stride + k * kNr;
        for (std::size_t j = 0; j < kNr; ++j) acc[r][p][j] = acc[r][p][j] + x * bk[j];
      }
    }
  }
  for (std::size_t r = 0; r < MR; ++r) {
    for (std::size_t p = 0; p < NP; ++p) {
      std::memcpy(c + r * ldc + p * kNr, acc[r][p], sizeof acc[r][p]);
    }
  }
}

void add(float* left, const float* right, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) left[i] = left[i] + right[i];
}

void store_output(const float* acc, std::uint8_t* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint16_t bits = std::isnan(acc[i]) ? std::uint16_t{0x7E00} : f32_to_f16(acc[i]);
    out[2 * i] = static_cast<std::uint8_t>(bits & 0xFF);
    out[2 * i + 1] = static_cast<std::uint8_t>(bits >> 8);
  }
}

// The micro-kernels of this path, for fill_micro (kernel_set.h).
struct Micro {
  template <std::size_t MR, std::size_t NP>
  static MicroFn get() {
    return &micro<MR, NP>;
  }
};

KernelSet make_set() {
  KernelSet set;
  set.nr = kNr;
  const std::size_t np[kMaxMr] = {4, 2, 2, 1, 1, 1};
  for (std::size_t i = 0; i < kMaxMr; ++i) set.np_for_mr[i] = np[i];
  set.convert_input = &convert_input;
  set.pack_weight = &pack_weight;
  fill_micro<Micro>(set);
  set.add = &add;
  set.store_output = &store_output;
  return set;
}

}  // namespace

const KernelSet& portable_kernel_set() {
  static const KernelSet set = make_set();
  return set;
}

}  // namespace vtrace::runtime::cpu::kernels
