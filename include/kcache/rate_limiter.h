// SPDX-License-Identifier: Apache-2.0

// RateLimiter: how long a work item waits before it is retried (client-go's
// util/workqueue rate limiters). A WorkQueue asks When() on each
// AddRateLimited and Forget() once the item succeeded.
//
// Thread-safety: every RateLimiter made here is safe for concurrent use.
#ifndef KCACHE_RATE_LIMITER_H_
#define KCACHE_RATE_LIMITER_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "kcache/clock.h"
#include "kcache/export.h"

namespace kcache {

class KCACHE_EXPORT RateLimiter {
 public:
  virtual ~RateLimiter() = default;

  // The wait before `item` is processed again; counts one more failure of
  // it.
  virtual Clock::Duration When(const std::string& item) = 0;
  // Forgets the failures of `item` (it succeeded).
  virtual void Forget(const std::string& item) = 0;
  // The failures of `item` counted since it was last forgotten.
  virtual int NumRequeues(const std::string& item) = 0;

  // base * 2^failures, at most `max` (client-go's
  // ItemExponentialFailureRateLimiter).
  static std::shared_ptr<RateLimiter> ItemExponential(Clock::Duration base, Clock::Duration max);
  // `fast` for the first `max_fast_attempts` failures of an item, then
  // `slow` (ItemFastSlowRateLimiter).
  static std::shared_ptr<RateLimiter> ItemFastSlow(Clock::Duration fast, Clock::Duration slow,
                                                   int max_fast_attempts);
  // A token bucket shared by all items: `qps` tokens a second, at most
  // `burst` saved; each When() takes one, waiting for it if none is left
  // (BucketRateLimiter). Items are not counted: NumRequeues is 0.
  static std::shared_ptr<RateLimiter> Bucket(double qps, int burst,
                                             std::shared_ptr<Clock> clock = Clock::Real());
  // The longest wait of `limiters`; Forget and NumRequeues go to all of
  // them (MaxOfRateLimiter; NumRequeues is the largest).
  static std::shared_ptr<RateLimiter> MaxOf(std::vector<std::shared_ptr<RateLimiter>> limiters);
  // A controller's default, as client-go's DefaultControllerRateLimiter:
  // MaxOf(ItemExponential(5 ms, 1000 s), Bucket(10 qps, burst 100)).
  static std::shared_ptr<RateLimiter> Default(std::shared_ptr<Clock> clock = Clock::Real());
};

}  // namespace kcache

#endif  // KCACHE_RATE_LIMITER_H_
