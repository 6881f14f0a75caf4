// SPDX-License-Identifier: Apache-2.0

// WatchEvent and WatchStream: the events of a WATCH and the stream that
// delivers them (client-go's watch.Event and watch.Interface).
//
// Thread-safety: a WatchStream is used by one consumer thread; Cancel() may
// be called from any thread.
#ifndef KCACHE_WATCH_H_
#define KCACHE_WATCH_H_

#include <optional>
#include <string_view>

#include "kcache/export.h"
#include "kcache/object.h"
#include "kcache/status_or.h"

namespace kcache {

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark };

// "ADDED", "MODIFIED", "DELETED", "BOOKMARK": the wire spelling.
KCACHE_EXPORT std::string_view WatchEventTypeName(WatchEventType type);

// The annotation that marks the bookmark ending a streaming list's initial
// events (value "true").
inline constexpr std::string_view kInitialEventsEndAnnotation = "k8s.io/initial-events-end";

struct KCACHE_EXPORT WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  // The object after the change; for kDeleted its last state with the
  // deletion's resourceVersion; for kBookmark only metadata.resourceVersion
  // (and annotations) are meaningful. Never null.
  ObjectPtr object{};

  // True for the bookmark that ends a streaming list's initial events.
  bool IsInitialEventsEnd() const;
};

class KCACHE_EXPORT WatchStream {
 public:
  virtual ~WatchStream() = default;

  // Blocks until the next event. Returns nullopt when the server ended the
  // stream cleanly (its timeout, or the connection closed between events).
  // Errors: the server's ERROR event as its Status (Expired for 410, with
  // http_error() set); Unavailable for a stream cut inside an event or a
  // broken connection; InvalidArgument for malformed JSON, naming the byte;
  // Cancelled after Cancel(). After nullopt or an error the stream is done.
  virtual StatusOr<std::optional<WatchEvent>> Next() = 0;

  // True if Next() would return without waiting for the network: an event
  // (or an error) is already buffered. Lets a consumer batch what has
  // arrived. Default: false.
  virtual bool Ready() { return false; }

  // Makes a blocked or later Next() return Cancelled promptly and releases
  // the connection. Safe from any thread, idempotent.
  virtual void Cancel() = 0;
};

}  // namespace kcache

#endif  // KCACHE_WATCH_H_
