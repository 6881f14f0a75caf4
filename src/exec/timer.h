// SPDX-License-Identifier: Apache-2.0

// Timers of the real clock: calls run once at a steady-clock deadline, all
// of them on one thread of the process (kcache-timer) started at the first.
// Clock::Real()->At and fibers' timed waits (exec/fiber.h) use it.
//
// Thread-safety: safe for concurrent use.
#ifndef KCACHE_SRC_EXEC_TIMER_H_
#define KCACHE_SRC_EXEC_TIMER_H_

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace kcache::exec {

// A call and whether it ran, shared by its handle and whoever runs it.
class TimerCall {
 public:
  explicit TimerCall(std::function<void()> fn) : fn_(std::move(fn)) {}

  // Runs the call unless cancelled.
  void Fire();

  // The call will not begin after this returns; one running on another
  // thread is waited for, and from inside the call this returns at once.
  // True if the call had not begun (this cancelled it).
  bool Cancel();

 private:
  enum State { kPending, kRunning, kDone };
  std::mutex mu_;
  std::condition_variable cv_;
  State state_ = kPending;    // guarded by mu_
  std::thread::id runner_;    // guarded by mu_
  std::function<void()> fn_;  // guarded by mu_
};

// Fires `call` on the timer thread once the steady clock reaches `deadline`.
// The call must be short and must not block.
void FireAt(std::chrono::steady_clock::time_point deadline, std::shared_ptr<TimerCall> call);

}  // namespace kcache::exec

#endif  // KCACHE_SRC_EXEC_TIMER_H_
