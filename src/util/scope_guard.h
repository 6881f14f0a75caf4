// SPDX-License-Identifier: Apache-2.0

// ScopeGuard: runs a function when the scope ends, unless dismissed.

#ifndef KCACHE_SRC_UTIL_SCOPE_GUARD_H_
#define KCACHE_SRC_UTIL_SCOPE_GUARD_H_

#include <utility>

namespace kcache::util {

template <typename F>
class [[nodiscard]] ScopeGuard {
 public:
  explicit ScopeGuard(F f) : f_(std::move(f)) {}
  ScopeGuard(const ScopeGuard&) = delete;
  ScopeGuard& operator=(const ScopeGuard&) = delete;
  ~ScopeGuard() {
    if (active_) f_();
  }

  // The function will not run.
  void Dismiss() { active_ = false; }

 private:
  F f_;
  bool active_ = true;
};

}  // namespace kcache::util

#endif  // KCACHE_SRC_UTIL_SCOPE_GUARD_H_
