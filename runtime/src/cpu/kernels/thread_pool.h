// A small persistent fork-join pool for the dense-linear engine (private to vtrace_runtime).
//
// ThreadPool(n) starts n-1 worker threads; run() executes fn(task, worker) for every task in
// [0, tasks) on the workers and the calling thread (worker 0), handing tasks out dynamically,
// and returns when all are done. `worker` is in [0, size()) and identifies the thread, so callers
// can give each one its own scratch. No allocation per run. Every task runs in the caller's
// floating-point environment (rounding mode, MXCSR: fegetenv at run(), fesetenv on each worker),
// so results never depend on which thread ran a task. In a child process forked after the pool
// started (its workers do not exist there), run() runs every task on the calling thread, and the
// destructor lets the workers go (it cannot join threads of another process).
// Ownership: the pool owns its threads and joins them in the destructor (none is detached).
// Errors: a worker the system refuses to start (std::thread throws) ends the starting: the pool
//   runs with the workers it has (size() says how many, start_failure() why) and never throws.
// Thread rules: run() is called by one thread at a time; fn must not throw (std::terminate).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cfenv>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace vtrace::runtime::cpu::kernels {

class ThreadPool {
 public:
  explicit ThreadPool(unsigned threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  unsigned size() const { return size_; }
  // Why fewer threads than asked were started ("Resource temporarily unavailable"); empty when
  // all were.
  const std::string& start_failure() const { return start_failure_; }

  template <class Fn>
  void run(std::size_t tasks, Fn& fn) {
    run_erased(tasks, &fn, [](void* ctx, std::size_t task, unsigned worker) noexcept {
      (*static_cast<Fn*>(ctx))(task, worker);
    });
  }

 private:
  using Call = void (*)(void* ctx, std::size_t task, unsigned worker) noexcept;
  void run_erased(std::size_t tasks, void* ctx, Call call);
  void worker_loop(unsigned worker);
  void drain(unsigned worker);

  // Whether this is the process that started the workers (false in a forked child).
  bool in_owner_process() const;

  unsigned size_;
  pid_t owner_;  // getpid() when the workers started
  std::string start_failure_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_;
  std::condition_variable done_;
  std::uint64_t generation_ = 0;  // bumped per run (under mutex_)
  unsigned busy_ = 0;             // workers still inside the current run (under mutex_)
  bool stop_ = false;
  // The current run, published under mutex_ before generation_ changes.
  void* ctx_ = nullptr;
  Call call_ = nullptr;
  std::size_t tasks_ = 0;
  std::fenv_t env_{};  // the caller's floating-point environment
  std::atomic<std::size_t> next_{0};
};

}  // namespace vtrace::runtime::cpu::kernels
