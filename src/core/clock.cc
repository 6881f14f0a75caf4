// SPDX-License-Identifier: Apache-2.0

#include "kcache/clock.h"

#include <thread>

#include "exec/fiber.h"
#include "exec/timer.h"

namespace kcache {
namespace {

class RealClock final : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::steady_clock::now(); }
  bool SleepUntil(TimePoint deadline, std::stop_token stop) override {
    // On a fiber, gives its carrier to others meanwhile.
    return exec::SleepUntil(deadline, std::move(stop));
  }
  std::shared_ptr<Timer> At(TimePoint deadline, std::function<void()> fn) override {
    auto call = std::make_shared<exec::TimerCall>(std::move(fn));
    exec::FireAt(deadline, call);
    return std::make_shared<Handle>(std::move(call));
  }

 private:
  class Handle final : public Timer {
   public:
    explicit Handle(std::shared_ptr<exec::TimerCall> state) : state_(std::move(state)) {}
    ~Handle() override { state_->Cancel(); }
    void Cancel() override { state_->Cancel(); }

   private:
    const std::shared_ptr<exec::TimerCall> state_;
  };
};

// A thread per timer, for clocks that do not arrange their own.
class SleepingTimer final : public Clock::Timer {
 public:
  SleepingTimer(Clock* clock, Clock::TimePoint deadline, std::function<void()> fn)
      : state_(std::make_shared<exec::TimerCall>(std::move(fn))) {
    thread_ = std::jthread([clock, deadline, state = state_](std::stop_token stop) {
      if (clock->SleepUntil(deadline, stop)) state->Fire();
    });
  }
  ~SleepingTimer() override {
    Cancel();
    // Dropped from inside its own call: the thread ends by itself.
    if (thread_.get_id() == std::this_thread::get_id()) thread_.detach();
  }
  void Cancel() override {
    state_->Cancel();
    thread_.request_stop();
  }

 private:
  std::shared_ptr<exec::TimerCall> state_;
  std::jthread thread_;
};

}  // namespace

std::shared_ptr<Clock::Timer> Clock::At(TimePoint deadline, std::function<void()> fn) {
  return std::make_shared<SleepingTimer>(this, deadline, std::move(fn));
}

std::shared_ptr<Clock> Clock::Real() {
  static const std::shared_ptr<Clock> clock = std::make_shared<RealClock>();
  return clock;
}

}  // namespace kcache
