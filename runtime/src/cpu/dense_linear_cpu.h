// The dense-linear kernels of the cpu and cpu-splitk runtimes (private to vtrace_runtime).
//
// Two numerical contracts, one set of kernels:
//  - dense_linear_exact: bit-exact with the reference kernel (reference/dense_linear_kernel.h,
//    spec 11.1): one f32 accumulator per output, starting at +0, k ascending, no k split; each
//    product of two f16 values is exact in f32, so FMA and multiply-then-add give the same bits.
//    Outputs whose accumulator is NaN are written as 0x7E00.
//  - dense_linear_splitk: the reduction order of a BLAS (see kSplitKBlock and the function's
//    comment): close to the reference, not bit-exact.
// Vectorized across outputs and rows, never across k. Instruction paths are chosen at run time
// (detect_isa); every path gives the same bits as the portable one.
//
// Ownership: the kernels read `input`/`weight` and write `output`; none of them may overlap the
//   output (callers stage the output when they do). The engine owns its scratch and thread pool.
// Thread rules: a DenseLinearEngine is used by one caller at a time (the runtime holds a lock);
//   it runs its work on its own pool.
// Errors: shapes are validated by the contract layer before a kernel runs; the only failure is
//   scratch memory that cannot be had (reserve() and the launches return false, nothing thrown,
//   the output untouched). Nothing is allocated by a launch whose shape was reserved.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <memory>
#include <optional>
#include <string_view>

namespace vtrace::runtime::cpu {

// Instruction paths, best last.
enum class Isa : std::uint8_t {
  kPortable,   // plain C++, no intrinsics
  kAvx2F16c,   // AVX2 + FMA + F16C
  kAvx512,     // AVX-512F/VL/BW (F16 conversion + FMA in 512-bit registers)
};

// "portable", "avx2-f16c", "avx512".
std::string_view isa_name(Isa isa);
std::optional<Isa> parse_isa(std::string_view name);
// Whether this CPU (and OS) can run `isa`, from CPUID/XGETBV.
bool isa_supported(Isa isa);
// The best supported path.
Isa detect_isa();

// The shape of one launch: input [rows][in_features], weight [out_features][in_features],
// output [rows][out_features], all dense row-major little-endian f16.
struct DenseLinearShape {
  std::size_t rows = 0;
  std::size_t in_features = 0;
  std::size_t out_features = 0;
};

// cpu-splitk's block length along k.
inline constexpr std::size_t kSplitKBlock = 256;

// Launches of at most this many rows (decode-like) are bound by streaming the weights, not by
// the FMA units: the engine blocks them more narrowly, and the avx512 path runs them with its
// AVX2 kernels (docs/BENCHMARKS.md, "Instruction paths"). The bits are the same either way.
inline constexpr std::size_t kSmallRows = 8;

class DenseLinearEngine {
 public:
  // `threads` workers (0 = std::thread::hardware_concurrency(), at least 1); `isa` must be
  // supported (callers check isa_supported).
  DenseLinearEngine(unsigned threads, Isa isa);
  ~DenseLinearEngine();
  DenseLinearEngine(const DenseLinearEngine&) = delete;
  DenseLinearEngine& operator=(const DenseLinearEngine&) = delete;

  // The workers running (fewer than asked when the system refused to start some).
  unsigned threads() const;
  // Why fewer workers than asked run; empty when all do.
  const std::string& start_failure() const;
  Isa isa() const;

  // Grows the scratch so that a launch of `shape` (or smaller) allocates nothing; false when the
  // memory cannot be had. Scratch only grows, so reserving every launch of a batch first makes
  // the whole batch allocation-free.
  [[nodiscard]] bool reserve(const DenseLinearShape& shape, bool splitk);

  // Bit-exact with the reference kernel (see the top of this file). Byte pointers: no alignment
  // is assumed. False (output untouched) when the scratch for `shape` cannot be had.
  [[nodiscard]] bool dense_linear_exact(const std::uint8_t* input, const std::uint8_t* weight,
                          std::uint8_t* output, const DenseLinearShape& shape);

  // The split-k order, exactly: k is cut into blocks [j*B, min((j+1)*B, K)) with B = kSplitKBlock;
  // each block's partial sum starts at +0 and adds its products k ascending (as the exact
  // kernel does); the partials p_0..p_{n-1} are then combined as a pairwise tree, level by
  // level: q_i = p_{2i} + p_{2i+1}, an odd last partial carried up unchanged, until one value
  // remains; that value is rounded to f16 (NaN written as 0x7E00). For K <= B it equals the
  // exact kernel. False (output untouched) when the scratch for `shape` cannot be had.
  [[nodiscard]] bool dense_linear_splitk(const std::uint8_t* input, const std::uint8_t* weight,
                           std::uint8_t* output, const DenseLinearShape& shape);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vtrace::runtime::cpu
