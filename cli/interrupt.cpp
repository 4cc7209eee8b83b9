#include "interrupt.h"

#include <fmt/format.h>

#include <atomic>
#include <csignal>

namespace vtrace::cli {

namespace {

// Lock-free, so storing it from a signal handler is async-signal-safe.
std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

struct sigaction g_previous_int {};
struct sigaction g_previous_term {};

extern "C" void on_interrupt(int signal) {
  int none = 0;
  if (g_signal.compare_exchange_strong(none, signal)) return;
  // The second one: die by it now (signal() and raise() are async-signal-safe).
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

}  // namespace

InterruptScope::InterruptScope() {
  g_signal.store(0);
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, &g_previous_int);
  sigaction(SIGTERM, &action, &g_previous_term);
}

InterruptScope::~InterruptScope() {
  sigaction(SIGINT, &g_previous_int, nullptr);
  sigaction(SIGTERM, &g_previous_term, nullptr);
}

int InterruptScope::signal_received() { return g_signal.load(); }

std::string_view signal_name(int signal) {
  switch (signal) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    default:
      return "a signal";
  }
}

int interrupted_exit_code(int signal) { return 128 + signal; }

std::string interrupted_sentence(int signal, std::string_view trace, std::uint64_t events,
                                 bool stopped_early) {
  if (!stopped_early) {
    return fmt::format(
        "interrupted by {} after the workload's last call; {} is a complete trace "
        "of its {} events",
        signal_name(signal), trace, events);
  }
  return fmt::format(
      "interrupted by {}: the workload stopped at a call boundary; {} is a complete "
      "trace of the {} events recorded so far, marked interrupted",
      signal_name(signal), trace, events);
}

}  // namespace vtrace::cli
