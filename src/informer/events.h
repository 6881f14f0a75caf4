// SPDX-License-Identifier: Apache-2.0

// Watch events as store operations.

#ifndef KCACHE_SRC_INFORMER_EVENTS_H_
#define KCACHE_SRC_INFORMER_EVENTS_H_

#include "kcache/store.h"
#include "kcache/watch.h"

namespace kcache::informer {

// ADDED, MODIFIED and DELETED become an add, update or delete of the event's
// object; a bookmark changes no object.
inline void AppendToTransaction(WatchEvent event, Transaction* txn) {
  switch (event.type) {
    case WatchEventType::kAdded:
      txn->Add(std::move(event.object));
      break;
    case WatchEventType::kModified:
      txn->Update(std::move(event.object));
      break;
    case WatchEventType::kDeleted:
      txn->Delete(std::move(event.object));
      break;
    case WatchEventType::kBookmark:
      break;
  }
}

}  // namespace kcache::informer

#endif  // KCACHE_SRC_INFORMER_EVENTS_H_
