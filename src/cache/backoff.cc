#include "cache/backoff.h"

#include <algorithm>

namespace kcache::informer {

Backoff::Backoff(std::shared_ptr<Clock> clock, BackoffOptions options, uint64_t seed)
    : clock_(std::move(clock)), options_(options), rng_(seed), base_(options.initial) {}

Clock::Duration Backoff::Next() {
  Clock::TimePoint now = clock_->Now();
  if (last_ && now - *last_ > options_.reset_after) base_ = options_.initial;
  last_ = now;
  Clock::Duration d = base_;
  std::uniform_real_distribution<double> u(0.0, 1.0);
  d += std::chrono::duration_cast<Clock::Duration>(d * (options_.jitter * u(rng_)));
  base_ = std::min<Clock::Duration>(
      std::chrono::duration_cast<Clock::Duration>(base_ * options_.factor), options_.cap);
  return d;
}

}  // namespace kcache::informer
