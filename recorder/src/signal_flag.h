// Private to vtrace_recorder: the SIGUSR1 window trigger. The handler only increments a lock-free
// counter; each flight recorder compares it with the count it last acted on at its next recorded
// call. Installed while at least one recorder asks for it; the handler found at the first
// installation is restored when the last one releases it.
#pragma once

#include <cstdint>

namespace vtrace::recorder::detail {

void acquire_window_signal();
void release_window_signal();
// SIGUSR1 deliveries seen since the process started.
std::uint64_t window_signals();

}  // namespace vtrace::recorder::detail
