#include "fuzz/allocation_probe.h"

#include <cstdlib>
#include <new>

namespace {

thread_local bool armed = false;
thread_local std::size_t largest_seen = 0;

}  // namespace

namespace vtrace::testing {

AllocationProbe::AllocationProbe() {
  largest_seen = 0;
  armed = true;
}
AllocationProbe::~AllocationProbe() { armed = false; }
std::size_t AllocationProbe::largest() const { return largest_seen; }

}  // namespace vtrace::testing

// Every unaligned form is replaced, so that each allocation and its release meet in malloc/free
// (a sanitizer runtime brings its own forms; a mix of those and these would not match). The
// aligned forms stay the library's, pairwise.
namespace {

void* allocate(std::size_t size) {
  if (armed && size > largest_seen) largest_seen = size;
  return std::malloc(size == 0 ? 1 : size);
}

}  // namespace

void* operator new(std::size_t size) {
  if (void* p = allocate(size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) {
  if (void* p = allocate(size)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept { return allocate(size); }
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept { return allocate(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
