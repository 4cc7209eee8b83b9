// The strict CUDA kernel's arithmetic, compiled for the host (runtime/cuda/src/strict_arith.h),
// against the reference runtime: the NaN output rule, the fmaf step against the reference's
// multiply-then-add, and the two kernels' own device code (runtime/cuda/src/kernels_device.h,
// compiled here for the host through cuda_host_shim.h: a std::thread per CUDA thread) against
// the reference dense-linear kernel on shapes with odd tails (k, rows and outputs not multiples
// of the tiles), every row count of the decode kernel, aligned and unaligned operands, and tiled
// launches split into row chunks. Needs no GPU
// and no CUDA toolkit: it runs in every build. On the host the staging conversion is f16_bits.h's
// to_f32 (numerics_test checks it on every pattern); the device's (cvt.f32.f16) is checked by
// the conformance suite's every-pattern case on a GPU.
#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <random>
#include <utility>
#include <vector>

#include "cuda_host_shim.h"  // before kernels_device.h: CUDA's names, on the host
#include "kernels_device.h"
#include "reference/dense_linear_kernel.h"
#include "strict_arith.h"
#include "vtrace/runtime/f16.h"

namespace {

namespace strict = vtrace::runtime::cuda::strict;
namespace rt = vtrace::runtime;

std::uint32_t bits_of(float value) { return std::bit_cast<std::uint32_t>(value); }

// f16 bits of data on which the summation order shows: mostly values of random sign and
// mantissa over a wide range of magnitudes (2^-10 .. 2^10), so partial sums are large against
// the result and a changed order rounds differently somewhere; some gaussian values,
// and, when `specials`, subnormals, infinities and NaNs (with payloads), so special values reach
// the reductions too.
std::vector<std::uint16_t> random_f16(std::mt19937& rng, std::size_t count, bool specials) {
  std::normal_distribution<float> gaussian(0.0f, 1.0f);
  std::uniform_int_distribution<int> kind(0, 199);
  std::uniform_int_distribution<int> exponent(-10, 10);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  std::uniform_int_distribution<std::uint32_t> any(0, 0xFFFF);
  std::vector<std::uint16_t> values(count);
  for (auto& v : values) {
    const int k = specials ? kind(rng) : kind(rng) % 190;
    if (k < 160) {
      const float sign = any(rng) % 2 == 0 ? 1.0f : -1.0f;
      v = rt::f32_to_f16(sign * std::ldexp(mantissa(rng), exponent(rng)));
    } else if (k < 190) {
      v = rt::f32_to_f16(gaussian(rng));
    } else if (k < 196) {
      v = static_cast<std::uint16_t>(any(rng) & 0x83FFu);  // subnormal or zero
    } else if (k < 197) {
      v = static_cast<std::uint16_t>(0x7C00u | (any(rng) & 0x8000u));  // infinity
    } else if (k < 198) {
      v = static_cast<std::uint16_t>(0x7C00u | (any(rng) & 0x83FFu) | 1u);  // NaN
    } else {
      v = static_cast<std::uint16_t>(any(rng));
    }
  }
  return values;
}

std::vector<std::uint8_t> to_bytes(const std::vector<std::uint16_t>& values) {
  std::vector<std::uint8_t> bytes(values.size() * 2);
  for (std::size_t i = 0; i < values.size(); ++i) {
    bytes[2 * i] = static_cast<std::uint8_t>(values[i] & 0xFFu);
    bytes[2 * i + 1] = static_cast<std::uint8_t>(values[i] >> 8);
  }
  return bytes;
}

std::vector<std::uint16_t> from_bytes(const std::vector<std::uint8_t>& bytes) {
  std::vector<std::uint16_t> values(bytes.size() / 2);
  for (std::size_t i = 0; i < values.size(); ++i) {
    values[i] = static_cast<std::uint16_t>(bytes[2 * i] | (bytes[2 * i + 1] << 8));
  }
  return values;
}

struct Shape {
  long rows, k, out;
};

// The outputs of one shape by `emulate`, by the reference kernel, and by the reference's order
// reversed (k descending), on random data (with special values for every fourth seed).
struct Outcome {
  std::size_t differing = 0;    // emulate vs reference
  std::size_t order_shows = 0;  // reversed order vs reference: the data can catch a reorder
};
template <typename Emulate>
Outcome run_shape(const Shape& s, std::uint32_t seed, Emulate emulate) {
  std::mt19937 rng(seed);
  const bool specials = seed % 4 == 0;
  auto input = random_f16(rng, static_cast<std::size_t>(s.rows * s.k), specials);
  auto weight = random_f16(rng, static_cast<std::size_t>(s.out * s.k), specials);
  // Cancellation, so that rounding noise reaches the f16 result and any change of order shows:
  // every fourth k-pair of every row holds one large value twice, and the odd outputs' weights
  // hold a large w and -w there, so those products cancel exactly in real arithmetic while each
  // f32 partial sum is rounded at their size.
  std::uniform_int_distribution<int> big(6, 12);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  for (long k = 0; k + 1 < s.k; k += 8) {
    for (long r = 0; r < s.rows; ++r) {
      const auto h = rt::f32_to_f16(std::ldexp(mantissa(rng), big(rng)));
      input[static_cast<std::size_t>(r * s.k + k)] = h;
      input[static_cast<std::size_t>(r * s.k + k + 1)] = h;
    }
    for (long o = 1; o < s.out; o += 2) {
      const auto h = rt::f32_to_f16(std::ldexp(mantissa(rng), big(rng)));
      weight[static_cast<std::size_t>(o * s.k + k)] = h;
      weight[static_cast<std::size_t>(o * s.k + k + 1)] = static_cast<std::uint16_t>(h ^ 0x8000u);
    }
  }
  std::vector<std::uint16_t> actual(static_cast<std::size_t>(s.rows * s.out), 0xFFFFu);
  emulate(input.data(), weight.data(), actual.data(), s);
  const auto expected = from_bytes(rt::reference::dense_linear_f16(
      to_bytes(input), to_bytes(weight), static_cast<std::size_t>(s.rows),
      static_cast<std::size_t>(s.k), static_cast<std::size_t>(s.out)));
  Outcome outcome;
  for (long r = 0; r < s.rows; ++r) {
    for (long o = 0; o < s.out; ++o) {
      const auto e = static_cast<std::size_t>(r * s.out + o);
      outcome.differing += actual[e] != expected[e] ? 1u : 0u;
      float reversed = +0.0f;
      for (long k = s.k - 1; k >= 0; --k) {
        reversed = reversed + rt::f16_to_f32(input[static_cast<std::size_t>(r * s.k + k)]) *
                                  rt::f16_to_f32(weight[static_cast<std::size_t>(o * s.k + k)]);
      }
      outcome.order_shows += strict::output_bits(reversed) != expected[e] ? 1u : 0u;
    }
  }
  return outcome;
}

// Rows and outputs whose every product is -0 (a -0 input, or a negative one times a +0 weight):
// the reference's sum starts at +0, so each such output is +0 (0x0000); a kernel whose
// accumulator starts at -0 (or at its first product) writes -0 there. Returns how many outputs
// differ from the reference's, and REQUIREs that the data holds such outputs.
template <typename Emulate>
std::size_t signed_zero_outputs_differing(const Shape& s, Emulate emulate) {
  std::vector<std::uint16_t> input(static_cast<std::size_t>(s.rows * s.k));
  std::vector<std::uint16_t> weight(static_cast<std::size_t>(s.out * s.k));
  for (long r = 0; r < s.rows; ++r) {
    for (long k = 0; k < s.k; ++k) {
      // -0, -1, or -(k + 1) / 8: never positive, so a +0 weight makes every product -0.
      const std::uint16_t value = r % 3 == 0   ? std::uint16_t{0x8000}
                                  : r % 3 == 1 ? std::uint16_t{0xBC00}
                                               : rt::f32_to_f16(-static_cast<float>(k + 1) / 8);
      input[static_cast<std::size_t>(r * s.k + k)] = value;
    }
  }
  for (long o = 0; o < s.out; ++o) {
    for (long k = 0; k < s.k; ++k) {
      weight[static_cast<std::size_t>(o * s.k + k)] = o % 2 == 0 ? 0x3C00 : 0x0000;  // 1 or +0
    }
  }
  std::vector<std::uint16_t> actual(static_cast<std::size_t>(s.rows * s.out), 0xFFFFu);
  emulate(input.data(), weight.data(), actual.data(), s);
  const auto expected = from_bytes(rt::reference::dense_linear_f16(
      to_bytes(input), to_bytes(weight), static_cast<std::size_t>(s.rows),
      static_cast<std::size_t>(s.k), static_cast<std::size_t>(s.out)));
  REQUIRE(std::count(expected.begin(), expected.end(), std::uint16_t{0x0000}) > 0);
  std::size_t differing = 0;
  for (std::size_t e = 0; e < expected.size(); ++e) differing += actual[e] != expected[e] ? 1u : 0u;
  return differing;
}

// ---- the device code on the host (cuda_host_shim.h) ---------------------------------------------
namespace device = vtrace::runtime::cuda::kernels::device;
namespace shim = vtrace::cuda_host_shim;

// Operand bytes at an address that is 16-byte aligned plus `offset` (0: aligned; 2: only the
// f16 alignment, which takes the kernels' byte loads).
struct Operand {
  std::vector<uint4> storage;
  const std::uint8_t* bytes = nullptr;
  Operand(const std::uint16_t* values, std::size_t count, std::size_t offset)
      : storage((2 * count + offset) / sizeof(uint4) + 1) {
    auto* base = reinterpret_cast<std::uint8_t*>(storage.data()) + offset;
    std::memcpy(base, values, 2 * count);  // little-endian f16, as the device buffers hold them
    bytes = base;
  }
};

// `vec` as kernels.cu's launcher chooses it (device::vector_loads).
bool vec_loads(const Operand& a, const Operand& w, long k) {
  return device::vector_loads(a.bytes, w.bytes, k);
}

template <int Rows, int RowsPerThread, int TileK, int Stages, int Warps>
void run_decode_on_host(const Operand& a, const Operand& w, std::uint8_t* out, long k, long outs) {
  const unsigned blocks = device::decode_blocks(outs);
  const bool vec = vec_loads(a, w, k);
  using Geometry = device::DecodeShape<Rows, RowsPerThread, TileK, Stages, Warps>;
  shim::launch(
      {blocks, 1, 1}, {static_cast<unsigned>(strict::kDecodeTileOut), Warps, 1},
      [&] {
        device::decode_kernel<Rows, RowsPerThread, TileK, Stages, Warps>(a.bytes, w.bytes, out, k,
                                                                         outs, vec);
      },
      Geometry::kSharedBytes);
}

// converted_decode_kernel<Rows, ...> in configuration C (strict_arith.h, ConvertedConfig).
template <int Rows, typename C>
void run_converted_on_host(const Operand& a, const Operand& w, std::uint8_t* out, long k,
                           long outs) {
  using Geometry = device::ConvertedShapeOf<Rows, C>;
  shim::launch(
      {device::decode_blocks(outs), 1, 1}, {32, static_cast<unsigned>(Geometry::kWarps), 1},
      [&] {
        device::converted_decode_kernel<Rows, Geometry::kRowLanes, C::kOutsPerLane, C::kTileK,
                                        C::kStages, C::kConvertWarps>(a.bytes, w.bytes, out, k,
                                                                      outs, vec_loads(a, w, k));
      },
      Geometry::kSharedBytes);
}

// Which decode kernel instance device_decode runs: decode_kernel as the launcher has it
// (DecodeConfig), or two rows per thread (at most the row count), tiles of 64 k, three stages
// and as many warps as rows need (the other corner of what docs/CUDA.md says was measured); or
// converted_decode_kernel in a configuration the launcher has (strict::Decode), or with four
// outputs per lane, tiles of 32 k, two stages and one converting warp (a thread converts
// several groups per tile, the rings wrap every other tile).
enum class DecodeVariant : std::uint8_t {
  kLauncher,
  kTwoRowsShortTiles,
  kConvertedWarp8x4,
  kConvertedWarp8x8,
  kConvertedFitRows,
  kConvertedShortTiles,
};

template <int Rows>
void run_decode_variant(const Operand& a, const Operand& w, std::uint8_t* out, long k, long outs,
                        DecodeVariant v) {
  using C = device::DecodeConfig<Rows>;
  const auto converted = [&](auto config) {
    run_converted_on_host<Rows, decltype(config)>(a, w, out, k, outs);
  };
  if (v == DecodeVariant::kLauncher) {
    run_decode_on_host<Rows, C::kRowsPerThread, C::kTileK, C::kStages, C::kWarps>(a, w, out, k,
                                                                                  outs);
  } else if (v == DecodeVariant::kConvertedWarp8x4) {
    REQUIRE(strict::with_converted_config(strict::Decode::kConvertedWarp8x4, converted));
  } else if (v == DecodeVariant::kConvertedWarp8x8) {
    REQUIRE(strict::with_converted_config(strict::Decode::kConvertedWarp8x8, converted));
  } else if (v == DecodeVariant::kConvertedFitRows) {
    REQUIRE(strict::with_converted_config(strict::Decode::kConvertedFitRows, converted));
  } else if (v == DecodeVariant::kConvertedShortTiles) {
    converted(strict::ConvertedConfig<4, 32, 2, 1>{});
  } else {
    constexpr int kRpt = Rows >= 2 ? 2 : 1;
    run_decode_on_host<Rows, kRpt, 64, 3, (Rows + kRpt - 1) / kRpt>(a, w, out, k, outs);
  }
}

// The decode kernel's device code for rows 1..8, operands at `offset` from 16-byte alignment.
void device_decode(const std::uint16_t* in, const std::uint16_t* w, std::uint16_t* out,
                   const Shape& s, std::size_t offset,
                   DecodeVariant variant = DecodeVariant::kLauncher) {
  const Operand a(in, static_cast<std::size_t>(s.rows * s.k), offset);
  const Operand b(w, static_cast<std::size_t>(s.out * s.k), offset);
  std::vector<std::uint8_t> result(static_cast<std::size_t>(2 * s.rows * s.out), 0xFF);
  const auto run = [&](auto rows_constant) {
    run_decode_variant<decltype(rows_constant)::value>(a, b, result.data(), s.k, s.out, variant);
  };
  if (!device::with_decode_rows(s.rows, run))
    FAIL("the decode kernel takes 1 to 8 rows, not " << s.rows);
  std::memcpy(out, result.data(), result.size());
}

// The device code of the kernel `prefill` names (the tiled kernel, or a configuration of the
// pipelined kernel), its row blocks launched `chunk` at a time by the launcher's own
// device::for_each_row_chunk (kernels.cu launches kMaxRowBlocks at a time, gridDim.y's limit; a
// smaller chunk exercises row_base).
void device_prefill(const std::uint16_t* in, const std::uint16_t* w, std::uint16_t* out,
                    const Shape& s, std::size_t offset, unsigned chunk,
                    strict::Prefill prefill = strict::Prefill::kTiled) {
  const Operand a(in, static_cast<std::size_t>(s.rows * s.k), offset);
  const Operand b(w, static_cast<std::size_t>(s.out * s.k), offset);
  std::vector<std::uint8_t> result(static_cast<std::size_t>(2 * s.rows * s.out), 0xFF);
  const bool vec = vec_loads(a, b, s.k);
  // kernel(row_base) runs one block's threads of the chunk whose first row is row_base.
  const auto launch_chunks = [&](int tile_rows, int tile_out, int threads, const auto& kernel) {
    const bool all = device::for_each_row_chunk(
        s.rows, s.out, tile_rows, tile_out, chunk,
        [&](unsigned blocks_x, unsigned blocks_y, long long row_base) {
          shim::launch({blocks_x, blocks_y, 1}, {static_cast<unsigned>(threads), 1, 1},
                       [&] { kernel(row_base); });
          return true;
        });
    REQUIRE(all);
  };
  const auto pipelined = [&](auto config) {
    using C = decltype(config);
    using Geometry =
        device::PipelinedShape<C::kTileRows, C::kTileOut, C::kMicroRows, C::kMicroOut, C::kTileK>;
    launch_chunks(C::kTileRows, C::kTileOut, Geometry::kThreads, [&](long long row_base) {
      device::pipelined_kernel<C::kTileRows, C::kTileOut, C::kMicroRows, C::kMicroOut, C::kTileK>(
          a.bytes, b.bytes, result.data(), s.rows, row_base, s.k, s.out, vec);
    });
  };
  if (!strict::with_pipelined_config(prefill, pipelined)) {
    launch_chunks(
        strict::kTiledTileRows, strict::kTiledTileOut, strict::kTiledThreads, [&](long row_base) {
          device::tiled_kernel(a.bytes, b.bytes, result.data(), s.rows, row_base, s.k, s.out, vec);
        });
  }
  std::memcpy(out, result.data(), result.size());
}

// The pipelined kernel's configurations (strict_arith.h, Prefill), each named for a message.
constexpr std::pair<strict::Prefill, const char*> kPipelinedConfigs[] = {
    {strict::Prefill::kPipelined64x64Micro4x4K32, "64x64 blocks, 4x4 per thread, tiles of 32"},
    {strict::Prefill::kPipelined32x64Micro4x4K32, "32x64 blocks, 4x4 per thread, tiles of 32"},
    {strict::Prefill::kPipelined64x64Micro4x8K32, "64x64 blocks, 4x8 per thread, tiles of 32"},
};

}  // namespace

TEST_CASE("cuda strict output_bits writes NaN as 0x7E00 and every other value as f32_to_f16",
          "[cuda][arith]") {
  std::mt19937 rng(0xBA5E);
  std::uniform_int_distribution<std::uint32_t> any;
  std::size_t nans = 0;
  for (int i = 0; i < 1'000'000; ++i) {
    // Half of them NaN (random payload and sign).
    std::uint32_t bits = any(rng);
    if (i % 2 == 0) bits |= 0x7F800001u;
    const float value = std::bit_cast<float>(bits);
    const std::uint16_t expected =
        std::isnan(value) ? rt::reference::kDenseLinearNanOutput : rt::f32_to_f16(value);
    nans += std::isnan(value) ? 1u : 0u;
    REQUIRE(strict::output_bits(value) == expected);
  }
  CHECK(nans >= 500'000);
}

TEST_CASE(
    "cuda strict accumulate (one fmaf) equals the reference's rounded multiply then add for f16 "
    "operands",
    "[cuda][arith]") {
  // The bit-exact argument: an f16 x f16 product is exact in f32, so fmaf rounds once where the
  // reference rounds the exact product (no change) and then the sum.
  std::mt19937 rng(0xF00D);
  std::uniform_int_distribution<std::uint32_t> any_f16(0, 0xFFFF);
  std::normal_distribution<float> gaussian(0.0f, 64.0f);
  std::size_t differing = 0;
  for (int i = 0; i < 2'000'000; ++i) {
    const float a = rt::f16_to_f32(static_cast<std::uint16_t>(any_f16(rng)));
    const float w = rt::f16_to_f32(static_cast<std::uint16_t>(any_f16(rng)));
    // Accumulators: running-sum sizes, exact f16 values, zeros of both signs.
    const float acc = i % 3 == 0   ? gaussian(rng)
                      : i % 3 == 1 ? rt::f16_to_f32(static_cast<std::uint16_t>(any_f16(rng)))
                                   : (i % 2 == 0 ? 0.0f : -0.0f);
    const float product = a * w;  // -ffp-contract=off: rounded, then added
    const float expected = acc + product;
    const float actual = strict::accumulate(acc, a, w);
    const bool same =
        bits_of(actual) == bits_of(expected) || (std::isnan(actual) && std::isnan(expected));
    differing += same ? 0u : 1u;
  }
  CHECK(differing == 0);
}

// Every shape of rows x k x out from the lists, with operands at 0 and 2 bytes from 16-byte
// alignment, through kernel(in, w, out, shape, offset, chunk), whose chunk alternates between
// the launcher's (kMaxRowBlocks) and one row block (for the kernels launched in row chunks): each
// case must equal the reference bit for bit. Seeds count up from `seed`. Answers how many cases
// ran and how many outputs their data made order-sensitive (reversing k changes them).
struct Sweep {
  std::size_t cases = 0;
  std::size_t order_shows = 0;
};
template <typename Kernel>
Sweep sweep(std::uint32_t seed, std::initializer_list<long> rows_list,
            std::initializer_list<long> k_list, std::initializer_list<long> out_list,
            const Kernel& kernel) {
  Sweep sweep;
  for (const long rows : rows_list) {
    for (const long k : k_list) {
      for (const long out : out_list) {
        for (const std::size_t offset : {std::size_t{0}, std::size_t{2}}) {
          const auto chunk = static_cast<unsigned>(seed % 2 == 0 ? device::kMaxRowBlocks : 1);
          INFO("rows " << rows << " k " << k << " out " << out << " offset " << offset << " chunk "
                       << chunk << " seed " << seed);
          const auto emulate = [&](const std::uint16_t* in, const std::uint16_t* w,
                                   std::uint16_t* o,
                                   const Shape& s) { kernel(in, w, o, s, offset, chunk); };
          const Outcome outcome = run_shape({rows, k, out}, seed++, emulate);
          CHECK(outcome.differing == 0);
          sweep.order_shows += outcome.order_shows;
          ++sweep.cases;
        }
      }
    }
  }
  return sweep;
}

TEST_CASE(
    "cuda decode kernel's device code, run on the host, equals the reference kernel for rows 1 to "
    "8",
    "[cuda][arith][kernel][device]") {
  // k from one element to past two tiles of 512 (the launcher's ring of 2 stages wraps), whole
  // tiles only, tails of every kind; outputs: one, a block, and a block and a part of one.
  const Sweep done =
      sweep(2000, {1, 2, 3, 4, 5, 6, 7, 8}, {1, 8, 127, 136, 300, 1024, 1031}, {1, 32, 70},
            [](const std::uint16_t* in, const std::uint16_t* w, std::uint16_t* o, const Shape& s,
               std::size_t offset, unsigned /*chunk*/) { device_decode(in, w, o, s, offset); });
  CHECK(done.cases == 336);
  INFO("outputs where k descending differs from k ascending: " << done.order_shows);
  CHECK(done.order_shows > 100);
}

TEST_CASE(
    "cuda tiled kernel's device code, run on the host, equals the reference kernel, in row chunks "
    "too",
    "[cuda][arith][kernel][device]") {
  const Sweep done =
      sweep(3000, {9, 64, 130}, {1, 16, 17, 40, 100}, {1, 65, 130},
            [](const std::uint16_t* in, const std::uint16_t* w, std::uint16_t* o, const Shape& s,
               std::size_t offset, unsigned chunk) { device_prefill(in, w, o, s, offset, chunk); });
  CHECK(done.cases == 90);
  INFO("outputs where k descending differs from k ascending: " << done.order_shows);
  CHECK(done.order_shows > 100);
}

TEST_CASE(
    "cuda pipelined kernel's device code, every configuration, run on the host, equals the "
    "reference kernel, in row chunks too",
    "[cuda][arith][kernel][device]") {
  std::uint32_t seed = 5000;
  for (const auto& [prefill, name] : kPipelinedConfigs) {
    INFO("pipelined, " << name);
    // Rows: a part of one block, and two blocks and a part (of every tile size); outputs: a
    // block and one more (a second, short block); k: one element, one tile of 32 less one and
    // plus one (a short last tile), two stages' round trips, and a k no group divides. (A
    // std::thread per CUDA thread: under TSan these 60 cases took 59 s on the 2-core dev VM.)
    const Sweep done =
        sweep(seed, {9, 130}, {1, 31, 33, 100, 203}, {65},
              [prefill](const std::uint16_t* in, const std::uint16_t* w, std::uint16_t* o,
                        const Shape& s, std::size_t offset,
                        unsigned chunk) { device_prefill(in, w, o, s, offset, chunk, prefill); });
    seed += 1000;
    CHECK(done.cases == 20);
    INFO("outputs where k descending differs from k ascending: " << done.order_shows);
    CHECK(done.order_shows > 300);
  }
}

TEST_CASE(
    "cuda launcher's row chunks cover every row block once, in order, at most gridDim.y's limit "
    "each, and stop at a failed launch",
    "[cuda][arith][launch]") {
  constexpr long long kTile = 64;
  constexpr auto kLimit = static_cast<long long>(device::kMaxRowBlocks);
  for (const long long rows :
       {1LL, 64LL, 65LL, kLimit * kTile, kLimit * kTile + 1, 3 * kLimit * kTile + 5}) {
    INFO("rows " << rows);
    long long next_row = 0;
    long long launches = 0;
    const bool all =
        device::for_each_row_chunk(rows, 130, static_cast<int>(kTile), 64, device::kMaxRowBlocks,
                                   [&](unsigned blocks_x, unsigned blocks_y, long long row_base) {
                                     CHECK(blocks_x == 3);  // 130 outputs in tiles of 64
                                     CHECK(blocks_y >= 1);
                                     CHECK(blocks_y <= device::kMaxRowBlocks);
                                     CHECK(row_base == next_row);
                                     next_row += static_cast<long long>(blocks_y) * kTile;
                                     ++launches;
                                     return true;
                                   });
    CHECK(all);
    CHECK(next_row == (rows + kTile - 1) / kTile * kTile);  // every row block, once
    CHECK(launches == ((rows + kTile - 1) / kTile + kLimit - 1) / kLimit);
  }
  long long launches = 0;
  const bool all = device::for_each_row_chunk(
      3 * kLimit * kTile, 1, static_cast<int>(kTile), 64, device::kMaxRowBlocks,
      [&](unsigned, unsigned, long long) { return ++launches < 2; });
  CHECK_FALSE(all);
  CHECK(launches == 2);
  // The decode grid: one block per 32 outputs.
  CHECK(device::decode_blocks(1) == 1);
  CHECK(device::decode_blocks(32) == 1);
  CHECK(device::decode_blocks(33) == 2);
  CHECK(device::decode_blocks(11008) == 344);
}

// sm_90 (H100, H200; compute capability 9.0 in the CUDA C++ Programming Guide): a block may take
// at most 227 KiB of shared memory, an SM has 228 KiB, and each resident block takes 1 KiB more
// for the system. How many blocks of `bytes` share an SM, by shared memory alone.
constexpr std::size_t kSm90MaxSharedPerBlock = 227 * 1024;
constexpr std::size_t kSm90SharedPerSm = 228 * 1024;
constexpr std::size_t kSm90ReservedPerBlock = 1024;
constexpr std::size_t blocks_per_sm(std::size_t bytes) {
  return kSm90SharedPerSm / (bytes + kSm90ReservedPerBlock);
}

TEST_CASE(
    "cuda decode kernels fit an sm_90 block's shared memory at every row count, and at 1 row "
    "three blocks of the decode kernel or of the rows-fitted converted kernel share an SM",
    "[cuda][arith][launch]") {
  std::size_t decode_one_row = 0;
  std::size_t fitted_one_row = 0;
  for (long rows = 1; rows <= strict::kDecodeMaxRows; ++rows) {
    INFO("rows " << rows);
    const bool known = device::with_decode_rows(rows, [&](auto rows_constant) {
      constexpr int kRows = decltype(rows_constant)::value;
      using C = device::DecodeConfig<kRows>;
      using S = device::DecodeShape<kRows, C::kRowsPerThread, C::kTileK, C::kStages, C::kWarps>;
      // Its stages (dynamic) and its f32 input tile (static).
      const std::size_t decode = S::kSharedBytes + S::kInputFloats * sizeof(float);
      CHECK(decode <= kSm90MaxSharedPerBlock);
      if (kRows == 1) decode_one_row = decode;
      for (const strict::Decode d :
           {strict::Decode::kConvertedWarp8x4, strict::Decode::kConvertedWarp8x8,
            strict::Decode::kConvertedFitRows}) {
        INFO("converted decode " << static_cast<int>(d));
        CHECK(strict::with_converted_config(d, [&](auto config) {
          using G = device::ConvertedShapeOf<kRows, decltype(config)>;
          CHECK(G::kSharedBytes <= kSm90MaxSharedPerBlock);
          if (kRows == 1 && d == strict::Decode::kConvertedFitRows) {
            fitted_one_row = G::kSharedBytes;
          }
        }));
      }
    });
    CHECK(known);
  }
  CHECK(blocks_per_sm(decode_one_row) == 3);  // 69,632 bytes
  CHECK(fitted_one_row == 68640);             // docs/CUDA.md's figure
  CHECK(blocks_per_sm(fitted_one_row) == 3);
}

TEST_CASE(
    "cuda decode kernel's other variant (two rows per thread, short tiles, three stages), run on "
    "the host, equals the reference kernel",
    "[cuda][arith][kernel][device]") {
  INFO("decode: two rows per thread, tiles of 64, three stages");
  const Sweep done = sweep(4000, {1, 3, 5, 8}, {127, 136, 300}, {70},
                           [](const std::uint16_t* in, const std::uint16_t* w, std::uint16_t* o,
                              const Shape& s, std::size_t offset, unsigned /*chunk*/) {
                             device_decode(in, w, o, s, offset, DecodeVariant::kTwoRowsShortTiles);
                           });
  CHECK(done.cases == 24);
}

TEST_CASE(
    "cuda converted decode kernel's device code, every configuration, run on the host, equals "
    "the reference kernel",
    "[cuda][arith][kernel][device]") {
  const auto with = [](DecodeVariant variant) {
    return [variant](const std::uint16_t* in, const std::uint16_t* w, std::uint16_t* o,
                     const Shape& s, std::size_t offset,
                     unsigned /*chunk*/) { device_decode(in, w, o, s, offset, variant); };
  };
  // The launcher's configurations (tiles of 256, 3 stages): k of one element, a short first
  // tile, one tile less one and one tile and a group, past the ring of stages (1031: four whole
  // tiles and a tail) at 8 x 4, three of those at 8 x 8; rows 1, 3 and 5 (lanes past the last
  // row) and 8 (every lane a row); outputs: a block and a part of one. (A std::thread per CUDA
  // thread, 384 or 256 per block.)
  INFO("converted decode, warps of 8 rows x 4 outputs");
  const Sweep one =
      sweep(6000, {1, 5, 8}, {1, 8, 255, 264, 1031}, {70}, with(DecodeVariant::kConvertedWarp8x4));
  CHECK(one.cases == 30);
  INFO("outputs where k descending differs from k ascending: " << one.order_shows);
  CHECK(one.order_shows > 100);
  INFO("converted decode, warps of 8 rows x 8 outputs");
  const Sweep two =
      sweep(6100, {3, 8}, {8, 264, 1031}, {70}, with(DecodeVariant::kConvertedWarp8x8));
  CHECK(two.cases == 12);
  CHECK(two.order_shows > 40);
  // Rows fitted (tiles of 128, 4 stages): a warp of 1 x 32, 2 x 16, 4 x 8 (row 3 a copy) and
  // 8 x 4 (rows 6 and 7 copies); k of one tile less one, one tile, one tile and a group, and
  // past the ring of 4 stages (520: four whole tiles and a group).
  INFO("converted decode, warps of the launch's rows rounded up to a power of two");
  const Sweep fit =
      sweep(6300, {1, 2, 3, 6}, {127, 128, 136, 520}, {70}, with(DecodeVariant::kConvertedFitRows));
  CHECK(fit.cases == 32);
  CHECK(fit.order_shows > 10);
  // Four outputs per lane, tiles of 32, 2 stages, one converting warp: short tails, one tile
  // and a part, many rounds.
  INFO("converted decode, 4 outputs per lane, tiles of 32, 2 stages, 1 converting warp");
  const Sweep short_tiles =
      sweep(6200, {2, 8}, {31, 33, 100, 203}, {70}, with(DecodeVariant::kConvertedShortTiles));
  CHECK(short_tiles.cases == 16);
  CHECK(short_tiles.order_shows > 40);
}

TEST_CASE(
    "cuda kernels' device code, run on the host, sums products that are all -0 to +0, as the "
    "reference",
    "[cuda][arith][kernel][device]") {
  for (const long k : {1L, 9L, 300L}) {
    for (const long rows : {1L, 3L, 8L}) {
      INFO("decode: rows " << rows << " k " << k);
      const auto decode = [](const std::uint16_t* in, const std::uint16_t* w, std::uint16_t* o,
                             const Shape& s) { device_decode(in, w, o, s, 0); };
      CHECK(signed_zero_outputs_differing({rows, k, 33}, decode) == 0);
      for (const DecodeVariant variant :
           {DecodeVariant::kConvertedWarp8x4, DecodeVariant::kConvertedWarp8x8,
            DecodeVariant::kConvertedFitRows}) {
        INFO("converted decode " << static_cast<int>(variant) << ": rows " << rows << " k " << k);
        const auto converted = [variant](const std::uint16_t* in, const std::uint16_t* w,
                                         std::uint16_t* o, const Shape& s) {
          device_decode(in, w, o, s, 0, variant);
        };
        CHECK(signed_zero_outputs_differing({rows, k, 33}, converted) == 0);
      }
    }
    INFO("tiled: rows 70 k " << k);
    const auto tiled = [](const std::uint16_t* in, const std::uint16_t* w, std::uint16_t* o,
                          const Shape& s) { device_prefill(in, w, o, s, 0, 65535u); };
    CHECK(signed_zero_outputs_differing({70, k, 66}, tiled) == 0);
    for (const auto& [prefill, name] : kPipelinedConfigs) {
      INFO("pipelined, " << name << ": rows 70 k " << k);
      const auto pipelined = [prefill](const std::uint16_t* in, const std::uint16_t* w,
                                       std::uint16_t* o, const Shape& s) {
        device_prefill(in, w, o, s, 0, 65535u, prefill);
      };
      CHECK(signed_zero_outputs_differing({70, k, 66}, pipelined) == 0);
    }
  }
}
