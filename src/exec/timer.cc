// SPDX-License-Identifier: Apache-2.0

#include "exec/timer.h"

#include <pthread.h>

#include <map>

namespace kcache::exec {
namespace {

class TimerThread {
 public:
  static TimerThread& Get() {
    // Never destroyed: timers may be armed until the process exits.
    static TimerThread* const t = new TimerThread();
    return *t;
  }

  void Add(std::chrono::steady_clock::time_point deadline, std::shared_ptr<TimerCall> call) {
    {
      std::lock_guard l(mu_);
      due_.emplace(deadline, std::move(call));
    }
    cv_.notify_one();
  }

 private:
  TimerThread() {
    std::thread t([this] { Run(); });
    pthread_setname_np(t.native_handle(), "kcache-timer");
    t.detach();
  }

  void Run() {
    std::unique_lock l(mu_);
    for (;;) {
      if (due_.empty()) {
        cv_.wait(l);
        continue;
      }
      auto first = due_.begin();
      if (std::chrono::steady_clock::now() < first->first) {
        cv_.wait_until(l, first->first);
        continue;
      }
      std::shared_ptr<TimerCall> call = std::move(first->second);
      due_.erase(first);
      l.unlock();
      call->Fire();
      call.reset();
      l.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::multimap<std::chrono::steady_clock::time_point, std::shared_ptr<TimerCall>>
      due_;  // guarded by mu_
};

}  // namespace

void TimerCall::Fire() {
  std::function<void()> fn;
  {
    std::lock_guard l(mu_);
    if (state_ != kPending) return;
    state_ = kRunning;
    runner_ = std::this_thread::get_id();
    fn.swap(fn_);
  }
  fn();
  fn = nullptr;
  {
    std::lock_guard l(mu_);
    state_ = kDone;
  }
  cv_.notify_all();
}

bool TimerCall::Cancel() {
  std::unique_lock l(mu_);
  if (state_ == kPending) {
    state_ = kDone;
    std::function<void()> drop;
    drop.swap(fn_);
    l.unlock();
    return true;  // `drop` is destroyed without the lock
  }
  if (state_ == kRunning && runner_ != std::this_thread::get_id())
    cv_.wait(l, [&] { return state_ == kDone; });
  return false;
}

void FireAt(std::chrono::steady_clock::time_point deadline, std::shared_ptr<TimerCall> call) {
  TimerThread::Get().Add(deadline, std::move(call));
}

}  // namespace kcache::exec
