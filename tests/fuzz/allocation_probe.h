// The largest single allocation a call makes: this test executable replaces the global operator
// new (allocation_probe.cpp) to note, on the thread that armed a probe, the largest size asked for.
// A bound case checks that a file claiming 2^40 events or a 1 TiB payload is refused without
// allocating anything near the claim.
//
//   AllocationProbe probe;            // armed from here
//   auto r = TraceReader::open(...);
//   CHECK(probe.largest() < kSmall);
//
// Thread rules: a probe notes the allocations of the thread that made it. Probes do not nest.
#pragma once

#include <cstddef>

namespace vtrace::testing {

class AllocationProbe {
 public:
  AllocationProbe();
  ~AllocationProbe();
  AllocationProbe(const AllocationProbe&) = delete;
  AllocationProbe& operator=(const AllocationProbe&) = delete;
  // The largest size passed to operator new on this thread since construction.
  std::size_t largest() const;
};

}  // namespace vtrace::testing
