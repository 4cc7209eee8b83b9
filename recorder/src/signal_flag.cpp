#include "signal_flag.h"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
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

// ---- the crash window ----

constexpr std::array<int, 5> kFatalSignals{SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};

struct CrashSlot {
  std::atomic<void*> context{nullptr};
  std::atomic<CrashWindowWriter> writer{nullptr};
};
std::array<CrashSlot, kCrashWriters> g_crash_slots;
static_assert(std::atomic<void*>::is_always_lock_free, "a signal handler needs it");
int g_crash_users = 0;  // under g_mu
std::array<struct sigaction, kFatalSignals.size()> g_crash_previous{};
std::atomic<bool> g_crash_handling{false};
volatile std::sig_atomic_t g_in_crash_child = 0;

extern "C" void on_fatal_signal(int signal, siginfo_t* info, void*);

// Whether `signal`'s current action is still `handler` (installed by this file): a handler the
// product installed after ours is its own and is left in place. Async-signal-safe (sigaction).
bool still_ours(int signal, void (*handler)(int)) {
  struct sigaction current {};
  if (sigaction(signal, nullptr, &current) != 0) return false;
  return (current.sa_flags & SA_SIGINFO) == 0 && current.sa_handler == handler;
}
bool still_ours(int signal, void (*handler)(int, siginfo_t*, void*)) {
  struct sigaction current {};
  if (sigaction(signal, nullptr, &current) != 0) return false;
  return (current.sa_flags & SA_SIGINFO) != 0 && current.sa_sigaction == handler;
}

// Puts back the handlers found at installation, for the signals whose handler is still ours.
void restore_fatal_handlers() {
  for (std::size_t i = 0; i < kFatalSignals.size(); ++i) {
    if (!still_ours(kFatalSignals[i], on_fatal_signal)) continue;
    sigaction(kFatalSignals[i], &g_crash_previous[i], nullptr);
  }
}

extern "C" void on_fatal_signal(int signal, siginfo_t* info, void*) {
  if (g_in_crash_child != 0) _exit(128 + signal);  // the crash child died: give up quietly
  if (!g_crash_handling.exchange(true)) {
    const pid_t child = _Fork();
    if (child == 0) {
      g_in_crash_child = 1;
      alarm(kCrashWindowSeconds);
      for (auto& slot : g_crash_slots) {
        void* context = slot.context.load();
        const CrashWindowWriter writer = slot.writer.load();
        if (context != nullptr && writer != nullptr) writer(context, signal);
      }
      _exit(0);
    }
    if (child > 0) {
      int status = 0;
      while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
      }
    }
  }
  restore_fatal_handlers();
  // A signal sent by a process or raised (abort() included) is raised again, for the handler
  // found before ours; it is blocked until this handler returns. A fault needs nothing: the
  // faulting instruction runs again on return and faults again.
  if (info == nullptr || info->si_code <= 0) raise(signal);
}

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
  // A handler the product installed after ours stays: only ours is replaced by the one we found.
  if (still_ours(SIGUSR1, on_window_signal)) sigaction(SIGUSR1, &g_previous, nullptr);
}

std::uint64_t window_signals() { return g_signals.load(std::memory_order_relaxed); }

bool acquire_crash_window(void* context, CrashWindowWriter writer) {
  std::lock_guard lock(g_mu);
  CrashSlot* free_slot = nullptr;
  for (auto& slot : g_crash_slots) {
    if (slot.context.load() == nullptr) {
      free_slot = &slot;
      break;
    }
  }
  if (free_slot == nullptr) return false;
  free_slot->writer.store(writer);
  free_slot->context.store(context);
  if (g_crash_users++ == 0) {
    struct sigaction action {};
    action.sa_sigaction = on_fatal_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_SIGINFO;
    for (std::size_t i = 0; i < kFatalSignals.size(); ++i) {
      sigaction(kFatalSignals[i], &action, &g_crash_previous[i]);
    }
  }
  return true;
}

void release_crash_window(void* context) {
  std::lock_guard lock(g_mu);
  for (auto& slot : g_crash_slots) {
    if (slot.context.load() != context) continue;
    slot.context.store(nullptr);
    slot.writer.store(nullptr);
    if (--g_crash_users == 0) restore_fatal_handlers();
    return;
  }
}

std::string_view fatal_signal_name(int signal) {
  switch (signal) {
    case SIGSEGV:
      return "SIGSEGV";
    case SIGBUS:
      return "SIGBUS";
    case SIGILL:
      return "SIGILL";
    case SIGFPE:
      return "SIGFPE";
    case SIGABRT:
      return "SIGABRT";
    default:
      return "a fatal signal";
  }
}

}  // namespace vtrace::recorder::detail
