// SPDX-License-Identifier: Apache-2.0

// ApiSource: what the API front end (api_serve.h) lists and watches. The
// synthetic cluster, a cache and a snapshot each implement it; the list and
// watch rules, error replies and event encoding exist once, in the front
// end.
//
// Versions are canonical decimal resourceVersions, one counter for every
// type of a source (as etcd's revision). Keys are "namespace/name", or
// "name" for a cluster-scoped type.

#ifndef KCACHE_TOOLS_KCACHE_APISERVER_API_SOURCE_H_
#define KCACHE_TOOLS_KCACHE_APISERVER_API_SOURCE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kcache/object.h"
#include "kcache/status_or.h"
#include "tools/kcache/apiserver/api_query.h"

namespace kcache::serve {

enum class EventType { kAdded, kModified, kDeleted };

// One change of a type, as a watch reads it.
struct SourceEvent {
  EventType type = EventType::kAdded;
  uint64_t rv = 0;
  // The new state; for a deletion the last state.
  ObjectPtr object;
  // The state before: null for an addition, and for a modification whose
  // earlier state the source no longer has.
  ObjectPtr prev;
};

struct ChangeBatch {
  std::vector<SourceEvent> events;
  // Every change to the type up to here has been returned.
  uint64_t position = 0;
};

// What one list reads.
struct ListRequest {
  ListPlan plan;
  std::string namespace_;                     // "" for every namespace
  std::function<bool(const Object&)> filter;  // null: everything
  // Count what is left after a page (remainingItemCount), if the source can.
  bool count_remaining = false;
};

// The objects of one list, in key order, all at one version.
//
// Thread-safety: not thread-safe; one request reads it.
class ListCursor {
 public:
  virtual ~ListCursor() = default;
  // The version the list reads.
  virtual uint64_t rv() const = 0;
  // The next object that passes the request's filter; false at the end.
  virtual StatusOr<bool> Next(std::string* key, ObjectPtr* object) = 0;
  // How many objects that pass the filter follow the last one Next
  // returned; unset if the source does not count them.
  virtual std::optional<int64_t> Remaining() const { return std::nullopt; }
};

// Thread-safety: implementations are thread-safe; requests call them
// concurrently.
class ApiSource {
 public:
  virtual ~ApiSource() = default;

  // Opens a list of `type` as `request` says. Errors, as the front end
  // answers them:
  //   Expired: the version is older than the source keeps (410);
  //   DeadlineExceeded: the source has not reached the version (504);
  //   FailedPrecondition: an exact version in the future, its message
  //     etcd's (500);
  //   Unavailable: the type is being (re)initialised (429);
  //   anything else: 500 InternalError.
  virtual StatusOr<std::unique_ptr<ListCursor>> OpenList(int type, const ListRequest& request) = 0;

  // Waits, as long as the source waits for a version it has not reached,
  // until `type` has reached `rv`; sets `*current` to its version whatever
  // the outcome. DeadlineExceeded if it has not; Unavailable while it is
  // being (re)initialised.
  virtual Status Reach(int type, uint64_t rv, uint64_t* current) = 0;

  // The changes of `type` after `after`, at most `max`, waiting until
  // `until` for the first. Expired (its message the oldest version a watch
  // may start from) if `after` is older than the source keeps; Cancelled
  // once the server stops.
  virtual StatusOr<ChangeBatch> Changes(int type, uint64_t after, size_t max,
                                        std::chrono::steady_clock::time_point until) = 0;
};

}  // namespace kcache::serve

#endif  // KCACHE_TOOLS_KCACHE_APISERVER_API_SOURCE_H_
