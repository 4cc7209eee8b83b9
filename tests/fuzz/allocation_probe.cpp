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

// libstdc++'s other forms (array, nothrow, sized delete) call these two.
void* operator new(std::size_t size) {
  if (armed && size > largest_seen) largest_seen = size;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
