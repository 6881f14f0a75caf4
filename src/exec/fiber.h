// SPDX-License-Identifier: Apache-2.0

// Fibers: functions that run on stacks of their own over a fixed set of
// carrier threads (kcache-fiber), so that work that mostly waits (a
// reflector waiting on its watch, a timer, a backoff) holds memory, not a
// thread. A fiber gives its carrier to another fiber only where it waits on
// a CondVar (or in SleepUntil); anything else it waits on blocks its carrier
// (a RocksDB write, a std::mutex): code run on a fiber must not wait, outside
// a CondVar, for something only another fiber does, and must hold no lock
// and no thread-local state across a CondVar wait (it may resume on another
// carrier).
//
// Thread-safety: safe for concurrent use.
#ifndef KCACHE_SRC_EXEC_FIBER_H_
#define KCACHE_SRC_EXEC_FIBER_H_

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <vector>

namespace kcache::exec {

class Fiber;

// A condition variable for std::mutex whose waits suspend a fiber (its
// carrier runs other fibers meanwhile) and block a plain thread. Notifies
// wake every waiter; waits may also end spuriously, as std's.
class CondVar {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  void notify_all();
  void notify_one() { notify_all(); }

  template <class Pred>
  void wait(std::unique_lock<std::mutex>& lock, Pred pred) {
    while (!pred()) WaitUntil(lock, nullptr, nullptr);
  }
  // Returns pred() at the end, as std's.
  template <class Pred>
  bool wait_until(std::unique_lock<std::mutex>& lock, TimePoint deadline, Pred pred) {
    while (!pred()) {
      if (!WaitUntil(lock, &deadline, nullptr)) return pred();
    }
    return true;
  }
  template <class Rep, class Period, class Pred>
  bool wait_for(std::unique_lock<std::mutex>& lock, std::chrono::duration<Rep, Period> d,
                Pred pred) {
    return wait_until(lock,
                      std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(d),
                      std::move(pred));
  }
  // Also ends once `stop` is requested. Returns pred() at the end.
  template <class Pred>
  bool wait(std::unique_lock<std::mutex>& lock, std::stop_token stop, Pred pred) {
    while (!pred()) {
      if (stop.stop_requested()) return pred();
      WaitUntil(lock, nullptr, &stop);
    }
    return true;
  }
  template <class Pred>
  bool wait_until(std::unique_lock<std::mutex>& lock, std::stop_token stop, TimePoint deadline,
                  Pred pred) {
    while (!pred()) {
      if (stop.stop_requested() || !WaitUntil(lock, &deadline, &stop)) return pred();
    }
    return true;
  }

  struct Waiter;

 private:
  // One wait: false once `*deadline` has passed.
  bool WaitUntil(std::unique_lock<std::mutex>& lock, const TimePoint* deadline,
                 const std::stop_token* stop);

  std::mutex mu_;
  std::vector<std::shared_ptr<Waiter>> waiters_;  // guarded by mu_
};

// Sleeps until the steady clock reaches `deadline` or `stop` is requested;
// false if stopped. A fiber gives its carrier away meanwhile.
bool SleepUntil(std::chrono::steady_clock::time_point deadline, std::stop_token stop);

// A fiber's handle: dropping it neither stops nor waits for the fiber.
class FiberHandle {
 public:
  // Waits for the fiber's function to return (a fiber waiting gives its
  // carrier away). Must not be called from the fiber itself.
  void Join();
  bool Done() const;

 private:
  friend class Fiber;
  mutable std::mutex mu_;
  CondVar cv_;
  bool done_ = false;  // guarded by mu_
};

// Runs `fn` on a new fiber. The process's carriers (kcache-fiber, as many as
// the machine has cores, at least 2 and at most 8) start at the first call
// and live for the process. `fn` must not throw.
std::shared_ptr<FiberHandle> Spawn(std::function<void()> fn);

// True when called on a fiber.
bool InFiber();

// The carriers started so far (for tests and the thread budget).
size_t Carriers();

}  // namespace kcache::exec

#endif  // KCACHE_SRC_EXEC_FIBER_H_
