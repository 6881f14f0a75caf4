// A Clock that moves only when a test advances it.
#ifndef KCACHE_TESTS_TESTING_FAKE_CLOCK_H_
#define KCACHE_TESTS_TESTING_FAKE_CLOCK_H_

#include <condition_variable>
#include <mutex>
#include <vector>

#include "kcache/clock.h"

namespace kcache::testing {

class FakeClock final : public Clock {
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
  void Advance(Duration d) {
    std::lock_guard l(mu_);
    now_ += d;
    cv_.notify_all();
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
  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  std::condition_variable changed_;
  TimePoint now_{std::chrono::hours(1)};
  int sleepers_ = 0;
  std::vector<Duration> sleeps_;
};

}  // namespace kcache::testing

#endif  // KCACHE_TESTS_TESTING_FAKE_CLOCK_H_
