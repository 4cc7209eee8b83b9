// The AVX2 + FMA + F16C kernel set (256-bit, 8 lanes; panels of 16 outputs = 2 vectors).
// Every function that uses intrinsics carries the target attribute (no per-file -m flags, so no
// AVX code can leak into callers through shared inline functions). Anonymous namespace: the
// template instantiations have internal linkage.
#include <cstring>

#include "cpu/kernels/kernel_set.h"

#if VTRACE_X86_KERNELS
#include <immintrin.h>

#ifndef VTRACE_PF_HINT
#define VTRACE_PF_HINT _MM_HINT_T0
#endif
#define VTRACE_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace vtrace::runtime::cpu::kernels {

namespace {

constexpr std::size_t kNr = 16;

VTRACE_AVX2 inline float load_f16(const std::uint8_t* p) {
  std::uint16_t bits = 0;
  std::memcpy(&bits, p, 2);
  return _cvtsh_ss(bits);
}

VTRACE_AVX2 void convert_input(const std::uint8_t* src, float* dst, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) dst[i] = load_f16(src + 2 * i);
}

// 8 weight rows x 16 k-values (f16) -> 16 k-rows of 8 f32 at d + k*nr: a 16-bit transpose in
// registers (each 128-bit lane transposes one 8x8 block), then one conversion per k.
VTRACE_AVX2 inline void transpose_8x16(const std::uint8_t* w, std::size_t ldw, float* d,
                                       std::size_t nr) {
  __m256i r[8];
  for (std::size_t i = 0; i < 8; ++i) {
    r[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 2 * i * ldw));
  }
  const __m256i t0 = _mm256_unpacklo_epi16(r[0], r[1]);
  const __m256i t1 = _mm256_unpackhi_epi16(r[0], r[1]);
  const __m256i t2 = _mm256_unpacklo_epi16(r[2], r[3]);
  const __m256i t3 = _mm256_unpackhi_epi16(r[2], r[3]);
  const __m256i t4 = _mm256_unpacklo_epi16(r[4], r[5]);
  const __m256i t5 = _mm256_unpackhi_epi16(r[4], r[5]);
  const __m256i t6 = _mm256_unpacklo_epi16(r[6], r[7]);
  const __m256i t7 = _mm256_unpackhi_epi16(r[6], r[7]);
  const __m256i u0 = _mm256_unpacklo_epi32(t0, t2);  // k0, k1 (rows 0-3)
  const __m256i u1 = _mm256_unpackhi_epi32(t0, t2);  // k2, k3
  const __m256i u2 = _mm256_unpacklo_epi32(t1, t3);  // k4, k5
  const __m256i u3 = _mm256_unpackhi_epi32(t1, t3);  // k6, k7
  const __m256i u4 = _mm256_unpacklo_epi32(t4, t6);  // rows 4-7
  const __m256i u5 = _mm256_unpackhi_epi32(t4, t6);
  const __m256i u6 = _mm256_unpacklo_epi32(t5, t7);
  const __m256i u7 = _mm256_unpackhi_epi32(t5, t7);
  __m256i v[8];
  v[0] = _mm256_unpacklo_epi64(u0, u4);  // k0 | k8
  v[1] = _mm256_unpackhi_epi64(u0, u4);  // k1 | k9
  v[2] = _mm256_unpacklo_epi64(u1, u5);
  v[3] = _mm256_unpackhi_epi64(u1, u5);
  v[4] = _mm256_unpacklo_epi64(u2, u6);
  v[5] = _mm256_unpackhi_epi64(u2, u6);
  v[6] = _mm256_unpacklo_epi64(u3, u7);
  v[7] = _mm256_unpackhi_epi64(u3, u7);
  for (std::size_t j = 0; j < 8; ++j) {
    _mm256_storeu_ps(d + j * nr, _mm256_cvtph_ps(_mm256_castsi256_si128(v[j])));
    _mm256_storeu_ps(d + (j + 8) * nr, _mm256_cvtph_ps(_mm256_extracti128_si256(v[j], 1)));
  }
}

// Groups of 8 outputs: full groups use the register transpose over 16 k at a time; k tails and
// partial groups go element by element; lanes past nb (up to the last panel) are zero.
VTRACE_AVX2 void pack_weight(const std::uint8_t* weight, std::size_t ldw, std::size_t nb,
                             std::size_t kc, float* dst, std::size_t panel_stride,
                             std::size_t nr, const std::uint8_t* next) {
  const std::size_t padded = (nb + nr - 1) / nr * nr;
  for (std::size_t o8 = 0; o8 < padded; o8 += 8) {
    float* d = dst + (o8 / nr) * panel_stride + o8 % nr;
    // Rows at or past nb do not exist: no pointer is formed to them (it could lie past the end
    // of the weight), and the lanes below are zeros.
    const std::uint8_t* w = o8 < nb ? weight + 2 * o8 * ldw : nullptr;
    if (o8 + 8 <= nb) {
      std::size_t k = 0;
      for (; k + 16 <= kc; k += 16) {
        if (k % 32 == 0) {  // the same 64-byte line of the next group's 8 rows
          const std::uint8_t* n = o8 + 16 <= nb ? w + 2 * (8 * ldw + k)
                                  : next != nullptr ? next + 2 * k : nullptr;
          if (n != nullptr) {
            for (std::size_t i = 0; i < 8; ++i) {
              _mm_prefetch(reinterpret_cast<const char*>(n + 2 * i * ldw), VTRACE_PF_HINT);
            }
          }
        }
        transpose_8x16(w + 2 * k, ldw, d + k * nr, nr);
      }
      for (; k < kc; ++k) {
        for (std::size_t i = 0; i < 8; ++i) d[k * nr + i] = load_f16(w + 2 * (i * ldw + k));
      }
    } else {
      for (std::size_t k = 0; k < kc; ++k) {
        for (std::size_t i = 0; i < 8; ++i) {
          d[k * nr + i] = o8 + i < nb ? load_f16(w + 2 * (i * ldw + k)) : 0.0f;
        }
      }
    }
  }
}

// MR rows x NP panels x 2 vectors of accumulators, k ascending; a[r] broadcast per k.
template <std::size_t MR, std::size_t NP>
VTRACE_AVX2 void micro(const float* a, std::size_t lda, const float* b, std::size_t panel_stride,
                       std::size_t kc, float* c, std::size_t ldc, bool accumulate) {
  __m256 acc[MR][NP][2];
#pragma GCC unroll 8
  for (std::size_t r = 0; r < MR; ++r) {
#pragma GCC unroll 8
    for (std::size_t p = 0; p < NP; ++p) {
#pragma GCC unroll 2
      for (std::size_t v = 0; v < 2; ++v) {
        acc[r][p][v] = accumulate ? _mm256_loadu_ps(c + r * ldc + p * kNr + v * 8)
                                  : _mm256_setzero_ps();
      }
    }
  }
  for (std::size_t k = 0; k < kc; ++k) {
    __m256 bv[NP][2];
#pragma GCC unroll 8
    for (std::size_t p = 0; p < NP; ++p) {
      bv[p][0] = _mm256_loadu_ps(b + p * panel_stride + k * kNr);
      bv[p][1] = _mm256_loadu_ps(b + p * panel_stride + k * kNr + 8);
    }
#pragma GCC unroll 8
    for (std::size_t r = 0; r < MR; ++r) {
      const __m256 x = _mm256_broadcast_ss(a + r * lda + k);
#pragma GCC unroll 8
      for (std::size_t p = 0; p < NP; ++p) {
        acc[r][p][0] = _mm256_fmadd_ps(x, bv[p][0], acc[r][p][0]);
        acc[r][p][1] = _mm256_fmadd_ps(x, bv[p][1], acc[r][p][1]);
      }
    }
  }
#pragma GCC unroll 8
  for (std::size_t r = 0; r < MR; ++r) {
#pragma GCC unroll 8
    for (std::size_t p = 0; p < NP; ++p) {
      _mm256_storeu_ps(c + r * ldc + p * kNr, acc[r][p][0]);
      _mm256_storeu_ps(c + r * ldc + p * kNr + 8, acc[r][p][1]);
    }
  }
}

VTRACE_AVX2 void add(float* left, const float* right, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(left + i, _mm256_add_ps(_mm256_loadu_ps(left + i), _mm256_loadu_ps(right + i)));
  }
  for (; i < n; ++i) left[i] = left[i] + right[i];
}

// 8 accumulators -> 8 f16: NaN lanes become the quiet NaN 0x7FC00000, which F16C converts to
// exactly 0x7E00; everything else is converted round-to-nearest-even.
VTRACE_AVX2 inline __m128i to_f16(__m256 x) {
  const __m256 nan_lanes = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
  const __m256 quiet = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FC00000));
  return _mm256_cvtps_ph(_mm256_blendv_ps(x, quiet, nan_lanes), _MM_FROUND_TO_NEAREST_INT);
}

VTRACE_AVX2 void store_output(const float* acc, std::uint8_t* out, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * i), to_f16(_mm256_loadu_ps(acc + i)));
  }
  if (i < n) {
    float tail[8] = {};
    std::memcpy(tail, acc + i, (n - i) * sizeof(float));
    std::uint8_t bytes[16];
    _mm_storeu_si128(reinterpret_cast<__m128i*>(bytes), to_f16(_mm256_loadu_ps(tail)));
    std::memcpy(out + 2 * i, bytes, 2 * (n - i));
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
  // Accumulators per call = mr * np * 2 ymm: 8 to 12 (FMA latency 4 x 2 ports needs >= 8).
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

const KernelSet& avx2_kernel_set() {
  static const KernelSet set = make_set();
  return set;
}

}  // namespace vtrace::runtime::cpu::kernels

#endif  // VTRACE_X86_KERNELS
