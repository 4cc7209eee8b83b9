#include "signal_flag.h"

#include <atomic>
#include <csignal>
#include <mutex>

namespace vtrace::recorder::detail {

namespace {

std::atomic<std::uint64_t> g_signals{0};
static_assert(std::atomic<std::uint64_t>::is_always_lock_free, "a signal handler needs it");

std::mutex g_mu;
int g_users = 0;
struct sigaction g_previous {};

extern "C" void on_window_signal(int) { g_signals.fetch_add(1, std::memory_order_relaxed); }

}  // namespace

void acquire_window_signal() {
  std::lock_guard lock(g_mu);
  if (g_users++ > 0) return;
  struct sigaction action {};
  action.sa_handler = on_window_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &action, &g_previous);
}

void release_window_signal() {
  std::lock_guard lock(g_mu);
  if (g_users == 0 || --g_users > 0) return;
  sigaction(SIGUSR1, &g_previous, nullptr);
}

std::uint64_t window_signals() { return g_signals.load(std::memory_order_relaxed); }

}  // namespace vtrace::recorder::detail
