// Private: the process-wide instance counters of spec 7.1 (shared by every host runtime),
// exposed to white-box tests so the exhaustion paths can be exercised. Not for product code.
#pragma once

#include <cstdint>

namespace vtrace::runtime::host::detail {

enum class InstanceCounter : std::uint8_t { kRuntime, kStream, kFence };

// Sets the next value `counter` hands out and returns the previous one (so a test can restore
// it). A value of u64::MAX makes the next take fail as exhausted.
std::uint64_t exchange_next_instance(InstanceCounter counter, std::uint64_t next);

}  // namespace vtrace::runtime::host::detail
