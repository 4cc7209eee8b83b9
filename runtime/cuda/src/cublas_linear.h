// cuda-cublas's dense linear: one cublasGemmEx (f16 inputs and output, f32 compute, the default
// algorithm, so tensor cores are allowed), private to the cuda runtime and its benchmark.
//
// Ownership: the pointers are device addresses (2-byte aligned, as cuBLAS needs) the caller
//   keeps alive until `stream` has run the call. Thread rules: one call at a time per handle.
// Errors: the cuBLAS status of cublasSetStream or cublasGemmEx.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace vtrace::runtime::cuda {

// output[rows][out] = input[rows][in] x weight[out][in]^T, row-major little-endian f16, on
// `stream`.
cublasStatus_t cublas_dense_linear(cublasHandle_t handle, const std::uint8_t* input,
                                   const std::uint8_t* weight, std::uint8_t* output, int rows,
                                   int in_features, int out_features, cudaStream_t stream);

}  // namespace vtrace::runtime::cuda
