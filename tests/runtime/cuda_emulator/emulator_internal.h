// What the emulated cuBLAS and strict-kernel launch (blas_and_kernels.cpp) share with the
// emulated cudart (cudart.cpp). Private to tests/runtime/cuda_emulator/.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <string_view>

namespace vtrace::testing::cuda_emulator::detail {

// Prints "cuda emulator: <call>: <what>" and aborts: the runtime under test misused the API.
[[noreturn]] void misuse(std::string_view call, std::string_view what);

// Counts a call of `function`; the status planned for this call by fail_call, or 0.
int planned_failure(std::string_view function);

// cudart's per-thread last error: noted() records a status other than cudaSuccess as the calling
// thread's last error and answers it (every emulated call that fails goes through it, and
// cudaEventQuery's cudaErrorNotReady, as cudart records it too); take_last_error answers it and
// clears it (cudaGetLastError), peek_last_error only answers it (cudaPeekAtLastError).
cudaError_t noted(cudaError_t status);
cudaError_t take_last_error();
cudaError_t peek_last_error();

// [p, p + bytes) lies inside one live device allocation (bytes >= 1); misuse otherwise.
void require_device(std::string_view call, const void* p, std::size_t bytes);

// Two byte ranges share a byte.
bool overlap(const void* a, std::size_t a_bytes, const void* b, std::size_t b_bytes);

// `stream` is a live stream (not the null stream); misuse otherwise.
void require_stream(std::string_view call, cudaStream_t stream);

// Appends `work` to `stream`'s queue; the stream's worker runs it after everything enqueued
// before it. `work` runs without the emulator's lock held.
void enqueue(std::string_view call, cudaStream_t stream, std::function<void()> work);

}  // namespace vtrace::testing::cuda_emulator::detail
