// SPDX-License-Identifier: Apache-2.0

// StatusOr<T>: a value of type T, or the Status saying why there is none.
//
// Thread-safety: a value type; see Status.

#ifndef KCACHE_STATUS_OR_H_
#define KCACHE_STATUS_OR_H_

#include <cassert>
#include <cstdlib>
#include <optional>
#include <type_traits>
#include <utility>

#include "kcache/status.h"

namespace kcache {

template <typename T>
class [[nodiscard]] StatusOr {
  static_assert(!std::is_same_v<std::decay_t<T>, Status>, "StatusOr<Status> is not allowed");

 public:
  // REQUIRES: !status.ok(). An OK status without a value is turned into an
  // Internal error rather than a half-built object.
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    if (status_.ok()) status_ = Status::Internal("StatusOr constructed from an OK status");
  }
  StatusOr(const T& value) : value_(value) {}        // NOLINT
  StatusOr(T&& value) : value_(std::move(value)) {}  // NOLINT
  template <typename U, typename = std::enable_if_t<std::is_constructible_v<T, U&&> &&
                                                    !std::is_same_v<std::decay_t<U>, T> &&
                                                    !std::is_same_v<std::decay_t<U>, Status> &&
                                                    !std::is_same_v<std::decay_t<U>, StatusOr<T>>>>
  StatusOr(U&& value) : value_(std::forward<U>(value)) {}  // NOLINT

  bool ok() const { return value_.has_value(); }
  const Status& status() const& { return status_; }
  Status status() && { return std::move(status_); }

  // REQUIRES: ok(). Aborts otherwise: reading a missing value is a bug.
  const T& value() const& {
    Check();
    return *value_;
  }
  T& value() & {
    Check();
    return *value_;
  }
  // Returns by value, so that `for (auto& x : *Call())` does not bind a
  // reference into a destroyed temporary.
  T value() && {
    Check();
    return std::move(*value_);
  }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  T operator*() && { return std::move(*this).value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

  // The value if ok(), else `fallback`.
  T value_or(T fallback) const& { return ok() ? *value_ : std::move(fallback); }

  void IgnoreError() const {}

 private:
  void Check() const {
    if (!value_.has_value()) std::abort();
  }

  Status status_;  // OK when value_ is set
  std::optional<T> value_;
};

}  // namespace kcache

#define KCACHE_STATUS_MACROS_CONCAT_INNER_(x, y) x##y
#define KCACHE_STATUS_MACROS_CONCAT_(x, y) KCACHE_STATUS_MACROS_CONCAT_INNER_(x, y)

// KCACHE_ASSIGN_OR_RETURN(lhs, expr): evaluates `expr` (a StatusOr); returns
// its status from the enclosing function on error, else assigns the value.
#define KCACHE_ASSIGN_OR_RETURN(lhs, expr) \
  KCACHE_ASSIGN_OR_RETURN_IMPL_(KCACHE_STATUS_MACROS_CONCAT_(_kcache_so_, __LINE__), lhs, expr)
#define KCACHE_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return std::move(tmp).status();      \
  lhs = std::move(tmp).value()

#endif  // KCACHE_STATUS_OR_H_
