// DenseLinearEngine (cpu/dense_linear_cpu.h): blocking, scratch and threads around a KernelSet.
//
// One launch:
//  1. the input rows are converted to f32 once, into engine scratch [rows][K];
//  2. the outputs are cut into blocks of nb features (a few panels of nr) and the rows into
//     chunks; each (block, chunk) is one task for the pool. A task walks k in tiles of
//     kTileK = kSplitKBlock: it packs the block's weights for the tile into its own scratch as
//     [panel][k][nr] f32 (read once from the f16 buffer, which is never modified), then runs the
//     micro-kernel over every row tile x panel group of the chunk. Accumulators live in an f32
//     tile [chunk rows][panels*nr]:
//       exact:  tile t continues from the f32 values tile t-1 stored (same additions, same order);
//       splitk: each tile (= one split-k block) starts from +0 into its own slot, and the slots
//               are merged as a binary counter (left + right, equal levels first; the leftovers
//               folded right to left at the end), which is the documented level-by-level tree;
//  3. the final f32 tile is rounded to f16 (NaN -> 0x7E00) straight into the output.
// Each output's additions depend only on its own k order, never on the blocking or the thread
// that ran it, so results do not depend on the thread count. Scratch is grow-only (no allocation
// per launch once warm; reserve() does the growing ahead, without throwing) and nothing is cached
// across launches.
#include <algorithm>
#include <bit>
#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cpu/dense_linear_cpu.h"
#include "cpu/kernels/kernel_set.h"
#include "cpu/kernels/thread_pool.h"

namespace vtrace::runtime::cpu {

namespace {

using kernels::KernelSet;
using kernels::kMaxMr;

constexpr std::size_t kTileK = kSplitKBlock;  // k per packed tile (both kernels)
constexpr std::size_t kMaxChunkRows = 192;    // rows per task when rows are many

// A grow-only 64-byte-aligned float buffer.
class Floats {
 public:
  Floats() = default;
  Floats(const Floats&) = delete;
  Floats& operator=(const Floats&) = delete;
  Floats(Floats&& other) noexcept : data_(other.data_), size_(other.size_) {
    other.data_ = nullptr;
    other.size_ = 0;
  }
  ~Floats() { release(); }
  // Grows to at least n floats; false (and empty) when n floats overflow or cannot be had.
  [[nodiscard]] bool reserve(std::size_t n) {
    if (n <= size_) return true;
    release();
    std::size_t bytes = 0;
    if (__builtin_mul_overflow(n, sizeof(float), &bytes)) return false;
    data_ = static_cast<float*>(::operator new(bytes, std::align_val_t{64}, std::nothrow));
    if (data_ == nullptr) return false;
    size_ = n;
    return true;
  }
  float* data() const { return data_; }

 private:
  void release() {
    if (data_ != nullptr) ::operator delete(data_, std::align_val_t{64});
    data_ = nullptr;
    size_ = 0;
  }
  float* data_ = nullptr;
  std::size_t size_ = 0;
};

// The set for launches of at most kSmallRows rows (dense_linear_cpu.h). Those are bound by
// streaming and packing the weights, so 512-bit FMAs buy nothing there, and on the Intel Xeon of
// docs/BENCHMARKS.md ("Instruction paths") the AVX-512 set was 12-17% slower than the AVX2 one
// on 1x4096x11008 (equal on 8x4096x4096): the avx512 path runs them with its AVX2 set (an
// AVX-512 CPU has AVX2; the bits are the same on every set).
const KernelSet& small_rows_kernel_set(Isa isa) {
  return kernels::kernel_set(isa == Isa::kAvx512 ? Isa::kAvx2F16c : isa);
}

std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

// a * b, or nullopt when it overflows.
std::optional<std::size_t> times(std::size_t a, std::size_t b) {
  std::size_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) return std::nullopt;
  return product;
}

}  // namespace

const KernelSet& kernels::kernel_set(Isa isa) {
  switch (isa) {
    case Isa::kPortable:
      break;
#if VTRACE_X86_KERNELS
    case Isa::kAvx2F16c:
      return avx2_kernel_set();
    case Isa::kAvx512:
      return avx512_kernel_set();
#else
    case Isa::kAvx2F16c:
    case Isa::kAvx512:
      break;
#endif
  }
  return portable_kernel_set();
}

struct DenseLinearEngine::Impl {
  struct Worker {
    Floats packed;  // [panels][kTileK][nr]
    Floats acc;     // [slots][chunk rows][panels * nr]
  };

  Impl(unsigned n, Isa i)
      : threads(n),
        isa(i),
        wide_set(kernels::kernel_set(i)),
        small_rows_set(small_rows_kernel_set(i)),
        pool(n),
        workers(n) {
    threads = pool.size();  // fewer when the system refused some (pool.start_failure())
  }

  // How one launch is cut into tasks, and the scratch each needs (in floats).
  struct Blocking {
    const KernelSet* set = nullptr;
    std::size_t want_tasks = 0;
    std::size_t block_outs = 0;  // outputs per block (block_panels * nr)
    std::size_t chunk = 0;       // rows per chunk
    std::size_t slots = 0;       // accumulator slots per worker (split-k: one per tree level)
    std::size_t packed_floats = 0;
    std::size_t acc_floats = 0;
    std::size_t input_floats = 0;
  };
  // Nullopt when the scratch sizes overflow. Shapes with no work (rows, outs or k zero) are
  // handled before blocking.
  std::optional<Blocking> blocking(const DenseLinearShape& shape, bool splitk) const;
  bool reserve(const DenseLinearShape& shape, bool splitk);
  bool reserve(const Blocking& b);  // grows the scratch `b` needs; no-op once it fits
  bool launch(const std::uint8_t* input, const std::uint8_t* weight, std::uint8_t* output,
              const DenseLinearShape& shape, bool splitk);

  unsigned threads;
  Isa isa;
  const KernelSet& wide_set;        // launches of more than kSmallRows rows
  const KernelSet& small_rows_set;  // launches of at most kSmallRows rows
  kernels::ThreadPool pool;
  std::vector<Worker> workers;
  Floats input32;  // [rows][K]
};

std::optional<DenseLinearEngine::Impl::Blocking> DenseLinearEngine::Impl::blocking(
    const DenseLinearShape& shape, bool splitk) const {
  const std::size_t rows = shape.rows;
  const std::size_t k_len = shape.in_features;
  const std::size_t outs = shape.out_features;
  Blocking b;
  b.set = rows <= kSmallRows ? &small_rows_set : &wide_set;
  const std::size_t nr = b.set->nr;

  // Blocking: output blocks of `block_panels` panels, row chunks of `chunk` rows; enough tasks
  // for the pool (narrower blocks first, then more row chunks).
  std::size_t block_panels = std::max<std::size_t>(1, (rows <= kSmallRows ? 64 : 128) / nr);
  const std::size_t total_panels = ceil_div(outs, nr);
  block_panels = std::min(block_panels, total_panels);
  std::size_t chunk = std::min(rows, kMaxChunkRows);
  b.want_tasks = 4 * std::size_t{threads};
  while (block_panels > 1 && ceil_div(total_panels, block_panels) * ceil_div(rows, chunk) <
                                 b.want_tasks) {
    --block_panels;
  }
  while (chunk > kMaxMr && ceil_div(total_panels, block_panels) * ceil_div(rows, chunk) <
                               b.want_tasks) {
    chunk = std::max(kMaxMr, chunk / 2);
  }
  b.block_outs = block_panels * nr;
  b.chunk = chunk;
  const std::size_t k_tiles = ceil_div(k_len, kTileK);
  b.slots = splitk ? static_cast<std::size_t>(std::bit_width(k_tiles)) + 1 : 1;
  b.packed_floats = block_panels * kTileK * nr;
  b.acc_floats = b.slots * chunk * b.block_outs;
  const auto input_floats = times(rows, k_len);
  if (!input_floats) return std::nullopt;
  b.input_floats = *input_floats;
  return b;
}

bool DenseLinearEngine::Impl::reserve(const DenseLinearShape& shape, bool splitk) {
  if (shape.rows == 0 || shape.out_features == 0 || shape.in_features == 0) return true;
  const auto b = blocking(shape, splitk);
  return b && reserve(*b);
}

bool DenseLinearEngine::Impl::reserve(const Blocking& b) {
  if (!input32.reserve(b.input_floats)) return false;
  for (Worker& w : workers) {
    if (!w.packed.reserve(b.packed_floats) || !w.acc.reserve(b.acc_floats)) return false;
  }
  return true;
}

bool DenseLinearEngine::Impl::launch(const std::uint8_t* input, const std::uint8_t* weight,
                                     std::uint8_t* output, const DenseLinearShape& shape,
                                     bool splitk) {
  const std::size_t rows = shape.rows;
  const std::size_t k_len = shape.in_features;
  const std::size_t outs = shape.out_features;
  if (rows == 0 || outs == 0) return true;
  if (k_len == 0) {  // every accumulator stays +0, and f16(+0) is 0x0000
    std::memset(output, 0, rows * outs * 2);
    return true;
  }
  // No allocation once reserve() for this shape (or a larger one) succeeded.
  const auto blocked = blocking(shape, splitk);
  if (!blocked || !reserve(*blocked)) return false;
  const Blocking& b = *blocked;
  const KernelSet& set = *b.set;
  const std::size_t nr = set.nr;
  const std::size_t want_tasks = b.want_tasks;
  const std::size_t block_outs = b.block_outs;
  const std::size_t chunk = b.chunk;
  const std::size_t blocks = ceil_div(outs, block_outs);
  const std::size_t chunks = ceil_div(rows, chunk);
  const std::size_t ldc = block_outs;
  const std::size_t slot_size = chunk * ldc;
  const std::size_t panel_stride = kTileK * nr;

  // 1. Input rows to f32.
  float* const a32 = input32.data();
  const std::size_t convert_tasks = std::min(rows, want_tasks);
  auto convert = [&](std::size_t task, unsigned) {
    const std::size_t r0 = rows * task / convert_tasks;
    const std::size_t r1 = rows * (task + 1) / convert_tasks;
    set.convert_input(input + 2 * r0 * k_len, a32 + r0 * k_len, (r1 - r0) * k_len);
  };
  pool.run(convert_tasks, convert);

  // 2 + 3. One (output block, row chunk) per task.
  auto task_body = [&](std::size_t task, unsigned worker) {
    const std::size_t o0 = (task / chunks) * block_outs;
    const std::size_t r0 = (task % chunks) * chunk;
    const std::size_t nb = std::min(block_outs, outs - o0);
    const std::size_t panels = ceil_div(nb, nr);
    const std::size_t mc = std::min(chunk, rows - r0);
    const std::size_t row_tiles = ceil_div(mc, kMaxMr);
    float* const packed = workers[worker].packed.data();
    float* const acc = workers[worker].acc.data();
    std::size_t levels[64] = {};  // split-k: the binary counter's stack of tree levels
    std::size_t depth = 0;
    // left += right over the chunk's rows: only the columns the micro-kernels wrote (a narrow
    // last block leaves [panels * nr, ldc) of each row unwritten, never to be read).
    const std::size_t written = panels * nr;
    const auto merge = [&](float* left, const float* right) {
      if (written == ldc) {
        set.add(left, right, mc * ldc);
        return;
      }
      for (std::size_t i = 0; i < mc; ++i) set.add(left + i * ldc, right + i * ldc, written);
    };
    for (std::size_t k0 = 0; k0 < k_len; k0 += kTileK) {
      const std::size_t kc = std::min(kTileK, k_len - k0);
      const std::uint8_t* tile = weight + 2 * (o0 * k_len + k0);
      const bool full_next = k0 + 2 * kTileK <= k_len;
      set.pack_weight(tile, k_len, nb, kc, packed, panel_stride, nr,
                      full_next ? tile + 2 * kTileK : nullptr);
      float* const c = acc + (splitk ? depth * slot_size : 0);
      const bool accumulate = !splitk && k0 > 0;
      std::size_t t0 = 0;
      for (std::size_t t = 0; t < row_tiles; ++t) {  // balanced row tiles of <= kMaxMr rows
        const std::size_t mr = mc / row_tiles + (t < mc % row_tiles ? 1 : 0);
        const std::size_t np_max = set.np_for_mr[mr - 1];
        const float* a = a32 + (r0 + t0) * k_len + k0;
        for (std::size_t p = 0; p < panels; p += np_max) {
          const std::size_t np = std::min(np_max, panels - p);
          set.micro[mr - 1][np - 1](a, k_len, packed + p * panel_stride, panel_stride, kc,
                                    c + t0 * ldc + p * nr, ldc, accumulate);
        }
        t0 += mr;
      }
      if (splitk) {  // push this block's partials, merging equal levels (left + right)
        std::size_t level = 0;
        while (depth > 0 && levels[depth - 1] == level) {
          merge(acc + (depth - 1) * slot_size, acc + depth * slot_size);
          --depth;
          ++level;
        }
        levels[depth++] = level;
      }
    }
    if (splitk) {  // fold what is left, right to left
      for (; depth > 1; --depth) {
        merge(acc + (depth - 2) * slot_size, acc + (depth - 1) * slot_size);
      }
    }
    for (std::size_t i = 0; i < mc; ++i) {
      set.store_output(acc + i * ldc, output + 2 * ((r0 + i) * outs + o0), nb);
    }
  };
  pool.run(blocks * chunks, task_body);
  return true;
}

DenseLinearEngine::DenseLinearEngine(unsigned threads, Isa isa) {
  // Callers check isa_supported first (CpuRuntime::create refuses with kRuntimeUnavailable); a
  // path this CPU cannot run falls back to the portable one instead of faulting.
  if (!isa_supported(isa)) isa = Isa::kPortable;
  unsigned n = threads != 0 ? threads : std::thread::hardware_concurrency();
  impl_ = std::make_unique<Impl>(std::max(n, 1u), isa);
}

DenseLinearEngine::~DenseLinearEngine() = default;

unsigned DenseLinearEngine::threads() const { return impl_->threads; }

const std::string& DenseLinearEngine::start_failure() const { return impl_->pool.start_failure(); }

Isa DenseLinearEngine::isa() const { return impl_->isa; }

bool DenseLinearEngine::reserve(const DenseLinearShape& shape, bool splitk) {
  return impl_->reserve(shape, splitk);
}

bool DenseLinearEngine::dense_linear_exact(const std::uint8_t* input, const std::uint8_t* weight,
                                           std::uint8_t* output, const DenseLinearShape& shape) {
  return impl_->launch(input, weight, output, shape, false);
}

bool DenseLinearEngine::dense_linear_splitk(const std::uint8_t* input, const std::uint8_t* weight,
                                            std::uint8_t* output, const DenseLinearShape& shape) {
  return impl_->launch(input, weight, output, shape, true);
}

}  // namespace vtrace::runtime::cpu
