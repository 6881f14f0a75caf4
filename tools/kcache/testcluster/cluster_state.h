// SPDX-License-Identifier: Apache-2.0

// ClusterState: the storage behind `kcache serve`, in the roles etcd and the
// apiserver's watch cache play for a real cluster.
//
// One resourceVersion counter for every type (as etcd's revision). Each
// type keeps its objects as short version chains keyed "namespace/name" (or
// "name") and two windows over its events, as a real cluster has:
// - the watch window (the watch cache's capacity): a watch from before its
//   floor is expired;
// - the list window (etcd's revisions until a compaction), at least as long:
//   a list at an exact resourceVersion, or a continue token, from before its
//   floor is expired. Between the two floors an exact list succeeds while a
//   watch from the same resourceVersion is expired, as on kube-apiserver.
//
// Thread-safety: thread-safe; all methods may be called concurrently.

#ifndef KCACHE_TOOLS_KCACHE_TESTCLUSTER_CLUSTER_STATE_H_
#define KCACHE_TOOLS_KCACHE_TESTCLUSTER_CLUSTER_STATE_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kcache/object.h"
#include "kcache/status_or.h"
#include "tools/kcache/apiserver/api_source.h"
#include "tools/kcache/apiserver/resource_types.h"

namespace kcache::serve {

// One version of an object, immutable once stored.
struct StoredObject {
  ObjectPtr object;  // JSON with metadata.resourceVersion == rv
  uint64_t rv = 0;
  std::string key;  // StateKey of the object
};
using StoredPtr = std::shared_ptr<const StoredObject>;

struct Event {
  EventType type;
  uint64_t rv;
  // The new state; for a deletion the last state restamped with the
  // deletion's resourceVersion.
  StoredPtr object;
  // The state before (null for an addition).
  StoredPtr prev;
};

// What a write does, decided under the state's lock from the current object.
struct Change {
  enum Kind { kWrite, kDelete, kNone } kind = kNone;
  std::string json;  // for kWrite: the object, its resourceVersion already stamped
};
// Receives the live object at `key` (null if none) and the resourceVersion a
// write would get. An error aborts the write and is returned as is.
using Mutation = std::function<StatusOr<Change>(const StoredPtr& current, uint64_t rv)>;

struct ListQuery {
  std::string namespace_;                           // "" for every namespace
  uint64_t at_rv = 0;                               // 0: the current state
  std::string start_key;                            // first key to consider (inclusive)
  size_t limit = 0;                                 // 0: no limit
  std::function<bool(const StoredObject&)> filter;  // null: everything
  bool count_remaining = false;
  // The live objects from start_key on at at_rv, when known: remaining is
  // then derived, not counted.
  std::optional<int64_t> remaining_from_start;
};

struct ListResult {
  uint64_t rv = 0;
  std::vector<StoredPtr> items;
  std::string next_key;    // set when the limit cut the list short
  int64_t remaining = -1;  // items after next_key, when counted
};

struct WatchBatch {
  std::vector<Event> events;
  // Every change to the type up to here has been returned.
  uint64_t position = 0;
  bool expired = false;  // `after` fell out of the history
  bool stopped = false;
};

class ClusterState {
 public:
  // The watch window holds `history` events per type (at least 1); the list
  // window `list_history` (at least `history`; 0: as many as `history`).
  ClusterState(std::vector<ResourceType> types, size_t history, size_t list_history = 0);

  const std::vector<ResourceType>& types() const { return types_; }
  // -1 if unknown.
  int Find(const std::string& group, const std::string& resource) const;

  uint64_t current_rv() const;
  // The oldest resourceVersion a watch of `type` may start from.
  uint64_t floor(int type) const;
  // The oldest resourceVersion `type` may be listed at exactly (or continued
  // at); at most floor(type).
  uint64_t list_floor(int type) const;

  // Adds `count` objects of `type` outside the history (a cluster as found
  // at start-up): make(i, rv) returns object i stamped with rv.
  Status Load(int type, size_t count, const std::function<std::string(size_t, uint64_t)>& make);

  // One write to `key` of `type`, applied atomically. Returns the stored
  // version (for a deletion, the tombstone event's object; for kNone, the
  // current object).
  StatusOr<StoredPtr> Apply(int type, const std::string& key, const Mutation& mutation);

  StoredPtr Get(int type, const std::string& key) const;

  // Expired (with the floor in the message) if query.at_rv is below
  // list_floor; FailedPrecondition if above the current resourceVersion.
  StatusOr<ListResult> List(int type, const ListQuery& query) const;

  // Waits until `type` has events after `after`, `deadline` passes or the
  // state shuts down, and returns at most `max` of them.
  WatchBatch Wait(int type, uint64_t after, size_t max,
                  std::chrono::steady_clock::time_point deadline) const;

  // Drops the whole history (as an etcd compaction at the current revision):
  // every older resourceVersion becomes expired.
  void Compact();

  // Wakes every waiter and makes further waits return at once.
  void Shutdown();

  // Objects of `type` now (not counting deletions).
  size_t size(int type) const;

 private:
  struct Version {
    uint64_t rv;
    StoredPtr object;  // null: deleted at rv
  };
  struct Keyspace {
    std::map<std::string, std::vector<Version>, std::less<>> objects;
    std::deque<Event> history;  // the list window; its last history_ events, the watch window
    uint64_t floor = 0;         // of the watch window
    uint64_t list_floor = 0;    // of the list window
    size_t live = 0;
    mutable std::condition_variable changed;
  };

  StatusOr<StoredPtr> Store(int type, std::string json, uint64_t rv) const;
  void Prune(Keyspace& ks, const std::string& key);
  static const StoredPtr* At(const std::vector<Version>& versions, uint64_t rv);

  const std::vector<ResourceType> types_;
  const size_t history_;
  const size_t list_history_;
  mutable std::mutex mu_;
  uint64_t rv_ = 1;
  bool shutdown_ = false;
  std::vector<std::unique_ptr<Keyspace>> spaces_;
};

// "namespace/name", or "name" for a cluster-scoped type.
std::string StateKey(const ResourceType& type, const std::string& namespace_,
                     const std::string& name);

}  // namespace kcache::serve

#endif  // KCACHE_TOOLS_KCACHE_TESTCLUSTER_CLUSTER_STATE_H_
