// Exponential backoff with jitter, reset after a healthy period (client-go's
// reflector backoff manager): delay = base * (1 + jitter * U[0,1)), base
// doubling from `initial` up to `cap`, back to `initial` when the previous
// backoff started more than `reset_after` ago.

#ifndef KCACHE_SRC_CACHE_BACKOFF_H_
#define KCACHE_SRC_CACHE_BACKOFF_H_

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
  std::optional<Clock::TimePoint> last_;
};

}  // namespace kcache::informer

#endif  // KCACHE_SRC_CACHE_BACKOFF_H_
