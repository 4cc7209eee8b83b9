// cuBLAS in cuda-cublas: the library loaded at run time, and the one call its dense linear makes
// (cublasGemmEx: f16 inputs and output, f32 compute, the default algorithm, so tensor cores are
// allowed). Private to the cuda runtime and its benchmark.
//
// cuBLAS is not linked: load_cublas() opens libcublas.so.<CUBLAS_VER_MAJOR> (dlopen: the loader's
// paths, then the toolkit's library folder of the build) when cuda-cublas is opened, so that a
// vtrace built with the CUDA runtimes starts, and runs every other runtime, on a machine without
// cuBLAS; cuda-cublas is then unavailable (exit 3) with the loader's sentence.
//
// Ownership: the table is the process's, never freed (the library stays loaded). The pointers given
//   to cublas_dense_linear are device addresses (2-byte aligned, as cuBLAS needs) the caller keeps
//   alive until `stream` has run the call.
// Thread rules: load_cublas may be called from any thread (loaded once); one cuBLAS call at a time
//   per handle.
// Errors: load_cublas answers one sentence naming the library or the symbol and the loader's words;
//   cublas_dense_linear the cuBLAS status of cublasSetStream or cublasGemmEx.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <expected>
#include <string>

namespace vtrace::runtime::cuda {

// The cuBLAS functions vtrace calls (cublas_v2.h's names map to the _v2 symbols).
struct CublasApi {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  // The C symbol (compute type cublasComputeType_t); cublas_api.h adds a C++ overload beside it.
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                            const void*, const void*, cudaDataType, int, const void*, cudaDataType,
                            int, const void*, void*, cudaDataType, int, cublasComputeType_t,
                            cublasGemmAlgo_t) = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
};

// The loaded table, or why cuBLAS cannot be loaded: load_cublas_from(libcublas.so.<major>, the
// toolkit's library folder of the build). The answer of the first call is kept for the life of
// the process.
std::expected<const CublasApi*, std::string> load_cublas();

// One attempt: dlopen `soname` by the loader's paths, else `fallback_dir`/`soname`, and resolve
// every function of CublasApi. On success the library stays loaded; a library lacking a function
// is closed again. Errors, one sentence each: "cuBLAS cannot be loaded (<the loader's words for
// soname>; nor from <fallback_dir>/<soname>)" and "cuBLAS cannot be loaded (<soname> lacks
// <function>: <the loader's words>)". The real build's only (load_cublas and its test).
std::expected<CublasApi, std::string> load_cublas_from(const std::string& soname,
                                                       const std::string& fallback_dir);

// output[rows][out] = input[rows][in] x weight[out][in]^T, row-major little-endian f16, on
// `stream`.
cublasStatus_t cublas_dense_linear(const CublasApi& api, cublasHandle_t handle,
                                   const std::uint8_t* input, const std::uint8_t* weight,
                                   std::uint8_t* output, int rows, int in_features,
                                   int out_features, cudaStream_t stream);

}  // namespace vtrace::runtime::cuda
