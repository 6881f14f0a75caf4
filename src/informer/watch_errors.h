// SPDX-License-Identifier: Apache-2.0

// How a reflector reads a failed request: which failures it lists again
// after, watches again after, retries for a while, or stops on.

#ifndef KCACHE_SRC_INFORMER_WATCH_ERRORS_H_
#define KCACHE_SRC_INFORMER_WATCH_ERRORS_H_

#include "client/http_error.h"
#include "kcache/clock.h"
#include "kcache/status.h"

namespace kcache::informer {

// The resourceVersion asked for is gone (410) or not there yet: list again
// from "".
inline bool IsUnavailableResourceVersion(const Status& st) {
  return st.IsExpired() || rest::IsTooLargeResourceVersion(st);
}

inline bool IsInternalError(const Status& st) {
  const HttpError* h = st.http_error();
  return h && h->reason == "InternalError";
}

// How long a run of 500s may be answered by watching again (client-go's
// RetryWithDeadline): measured from the run's first error; a run ends when
// the next error comes a minute or more after the previous one.
class InternalErrorRetry {
 public:
  InternalErrorRetry(Clock* clock, Clock::Duration max) : clock_(clock), max_(max) {}

  // Records the outcome of a watch.
  void After(const Status& st) {
    if (!IsInternalError(st)) return;
    Clock::TimePoint now = clock_->Now();
    if (running_ && now - last_ >= std::chrono::minutes(1)) running_ = false;
    if (!running_) first_ = now;
    running_ = true;
    last_ = now;
  }
  bool ShouldRetry() {
    if (max_ <= Clock::Duration::zero()) return false;
    if (running_ && clock_->Now() - first_ <= max_) return true;
    running_ = false;
    return false;
  }

 private:
  Clock* clock_;
  Clock::Duration max_;
  bool running_ = false;  // first_ and last_ hold a run of errors
  Clock::TimePoint first_, last_;
};

// The client's deadline for a watch request (its timeoutSeconds plus the
// client's grace) passed with no answer or no close from the server.
inline bool IsClientDeadline(const Status& st) {
  return st.code() == StatusCode::kDeadlineExceeded && st.http_error() == nullptr;
}

// Watch-open failures after which client-go watches again without a relist:
// 429, and a connection that could not be made or answered (no HTTP answer).
inline bool IsRetriableWatchError(const Status& st) {
  if (st.code() == StatusCode::kResourceExhausted) return true;
  if (IsClientDeadline(st)) return true;
  return st.code() == StatusCode::kUnavailable && st.http_error() == nullptr;
}

// The server refused the request as it is: 400 BadRequest or 422 Invalid.
// For a streaming list, sendInitialEvents (before 1.27, or its WatchList
// gate is off); for a continued LIST, a continue token not its own.
inline bool IsRefusedAsInvalid(const Status& st) {
  const HttpError* h = st.http_error();
  return h && (h->http_code == 400 || h->http_code == 422 || h->reason == "Invalid" ||
               h->reason == "BadRequest");
}

}  // namespace kcache::informer

#endif  // KCACHE_SRC_INFORMER_WATCH_ERRORS_H_
