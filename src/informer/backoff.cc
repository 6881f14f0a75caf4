// SPDX-License-Identifier: Apache-2.0

#include "informer/backoff.h"

#include <algorithm>

namespace kcache::informer {

Backoff::Backoff(std::shared_ptr<Clock> clock, BackoffOptions options, uint64_t seed)
    : clock_(std::move(clock)),
      options_(options),
      rng_(seed),
      base_(options.initial),
      steps_left_(options.steps) {}

Clock::Duration Backoff::Next() {
  Clock::TimePoint now = clock_->Now();
  if (last_ && now - *last_ > options_.reset_after) {
    base_ = options_.initial;
    steps_left_ = options_.steps;
  }
  last_ = now;
  Clock::Duration d = base_;
  if (steps_left_ > 0) {
    --steps_left_;
    base_ = std::chrono::duration_cast<Clock::Duration>(base_ * options_.factor);
    if (options_.cap.count() > 0 && base_ > options_.cap) {
      base_ = options_.cap;
      steps_left_ = 0;
    }
  }
  if (options_.jitter > 0) {
    std::uniform_real_distribution<double> u(0.0, 1.0);
    d += std::chrono::duration_cast<Clock::Duration>(d * (options_.jitter * u(rng_)));
  }
  return d;
}

}  // namespace kcache::informer
