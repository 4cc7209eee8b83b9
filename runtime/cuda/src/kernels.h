// The launch API of the strict dense-linear kernels (kernels.cu, compiled by nvcc), private to
// the cuda runtime. Plain C++: cuda_runtime.cpp (g++, C++23) calls it; nothing here is a template.
//
// Ownership: the pointers are device addresses the caller keeps alive until the stream has run
//   the launch. Thread rules: any thread; the launch is ordered on `stream`.
// Errors: the cudaError_t of the launch (cudaGetLastError after it, having cleared before it what
// an earlier call of this thread left there), cudaSuccess otherwise.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "strict_arith.h"  // KernelChoice

namespace vtrace::runtime::cuda::kernels {

// output[rows][out] = f16(sum over k ascending of f32(input[r][k]) * f32(weight[o][k])), one f32
// accumulator per output from +0, fmaf per step, NaN written as 0x7E00: the reference's bits
// (strict_arith.h says why). Little-endian f16 at any byte alignment; rows, in, out >= 1. rows
// <= 8 runs the decode kernel `choice.decode` names (by default the runtime's, kRuntimeDecode:
// weights streamed once, one thread per output), more rows the kernel `choice.prefill` names (by
// default kRuntimePrefill: the tiled kernel, 64 x 64 outputs per block, 4 x 8 per thread); the
// others are candidates, which bench_cuda.cpp measures beside them (strict_arith.h, Decode and
// Prefill). Every one computes the same bits. `output` must not overlap the operands (the
// runtime stages an aliasing launch).
cudaError_t launch_strict_dense_linear(const std::uint8_t* input, const std::uint8_t* weight,
                                       std::uint8_t* output, std::uint64_t rows,
                                       std::uint64_t in_features, std::uint64_t out_features,
                                       cudaStream_t stream, strict::KernelChoice choice = {});

// Whether this build holds a kernel image the current device can run (the kernels are built for
// CMAKE_CUDA_ARCHITECTURES only, sm_90 by default): cudaSuccess, or the error
// cudaFuncGetAttributes gives (cudaErrorNoKernelImageForDevice on an older GPU), so that opening
// `cuda` there says unavailable instead of every launch failing.
cudaError_t check_kernel_image();

}  // namespace vtrace::runtime::cuda::kernels
