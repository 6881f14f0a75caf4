#include "kcache/clock.h"

#include <pthread.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

namespace kcache {
namespace {

// A timer's call and whether it ran, shared by the handle and the thread
// that runs it.
class TimerState {
 public:
  explicit TimerState(std::function<void()> fn) : fn_(std::move(fn)) {}

  // Runs the call unless cancelled; on the clock's thread.
  void Fire() {
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

  void Cancel() {
    std::unique_lock l(mu_);
    if (state_ == kPending) {
      state_ = kDone;
      std::function<void()> drop;
      drop.swap(fn_);
      l.unlock();
      return;  // `drop` is destroyed without the lock
    }
    if (state_ == kRunning && runner_ != std::this_thread::get_id())
      cv_.wait(l, [&] { return state_ == kDone; });
  }

 private:
  enum State { kPending, kRunning, kDone };
  std::mutex mu_;
  std::condition_variable cv_;
  State state_ = kPending;    // guarded by mu_
  std::thread::id runner_;    // guarded by mu_
  std::function<void()> fn_;  // guarded by mu_
};

// Every timer of the real clock, on one thread started at the first.
class TimerThread {
 public:
  static TimerThread& Get() {
    // Never destroyed: timers may be armed until the process exits.
    static TimerThread* const t = new TimerThread();
    return *t;
  }

  void Add(Clock::TimePoint deadline, std::shared_ptr<TimerState> timer) {
    {
      std::lock_guard l(mu_);
      due_.emplace(deadline, std::move(timer));
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
      std::shared_ptr<TimerState> timer = std::move(first->second);
      due_.erase(first);
      l.unlock();
      timer->Fire();
      timer.reset();
      l.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::multimap<Clock::TimePoint, std::shared_ptr<TimerState>> due_;  // guarded by mu_
};

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
  std::shared_ptr<Timer> At(TimePoint deadline, std::function<void()> fn) override {
    auto state = std::make_shared<TimerState>(std::move(fn));
    TimerThread::Get().Add(deadline, state);
    return std::make_shared<Handle>(std::move(state));
  }

 private:
  class Handle final : public Timer {
   public:
    explicit Handle(std::shared_ptr<TimerState> state) : state_(std::move(state)) {}
    ~Handle() override { state_->Cancel(); }
    void Cancel() override { state_->Cancel(); }

   private:
    const std::shared_ptr<TimerState> state_;
  };
};

// A thread per timer, for clocks that do not arrange their own.
class SleepingTimer final : public Clock::Timer {
 public:
  SleepingTimer(Clock* clock, Clock::TimePoint deadline, std::function<void()> fn)
      : state_(std::make_shared<TimerState>(std::move(fn))) {
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
  std::shared_ptr<TimerState> state_;
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
