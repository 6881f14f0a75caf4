// SPDX-License-Identifier: Apache-2.0

// A Clock that moves only when a test advances it.
#ifndef KCACHE_TESTS_TESTING_FAKE_CLOCK_H_
#define KCACHE_TESTS_TESTING_FAKE_CLOCK_H_

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "exec/timer.h"
#include "kcache/clock.h"

namespace kcache::testing {

// Timers (At) fire on the thread that calls Advance past their deadline,
// in deadline order, after the clock's lock is released; until then each
// counts as a sleeper, and its duration is recorded in sleeps().
class FakeClock final : public Clock, public std::enable_shared_from_this<FakeClock> {
 public:
  TimePoint Now() const override {
    std::lock_guard l(mu_);
    return now_;
  }
  bool SleepUntil(TimePoint deadline, std::stop_token stop) override {
    std::unique_lock l(mu_);
    ++sleepers_;
    sleeps_.push_back(deadline - now_);
    changed_.notify_all();
    bool done = cv_.wait(l, stop, [&] { return now_ >= deadline; });
    --sleepers_;
    return done;
  }
  std::shared_ptr<Timer> At(TimePoint deadline, std::function<void()> fn) override {
    auto timer = std::make_shared<FakeTimer>(weak_from_this(), std::move(fn));
    std::lock_guard l(mu_);
    ++sleepers_;
    sleeps_.push_back(deadline - now_);
    timers_.emplace(deadline, Pending{timer.get(), timer});
    changed_.notify_all();
    return timer;
  }
  void Advance(Duration d) {
    std::vector<std::shared_ptr<FakeTimer>> due;
    {
      std::lock_guard l(mu_);
      now_ += d;
      cv_.notify_all();
      while (!timers_.empty() && timers_.begin()->first <= now_) {
        // A handle dropped meanwhile cancelled its timer.
        if (auto t = timers_.begin()->second.timer.lock()) due.push_back(std::move(t));
        timers_.erase(timers_.begin());
        --sleepers_;
      }
    }
    for (auto& t : due) t->Fire();
  }
  // Blocks until at least `n` threads sleep on this clock.
  void WaitForSleepers(int n) {
    std::unique_lock l(mu_);
    changed_.wait(l, [&] { return sleepers_ >= n; });
  }
  // Every duration slept so far, in order.
  std::vector<Duration> sleeps() const {
    std::lock_guard l(mu_);
    return sleeps_;
  }

 private:
  class FakeTimer final : public Timer {
   public:
    FakeTimer(std::weak_ptr<FakeClock> clock, std::function<void()> fn)
        : clock_(std::move(clock)), call_(std::move(fn)) {}
    ~FakeTimer() override { Cancel(); }
    void Fire() { call_.Fire(); }
    void Cancel() override {
      if (!call_.Cancel()) return;
      if (auto clock = clock_.lock()) clock->Forget(this);
    }

   private:
    const std::weak_ptr<FakeClock> clock_;
    exec::TimerCall call_;
  };
  // A cancelled timer no longer sleeps.
  void Forget(const FakeTimer* timer) {
    std::lock_guard l(mu_);
    for (auto it = timers_.begin(); it != timers_.end(); ++it) {
      if (it->second.raw == timer) {
        timers_.erase(it);
        --sleepers_;
        return;
      }
    }
  }

  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  std::condition_variable changed_;
  TimePoint now_{std::chrono::hours(1)};
  int sleepers_ = 0;
  std::vector<Duration> sleeps_;
  // Timers not fired yet; the handles own them (dropping one cancels it).
  struct Pending {
    const FakeTimer* raw;
    std::weak_ptr<FakeTimer> timer;
  };
  std::multimap<TimePoint, Pending> timers_;
};

}  // namespace kcache::testing

#endif  // KCACHE_TESTS_TESTING_FAKE_CLOCK_H_
