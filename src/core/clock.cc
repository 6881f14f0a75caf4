#include "kcache/clock.h"

#include <condition_variable>
#include <mutex>

namespace kcache {
namespace {

class RealClock final : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::steady_clock::now(); }
  bool SleepUntil(TimePoint deadline, std::stop_token stop) override {
    std::mutex mu;
    std::condition_variable_any cv;
    std::unique_lock l(mu);
    // Nothing notifies cv: only the deadline or `stop` ends the wait.
    cv.wait_until(l, stop, deadline, [] { return false; });
    return !stop.stop_requested();
  }
};

}  // namespace

std::shared_ptr<Clock> Clock::Real() {
  static const std::shared_ptr<Clock> clock = std::make_shared<RealClock>();
  return clock;
}

}  // namespace kcache
