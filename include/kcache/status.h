// SPDX-License-Identifier: Apache-2.0

// Status: the outcome of every fallible kcache call.
//
// A Status is either OK or carries a code and a message that names what went
// wrong and where. kcache never throws across its API; ignoring a returned
// Status is a compile error unless spelled out with IgnoreError().
//
// Thread-safety: a Status is a value; distinct objects may be used from
// distinct threads, one object needs external synchronization to be mutated.

#ifndef KCACHE_STATUS_H_
#define KCACHE_STATUS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "kcache/export.h"

namespace kcache {

// Do not change the values of existing entries: they are printed in logs and
// compared by tools.
enum class StatusCode : int {
  kOk = 0,
  kCancelled = 1,           // the caller stopped the operation
  kInvalidArgument = 2,     // bad input: malformed JSON, bad selector, bad flag
  kNotFound = 3,            // the named thing does not exist
  kAlreadyExists = 4,       // HTTP 409 AlreadyExists
  kPermissionDenied = 5,    // HTTP 403 Forbidden
  kUnauthenticated = 6,     // HTTP 401 Unauthorized
  kResourceExhausted = 7,   // HTTP 429 TooManyRequests
  kFailedPrecondition = 8,  // the state does not allow the call (stopped, conflict)
  kAborted = 9,             // HTTP 409 Conflict, or a concurrent change won
  kExpired = 10,            // HTTP 410 Gone: resourceVersion or continue token expired
  kUnimplemented = 11,      // not supported (e.g. a newer on-disk format)
  kInternal = 12,           // a broken invariant, or HTTP 500
  kUnavailable = 13,        // try again later: HTTP 503, connection refused
  kDeadlineExceeded = 14,   // HTTP 504, timeouts
  kCorruption = 15,         // on-disk or in-file data fails its checks
  kIOError = 16,            // the operating system refused a read or write
  kBusy = 17,               // locked by another process
};

// Returns the name of `code` as printed by Status::ToString(), e.g. "NotFound".
KCACHE_EXPORT std::string_view StatusCodeName(StatusCode code);

// One cause in a metav1.Status's details.causes.
struct KCACHE_EXPORT StatusCause {
  std::string type{};     // "reason" in JSON: "ResourceVersionTooLarge", "FieldValueInvalid", ...
  std::string message{};  // human-readable, may be empty
  std::string field{};    // the field at fault, may be empty
  friend bool operator==(const StatusCause&, const StatusCause&) = default;
};

// What an API server said about a failed request, carried by the Status it
// became. Kept apart from the message so callers decide on code and reason,
// never on text.
struct KCACHE_EXPORT HttpError {
  int http_code = 0;     // 0 when the error arrived as a watch ERROR event without one
  std::string reason{};  // metav1.Status reason: "Expired", "TooManyRequests", ...
  // From Retry-After or details.retryAfterSeconds, when given.
  std::optional<int64_t> retry_after_seconds{};
  // metadata.continue of a 410 for an expired continue token, when given.
  std::string continue_token{};
  // details.causes, in the server's order.
  std::vector<StatusCause> causes{};
  // True if a cause has `type` (client-go's HasStatusCause).
  bool HasCause(std::string_view type) const {
    for (const StatusCause& c : causes) {
      if (c.type == type) return true;
    }
    return false;
  }
  friend bool operator==(const HttpError&, const HttpError&) = default;
};

class [[nodiscard]] KCACHE_EXPORT Status {
 public:
  // An OK status. Allocates nothing.
  Status() noexcept = default;
  Status(StatusCode code, std::string_view message);

  Status(const Status& other);
  Status& operator=(const Status& other);
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;
  ~Status() = default;

  static Status OK() { return Status(); }
  static Status Cancelled(std::string_view msg) { return {StatusCode::kCancelled, msg}; }
  static Status InvalidArgument(std::string_view msg) {
    return {StatusCode::kInvalidArgument, msg};
  }
  static Status NotFound(std::string_view msg) { return {StatusCode::kNotFound, msg}; }
  static Status AlreadyExists(std::string_view msg) { return {StatusCode::kAlreadyExists, msg}; }
  static Status PermissionDenied(std::string_view msg) {
    return {StatusCode::kPermissionDenied, msg};
  }
  static Status Unauthenticated(std::string_view msg) {
    return {StatusCode::kUnauthenticated, msg};
  }
  static Status ResourceExhausted(std::string_view msg) {
    return {StatusCode::kResourceExhausted, msg};
  }
  // A write lost to a concurrent one (HTTP 409 Conflict): read again, retry.
  static Status Aborted(std::string_view msg) { return {StatusCode::kAborted, msg}; }
  static Status FailedPrecondition(std::string_view msg) {
    return {StatusCode::kFailedPrecondition, msg};
  }
  static Status Expired(std::string_view msg) { return {StatusCode::kExpired, msg}; }
  static Status Unimplemented(std::string_view msg) { return {StatusCode::kUnimplemented, msg}; }
  static Status Internal(std::string_view msg) { return {StatusCode::kInternal, msg}; }
  static Status Unavailable(std::string_view msg) { return {StatusCode::kUnavailable, msg}; }
  static Status DeadlineExceeded(std::string_view msg) {
    return {StatusCode::kDeadlineExceeded, msg};
  }
  static Status Corruption(std::string_view msg) { return {StatusCode::kCorruption, msg}; }
  static Status IOError(std::string_view msg) { return {StatusCode::kIOError, msg}; }
  static Status Busy(std::string_view msg) { return {StatusCode::kBusy, msg}; }

  // Returns a copy of this non-OK status that carries `http`.
  Status WithHttpError(HttpError http) const;

  bool ok() const { return rep_ == nullptr; }
  StatusCode code() const { return rep_ ? rep_->code : StatusCode::kOk; }
  // The message without the code; empty for OK.
  std::string_view message() const { return rep_ ? std::string_view(rep_->message) : ""; }

  bool IsNotFound() const { return code() == StatusCode::kNotFound; }
  bool IsInvalidArgument() const { return code() == StatusCode::kInvalidArgument; }
  bool IsExpired() const { return code() == StatusCode::kExpired; }
  bool IsCorruption() const { return code() == StatusCode::kCorruption; }
  bool IsAlreadyExists() const { return code() == StatusCode::kAlreadyExists; }
  // An update or patch whose resourceVersion precondition failed (client-go's
  // errors.IsConflict).
  bool IsConflict() const { return code() == StatusCode::kAborted; }

  // The server's account of the error, or null when it did not come from a
  // server response. Valid as long as this Status is neither changed nor
  // destroyed.
  const HttpError* http_error() const { return rep_ ? rep_->http.get() : nullptr; }

  // Returns a copy whose message is "<context>: <message>", same code and
  // HttpError. OK stays OK.
  Status WithContext(std::string_view context) const;

  // "OK", or "<CodeName>: <message>".
  std::string ToString() const;

  // Marks a deliberately ignored result; searchable.
  void IgnoreError() const {}

  friend bool operator==(const Status& a, const Status& b) {
    return a.code() == b.code() && a.message() == b.message();
  }

 private:
  struct Rep {
    StatusCode code;
    std::string message;
    std::shared_ptr<const HttpError> http;  // immutable, shared by copies
  };
  std::unique_ptr<Rep> rep_;  // null for OK
};

KCACHE_EXPORT std::ostream& operator<<(std::ostream& os, const Status& s);

}  // namespace kcache

// Evaluates `expr` (a Status) and returns it from the enclosing function if it
// is not OK.
#define KCACHE_RETURN_IF_ERROR(expr)         \
  do {                                       \
    ::kcache::Status _kcache_st = (expr);    \
    if (!_kcache_st.ok()) return _kcache_st; \
  } while (0)

#endif  // KCACHE_STATUS_H_
