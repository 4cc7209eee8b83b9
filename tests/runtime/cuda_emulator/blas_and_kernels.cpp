// The emulated cuBLAS subset, its loader and the strict-kernel launch (cuda_emulator.h): the
// calls enqueue host arithmetic on the stream they are given.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <expected>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cublas_linear.h"
#include "cuda_emulator.h"
#include "emulator_internal.h"
#include "kernels.h"
#include "reference/dense_linear_kernel.h"
#include "vtrace/runtime/f16.h"

namespace emu = vtrace::testing::cuda_emulator;
namespace rt = vtrace::runtime;

struct cublasContext {
  cudaStream_t stream = nullptr;
};

namespace {

std::mutex g_handles_mutex;
std::set<cublasHandle_t> g_handles;

void require_handle(std::string_view call, cublasHandle_t handle) {
  std::lock_guard lock(g_handles_mutex);
  if (g_handles.count(handle) == 0) emu::detail::misuse(call, "not a live cuBLAS handle");
}

// The bytes of an n x m f16 operand, or 0 when that overflows.
std::size_t operand_bytes(std::uint64_t n, std::uint64_t m) {
  std::uint64_t count = 0;
  if (__builtin_mul_overflow(n, m, &count) || count > SIZE_MAX / 2) return 0;
  return static_cast<std::size_t>(count * 2);
}

float load_f16(const std::uint8_t* base, std::size_t element) {
  std::uint16_t bits = 0;
  std::memcpy(&bits, base + 2 * element, 2);
  return rt::f16_to_f32(bits);
}

// The emulated tensor-core order: k in blocks of 16, each block a pairwise tree of its exact
// products, the block sums added to one accumulator in k order, or last to first when
// `reversed` (a split-k reduction that takes the partial sums in the order they finish).
float blocked_dot(const std::uint8_t* a, const std::uint8_t* b, int k, bool reversed) {
  constexpr int kBlock = 16;
  float acc = 0.0f;
  float lane[kBlock];
  const int blocks = (k + kBlock - 1) / kBlock;
  for (int step = 0; step < blocks; ++step) {
    const int begin = (reversed ? blocks - 1 - step : step) * kBlock;
    const int count = std::min(kBlock, k - begin);
    for (int l = 0; l < count; ++l) {
      lane[l] = load_f16(a, static_cast<std::size_t>(begin + l)) *
                load_f16(b, static_cast<std::size_t>(begin + l));
    }
    for (int width = count; width > 1; width = (width + 1) / 2) {
      for (int l = 0; l < width / 2; ++l) lane[l] = lane[2 * l] + lane[2 * l + 1];
      if (width % 2 == 1) lane[width / 2] = lane[width - 1];
    }
    acc = acc + lane[0];
  }
  return acc;
}

// VTRACE_CUDA_EMULATOR_GEMM_ORDER=alternate (cuda_emulator.h): whether this cublasGemmEx call,
// counted over the process, reduces its blocks last to first.
bool reverse_this_gemm() {
  static const bool alternate = [] {
    const char* order = std::getenv("VTRACE_CUDA_EMULATOR_GEMM_ORDER");
    return order != nullptr && std::string_view(order) == "alternate";
  }();
  static std::atomic<std::uint64_t> calls{0};
  return alternate && ++calls % 2 == 0;
}

}  // namespace

std::size_t emu::live_blas_handles() {
  std::lock_guard lock(g_handles_mutex);
  return g_handles.size();
}

#define VTRACE_EMULATED_BLAS_CALL(name)                                        \
  if (const int planned = emu::detail::planned_failure(#name); planned != 0) { \
    return static_cast<cublasStatus_t>(planned);                               \
  }

extern "C" {

const char* cublasGetStatusString(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "the operation completed successfully";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "the GPU program failed to execute";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "an internal operation failed";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "the functionality requested is not supported";
    default:
      return "unknown error";
  }
}

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  VTRACE_EMULATED_BLAS_CALL(cublasCreate)
  *handle = new cublasContext;
  std::lock_guard lock(g_handles_mutex);
  g_handles.insert(*handle);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  VTRACE_EMULATED_BLAS_CALL(cublasDestroy)
  require_handle("cublasDestroy", handle);
  {
    std::lock_guard lock(g_handles_mutex);
    g_handles.erase(handle);
  }
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  VTRACE_EMULATED_BLAS_CALL(cublasSetStream)
  require_handle("cublasSetStream", handle);
  emu::detail::require_stream("cublasSetStream", stream);
  handle->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                            cublasOperation_t transb, int m, int n, int k, const void* alpha,
                            const void* A, cudaDataType Atype, int lda, const void* B,
                            cudaDataType Btype, int ldb, const void* beta, void* C,
                            cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                            cublasGemmAlgo_t algo) {
  VTRACE_EMULATED_BLAS_CALL(cublasGemmEx)
  constexpr std::string_view call = "cublasGemmEx";
  require_handle(call, handle);
  // The one shape cublas_linear.cpp uses: C (m x n) = A^T (A is k x m) * B (k x n), f16 data,
  // f32 compute, host scalars 1 and 0, packed leading dimensions.
  if (transa != CUBLAS_OP_T || transb != CUBLAS_OP_N || Atype != CUDA_R_16F ||
      Btype != CUDA_R_16F || Ctype != CUDA_R_16F || computeType != CUBLAS_COMPUTE_32F ||
      algo != CUBLAS_GEMM_DEFAULT) {
    emu::detail::misuse(call, "a call shape the emulator does not take");
  }
  if (m < 1 || n < 1 || k < 1 || lda != k || ldb != k || ldc != m) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  float alpha_value = 0.0f, beta_value = 0.0f;  // host pointer mode, cuBLAS's default
  std::memcpy(&alpha_value, alpha, sizeof alpha_value);
  std::memcpy(&beta_value, beta, sizeof beta_value);
  if (alpha_value != 1.0f || beta_value != 0.0f) {
    emu::detail::misuse(call, "alpha 1 and beta 0 expected");
  }
  for (const void* p : {A, B, static_cast<const void*>(C)}) {
    if (reinterpret_cast<std::uintptr_t>(p) % 2 != 0) {
      emu::detail::misuse(call, "an f16 operand at an odd address");
    }
  }
  const std::size_t a_bytes =
      operand_bytes(static_cast<std::uint64_t>(k), static_cast<std::uint64_t>(m));
  const std::size_t b_bytes =
      operand_bytes(static_cast<std::uint64_t>(k), static_cast<std::uint64_t>(n));
  const std::size_t c_bytes =
      operand_bytes(static_cast<std::uint64_t>(m), static_cast<std::uint64_t>(n));
  emu::detail::require_device(call, A, a_bytes);
  emu::detail::require_device(call, B, b_bytes);
  emu::detail::require_device(call, C, c_bytes);
  if (emu::detail::overlap(C, c_bytes, A, a_bytes) ||
      emu::detail::overlap(C, c_bytes, B, b_bytes)) {
    emu::detail::misuse(call, "an output that overlaps an operand");
  }
  if (handle->stream == nullptr) emu::detail::misuse(call, "no stream set (the null stream)");
  const auto* a = static_cast<const std::uint8_t*>(A);
  const auto* b = static_cast<const std::uint8_t*>(B);
  auto* c = static_cast<std::uint8_t*>(C);
  const auto rows = static_cast<std::size_t>(m), columns = static_cast<std::size_t>(n),
             depth = static_cast<std::size_t>(k);
  const bool reversed = reverse_this_gemm();
  emu::detail::enqueue(call, handle->stream, [=] {
    for (std::size_t j = 0; j < columns; ++j) {
      for (std::size_t i = 0; i < rows; ++i) {
        const float sum = blocked_dot(a + 2 * i * depth, b + 2 * j * depth, k, reversed);
        const std::uint16_t bits = rt::f32_to_f16(sum);
        std::memcpy(c + 2 * (j * rows + i), &bits, 2);
      }
    }
  });
  return CUBLAS_STATUS_SUCCESS;
}

}  // extern "C"

namespace vtrace::runtime::cuda {

std::expected<const CublasApi*, std::string> load_cublas() {
  // The emulated cuBLAS above, as cublas_loader.cpp would find the real one; a test plans a
  // library that cannot be loaded. Unlike the real loader, asked again at every open.
  if (emu::detail::planned_failure("load_cublas") != 0) {
    return std::unexpected(std::string(
        "cuBLAS cannot be loaded (libcublas.so.13: cannot open shared object file: No such file "
        "or directory; nor from the emulator)"));
  }
  static const CublasApi api{&cublasCreate_v2, &cublasDestroy_v2, &cublasSetStream_v2,
                             &cublasGemmEx, &cublasGetStatusString};
  return &api;
}

}  // namespace vtrace::runtime::cuda

namespace vtrace::runtime::cuda::kernels {

cudaError_t check_kernel_image() {
  // The emulated device runs every kernel; a test plans cudaErrorNoKernelImageForDevice.
  return static_cast<cudaError_t>(emu::detail::planned_failure("check_kernel_image"));
}

cudaError_t launch_strict_dense_linear(const std::uint8_t* input, const std::uint8_t* weight,
                                       std::uint8_t* output, std::uint64_t rows,
                                       std::uint64_t in_features, std::uint64_t out_features,
                                       cudaStream_t stream, strict::KernelChoice /*choice*/) {
  // As kernels.cu: the thread's last error is cleared before the launch, and the launch's own
  // status read (and so cleared) after it. Every KernelChoice computes the reference's bits (the
  // kernels' host test checks each one's device code), so the emulator computes them once.
  (void)emu::detail::take_last_error();
  if (const int planned = emu::detail::planned_failure("launch_strict_dense_linear");
      planned != 0) {
    return static_cast<cudaError_t>(planned);
  }
  constexpr std::string_view call = "launch_strict_dense_linear";
  const std::size_t input_bytes = operand_bytes(rows, in_features);
  const std::size_t weight_bytes = operand_bytes(out_features, in_features);
  const std::size_t output_bytes = operand_bytes(rows, out_features);
  if (input_bytes == 0 || weight_bytes == 0 || output_bytes == 0) {
    emu::detail::misuse(call, "a dimension of 0, or operand sizes past size_t");
  }
  emu::detail::require_device(call, input, input_bytes);
  emu::detail::require_device(call, weight, weight_bytes);
  emu::detail::require_device(call, output, output_bytes);
  if (emu::detail::overlap(output, output_bytes, input, input_bytes) ||
      emu::detail::overlap(output, output_bytes, weight, weight_bytes)) {
    emu::detail::misuse(call, "an output that overlaps an operand (kernels.h forbids it)");
  }
  emu::detail::enqueue(call, stream, [=] {
    const auto result =
        reference::dense_linear_f16(std::span(input, input_bytes), std::span(weight, weight_bytes),
                                    rows, in_features, out_features);
    std::memcpy(output, result.data(), output_bytes);
  });
  return cudaSuccess;
}

}  // namespace vtrace::runtime::cuda::kernels
