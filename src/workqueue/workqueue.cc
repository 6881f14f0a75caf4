// SPDX-License-Identifier: Apache-2.0

#include "kcache/workqueue.h"

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <stop_token>
#include <thread>
#include <unordered_map>
#include <vector>

namespace kcache {
namespace {

double Seconds(Clock::Duration d) { return std::chrono::duration<double>(d).count(); }

class WorkQueueImpl final : public WorkQueue {
 public:
  explicit WorkQueueImpl(WorkQueueOptions options)
      : name_(std::move(options.name)),
        clock_(options.clock ? std::move(options.clock) : Clock::Real()),
        limiter_(options.rate_limiter ? std::move(options.rate_limiter)
                                      : RateLimiter::Default(clock_)) {
    delay_thread_ = std::thread([this] { RunDelays(); });
  }

  ~WorkQueueImpl() override {
    ShutDown();
    delay_thread_.join();
  }

  void Add(const std::string& key) override {
    std::lock_guard l(mu_);
    AddLocked(key);
  }

  void AddAfter(const std::string& key, Clock::Duration delay) override {
    std::lock_guard l(mu_);
    if (shutting_down_) return;
    if (delay <= Clock::Duration::zero()) {
      AddLocked(key);
      return;
    }
    Clock::TimePoint ready = clock_->Now() + delay;
    if (auto it = waiting_at_.find(key); it != waiting_at_.end()) {
      if (it->second <= ready) return;  // already due sooner
      EraseWaiting(key, it->second);
    }
    bool earliest = waiting_.empty() || ready < waiting_.begin()->first;
    waiting_.emplace(ready, key);
    waiting_at_[key] = ready;
    if (earliest) {
      wake_.request_stop();
      delay_cv_.notify_one();
    }
  }

  void AddRateLimited(const std::string& key) override {
    Clock::Duration wait = limiter_->When(key);
    {
      std::lock_guard l(mu_);
      if (shutting_down_) return;
      ++retries_;
    }
    AddAfter(key, wait);
  }

  void Forget(const std::string& key) override { limiter_->Forget(key); }
  int NumRequeues(const std::string& key) const override { return limiter_->NumRequeues(key); }

  std::optional<std::string> Get() override {
    std::unique_lock l(mu_);
    cv_.wait(l, [&] { return !queue_.empty() || shutting_down_; });
    if (queue_.empty()) return std::nullopt;
    std::string key = std::move(queue_.front());
    queue_.pop_front();
    Clock::TimePoint now = clock_->Now();
    auto d = dirty_.find(key);
    queue_latency_.Observe(Seconds(now - d->second));
    dirty_.erase(d);
    processing_[key] = now;
    return key;
  }

  void Done(const std::string& key) override {
    std::lock_guard l(mu_);
    auto p = processing_.find(key);
    if (p == processing_.end()) return;  // not handed out: nothing to end
    work_duration_.Observe(Seconds(clock_->Now() - p->second));
    processing_.erase(p);
    if (dirty_.count(key)) {
      queue_.push_back(key);
      cv_.notify_one();
    } else if (processing_.empty()) {
      cv_.notify_all();  // a ShutDownWithDrain may be waiting
    }
  }

  size_t Len() const override {
    std::lock_guard l(mu_);
    return queue_.size();
  }

  void ShutDown() override {
    std::lock_guard l(mu_);
    ShutDownLocked();
  }

  void ShutDownWithDrain() override {
    std::unique_lock l(mu_);
    ShutDownLocked();
    cv_.wait(l, [&] { return processing_.empty(); });
  }

  bool ShuttingDown() const override {
    std::lock_guard l(mu_);
    return shutting_down_;
  }

  WorkQueueMetrics Metrics() const override {
    WorkQueueMetrics m;
    m.name = name_;
    std::lock_guard l(mu_);
    m.depth = dirty_.size();
    m.adds = adds_;
    m.retries = retries_;
    m.queue_latency = queue_latency_;
    m.work_duration = work_duration_;
    m.processing = processing_.size();
    m.waiting = waiting_.size();
    Clock::TimePoint now = clock_->Now();
    for (const auto& [key, start] : processing_) {
      double s = Seconds(now - start);
      m.unfinished_work_seconds += s;
      m.longest_running_seconds = std::max(m.longest_running_seconds, s);
    }
    return m;
  }

 private:
  void AddLocked(const std::string& key) {
    if (shutting_down_) return;
    if (dirty_.count(key)) return;  // queued already, or queued again at Done()
    ++adds_;
    dirty_.emplace(key, clock_->Now());
    if (processing_.count(key)) return;
    queue_.push_back(key);
    cv_.notify_one();
  }

  void ShutDownLocked() {
    shutting_down_ = true;
    waiting_.clear();
    waiting_at_.clear();
    cv_.notify_all();
    wake_.request_stop();
    delay_cv_.notify_all();
  }

  void EraseWaiting(const std::string& key, Clock::TimePoint at) {
    auto [first, last] = waiting_.equal_range(at);
    for (auto it = first; it != last; ++it) {
      if (it->second == key) {
        waiting_.erase(it);
        break;
      }
    }
    waiting_at_.erase(key);
  }

  // The delay thread: queues each waiting key when its time comes.
  void RunDelays() {
    std::unique_lock l(mu_);
    while (!shutting_down_) {
      Clock::TimePoint now = clock_->Now();
      while (!waiting_.empty() && waiting_.begin()->first <= now) {
        std::string key = std::move(waiting_.begin()->second);
        waiting_.erase(waiting_.begin());
        waiting_at_.erase(key);
        AddLocked(key);
      }
      if (waiting_.empty()) {
        delay_cv_.wait(l, [&] { return shutting_down_ || !waiting_.empty(); });
        continue;
      }
      Clock::TimePoint deadline = waiting_.begin()->first;
      wake_ = std::stop_source();
      std::stop_token token = wake_.get_token();
      l.unlock();
      clock_->SleepUntil(deadline, token);
      l.lock();
    }
  }

  const std::string name_;
  const std::shared_ptr<Clock> clock_;
  const std::shared_ptr<RateLimiter> limiter_;

  mutable std::mutex mu_;
  std::condition_variable cv_;     // queue_ filled, processing_ emptied, shutdown
  std::deque<std::string> queue_;  // guarded by mu_
  // Keys to process, with the time each was queued; a key being processed
  // and added again is here and not in queue_.
  std::unordered_map<std::string, Clock::TimePoint> dirty_;       // guarded by mu_
  std::unordered_map<std::string, Clock::TimePoint> processing_;  // guarded by mu_
  bool shutting_down_ = false;                                    // guarded by mu_
  uint64_t adds_ = 0;                                             // guarded by mu_
  uint64_t retries_ = 0;                                          // guarded by mu_
  LatencyHistogram queue_latency_;                                // guarded by mu_
  LatencyHistogram work_duration_;                                // guarded by mu_

  // Keys waiting for their AddAfter time, and the time of each.
  std::multimap<Clock::TimePoint, std::string> waiting_;          // guarded by mu_
  std::unordered_map<std::string, Clock::TimePoint> waiting_at_;  // guarded by mu_
  std::condition_variable delay_cv_;                              // waiting_ filled, shutdown
  std::stop_source wake_;  // ends the delay thread's sleep; guarded by mu_
  std::thread delay_thread_;
};

}  // namespace

std::shared_ptr<WorkQueue> WorkQueue::Create(WorkQueueOptions options) {
  return std::make_shared<WorkQueueImpl>(std::move(options));
}

void RunWorkers(WorkQueue& queue, int workers,
                const std::function<Status(const std::string& key)>& reconcile,
                const std::function<void(const std::string& key, const Status& error)>& on_error) {
  auto work = [&] {
    while (std::optional<std::string> key = queue.Get()) {
      if (Status st = reconcile(*key); st.ok()) {
        queue.Forget(*key);
      } else {
        if (on_error) on_error(*key, st);
        queue.AddRateLimited(*key);
      }
      queue.Done(*key);
    }
  };
  std::vector<std::jthread> threads;
  for (int i = 1; i < workers; ++i) threads.emplace_back(work);
  work();
}

}  // namespace kcache
