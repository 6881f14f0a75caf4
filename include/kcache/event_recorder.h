// SPDX-License-Identifier: Apache-2.0

// An event recorder: core/v1 Events about objects, as client-go's
// tools/record writes them, so that `kubectl describe` shows what a
// controller did. Repeats of one event (same object, type, reason and
// message) update its count and lastTimestamp instead of creating another;
// past `max_similar` events of one object, type and reason with different
// messages within `aggregation_window`, they are combined into one event
// whose message starts "(combined from similar events): ", as client-go's
// EventCorrelator does.
//
// Events are written by a thread of the recorder: Event() never blocks
// and, when `queue_limit` events wait, drops the newest (counted).
//
// Thread-safety: an EventRecorder is safe for concurrent use.

#ifndef KCACHE_EVENT_RECORDER_H_
#define KCACHE_EVENT_RECORDER_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "kcache/export.h"
#include "kcache/object.h"
#include "kcache/rest_config.h"
#include "kcache/status_or.h"

namespace kcache {

enum class EventType { kNormal, kWarning };

struct KCACHE_EXPORT EventRecorderOptions {
  // The source.component of every event: the controller's name. Required.
  std::string component{};
  // The source.host. Default: empty.
  std::string host{};
  // Events waiting to be written before Event() drops. Default: 1000.
  size_t queue_limit = 1000;
  // Similar events (one object, type and reason) within this window are
  // counted towards max_similar. Default: 10 minutes (client-go's).
  std::chrono::milliseconds aggregation_window{std::chrono::minutes(10)};
  // Similar events with distinct messages kept apart before they are
  // combined. Default: 10 (client-go's).
  int max_similar = 10;
};

struct KCACHE_EXPORT EventRecorderStats {
  uint64_t created = 0;  // Events created
  uint64_t updated = 0;  // repeats written as a count and lastTimestamp
  uint64_t dropped = 0;  // not queued: the queue was full, or after Shutdown
  uint64_t failed = 0;   // writes the server refused (after which it is dropped)
};

class KCACHE_EXPORT EventRecorder {
 public:
  // InvalidArgument without a component; the REST client's errors.
  static StatusOr<std::shared_ptr<EventRecorder>> Create(const RestConfig& config,
                                                         EventRecorderOptions options);
  // Writes what is queued (up to 10 s), then stops.
  virtual ~EventRecorder() = default;

  // An event about `object` (which must have a name; its kind and
  // apiVersion name it, as list items lack both, pass them where the
  // object has none).
  virtual void Event(const Object& object, EventType type, const std::string& reason,
                     const std::string& message, const std::string& api_version = "",
                     const std::string& kind = "") = 0;
  // Waits until every event queued before the call is written (or failed);
  // false after `timeout`.
  virtual bool Flush(std::chrono::milliseconds timeout) = 0;
  virtual EventRecorderStats stats() const = 0;
};

}  // namespace kcache

#endif  // KCACHE_EVENT_RECORDER_H_
