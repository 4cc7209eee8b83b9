// A host emulation of the part of the CUDA runtime API and cuBLAS that the cuda runtimes call
// (runtime/cuda/src/cuda_runtime.cpp, cublas_linear.cpp), so that their contract logic runs and
// is tested on a machine without a GPU: the conformance suite on `cuda` and `cuda-cublas`, plus
// the failure paths no GPU shows on demand (tests/runtime/cuda_emulated_test.cpp).
//
// What it is: definitions of the cudart and cuBLAS functions (the toolkit's own headers declare
//   them), of load_cublas (cublas_linear.h: the table of those cuBLAS functions, where the real
//   build loads libcublas) and of kernels::launch_strict_dense_linear, linked into
//   runtime_cuda_emulated_test, vtrace_cuda_emulated and vtrace_bench_cuda_emulated in place of
//   libcudart_static, cublas_loader.cpp and kernels.cu (tests/runtime/CMakeLists.txt says how).
//   cudaEventElapsedTime answers the host time between two records: the benchmark's code runs,
//   its times mean nothing.
//   "Device memory" is host memory the emulator tracks; each stream is a worker thread that runs
//   its operations in order, so work really runs after the call that enqueued it, and an event
//   is really Pending until its stream reaches it.
// Semantics kept from the CUDA documentation: cudaMemcpyAsync from pageable host memory takes
//   its bytes before it returns, to pageable host memory it returns once the copy is done;
//   cudaFree waits for all work; cudaStreamWaitEvent waits for the record made before the call;
//   an event never recorded is complete; cudaMallocAsync memory is usable in stream order and
//   cudaFreeAsync frees it when the stream gets there. Not emulated: the default (null) stream,
//   managed or pinned memory, other memcpy kinds, devices other than 0.
// The strict kernel is the reference's dense-linear kernel run on the stream's thread (the
//   kernels' own device code is tested against it by runtime_cuda_arith_test); cublasGemmEx
//   sums k in blocks of 16, each block as a pairwise tree, so `cuda-cublas` drifts from the
//   reference as the real library does (it only takes the one call shape cublas_linear.cpp makes).
//   With VTRACE_CUDA_EMULATOR_GEMM_ORDER=alternate in the environment, every second cublasGemmEx
//   call of the process adds its block sums last to first, as a cuBLAS algorithm that reduces
//   split-k partial sums in the order they finish would: `cuda-cublas` becomes nondeterministic,
//   for the tests of `vtrace replay --repeat` (tests/scripts/replay_repeat_emulated_test.sh).
// Misuse is a bug of the runtime under test, not an error to return: a device pointer or range
//   outside a live allocation, a host pointer given as a device one, memory used after it was
//   freed, an aliasing output passed to the strict kernel (kernels.h forbids it), an odd f16
//   address given to cuBLAS, the null stream, a destroyed handle. The emulator then prints one
//   line naming the call and what was wrong, and aborts the test process.
//
// Thread rules: every function here and every emulated CUDA call may be called from any thread.
// Last error: a call that fails, and cudaEventQuery answering cudaErrorNotReady, record their
//   status as the calling thread's last error, as cudart does; cudaGetLastError answers and
//   clears it, cudaPeekAtLastError answers it.
// Errors: the emulated calls return cudaSuccess, or the status a test planned with fail_call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace vtrace::testing::cuda_emulator {

// Waits for every stream to finish its work, then clears the fault plan, the call counts and
// the holds, and sets the device count to 1. Streams and memory that are still live stay so.
void reset();

// The `nth` call (1 = the next one) of `function` from now on returns `status` and does nothing
// else; `function` is the API name as linked ("cudaMemcpyAsync", "cublasGemmEx",
// "launch_strict_dense_linear" for the strict kernel's launch, "check_kernel_image" for the
// strict kernels' image check at open, "load_cublas" for loading cuBLAS at cuda-cublas's open:
// any nonzero status is a library that cannot be loaded). `status` is a cudaError_t, or a
// cublasStatus_t for the cublas functions. Several plans may be pending at once.
void fail_call(std::string_view function, int nth, int status);

// How many times `function` was called since reset(), failed calls included.
std::uint64_t calls(std::string_view function);

// What cudaGetDeviceCount reports (1 after reset()).
void set_device_count(int count);

// The device memory cudaGetDeviceProperties reports (totalGlobalMem): 16 GiB; what
// cudaDeviceGetAttribute reports: an L2 of 4 MiB (cudaDevAttrL2CacheSize), and an H200 SXM's
// 132 SMs (cudaDevAttrMultiProcessorCount) at 1980 MHz (cudaDevAttrClockRate, in kHz).
inline constexpr std::uint64_t kDeviceMemoryBytes = std::uint64_t{16} << 30;
inline constexpr std::uint64_t kL2CacheBytes = std::uint64_t{4} << 20;
inline constexpr int kMultiprocessors = 132;
inline constexpr int kClockKhz = 1980000;

// Holding: while held, a stream's worker starts no further operation (one already running
// finishes). hold_all holds every stream, present and future; release lets stream `ordinal` run
// (ordinals count the streams created since the process started, from 0); release_all lets all
// run and stops holding new ones.
void hold_all();
void release(std::size_t ordinal);
void release_all();
// The ordinal the next stream created will have.
std::size_t next_stream_ordinal();
// Waits until every stream that is not held has run all it can: its queue is empty, or its next
// operation waits for an event that is not complete.
void settle();

// Live cudaMalloc and cudaMallocAsync allocations, streams, events and cuBLAS handles: what a
// runtime that was destroyed, or failed to open, must have given back.
std::size_t live_allocations();
std::size_t live_streams();
std::size_t live_events();
std::size_t live_blas_handles();

}  // namespace vtrace::testing::cuda_emulator
