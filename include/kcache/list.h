// SPDX-License-Identifier: Apache-2.0

// ListOptions and ObjectList: the request and response of a LIST call.
//
// Thread-safety: plain values.

#ifndef KCACHE_LIST_H_
#define KCACHE_LIST_H_

#include <cstdint>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "kcache/export.h"
#include "kcache/object.h"

namespace kcache {

// Query parameters of a list or watch request (metav1.ListOptions). Empty
// strings and unset optionals are not sent; neither is `cancel`.
struct KCACHE_EXPORT ListOptions {
  std::string label_selector{};
  std::string field_selector{};
  std::string resource_version{};
  // "", "NotOlderThan" or "Exact".
  std::string resource_version_match{};
  // Page size; 0 = no limit.
  int64_t limit = 0;
  std::string continue_token{};
  std::optional<int64_t> timeout_seconds{};
  bool allow_watch_bookmarks = false;
  std::optional<bool> send_initial_events{};
  // Ends the request with Cancelled once a stop is requested (Go's
  // context): a LIST, its Retry-After waits, or a watch until its headers
  // arrive. Default: never.
  std::stop_token cancel{};
};

// One page of a list response.
struct KCACHE_EXPORT ObjectList {
  std::vector<ObjectPtr> items{};
  // The list's resourceVersion: the point in time it describes.
  std::string resource_version{};
  // Non-empty when more pages follow.
  std::string continue_token{};
  std::optional<int64_t> remaining_item_count{};
};

}  // namespace kcache

#endif  // KCACHE_LIST_H_
