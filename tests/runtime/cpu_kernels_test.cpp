// White-box tests of the cpu dense-linear kernels (runtime/src/cpu/dense_linear_cpu.h):
// dense_linear_exact against the reference kernel bit for bit, dense_linear_splitk against a
// scalar model of its documented order written here, on every ISA path (a path this CPU lacks
// is reported Skipped: one TEST_CASE per path, since a skip marks the whole process) and with 1
// and 2 threads. Buffers are passed at odd byte offsets (no alignment may be assumed).
#include <catch2/catch.hpp>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "cpu/dense_linear_cpu.h"
#include "cpu/kernels/kernel_set.h"
#include "reference/dense_linear_kernel.h"
#include "support/test_support.h"
#include "vtrace/runtime/cpu/cpu_runtime.h"
#include "vtrace/runtime/immediate.h"
#include "vtrace/runtime/registry.h"
#include "vtrace/runtime/f16.h"

namespace {

namespace vr = vtrace::runtime;
using vr::cpu::DenseLinearEngine;
using vr::cpu::DenseLinearShape;
using vr::cpu::Isa;
using Bytes = std::vector<std::uint8_t>;

constexpr std::uint16_t kNanOut = 0x7E00;
constexpr std::uint16_t kOne = 0x3C00;
constexpr std::uint16_t kMaxF16 = 0x7BFF;  // 65504
constexpr std::uint16_t kInf = 0x7C00;

std::uint16_t get(const Bytes& b, std::size_t i) {
  return static_cast<std::uint16_t>(b[2 * i] | (b[2 * i + 1] << 8));
}
void put(Bytes& b, std::size_t i, std::uint16_t v) {
  b[2 * i] = static_cast<std::uint8_t>(v & 0xFF);
  b[2 * i + 1] = static_cast<std::uint8_t>(v >> 8);
}
float value(const Bytes& b, std::size_t i) { return vr::f16_to_f32(get(b, i)); }

Bytes gaussian(std::size_t n, std::mt19937_64& rng, float scale = 1.0f) {
  std::normal_distribution<float> dist(0.0f, scale);
  Bytes out(2 * n);
  for (std::size_t i = 0; i < n; ++i) put(out, i, vr::f32_to_f16(dist(rng)));
  return out;
}

// Replaces a fraction of the elements by infinities, NaNs (various payloads), subnormals,
// signed zeros and +-65504.
void sprinkle_specials(Bytes& b, std::mt19937_64& rng, double fraction) {
  const std::uint16_t specials[] = {kInf,   0xFC00, 0x7E00, 0xFE00, 0x7C01, 0x7FFF, 0x0001,
                                    0x8001, 0x03FF, 0x83FF, 0x0000, 0x8000, kMaxF16, 0xFBFF};
  std::bernoulli_distribution pick(fraction);
  std::uniform_int_distribution<std::size_t> which(0, std::size(specials) - 1);
  for (std::size_t i = 0; i < b.size() / 2; ++i) {
    if (pick(rng)) put(b, i, specials[which(rng)]);
  }
}

Bytes reference(const Bytes& in, const Bytes& w, const DenseLinearShape& s) {
  return vr::reference::dense_linear_f16(in, w, s.rows, s.in_features, s.out_features);
}

// The documented split-k order, written out literally: per output, block partials from +0 with
// k ascending (multiply then add; this file is built with -ffp-contract=off), then the pairwise
// tree level by level with an odd last partial carried up.
Bytes splitk_model(const Bytes& in, const Bytes& w, const DenseLinearShape& s) {
  const std::size_t block = vr::cpu::kSplitKBlock;
  Bytes out(2 * s.rows * s.out_features);
  for (std::size_t r = 0; r < s.rows; ++r) {
    for (std::size_t o = 0; o < s.out_features; ++o) {
      std::vector<float> level;
      for (std::size_t k0 = 0; k0 < s.in_features; k0 += block) {
        float partial = +0.0f;
        for (std::size_t k = k0; k < std::min(k0 + block, s.in_features); ++k) {
          partial = partial + value(in, r * s.in_features + k) * value(w, o * s.in_features + k);
        }
        level.push_back(partial);
      }
      while (level.size() > 1) {
        std::vector<float> next;
        for (std::size_t i = 0; i + 1 < level.size(); i += 2) next.push_back(level[i] + level[i + 1]);
        if (level.size() % 2 == 1) next.push_back(level.back());
        level = next;
      }
      const float sum = level.empty() ? +0.0f : level[0];
      put(out, r * s.out_features + o, std::isnan(sum) ? kNanOut : vr::f32_to_f16(sum));
    }
  }
  return out;
}

enum class Kernel { kExact, kSplitK };

// Runs the engine with every buffer at an odd byte offset.
Bytes run(DenseLinearEngine& engine, Kernel kernel, const Bytes& in, const Bytes& w,
          const DenseLinearShape& s) {
  Bytes in_buf(in.size() + 1), w_buf(w.size() + 3), out_buf(2 * s.rows * s.out_features + 5, 0xA5);
  std::memcpy(in_buf.data() + 1, in.data(), in.size());
  std::memcpy(w_buf.data() + 3, w.data(), w.size());
  if (kernel == Kernel::kExact) {
    REQUIRE(engine.dense_linear_exact(in_buf.data() + 1, w_buf.data() + 3, out_buf.data() + 1, s));
  } else {
    REQUIRE(engine.dense_linear_splitk(in_buf.data() + 1, w_buf.data() + 3, out_buf.data() + 1, s));
  }
  // Nothing outside the output is written, and the operands are untouched.
  CHECK(out_buf.front() == 0xA5);
  CHECK(out_buf[out_buf.size() - 4] == 0xA5);
  CHECK(std::memcmp(in_buf.data() + 1, in.data(), in.size()) == 0);
  CHECK(std::memcmp(w_buf.data() + 3, w.data(), w.size()) == 0);
  return Bytes(out_buf.begin() + 1, out_buf.end() - 4);
}

std::string shape_text(const DenseLinearShape& s) {
  return std::to_string(s.rows) + "x" + std::to_string(s.in_features) + "x" +
         std::to_string(s.out_features);
}

// Bit-for-bit comparison with the first mismatch named.
void require_same_bits(const Bytes& got, const Bytes& want, const DenseLinearShape& s) {
  REQUIRE(got.size() == want.size());
  std::size_t diffs = 0;
  std::size_t first = 0;
  for (std::size_t i = 0; i < got.size() / 2; ++i) {
    if (get(got, i) != get(want, i) && diffs++ == 0) first = i;
  }
  INFO("shape " << shape_text(s) << ": " << diffs << " outputs differ; first at row "
                << first / s.out_features << " output " << first % s.out_features << ": got 0x"
                << std::hex << get(got, first) << " want 0x" << get(want, first));
  REQUIRE(diffs == 0);
}

std::size_t count_diffs(const Bytes& a, const Bytes& b) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < a.size() / 2; ++i) if (get(a, i) != get(b, i)) ++n;
  return n;
}

// --- the checks, one function per property, run per ISA path below ---

// All 65,536 f16 patterns, as inputs (K = 1, weights 1, -1, 0.5, 2, 0, 65504) and as weights
// (K = 3, each pattern meeting ordinary, tiny, huge and infinite inputs).
void check_all_patterns(Isa isa) {
  for (const unsigned threads : {1u, 2u}) {
    INFO("threads " << threads);
    DenseLinearEngine engine(threads, isa);
    {
      const DenseLinearShape s{65536, 1, 6};
      Bytes in(2 * 65536);
      for (std::size_t i = 0; i < 65536; ++i) put(in, i, static_cast<std::uint16_t>(i));
      Bytes w(2 * 6);
      const std::uint16_t ws[] = {kOne, 0xBC00, 0x3800, 0x4000, 0x0000, kMaxF16};
      for (std::size_t i = 0; i < 6; ++i) put(w, i, ws[i]);
      require_same_bits(run(engine, Kernel::kExact, in, w, s), reference(in, w, s), s);
      require_same_bits(run(engine, Kernel::kSplitK, in, w, s), reference(in, w, s), s);
    }
    {
      // More than kSmallRows rows: the avx512 path runs launches of at most that many rows with
      // its AVX2 kernels, so only a taller launch puts every pattern through its own.
      const DenseLinearShape s{vr::cpu::kSmallRows + 5, 3, 65536};
      Bytes w(2 * 65536 * 3);
      for (std::size_t o = 0; o < 65536; ++o) {
        put(w, 3 * o, static_cast<std::uint16_t>(o));
        put(w, 3 * o + 1, static_cast<std::uint16_t>((o * 40503 + 1) & 0xFFFF));
        put(w, 3 * o + 2, static_cast<std::uint16_t>(o ^ 0x8000));
      }
      const std::uint16_t rows[5][3] = {{kOne, 0, 0},
                                        {kOne, kOne, kOne},
                                        {0x3800, 0xC200, 0x1419},    // 0.5, -3, ~0.001
                                        {kMaxF16, 0x0001, 0x8000},   // 65504, 2^-24, -0
                                        {0x0200, kInf, 0x3C01}};     // subnormal, inf
      Bytes in(2 * 3 * s.rows);
      for (std::size_t r = 0; r < s.rows; ++r) {
        for (std::size_t i = 0; i < 3; ++i) put(in, 3 * r + i, rows[r % 5][i]);
      }
      require_same_bits(run(engine, Kernel::kExact, in, w, s), reference(in, w, s), s);
    }
  }
}

// Seeded random shapes: tails of every size around the vector widths and row tiles, K up to
// 16384, engines reused across shapes (scratch grows and shrinks).
void check_random_shapes(Isa isa) {
  std::vector<DenseLinearShape> shapes = {
      {1, 1, 1},      {1, 3, 7},      {2, 9, 15},    {3, 15, 17},    {5, 17, 31},
      {7, 31, 33},    {6, 33, 16},    {11, 255, 63}, {13, 257, 65},  {40, 100, 9},
      {1, 4096, 33},  {3, 16384, 19}, {37, 513, 47}, {12, 1000, 130}, {8, 64, 200},
      {19, 7, 129},   {1, 1023, 257}, {25, 300, 1},  {4, 2049, 23},  {6, 12, 96}};
  const std::uint64_t seed = 0x5EED0001;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::size_t> rows_d(1, 40), k_d(1, 600), out_d(1, 150);
  for (int i = 0; i < 24; ++i) {
    DenseLinearShape s{rows_d(rng), k_d(rng), out_d(rng)};
    if (i % 6 == 0) s.in_features = 1024 + k_d(rng) * 20;  // up to 13024
    shapes.push_back(s);
  }
  DenseLinearEngine one(1, isa);
  DenseLinearEngine two(2, isa);
  std::size_t index = 0;
  for (const DenseLinearShape& s : shapes) {
    INFO("seed " << seed << " shape " << index << ": " << shape_text(s));
    Bytes in = gaussian(s.rows * s.in_features, rng);
    Bytes w = gaussian(s.out_features * s.in_features, rng, 0.25f);
    if (index % 3 == 2) {
      sprinkle_specials(in, rng, 0.002);
      sprinkle_specials(w, rng, 0.002);
    }
    const Bytes want = reference(in, w, s);
    require_same_bits(run(one, Kernel::kExact, in, w, s), want, s);
    require_same_bits(run(two, Kernel::kExact, in, w, s), want, s);
    ++index;
  }
}

// All-subnormal operands, subnormals against large values, infinities and NaNs, and sums that
// overflow f16 (f32 cannot overflow here: |sum| <= 65504^2 * K).
void check_special_values(Isa isa) {
  std::mt19937_64 rng(0x5EED0002);
  std::uniform_int_distribution<int> sub_d(1, 0x3FF), sign_d(0, 1);
  auto subnormals = [&](std::size_t n) {
    Bytes b(2 * n);
    for (std::size_t i = 0; i < n; ++i) {
      put(b, i, static_cast<std::uint16_t>(sub_d(rng) | (sign_d(rng) << 15)));
    }
    return b;
  };
  auto filled = [](std::size_t n, std::uint16_t bits) {
    Bytes b(2 * n);
    for (std::size_t i = 0; i < n; ++i) put(b, i, bits);
    return b;
  };
  for (const unsigned threads : {1u, 2u}) {
    DenseLinearEngine engine(threads, isa);
    std::vector<std::pair<const char*, std::pair<Bytes, Bytes>>> cases;
    const DenseLinearShape s{9, 300, 21};
    const std::size_t n_in = s.rows * s.in_features;
    const std::size_t n_w = s.out_features * s.in_features;
    cases.push_back({"all subnormal", {subnormals(n_in), subnormals(n_w)}});
    cases.push_back({"subnormal x large", {subnormals(n_in), gaussian(n_w, rng, 20000.0f)}});
    Bytes in_inf = gaussian(n_in, rng);
    Bytes w_inf = gaussian(n_w, rng);
    sprinkle_specials(in_inf, rng, 0.01);
    sprinkle_specials(w_inf, rng, 0.01);
    cases.push_back({"infinities and NaNs", {in_inf, w_inf}});
    cases.push_back({"overflow to +inf", {filled(n_in, kMaxF16), filled(n_w, kMaxF16)}});
    cases.push_back({"overflow both signs", {gaussian(n_in, rng, 30000.0f), gaussian(n_w, rng, 30000.0f)}});
    cases.push_back({"inf - inf", {filled(n_in, kInf), [&] {
                                     Bytes b = filled(n_w, kOne);
                                     for (std::size_t o = 0; o < s.out_features; ++o) {
                                       put(b, o * s.in_features + 1, 0xBC00);  // -1: +inf - inf
                                     }
                                     return b;
                                   }()}});
    for (const auto& [name, operands] : cases) {
      INFO(name << ", threads " << threads);
      const Bytes want = reference(operands.first, operands.second, s);
      require_same_bits(run(engine, Kernel::kExact, operands.first, operands.second, s), want, s);
      require_same_bits(run(engine, Kernel::kSplitK, operands.first, operands.second, s),
                        splitk_model(operands.first, operands.second, s), s);
    }
    // Spot checks of the expected values themselves.
    const Bytes ovf = run(engine, Kernel::kExact, filled(n_in, kMaxF16), filled(n_w, kMaxF16), s);
    CHECK(get(ovf, 0) == kInf);
    const Bytes nan = run(engine, Kernel::kExact, cases[5].second.first, cases[5].second.second, s);
    CHECK(get(nan, 0) == kNanOut);
  }
}

// Split-k against the scalar model: K below, at and above the block, not multiples of 256, and
// block counts 1..17 so every shape of the tree (odd carries at every level) appears; row
// counts on both sides of kSmallRows (the avx512 path's two kernel sets).
void check_splitk_order(Isa isa) {
  std::mt19937_64 rng(0x5EED0003);
  const std::size_t ks[] = {1, 7, 100, 255, 256, 257, 300, 511, 512, 513, 769, 1025, 1283,
                            1537, 1800, 2049, 2309, 2600, 3000, 3333, 3900, 4097, 4352};
  DenseLinearEngine one(1, isa);
  DenseLinearEngine two(2, isa);
  std::size_t index = 0;
  for (const std::size_t k : ks) {
    const std::size_t rows = 1 + index % 7 + (index % 2 == 0 ? 0 : vr::cpu::kSmallRows);
    const DenseLinearShape s{rows, k, 1 + (index * 13) % 37};
    INFO("shape " << shape_text(s));
    Bytes in = gaussian(s.rows * k, rng, 3.0f);
    Bytes w = gaussian(s.out_features * k, rng, 0.5f);
    if (index % 5 == 4) sprinkle_specials(w, rng, 0.001);
    const Bytes want = splitk_model(in, w, s);
    require_same_bits(run(one, Kernel::kSplitK, in, w, s), want, s);
    require_same_bits(run(two, Kernel::kSplitK, in, w, s), want, s);
    ++index;
  }
}

// The same order on data built to tell association orders apart: every block holds one non-zero
// product; a third of the products are large and come in +b/-b pairs in random blocks, the rest are small, so the exact
// sum is small but each order rounds the small terms differently against the large partial
// sums. The data is checked to have teeth: a plain left-to-right sum of the partials (and the
// reference) disagrees with the tree model for most block counts.
void check_splitk_tree_shape(Isa isa) {
  std::mt19937_64 rng(0x5EED0005);
  DenseLinearEngine one(1, isa);
  DenseLinearEngine two(2, isa);
  std::uniform_int_distribution<int> mant(0, 1023), coin(0, 1), small_exp(-10, -6);
  const std::size_t block = vr::cpu::kSplitKBlock;
  std::size_t discriminating = 0;
  for (std::size_t n = 2; n <= 17; ++n) {
    // Rows on both sides of kSmallRows (the avx512 path's two kernel sets).
    const std::size_t rows = n % 2 == 0 ? 2 : vr::cpu::kSmallRows + 2;
    const DenseLinearShape s{rows, n * block - (n % 3) * 50, 40};
    INFO("blocks " << n << " shape " << shape_text(s));
    Bytes in(2 * s.rows * s.in_features);
    for (std::size_t i = 0; i < s.rows * s.in_features; ++i) put(in, i, i < s.in_features ? 0x6400 : 0xE000);
    Bytes w(2 * s.out_features * s.in_features, 0);
    for (std::size_t o = 0; o < s.out_features; ++o) {
      std::vector<float> values(n);
      std::vector<std::size_t> order(n);
      for (std::size_t j = 0; j < n; ++j) order[j] = j;
      std::shuffle(order.begin(), order.end(), rng);
      const std::size_t pairs = (n + 1) / 3;  // +b, -b pairs of large weights (~2^14)
      for (std::size_t j = 0; j < n; ++j) {
        const float m = 1.0f + static_cast<float>(mant(rng)) / 1024.0f;
        if (j < 2 * pairs) {
          values[order[j]] = j % 2 == 0 ? std::ldexp(m, 14) : -values[order[j - 1]];
        } else {  // the rest small, either sign
          values[order[j]] = std::ldexp(m, small_exp(rng)) * (coin(rng) != 0 ? 1.0f : -1.0f);
        }
      }
      for (std::size_t j = 0; j < n; ++j) {
        const std::size_t lo = j * block;
        const std::size_t hi = std::min(lo + block, s.in_features);
        const std::size_t k = lo + static_cast<std::size_t>(rng() % (hi - lo));
        put(w, o * s.in_features + k, vr::f32_to_f16(values[j]));
      }
    }
    const Bytes want = splitk_model(in, w, s);
    if (count_diffs(want, reference(in, w, s)) > 0) ++discriminating;
    require_same_bits(run(one, Kernel::kSplitK, in, w, s), want, s);
    require_same_bits(run(two, Kernel::kSplitK, in, w, s), want, s);
  }
  CHECK(discriminating >= 10);
}

// On ordinary data split-k is measurably not the reference once K spans several blocks, and is
// the reference for K <= 256.
void check_splitk_differs(Isa isa) {
  std::mt19937_64 rng(0x5EED0004);
  DenseLinearEngine engine(2, isa);
  for (const std::size_t k : {std::size_t{1024}, std::size_t{4096}}) {
    const DenseLinearShape s{k == 1024 ? vr::cpu::kSmallRows : vr::cpu::kSmallRows + 1, k, 128};
    const Bytes in = gaussian(s.rows * k, rng);
    const Bytes w = gaussian(s.out_features * k, rng, 0.05f);
    const Bytes split = run(engine, Kernel::kSplitK, in, w, s);
    const Bytes exact = run(engine, Kernel::kExact, in, w, s);
    const std::size_t diffs = count_diffs(split, reference(in, w, s));
    INFO("K " << k << ": " << diffs << " of " << s.rows * s.out_features << " outputs differ");
    CHECK(diffs > 0);
    CHECK(count_diffs(exact, split) == diffs);
  }
  for (const std::size_t k : {std::size_t{1}, std::size_t{100}, std::size_t{255}, std::size_t{256}}) {
    const DenseLinearShape s{7, k, 45};
    const Bytes in = gaussian(s.rows * k, rng);
    const Bytes w = gaussian(s.out_features * k, rng, 0.2f);
    INFO("K " << k);
    require_same_bits(run(engine, Kernel::kSplitK, in, w, s), reference(in, w, s), s);
  }
}

// Empty shapes: K = 0 gives +0 everywhere; no rows or no outputs writes nothing.
void check_degenerate(Isa isa) {
  DenseLinearEngine engine(2, isa);
  CHECK(engine.threads() == 2);
  CHECK(engine.isa() == isa);
  Bytes out(2 * 3 * 5, 0xEE);
  CHECK(engine.dense_linear_exact(nullptr, nullptr, out.data(), DenseLinearShape{3, 0, 5}));
  CHECK(out == Bytes(out.size(), 0));
  Bytes untouched(8, 0xEE);
  CHECK(engine.dense_linear_splitk(nullptr, nullptr, untouched.data(), DenseLinearShape{0, 4, 4}));
  CHECK(engine.dense_linear_exact(nullptr, nullptr, untouched.data(), DenseLinearShape{4, 4, 0}));
  CHECK(untouched == Bytes(8, 0xEE));
}

// Every micro-kernel of a path's kernel set (kernel_set.h), called directly: mr rows x np panels
// for every mr <= kMaxMr and np <= kMaxNp, from +0 and continuing from given accumulators, over
// k lengths around the unroll and the tile, against a scalar model (acc + a * w in f32, k
// ascending: the product of two f16 values is exact, so that is the FMA's result too), bit for
// bit, with guard columns that must stay untouched. The engine's blocking reaches only some
// (mr, np) pairs for a given shape (the avx512 path's own kernels only above kSmallRows rows);
// this reaches every one.
void check_micro_kernels(Isa isa) {
  const vr::cpu::kernels::KernelSet& set = vr::cpu::kernels::kernel_set(isa);
  std::mt19937_64 rng(0x5EED0006);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::uniform_int_distribution<int> scale(-12, 6);
  // An f16 value as f32: mostly ordinary numbers of mixed scales (so the order of additions
  // shows in the roundings), some subnormals and signed zeros.
  auto f16_value = [&]() {
    const std::uint64_t pick = rng() % 16;
    if (pick == 0) return vr::f16_to_f32(static_cast<std::uint16_t>(rng() % 0x400 | (rng() % 2) << 15));
    if (pick == 1) return rng() % 2 == 0 ? 0.0f : -0.0f;
    return vr::f16_to_f32(vr::f32_to_f16(std::ldexp(dist(rng), scale(rng))));
  };
  const std::size_t nr = set.nr;
  constexpr float kGuard = -12345.5f;
  for (std::size_t mr = 1; mr <= vr::cpu::kernels::kMaxMr; ++mr) {
    for (std::size_t np = 1; np <= vr::cpu::kernels::kMaxNp; ++np) {
      for (const std::size_t kc : {std::size_t{1}, std::size_t{5}, std::size_t{17},
                                   vr::cpu::kSplitKBlock}) {
        const std::size_t lda = kc + 3;
        const std::size_t panel_stride = kc * nr + 8;
        const std::size_t ldc = np * nr + 3;
        std::vector<float> a(mr * lda), b(np * panel_stride), start(mr * ldc);
        for (float& x : a) x = f16_value();
        for (float& x : b) x = f16_value();
        for (float& x : start) x = dist(rng) * 4.0f;
        for (const bool accumulate : {false, true}) {
          INFO(vr::cpu::isa_name(isa) << ": mr " << mr << " np " << np << " kc " << kc
                                      << (accumulate ? ", accumulating" : ", from +0"));
          std::vector<float> c = start;
          for (std::size_t r = 0; r < mr; ++r) {
            for (std::size_t j = np * nr; j < ldc; ++j) c[r * ldc + j] = kGuard;
          }
          std::vector<float> want = c;
          for (std::size_t r = 0; r < mr; ++r) {
            for (std::size_t o = 0; o < np * nr; ++o) {
              float acc = accumulate ? c[r * ldc + o] : 0.0f;
              for (std::size_t k = 0; k < kc; ++k) {
                acc = acc + a[r * lda + k] * b[(o / nr) * panel_stride + k * nr + o % nr];
              }
              want[r * ldc + o] = acc;
            }
          }
          set.micro[mr - 1][np - 1](a.data(), lda, b.data(), panel_stride, kc, c.data(), ldc,
                                    accumulate);
          REQUIRE(std::memcmp(c.data(), want.data(), c.size() * sizeof(float)) == 0);
        }
      }
    }
  }
}

#define VTRACE_REQUIRE_ISA(isa)                                                   \
  do {                                                                            \
    if (!vr::cpu::isa_supported(isa)) {                                           \
      VTRACE_SKIP(std::string("this CPU cannot run the ") +                      \
                  std::string(vr::cpu::isa_name(isa)) + " dense-linear path");    \
    }                                                                             \
  } while (false)

}  // namespace

TEST_CASE("cpu kernels: every worker computes in the caller's floating-point environment") {
  // Engines made in the default rounding mode, run after the caller rounds upward: the tasks of
  // the 4-thread engine's workers must round as the caller does, as the 1-thread engine (all on
  // the caller) and the reference model do.
  struct RestoreRounding {
    ~RestoreRounding() { std::fesetround(FE_TONEAREST); }
  } restore;
  const DenseLinearShape s{4, 1024, 512};
  std::mt19937_64 rng(0x5EED0007);
  const Bytes in = gaussian(s.rows * s.in_features, rng);
  const Bytes w = gaussian(s.out_features * s.in_features, rng, 0.25f);
  for (const Isa isa : {Isa::kPortable, Isa::kAvx2F16c, Isa::kAvx512}) {
    if (!vr::cpu::isa_supported(isa)) continue;
    INFO(vr::cpu::isa_name(isa));
    DenseLinearEngine one(1, isa);
    DenseLinearEngine four(4, isa);
    REQUIRE(four.threads() == 4);
    REQUIRE(std::fesetround(FE_UPWARD) == 0);
    const Bytes want = reference(in, w, s);
    const Bytes by_one = run(one, Kernel::kExact, in, w, s);
    const Bytes by_four = run(four, Kernel::kExact, in, w, s);
    const Bytes split_one = run(one, Kernel::kSplitK, in, w, s);
    const Bytes split_four = run(four, Kernel::kSplitK, in, w, s);
    REQUIRE(std::fesetround(FE_TONEAREST) == 0);
    CHECK(count_diffs(want, reference(in, w, s)) > 0);  // the mode changes these results
    require_same_bits(by_one, want, s);
    require_same_bits(by_four, want, s);
    CHECK(count_diffs(split_one, split_four) == 0);
  }
}

TEST_CASE("cpu kernels: an engine used in a child forked after its workers started runs there") {
#if defined(__SANITIZE_THREAD__)
  VTRACE_SKIP("ThreadSanitizer does not follow a fork of a process with threads");
#else
  // The child has none of the workers: a launch that waited for them would never return.
  const DenseLinearShape s{4, 256, 64};
  std::mt19937_64 rng(0x5EED0008);
  const Bytes in = gaussian(s.rows * s.in_features, rng);
  const Bytes w = gaussian(s.out_features * s.in_features, rng, 0.25f);
  const Bytes want = reference(in, w, s);
  DenseLinearEngine two(2, vr::cpu::detect_isa());
  REQUIRE(two.threads() == 2);
  require_same_bits(run(two, Kernel::kExact, in, w, s), want, s);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::alarm(10);  // a hang ends as SIGALRM
    Bytes out(want.size());
    const bool ran = two.dense_linear_exact(in.data(), w.data(), out.data(), s);
    ::_exit(!ran ? 2 : out == want ? 0 : 3);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  INFO("wait status " << status);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
#endif
}

TEST_CASE("cpu kernels: ISA names round-trip and detection picks a supported path") {
  for (const Isa isa : {Isa::kPortable, Isa::kAvx2F16c, Isa::kAvx512}) {
    CHECK(vr::cpu::parse_isa(vr::cpu::isa_name(isa)) == isa);
  }
  CHECK_FALSE(vr::cpu::parse_isa("sse2").has_value());
  CHECK(vr::cpu::isa_supported(Isa::kPortable));
  CHECK(vr::cpu::isa_supported(vr::cpu::detect_isa()));
  if (vr::cpu::isa_supported(Isa::kAvx512)) CHECK(vr::cpu::detect_isa() == Isa::kAvx512);
  CHECK(DenseLinearEngine(0, Isa::kPortable).threads() >= 1);
}

// One TEST_CASE per path and property: a skipped path never shares a test with a checked one.
#define VTRACE_ISA_TEST_CASES(isa, label)                                                      \
  TEST_CASE("cpu kernels " label ": exact matches the reference on every f16 pattern") {      \
    VTRACE_REQUIRE_ISA(isa);                                                                   \
    check_all_patterns(isa);                                                                   \
  }                                                                                            \
  TEST_CASE("cpu kernels " label ": exact matches the reference on random shapes") {          \
    VTRACE_REQUIRE_ISA(isa);                                                                   \
    check_random_shapes(isa);                                                                  \
  }                                                                                            \
  TEST_CASE("cpu kernels " label ": subnormal, infinite, NaN and overflowing operands") {     \
    VTRACE_REQUIRE_ISA(isa);                                                                   \
    check_special_values(isa);                                                                 \
  }                                                                                            \
  TEST_CASE("cpu kernels " label ": split-k follows its documented order") {                  \
    VTRACE_REQUIRE_ISA(isa);                                                                   \
    check_splitk_order(isa);                                                                   \
  }                                                                                            \
  TEST_CASE("cpu kernels " label ": split-k combines its blocks as the documented tree") {    \
    VTRACE_REQUIRE_ISA(isa);                                                                   \
    check_splitk_tree_shape(isa);                                                              \
  }                                                                                            \
  TEST_CASE("cpu kernels " label ": split-k differs from the reference only past one block") { \
    VTRACE_REQUIRE_ISA(isa);                                                                   \
    check_splitk_differs(isa);                                                                 \
  }                                                                                            \
  TEST_CASE("cpu kernels " label ": empty shapes") {                                          \
    VTRACE_REQUIRE_ISA(isa);                                                                   \
    check_degenerate(isa);                                                                     \
  }                                                                                            \
  TEST_CASE("cpu kernels " label ": every micro-kernel equals the scalar model") {             \
    VTRACE_REQUIRE_ISA(isa);                                                                   \
    check_micro_kernels(isa);                                                                  \
  }

VTRACE_ISA_TEST_CASES(Isa::kPortable, "portable")
VTRACE_ISA_TEST_CASES(Isa::kAvx2F16c, "avx2-f16c")
VTRACE_ISA_TEST_CASES(Isa::kAvx512, "avx512")

// ---- worker threads ----------------------------------------------------------------------------

TEST_CASE("cpu runtime: more worker threads than it takes are refused before any starts") {
  for (const char* name : {"cpu", "cpu-splitk"}) {
    INFO(name);
    vtrace::runtime::RuntimeOpenOptions options;
    options.threads = vtrace::runtime::cpu::kCpuMaxThreads + 1;
    auto opened = vtrace::runtime::default_registry().open(name, options);
    REQUIRE_FALSE(opened.has_value());
    CHECK(opened.error().kind() == vtrace::runtime::ErrorKind::kRuntimeUnavailable);
    CHECK_THAT(opened.error().message(), Catch::Contains("1025 worker threads asked; it takes at "
                                                         "most 1024"));
    options.threads = 3;
    CHECK(vtrace::runtime::default_registry().open(name, options).has_value());
  }
}

TEST_CASE("cpu runtime: exactly the most worker threads it takes are taken") {
  vtrace::runtime::RuntimeOpenOptions options;
  options.threads = vtrace::runtime::cpu::kCpuMaxThreads;
  auto opened = vtrace::runtime::default_registry().open("cpu", options);
  if (!opened && opened.error().message().find("the system refused") != std::string::npos) {
    VTRACE_SKIP("this machine does not start 1024 threads: " + opened.error().message());
  }
  REQUIRE(opened.has_value());
  const auto* cpu = dynamic_cast<const vr::cpu::CpuRuntime*>(opened->get());
  REQUIRE(cpu != nullptr);
  CHECK(cpu->threads() == vtrace::runtime::cpu::kCpuMaxThreads);
}

TEST_CASE("cpu runtime: worker threads the system refuses to start are an error, not an abort") {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  VTRACE_SKIP("an address-space limit breaks the sanitizer's own reservations");
#else
  // A child whose address space has room for a few thread stacks (8 MiB each), not for 64: the
  // pool's std::thread throws, which must come back as the runtime's error.
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    long pages = 0;
    {
      std::FILE* statm = std::fopen("/proc/self/statm", "r");
      if (statm == nullptr || std::fscanf(statm, "%ld", &pages) != 1) ::_exit(10);
      std::fclose(statm);
    }
    const rlim_t room = static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE)) +
                        (24u << 20);
    const struct rlimit limit {room, room};
    if (::setrlimit(RLIMIT_AS, &limit) != 0) ::_exit(11);
    vtrace::runtime::RuntimeOpenOptions options;
    options.threads = 64;
    auto opened = vtrace::runtime::default_registry().open("cpu", options);
    if (opened) ::_exit(12);  // all 64 started: the limit did not bite
    const bool said = opened.error().kind() == vtrace::runtime::ErrorKind::kRuntimeUnavailable &&
                      opened.error().message().find("refused to start all its worker threads") !=
                          std::string::npos;
    ::_exit(said ? 0 : 13);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  INFO("wait status " << status);
  REQUIRE(WIFEXITED(status));  // not killed by std::terminate's abort
  CHECK(WEXITSTATUS(status) == 0);
#endif
}

// ---- memory a batch cannot get ------------------------------------------------------------------

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
namespace {

// The child's part of the next test; its exit code says which step went wrong (0: all held).
int batch_without_scratch_child(const char* runtime_name) {
  namespace im = vtrace::runtime::immediate;
  vr::RuntimeOpenOptions options;
  options.threads = 1;
  options.device_memory_bytes = 1ull << 30;
  auto opened = vr::default_registry().open(runtime_name, options);
  if (!opened) return 20;
  vr::DeviceRuntime& runtime = **opened;
  auto stream = runtime.create_stream();
  // Input 128 MiB, scratch 256 MiB: beyond glibc's largest mmap threshold (32 MiB), so neither
  // can come from heap memory the process already has (which earlier tests may have freed).
  constexpr std::uint64_t kRows = 2048, kIn = 32768, kOut = 1;
  const auto allocate = [&](const char* id, vr::ElementType type, std::uint64_t count) {
    return im::allocate_buffer(runtime, id, type, count, vr::BufferUsage::kActivations, 64);
  };
  auto input = allocate("resource.input", vr::ElementType::kF16, kRows * kIn);
  auto weight = allocate("resource.weight", vr::ElementType::kF16, kIn * kOut);
  auto output = allocate("resource.output", vr::ElementType::kF16, kRows * kOut);
  auto marker = allocate("resource.marker", vr::ElementType::kU8, 4);
  if (!stream || !input || !weight || !output || !marker) return 21;
  const Bytes big(2 * kRows * kIn, 0x3C);  // an upload as large as the input, made before the limit

  // Room for 16 MiB more: the buffers and the pool's stacks exist, the kernel's scratch does not.
  long pages = 0;
  std::FILE* statm = std::fopen("/proc/self/statm", "r");
  if (statm == nullptr || std::fscanf(statm, "%ld", &pages) != 1) return 22;
  std::fclose(statm);
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_AS, &limit) != 0) return 23;
  const struct rlimit unlimited = limit;
  limit.rlim_cur = static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE)) +
                   (16u << 20);
  if (::setrlimit(RLIMIT_AS, &limit) != 0) return 24;

  const Bytes mark = {1, 2, 3, 4};
  const auto u8x4 = *vr::HostTransferLayout::create(vr::ElementType::kU8, 4);
  auto upload = runtime.encode_upload(mark, u8x4, **marker, 0);
  const vr::DenseLinearLaunch launch{{input->get(), 0, 2 * kRows * kIn},
                                     {weight->get(), 0, 2 * kIn * kOut},
                                     {output->get(), 0, 2 * kRows * kOut},
                                     kRows, kIn, kOut};
  auto dense = runtime.encode_dense_linear({std::span(&launch, 1), 1, kRows});
  if (!upload || !dense) return 25;
  const auto before = runtime.counter_snapshot();
  vr::CommandBatch batch;
  batch.push_compute(std::move(*upload));
  batch.push_compute(std::move(*dense));
  auto fence = runtime.submit(**stream, std::move(batch));
  if (fence) return 30;  // the scratch fitted: the limit did not bite
  const vr::RuntimeError& refused = fence.error().error();
  if (refused.kind() != vr::ErrorKind::kInternal) return 31;
  if (refused.message() != std::string(runtime_name) +
                               " cannot allocate the scratch memory of a 2048x32768x1 dense "
                               "linear; nothing ran") {
    std::fprintf(stderr, "message: %s\n", refused.message().c_str());
    return 32;
  }
  if (runtime.counter_snapshot() != before) return 33;  // no upload counted, no submission
  // An upload's encode-time copy that cannot be had is the encoder's error, not an exception.
  const auto f16s = *vr::HostTransferLayout::create(vr::ElementType::kF16, kRows * kIn);
  auto too_big = runtime.encode_upload(big, f16s, **input, 0);
  if (too_big || too_big.error().kind() != vr::ErrorKind::kInternal ||
      too_big.error().message() != std::string(runtime_name) +
                                       " cannot allocate 134217728 bytes to hold the upload's copy") {
    std::fprintf(stderr, "upload: %s\n", too_big ? "encoded" : too_big.error().message().c_str());
    return 34;
  }

  if (::setrlimit(RLIMIT_AS, &unlimited) != 0) return 40;
  // Nothing of the refused batch ran: the marker still holds zeros.
  auto seen = im::readback(runtime, **stream, **marker);
  if (!seen || *seen != Bytes(4, 0)) return 41;
  // With the memory back, the same work runs.
  if (!im::upload(runtime, **stream, **marker, mark)) return 42;
  auto again = runtime.encode_dense_linear({std::span(&launch, 1), 1, kRows});
  if (!again || !im::submit_and_wait(runtime, **stream, vr::CommandBatch::singleton(std::move(*again)))) {
    return 43;
  }
  return 0;
}

}  // namespace
#endif

TEST_CASE("cpu runtimes: a batch whose kernel scratch cannot be had is refused whole, nothing run") {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  VTRACE_SKIP("an address-space limit breaks the sanitizer's own reservations");
#else
  for (const char* name : {"cpu", "cpu-splitk"}) {
    INFO(name);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      int code = 50;  // an exception escaped (std::bad_alloc)
      try {
        code = batch_without_scratch_child(name);
      } catch (...) {
      }
      ::_exit(code);
    }
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    INFO("wait status " << status);
    REQUIRE(WIFEXITED(status));  // not killed by an uncaught std::bad_alloc
    CHECK(WEXITSTATUS(status) == 0);
  }
#endif
}
