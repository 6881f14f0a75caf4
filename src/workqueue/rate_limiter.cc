// SPDX-License-Identifier: Apache-2.0

#include "kcache/rate_limiter.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <unordered_map>

namespace kcache {
namespace {

// Failures per item, for the per-item limiters.
class FailureCounts {
 public:
  // The failures of `item` before this one; counts this one.
  int Add(const std::string& item) {
    std::lock_guard l(mu_);
    return counts_[item]++;
  }
  void Forget(const std::string& item) {
    std::lock_guard l(mu_);
    counts_.erase(item);
  }
  int Get(const std::string& item) const {
    std::lock_guard l(mu_);
    auto it = counts_.find(item);
    return it == counts_.end() ? 0 : it->second;
  }

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, int> counts_;  // guarded by mu_
};

class ItemExponentialLimiter final : public RateLimiter {
 public:
  ItemExponentialLimiter(Clock::Duration base, Clock::Duration max) : base_(base), max_(max) {}

  Clock::Duration When(const std::string& item) override {
    int exp = failures_.Add(item);
    // Computed in floating point so that a long run of failures saturates
    // at max_ instead of overflowing.
    double wait = static_cast<double>(base_.count()) * std::pow(2.0, exp);
    if (wait >= static_cast<double>(max_.count())) return max_;
    return Clock::Duration(static_cast<Clock::Duration::rep>(wait));
  }
  void Forget(const std::string& item) override { failures_.Forget(item); }
  int NumRequeues(const std::string& item) override { return failures_.Get(item); }

 private:
  const Clock::Duration base_;
  const Clock::Duration max_;
  FailureCounts failures_;
};

class ItemFastSlowLimiter final : public RateLimiter {
 public:
  ItemFastSlowLimiter(Clock::Duration fast, Clock::Duration slow, int max_fast)
      : fast_(fast), slow_(slow), max_fast_(max_fast) {}

  Clock::Duration When(const std::string& item) override {
    return failures_.Add(item) < max_fast_ ? fast_ : slow_;
  }
  void Forget(const std::string& item) override { failures_.Forget(item); }
  int NumRequeues(const std::string& item) override { return failures_.Get(item); }

 private:
  const Clock::Duration fast_;
  const Clock::Duration slow_;
  const int max_fast_;
  FailureCounts failures_;
};

class BucketLimiter final : public RateLimiter {
 public:
  BucketLimiter(double qps, int burst, std::shared_ptr<Clock> clock)
      : qps_(qps), burst_(burst), clock_(std::move(clock)), tokens_(burst), last_(clock_->Now()) {}

  // Takes a token now, letting the balance go negative: the wait is the
  // time the bucket needs to pay the debt back.
  Clock::Duration When(const std::string&) override {
    std::lock_guard l(mu_);
    Clock::TimePoint now = clock_->Now();
    if (now > last_) {
      double refill = std::chrono::duration<double>(now - last_).count() * qps_;
      tokens_ = std::min<double>(burst_, tokens_ + refill);
      last_ = now;
    }
    tokens_ -= 1;
    if (tokens_ >= 0) return Clock::Duration::zero();
    return std::chrono::duration_cast<Clock::Duration>(
        std::chrono::duration<double>(-tokens_ / qps_));
  }
  void Forget(const std::string&) override {}
  int NumRequeues(const std::string&) override { return 0; }

 private:
  const double qps_;
  const int burst_;
  const std::shared_ptr<Clock> clock_;
  std::mutex mu_;
  double tokens_;          // guarded by mu_
  Clock::TimePoint last_;  // guarded by mu_
};

class MaxOfLimiter final : public RateLimiter {
 public:
  explicit MaxOfLimiter(std::vector<std::shared_ptr<RateLimiter>> limiters)
      : limiters_(std::move(limiters)) {}

  Clock::Duration When(const std::string& item) override {
    Clock::Duration longest = Clock::Duration::zero();
    // Every limiter is asked, so that each counts the failure.
    for (const auto& r : limiters_) longest = std::max(longest, r->When(item));
    return longest;
  }
  void Forget(const std::string& item) override {
    for (const auto& r : limiters_) r->Forget(item);
  }
  int NumRequeues(const std::string& item) override {
    int most = 0;
    for (const auto& r : limiters_) most = std::max(most, r->NumRequeues(item));
    return most;
  }

 private:
  const std::vector<std::shared_ptr<RateLimiter>> limiters_;
};

}  // namespace

std::shared_ptr<RateLimiter> RateLimiter::ItemExponential(Clock::Duration base,
                                                          Clock::Duration max) {
  return std::make_shared<ItemExponentialLimiter>(base, max);
}

std::shared_ptr<RateLimiter> RateLimiter::ItemFastSlow(Clock::Duration fast, Clock::Duration slow,
                                                       int max_fast_attempts) {
  return std::make_shared<ItemFastSlowLimiter>(fast, slow, max_fast_attempts);
}

std::shared_ptr<RateLimiter> RateLimiter::Bucket(double qps, int burst,
                                                 std::shared_ptr<Clock> clock) {
  return std::make_shared<BucketLimiter>(qps, burst, std::move(clock));
}

std::shared_ptr<RateLimiter> RateLimiter::MaxOf(
    std::vector<std::shared_ptr<RateLimiter>> limiters) {
  return std::make_shared<MaxOfLimiter>(std::move(limiters));
}

std::shared_ptr<RateLimiter> RateLimiter::Default(std::shared_ptr<Clock> clock) {
  using namespace std::chrono_literals;
  return MaxOf({ItemExponential(5ms, 1000s), Bucket(10, 100, std::move(clock))});
}

}  // namespace kcache
