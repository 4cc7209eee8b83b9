#include "cublas_linear.h"

namespace vtrace::runtime::cuda {

cublasStatus_t cublas_dense_linear(const CublasApi& api, cublasHandle_t handle,
                                   const std::uint8_t* input, const std::uint8_t* weight,
                                   std::uint8_t* output, int rows, int in_features,
                                   int out_features, cudaStream_t stream) {
  if (const cublasStatus_t status = api.set_stream(handle, stream);
      status != CUBLAS_STATUS_SUCCESS) {
    return status;
  }
  // cuBLAS is column-major: the row-major output [rows][out] is the column-major out x rows
  // matrix C = W^T' * X, where the row-major weight [out][in] is the column-major in x out matrix
  // (transposed: CUBLAS_OP_T, ld in) and the row-major input [rows][in] the column-major in x rows
  // matrix (ld in).
  const float alpha = 1.0f;
  const float beta = 0.0f;
  return api.gemm_ex(handle, CUBLAS_OP_T, CUBLAS_OP_N, out_features, rows, in_features, &alpha,
                     weight, CUDA_R_16F, in_features, input, CUDA_R_16F, in_features, &beta, output,
                     CUDA_R_16F, out_features, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

}  // namespace vtrace::runtime::cuda
