// Just enough of CUDA, on the host, to run the strict kernels' device code
// (runtime/cuda/src/kernels_device.h) in a test without a GPU: every CUDA thread of a block is a
// std::thread, __syncthreads is a std::barrier of the block's threads, __shared__ arrays are
// function statics (one block runs at a time, so they are the block's shared memory), and
// threadIdx and blockIdx are thread_local. Nothing here is device-faithful beyond what the
// kernels' indexing needs: it checks which thread loads, stages and reduces what, and that every
// 16-byte access is 16-byte aligned (check_vector_access), not timing, memory ordering or
// occupancy.
//
// Include this, then kernels_device.h, in one translation unit without the CUDA headers.
// Thread rules: launch() runs one launch to completion; not reentrant (the shared statics).
// Errors: none; a kernel that never reaches a barrier its block waits at hangs (ctest's timeout).
#pragma once

#include <barrier>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#ifdef __CUDACC__
#error "cuda_host_shim.h is for host compilers only"
#endif

#define __global__ inline
#define __device__
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)

struct uint4 {
  std::uint32_t x, y, z, w;
};
struct float4 {
  float x, y, z, w;
};
inline uint4 make_uint4(std::uint32_t x, std::uint32_t y, std::uint32_t z, std::uint32_t w) {
  return {x, y, z, w};
}
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }

struct HostDim3 {
  unsigned x = 1, y = 1, z = 1;
};

namespace vtrace::cuda_host_shim {
inline thread_local HostDim3 thread_index;
inline thread_local HostDim3 block_index;
inline thread_local std::barrier<>* block_barrier = nullptr;
}  // namespace vtrace::cuda_host_shim

#define threadIdx (::vtrace::cuda_host_shim::thread_index)
#define blockIdx (::vtrace::cuda_host_shim::block_index)

inline void __syncthreads() { vtrace::cuda_host_shim::block_barrier->arrive_and_wait(); }

namespace vtrace::cuda_host_shim {

// A 16-byte access of the device code (uint4, float4) at `p`. On a GPU one at an address that is
// not 16-byte aligned is a fault (cudaErrorMisalignedAddress) that poisons the whole context; the
// host's memcpy would not care, so the shim refuses it here: one line naming the address and the
// process aborts (the test fails), as the emulated cudart does with a misuse.
inline void check_vector_access(const void* p) {
  if (reinterpret_cast<std::uintptr_t>(p) % 16 == 0) return;
  std::fprintf(stderr,
               "cuda_host_shim: a 16-byte access at %p, which is not 16-byte aligned (on a GPU: "
               "cudaErrorMisalignedAddress)\n",
               p);
  std::abort();
}

// The block's dynamic shared memory (extern __shared__ on the device): launch() sizes it.
inline thread_local uint4* dynamic_shared_base = nullptr;
inline uint4* dynamic_shared() { return dynamic_shared_base; }

// cp.async, as the device orders it: copy_async_16 queues a 16-byte copy in the thread's open
// group, copy_async_commit closes the group, and copy_async_wait(n) performs every committed
// group but the n most recent (the device guarantees no more than that). So a kernel that reads
// a stage before waiting for it reads what was there before, as it could on a GPU.
struct PendingCopy {
  void* dst;
  const void* src;
};
inline thread_local std::vector<PendingCopy> open_copies;
inline thread_local std::vector<std::vector<PendingCopy>> committed_copies;
inline void copy_async_16(void* dst, const void* src) {
  check_vector_access(dst);
  check_vector_access(src);
  open_copies.push_back({dst, src});
}
inline void copy_async_commit() {
  committed_copies.push_back(std::move(open_copies));
  open_copies.clear();
}
inline void copy_async_wait(std::size_t n) {
  while (committed_copies.size() > n) {
    for (const PendingCopy& c : committed_copies.front()) std::memcpy(c.dst, c.src, 16);
    committed_copies.erase(committed_copies.begin());
  }
}

}  // namespace vtrace::cuda_host_shim

// The device's read-only load of 16 bytes, which must be 16-byte aligned (check_vector_access).
inline uint4 __ldg(const uint4* p) {
  vtrace::cuda_host_shim::check_vector_access(p);
  uint4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

namespace vtrace::cuda_host_shim {

// Runs `kernel` (a callable taking no arguments: the kernel call with its arguments bound) on a
// grid of grid.x * grid.y blocks of block.x * block.y threads, one block after the other, each
// with dynamic_shared_bytes of dynamic shared memory.
inline void launch(HostDim3 grid, HostDim3 block, const std::function<void()>& kernel,
                   std::size_t dynamic_shared_bytes = 0) {
  const unsigned threads = block.x * block.y;
  for (unsigned by = 0; by < grid.y; ++by) {
    for (unsigned bx = 0; bx < grid.x; ++bx) {
      // Each block's dynamic shared memory starts as garbage, as on the device.
      std::vector<uint4> dynamic((dynamic_shared_bytes + sizeof(uint4) - 1) / sizeof(uint4),
                                 uint4{0xA5A5A5A5u, 0xA5A5A5A5u, 0xA5A5A5A5u, 0xA5A5A5A5u});
      std::barrier<> barrier(static_cast<std::ptrdiff_t>(threads));
      std::vector<std::thread> pool;
      pool.reserve(threads);
      for (unsigned ty = 0; ty < block.y; ++ty) {
        for (unsigned tx = 0; tx < block.x; ++tx) {
          pool.emplace_back([&, tx, ty] {
            thread_index = {tx, ty, 0};
            block_index = {bx, by, 0};
            block_barrier = &barrier;
            dynamic_shared_base = dynamic.data();
            open_copies.clear();
            committed_copies.clear();
            kernel();
          });
        }
      }
      for (auto& t : pool) t.join();
    }
  }
}

}  // namespace vtrace::cuda_host_shim
