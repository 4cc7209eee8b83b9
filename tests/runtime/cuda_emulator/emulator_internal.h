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
