// Private to vtrace_recorder: the signals the flight recorder listens to.
//
// SIGUSR1 (the window trigger and the signal capture points): the handler only increments a
// lock-free counter; each flight recorder compares it with the count it last acted on at its
// next recorded call. Installed while at least one recorder asks for it; the handler found at the
// first installation is restored when the last one releases it, if ours is still the one in
// place (a handler the product installed meanwhile is its own and stays; the same for the fatal
// signals below).
//
// Fatal signals (the crash window): SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGABRT. A recorder
// registers a writer; when one of these signals arrives, the handler forks (_Fork, which is
// async-signal-safe) and the child, a one-thread copy of the dying process, calls every
// registered writer and exits; an alarm kills it after kCrashWindowSeconds if the crash left the
// copy unusable (a lock held, a corrupted heap). The parent waits for the child, restores the
// handlers it found and lets the signal take its course: a fault re-executes the faulting
// instruction, a sent or raised signal is raised again, so the process dies (or the product's
// own handler runs) exactly as it would have without the recorder, only later.
#pragma once

#include <cstdint>
#include <string_view>

namespace vtrace::recorder::detail {

void acquire_window_signal();
void release_window_signal();
// SIGUSR1 deliveries seen since the process started.
std::uint64_t window_signals();

// Writes one recorder's window in the crash child; `context` is what was registered.
using CrashWindowWriter = void (*)(void* context, int signal);
inline constexpr unsigned kCrashWindowSeconds = 20;
// At most kCrashWriters recorders at once; registering one more returns false (it then writes
// no crash window).
inline constexpr int kCrashWriters = 32;
bool acquire_crash_window(void* context, CrashWindowWriter writer);
void release_crash_window(void* context);
// "SIGSEGV", "SIGABRT", ...: the signal's name, for the window's detail.
std::string_view fatal_signal_name(int signal);

}  // namespace vtrace::recorder::detail
