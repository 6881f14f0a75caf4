// SPDX-License-Identifier: Apache-2.0

// WorkQueue: the queue between a controller's event handlers and its
// workers (client-go's util/workqueue rate-limiting queue), over string keys
// ("namespace/name").
//
// - A key added while it waits is queued once.
// - A key handed out by Get() is not handed to another worker until Done();
//   added meanwhile, it is queued again at Done(), so a change that arrives
//   during processing is processed after it, never concurrently.
// - AddAfter() queues a key once a delay has passed (an earlier time wins
//   over a later one for the same key); AddRateLimited() takes the delay
//   from the RateLimiter, Forget() resets it.
// - After ShutDown() adds are dropped and Get() hands out what is still
//   queued, then returns nothing; delayed keys are dropped.
//
// Typical worker:
//   while (auto key = queue->Get()) {
//     Status s = Reconcile(*key);
//     if (s.ok()) queue->Forget(*key); else queue->AddRateLimited(*key);
//     queue->Done(*key);
//   }
//
// Thread-safety: safe for concurrent use. Its destructor shuts it down and
// waits for its delay thread; it must outlive the workers that call Get().
#ifndef KCACHE_WORKQUEUE_H_
#define KCACHE_WORKQUEUE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "kcache/clock.h"
#include "kcache/export.h"
#include "kcache/histogram.h"
#include "kcache/rate_limiter.h"
#include "kcache/status.h"

namespace kcache {

struct KCACHE_EXPORT WorkQueueOptions {
  // Reported in metrics. Default: "".
  std::string name{};
  // Default: RateLimiter::Default(clock).
  std::shared_ptr<RateLimiter> rate_limiter{};
  // Times delays and latencies. Default: Clock::Real().
  std::shared_ptr<Clock> clock{};
};

// client-go's workqueue metrics.
struct KCACHE_EXPORT WorkQueueMetrics {
  std::string name{};
  size_t depth = 0;                  // keys queued, not being processed
  uint64_t adds = 0;                 // keys queued (a key added while queued counts once)
  uint64_t retries = 0;              // AddRateLimited calls
  LatencyHistogram queue_latency{};  // from queued to Get()
  LatencyHistogram work_duration{};  // from Get() to Done()
  // Seconds the keys being processed have been so far, summed, and the
  // longest of them (client-go's unfinished_work_seconds and
  // longest_running_processor_seconds).
  double unfinished_work_seconds = 0;
  double longest_running_seconds = 0;
  size_t processing = 0;  // keys handed out and not Done()
  size_t waiting = 0;     // keys waiting for their AddAfter delay
};

class KCACHE_EXPORT WorkQueue {
 public:
  static std::shared_ptr<WorkQueue> Create(WorkQueueOptions options = {});
  virtual ~WorkQueue() = default;

  // Queues `key` unless it is queued already or the queue is shutting down.
  virtual void Add(const std::string& key) = 0;
  // Queues `key` after `delay` (at once if delay <= 0).
  virtual void AddAfter(const std::string& key, Clock::Duration delay) = 0;
  // AddAfter(key, rate_limiter->When(key)).
  virtual void AddRateLimited(const std::string& key) = 0;
  // Resets the rate limiter's failures of `key`; does not dequeue it.
  virtual void Forget(const std::string& key) = 0;
  virtual int NumRequeues(const std::string& key) const = 0;

  // Blocks until a key is queued and returns it, marking it processing;
  // nullopt once the queue is shut down and empty.
  virtual std::optional<std::string> Get() = 0;
  // Ends the processing of a key from Get(); queues it again if it was
  // added meanwhile.
  virtual void Done(const std::string& key) = 0;

  // Keys queued (not processing, not waiting for a delay).
  virtual size_t Len() const = 0;

  // Stops accepting keys and wakes every Get(); returns at once.
  virtual void ShutDown() = 0;
  // ShutDown(), then waits until no key is being processed.
  virtual void ShutDownWithDrain() = 0;
  virtual bool ShuttingDown() const = 0;

  virtual WorkQueueMetrics Metrics() const = 0;
};

// Runs `workers` threads (at least one) that take keys from `queue` and
// reconcile them: client-go's worker loop, controller-runtime's controller.
// A key whose reconcile returns OK is forgotten by the rate limiter; after
// any other status, `on_error` (optional) hears of it and the key is added
// again rate-limited. The queue never hands one key to two workers at once.
// Returns when the queue is shut down (ShutDownWithDrain lets the
// reconciles in progress finish) and every worker has returned.
KCACHE_EXPORT void RunWorkers(
    WorkQueue& queue, int workers, const std::function<Status(const std::string& key)>& reconcile,
    const std::function<void(const std::string& key, const Status& error)>& on_error = {});

}  // namespace kcache

#endif  // KCACHE_WORKQUEUE_H_
