// The CUDA runtimes (docs/CUDA.md): `cuda` and `cuda-cublas`, built when CMake finds the CUDA
// toolkit (VTRACE_CUDA, cmake/VtraceCuda.cmake) and registered in default_registry() then.
//
// Both are the contract of contract.h on one GPU (device 0): device memory from cudaMalloc
// (never managed memory), zero-filled at allocation; every Stream a CUDA stream, every Fence a
// CUDA event recorded after its batch; query_fence is non-blocking (it answers Pending while the
// batch runs), wait_fence blocks on the event; readback copies through the stream and
// synchronizes it. Submits execute in submit order across all streams of a runtime (each batch
// waits for the previous batch's event), as the host runtimes do. Descriptor class Accelerator,
// the GPU's memory size (or RuntimeOpenOptions::device_memory_bytes), the capability
// capability.operation.dense_linear.f16, the seven counters with the reference's triggers.
// Dense linear:
//   kStrict (`cuda`)        the strict kernel, bit-exact with the reference (kernels.cu)
//   kCublas (`cuda-cublas`) cublasGemmEx, f16 inputs, f32 compute, tensor cores allowed: drifts
//
// Ownership: the caller owns every handle; a buffer's device memory is freed when the buffer and
//   every command that refers to it are gone. The runtime must outlive its handles.
// Thread rules: every method may be called from several threads (one Stream per thread at a
//   time); submits and readbacks are serialized inside the runtime.
// Errors: the contract's kinds (messages start with "cuda" or "cuda-cublas"). Opening fails with
//   kRuntimeUnavailable and one sentence when no CUDA device can be used ("cuda: no CUDA device
//   is available (cudaGetDeviceCount: ...)"). A CUDA call that fails after a batch was enqueued
//   makes its fence terminal with a kInternal failure naming the call.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "vtrace/runtime/device_runtime.h"
#include "vtrace/runtime/registry.h"

namespace vtrace::runtime::cuda {

enum class CudaDenseLinear : std::uint8_t { kStrict, kCublas };

// "cuda" or "cuda-cublas".
std::string_view runtime_name(CudaDenseLinear dense_linear);

// describe_error's code.
inline constexpr std::string_view kCudaRuntimeErrorCode = "cuda_runtime";

// Opens the runtime on CUDA device 0 with options.device_id; device_memory_bytes, when not 0,
// replaces the GPU's memory size as the admitted capacity. Fails with kRuntimeUnavailable when
// no device is usable (no driver, no GPU) or cuBLAS cannot start (cuda-cublas).
Result<std::unique_ptr<DeviceRuntime>> open_cuda_runtime(CudaDenseLinear dense_linear,
                                                         const RuntimeOpenOptions& options);

// Adds "cuda" and "cuda-cublas" to `registry` (default_registry() calls it in a CUDA build).
void register_cuda_runtimes(RuntimeRegistry& registry);

}  // namespace vtrace::runtime::cuda
