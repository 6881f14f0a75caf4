// SPDX-License-Identifier: Apache-2.0

#include "kcache/watch.h"

namespace kcache {

std::string_view WatchEventTypeName(WatchEventType type) {
  switch (type) {
    case WatchEventType::kAdded:
      return "ADDED";
    case WatchEventType::kModified:
      return "MODIFIED";
    case WatchEventType::kDeleted:
      return "DELETED";
    case WatchEventType::kBookmark:
      return "BOOKMARK";
  }
  return "UNKNOWN";
}

bool WatchEvent::IsInitialEventsEnd() const {
  if (type != WatchEventType::kBookmark || !object) return false;
  auto it = object->annotations().find(std::string(kInitialEventsEndAnnotation));
  return it != object->annotations().end() && it->second == "true";
}

}  // namespace kcache
