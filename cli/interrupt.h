// Stopping `vtrace record` and `vtrace demo` on SIGINT or SIGTERM at a call boundary.
//
// While an InterruptScope lives, the first SIGINT or SIGTERM only sets a flag (the handler does
// nothing else): the workload asks stop_requested() between calls (workloads::StopRequested),
// ends on a call boundary, and the subcommand closes the trace marked interrupted
// (recorder::CloseReason) and exits interrupted_exit_code() (130 for SIGINT, 143 for SIGTERM).
// A second SIGINT or SIGTERM restores the default disposition and raises it again: the process
// dies at once by that signal and the trace stays as OUT.partial, a recoverable cut trace.
//
// Thread rules: one scope at a time in the process (the flag is process-wide); the handler may run
//   on any thread (the trace writer's included); the queries are safe from any thread.
// Errors: installing the handlers cannot fail for these two signals (sigaction's only failures
//   are invalid signal numbers).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace vtrace::cli {

class InterruptScope {
 public:
  // Clears the flag and installs the handlers (SA_RESTART: the trace's system calls resume).
  InterruptScope();
  // Puts back the dispositions that were there before.
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

  // The signal received (SIGINT or SIGTERM), or 0 when none was.
  static int signal_received();
  static bool stop_requested() { return signal_received() != 0; }
};

// "SIGINT", "SIGTERM" (else "a signal").
std::string_view signal_name(int signal);
// The shell's convention for a process ended by `signal`: 128 + its number (130, 143).
int interrupted_exit_code(int signal);
// The one sentence a subcommand prints (print_error) when `signal` stopped it after it closed
// `trace` with `events` events: "interrupted by SIGINT: the workload stopped at a call boundary;
// OUT is a complete trace of the 123 events recorded so far, marked interrupted". stopped_early
// false: the signal came after the workload's last call (the trace is complete, not marked).
std::string interrupted_sentence(int signal, std::string_view trace, std::uint64_t events,
                                 bool stopped_early);

}  // namespace vtrace::cli
