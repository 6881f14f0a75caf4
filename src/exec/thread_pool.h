// SPDX-License-Identifier: Apache-2.0

// ThreadPool: a small set of threads that run posted tasks in the order they
// were posted. It starts with `min_threads` and grows by one, up to
// `max_threads`, each time a task has waited `grow_after` with every thread
// busy: tasks that block (a slow event handler) then cost a thread each only
// while they keep the others from running. Threads above the minimum end
// after `idle_exit` without work.
//
// Thread-safety: safe for concurrent use. Tasks run with no lock of the
// pool held.
#ifndef KCACHE_SRC_EXEC_THREAD_POOL_H_
#define KCACHE_SRC_EXEC_THREAD_POOL_H_

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace kcache::exec {

struct PoolOptions {
  // Names the threads (at most 15 characters). Default: "kcache-pool".
  std::string name = "kcache-pool";
  size_t min_threads = 4;
  size_t max_threads = 16;
  std::chrono::milliseconds grow_after{100};
  std::chrono::milliseconds idle_exit{60000};
};

class ThreadPool {
 public:
  explicit ThreadPool(PoolOptions options);
  // Runs what is queued, then joins every thread.
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void Post(std::function<void()> task);

  // Threads running now (the monitor not counted).
  size_t threads() const;

 private:
  struct Task {
    std::function<void()> fn;
    std::chrono::steady_clock::time_point posted;
  };
  void Work(std::list<std::thread>::iterator self, bool extra);
  void Monitor();
  void AddThreadLocked(bool extra);  // REQUIRES: mu_ held

  const PoolOptions o_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable monitor_cv_;
  std::deque<Task> queue_;           // guarded by mu_
  size_t threads_ = 0;               // guarded by mu_
  size_t idle_ = 0;                  // guarded by mu_: threads waiting for work
  bool stopping_ = false;            // guarded by mu_
  std::list<std::thread> workers_;   // guarded by mu_
  std::list<std::thread> finished_;  // guarded by mu_: ended, to be joined
  std::thread monitor_;
};

// The process's pool for event handlers (kcache-handler): 4 threads, growing
// to 16 while handlers block the others for more than 100 ms. Never
// destroyed.
std::shared_ptr<ThreadPool> HandlerPool();

}  // namespace kcache::exec

#endif  // KCACHE_SRC_EXEC_THREAD_POOL_H_
