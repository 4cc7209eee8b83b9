#include "cpu/kernels/thread_pool.h"

#include <unistd.h>

#include <new>
#include <system_error>

namespace vtrace::runtime::cpu::kernels {

ThreadPool::ThreadPool(unsigned threads) : size_(threads == 0 ? 1 : threads), owner_(::getpid()) {
  try {
    workers_.reserve(size_ - 1);
    for (unsigned w = 1; w < size_; ++w) workers_.emplace_back([this, w] { worker_loop(w); });
  } catch (const std::system_error& e) {
    start_failure_ = e.code().message();
  } catch (const std::bad_alloc&) {
    start_failure_ = "out of memory";
  }
  size_ = static_cast<unsigned>(workers_.size()) + 1;
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  start_.notify_all();
  const bool owner = in_owner_process();
  for (auto& t : workers_) {
    if (owner) {
      t.join();
    } else {
      t.detach();
    }
  }
}

bool ThreadPool::in_owner_process() const { return ::getpid() == owner_; }

void ThreadPool::drain(unsigned worker) {
  for (;;) {
    const std::size_t task = next_.fetch_add(1, std::memory_order_relaxed);
    if (task >= tasks_) return;
    call_(ctx_, task, worker);
  }
}

void ThreadPool::run_erased(std::size_t tasks, void* ctx, Call call) {
  if (tasks == 0) return;
  if (workers_.empty() || tasks == 1 || !in_owner_process()) {
    for (std::size_t t = 0; t < tasks; ++t) call(ctx, t, 0);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    ctx_ = ctx;
    call_ = call;
    tasks_ = tasks;
    std::fegetenv(&env_);
    next_.store(0, std::memory_order_relaxed);
    busy_ = static_cast<unsigned>(workers_.size());
    ++generation_;
  }
  start_.notify_all();
  drain(0);
  std::unique_lock lock(mutex_);
  done_.wait(lock, [this] { return busy_ == 0; });
}

void ThreadPool::worker_loop(unsigned worker) {
  std::uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      std::fesetenv(&env_);
    }
    drain(worker);
    bool last = false;
    {
      std::lock_guard lock(mutex_);
      last = --busy_ == 0;
    }
    if (last) done_.notify_one();
  }
}

}  // namespace vtrace::runtime::cpu::kernels
