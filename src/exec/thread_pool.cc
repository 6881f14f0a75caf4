// SPDX-License-Identifier: Apache-2.0

#include "exec/thread_pool.h"

#include <pthread.h>

namespace kcache::exec {

ThreadPool::ThreadPool(PoolOptions options) : o_(std::move(options)) {
  std::lock_guard l(mu_);
  for (size_t i = 0; i < std::max<size_t>(o_.min_threads, 1); ++i) AddThreadLocked(false);
  monitor_ = std::thread([this] { Monitor(); });
  pthread_setname_np(monitor_.native_handle(), (o_.name.substr(0, 11) + "-mon").c_str());
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard l(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  monitor_cv_.notify_all();
  monitor_.join();
  std::list<std::thread> threads;
  {
    std::lock_guard l(mu_);
    threads.splice(threads.end(), workers_);
    threads.splice(threads.end(), finished_);
  }
  for (std::thread& t : threads) t.join();
}

void ThreadPool::AddThreadLocked(bool extra) {
  // Threads that ended idle are joined here: they hold no lock and are
  // returning.
  for (std::thread& t : finished_) t.join();
  finished_.clear();
  ++threads_;
  auto self = workers_.emplace(workers_.end());
  *self = std::thread([this, self, extra] { Work(self, extra); });
  pthread_setname_np(self->native_handle(), o_.name.substr(0, 15).c_str());
}

void ThreadPool::Post(std::function<void()> task) {
  {
    std::lock_guard l(mu_);
    queue_.push_back(Task{std::move(task), std::chrono::steady_clock::now()});
    if (idle_ == 0) monitor_cv_.notify_one();
  }
  work_cv_.notify_one();
}

size_t ThreadPool::threads() const {
  std::lock_guard l(mu_);
  return threads_;
}

void ThreadPool::Work(std::list<std::thread>::iterator self, bool extra) {
  std::unique_lock l(mu_);
  for (;;) {
    ++idle_;
    const bool woken =
        work_cv_.wait_for(l, o_.idle_exit, [&] { return stopping_ || !queue_.empty(); });
    --idle_;
    if (queue_.empty()) {
      if (stopping_) break;
      if (!woken && extra) {
        // An extra thread idle for idle_exit ends.
        finished_.splice(finished_.end(), workers_, self);
        break;
      }
      continue;
    }
    Task task = std::move(queue_.front());
    queue_.pop_front();
    // The last idle thread took work and more waits: the monitor decides
    // whether to grow (a Post may have found this thread idle and not
    // told it).
    if (idle_ == 0 && !queue_.empty()) monitor_cv_.notify_one();
    l.unlock();
    task.fn();
    task.fn = nullptr;  // destroyed outside the lock
    l.lock();
  }
  --threads_;
}

// Grows the pool while the oldest task has waited grow_after with no thread
// idle: the threads are all blocked in tasks, or too few for the load.
void ThreadPool::Monitor() {
  std::unique_lock l(mu_);
  while (!stopping_) {
    if (queue_.empty() || idle_ > 0) {
      monitor_cv_.wait(l, [&] { return stopping_ || (!queue_.empty() && idle_ == 0); });
      continue;
    }
    const auto due = queue_.front().posted + o_.grow_after;
    if (std::chrono::steady_clock::now() >= due) {
      if (threads_ < o_.max_threads) {
        AddThreadLocked(true);
        work_cv_.notify_one();
      }
      // Another look once the new thread (or a freed one) had its chance.
      const auto next = std::chrono::steady_clock::now() + o_.grow_after;
      while (!stopping_ && monitor_cv_.wait_until(l, next) == std::cv_status::no_timeout) {
      }
      continue;
    }
    monitor_cv_.wait_until(l, due);
  }
}

std::shared_ptr<ThreadPool> HandlerPool() {
  // Never destroyed, as the timer thread is not: at exit a handler of an
  // informer never stopped may still run, and joining it from a static
  // destructor would wait on it, or let it run on among destroyed globals.
  static const std::shared_ptr<ThreadPool> pool(
      new ThreadPool(PoolOptions{.name = "kcache-handler"}), [](ThreadPool*) {});
  return pool;
}

}  // namespace kcache::exec
