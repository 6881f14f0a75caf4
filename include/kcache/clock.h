// SPDX-License-Identifier: Apache-2.0

// Clock: the time source of reflectors and informers (backoff, watch
// timeouts, resync, "caught up" checks), injectable so that tests control
// time.
//
// Thread-safety: implementations are safe for concurrent use.
#ifndef KCACHE_CLOCK_H_
#define KCACHE_CLOCK_H_

#include <chrono>
#include <functional>
#include <memory>
#include <stop_token>

#include "kcache/export.h"

namespace kcache {

class KCACHE_EXPORT Clock {
 public:
  using Duration = std::chrono::steady_clock::duration;
  using TimePoint = std::chrono::steady_clock::time_point;

  virtual ~Clock() = default;
  virtual TimePoint Now() const = 0;
  // Sleeps until Now() >= deadline or `stop` is requested. Returns false if
  // woken by `stop`.
  virtual bool SleepUntil(TimePoint deadline, std::stop_token stop) = 0;
  bool SleepFor(Duration d, std::stop_token stop) { return SleepUntil(Now() + d, std::move(stop)); }

  // A call that Clock::At arranged.
  class Timer {
   public:
    virtual ~Timer() = default;
    // The call will not begin after this returns; one already running on
    // another thread is waited for. From inside the call itself, returns
    // at once.
    virtual void Cancel() = 0;
  };
  // Calls `fn` once, on a thread of the clock's, when Now() >= deadline,
  // unless the timer is cancelled first; dropping the Timer cancels it. The
  // real clock runs every timer of the process on one thread
  // (kcache-timer), so `fn` must be short and must not block: it posts
  // longer work elsewhere. Default: a thread per timer, sleeping in
  // SleepUntil.
  virtual std::shared_ptr<Timer> At(TimePoint deadline, std::function<void()> fn);

  // The process's steady clock. Never null; lives for the process.
  static std::shared_ptr<Clock> Real();
};

}  // namespace kcache

#endif  // KCACHE_CLOCK_H_
