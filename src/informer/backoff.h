// SPDX-License-Identifier: Apache-2.0

// Exponential backoff with jitter, reset after a healthy period (client-go's
// reflector backoff, wait.Backoff with DelayWithReset): each delay is
// base * (1 + jitter * U[0,1)); base starts at `initial` and is multiplied by
// `factor` after each of the first `steps` delays, up to `cap` (reaching the
// cap ends the growth). It is back at `initial` when the previous delay was
// asked for more than `reset_after` ago.

#ifndef KCACHE_SRC_INFORMER_BACKOFF_H_
#define KCACHE_SRC_INFORMER_BACKOFF_H_

#include <chrono>
#include <memory>
#include <optional>
#include <random>

#include "kcache/clock.h"

namespace kcache::informer {

struct BackoffOptions {
  std::chrono::milliseconds initial{800};
  std::chrono::milliseconds cap{30000};
  std::chrono::milliseconds reset_after{120000};
  double factor = 2.0;
  double jitter = 1.0;
  int steps = 38;  // client-go's: ceil(cap / initial)
};

// Thread-safety: not thread-safe; one per reflector thread.
class Backoff {
 public:
  Backoff(std::shared_ptr<Clock> clock, BackoffOptions options, uint64_t seed);
  // The next delay to wait.
  Clock::Duration Next();

 private:
  std::shared_ptr<Clock> clock_;
  BackoffOptions options_;
  std::mt19937_64 rng_;
  Clock::Duration base_;
  int steps_left_;
  std::optional<Clock::TimePoint> last_;
};

}  // namespace kcache::informer

#endif  // KCACHE_SRC_INFORMER_BACKOFF_H_
