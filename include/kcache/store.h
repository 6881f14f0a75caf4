// SPDX-License-Identifier: Apache-2.0

// Store: a keyed collection of objects with a resume resourceVersion
// (client-go's cache.Store, plus atomic batches and a Replace that reports
// what it changed).
//
// Every store commits each call atomically: readers see all of a Commit or
// Replace or none of it, and the resume resourceVersion moves with the
// objects it describes. Reads return shared immutable objects; a returned
// ObjectPtr stays valid after the store changes.
//
// Thread-safety: implementations are safe for concurrent use by multiple
// threads without external synchronization.

#ifndef KCACHE_STORE_H_
#define KCACHE_STORE_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kcache/export.h"
#include "kcache/key.h"
#include "kcache/object.h"
#include "kcache/status_or.h"

namespace kcache {

// Walks objects in key order. Obtained from a store; must not outlive it.
// A walk sees each key at most once. Whether it sees changes made after it
// was created depends on the store: the in-memory store shows them for keys
// not reached yet, the RocksDB store reads a consistent snapshot.
//
// Thread-safety: one iterator is used by one thread at a time.
class KCACHE_EXPORT ObjectIterator {
 public:
  virtual ~ObjectIterator() = default;
  // False at the end or after an error (see status()).
  virtual bool Valid() const = 0;
  // REQUIRES: Valid().
  virtual void Next() = 0;
  // REQUIRES: Valid(). The current key and object.
  virtual const std::string& key() const = 0;
  virtual const ObjectPtr& object() const = 0;
  // OK unless reading failed; check it once Valid() turns false.
  virtual Status status() const = 0;
};

// A batch of changes for Store::Commit.
struct KCACHE_EXPORT Transaction {
  enum class OpType { kAdd, kUpdate, kDelete };
  struct Op {
    OpType type{};
    ObjectPtr object{};  // for kDelete may be null when `key` is set
    std::string key{};   // kDelete only: deletes this key; empty = key of object
  };

  std::vector<Op> ops;
  // The resume point committed with the ops. Unset: the resourceVersion of
  // the last op's object that has one (client-go's "last written" rule).
  std::optional<std::string> resource_version;

  void Add(ObjectPtr obj) { ops.push_back({OpType::kAdd, std::move(obj), {}}); }
  void Update(ObjectPtr obj) { ops.push_back({OpType::kUpdate, std::move(obj), {}}); }
  void Delete(ObjectPtr obj) { ops.push_back({OpType::kDelete, std::move(obj), {}}); }
  void DeleteKey(std::string key) { ops.push_back({OpType::kDelete, nullptr, std::move(key)}); }
};

// Which ops of a Transaction were committed.
struct KCACHE_EXPORT TransactionResult {
  std::vector<size_t> successful_indices{};
};

// One change made by Replace.
struct KCACHE_EXPORT StoreChange {
  enum class Type { kAdded, kUpdated, kDeleted };
  Type type{};
  std::string key{};
  ObjectPtr old_object{};  // null for kAdded
  ObjectPtr new_object{};  // null for kDeleted
};

// What Replace did. Objects that did not change (the same resourceVersion
// and the same JSON bytes) are neither rewritten nor listed in `changes`,
// only counted. The bytes are compared too because a resourceVersion is
// only unique within one cluster's history: an object of another cluster
// with the same key may carry the same one.
struct KCACHE_EXPORT ReplaceResult {
  std::vector<StoreChange> changes{};
  size_t unchanged = 0;
};

// A relist written as it arrives (Store::BeginReplace): memory stays
// bounded by one chunk of objects whatever the size of the list.
//
// Thread-safety: used by one thread; the store's other writers wait until
// the session ends. A session must not outlive the store that began it.
class KCACHE_EXPORT ReplaceSession {
 public:
  // Abandoning a session without Finish() leaves the store as a crash in the
  // middle of a relist would: its resume point reads "" until a relist
  // completes.
  virtual ~ReplaceSession() = default;
  // Adds one listed object. A later object with the same key wins.
  virtual Status Put(ObjectPtr object) = 0;
  // Deletes the stored objects that were not put, commits `resource_version`
  // as the resume point, and returns how many objects were unchanged.
  virtual StatusOr<size_t> Finish(std::string resource_version) = 0;
  // Records `progress`, an opaque string of the lister's (for a paginated
  // LIST: where its next page starts), as the relist's position after every
  // object put so far. It is committed with those objects, no sooner and
  // no later, so that a store that outlives the session (a crash, or the
  // session abandoned) can go on from there: Store::ContinueReplace.
  // Default: does nothing (a store that keeps nothing across sessions).
  virtual Status Checkpoint(std::string progress) {
    (void)progress;
    return Status::OK();
  }
};

// A relist that began and did not finish (Store::GetCutShortRelist).
struct KCACHE_EXPORT CutShortRelist {
  // What its last committed Checkpoint recorded; empty if none was, or if
  // what it wrote cannot be continued (the relist must start over).
  std::string progress{};
};

// Receives a relist's changes as they are committed, chunk by chunk, on the
// thread calling the session. Objects whose resourceVersion did not change
// are not reported.
using ChangeSink = std::function<void(std::vector<StoreChange> changes)>;

class KCACHE_EXPORT Store {
 public:
  virtual ~Store() = default;

  // Insert or overwrite the object under its key. The store's resume
  // resourceVersion becomes the object's, if it has one. A key function
  // error is InvalidArgument "couldn't create key for object ...: <cause>"
  // and changes nothing.
  virtual Status Add(ObjectPtr object) = 0;
  // Same as Add.
  virtual Status Update(ObjectPtr object) = 0;
  // Removes the object's key (absent: no error, no change).
  virtual Status Delete(const ObjectPtr& object) = 0;
  // Removes `key` (absent: no error, no change); the resume point is kept.
  virtual Status DeleteKey(std::string_view key) = 0;

  // Applies every op whose key can be computed, and the resume point, as one
  // atomic write. If some ops failed, returns the first failure (naming its
  // index) and lists the committed ones in `result` (may be null).
  virtual Status Commit(const Transaction& txn, TransactionResult* result) = 0;

  // Makes the store hold exactly `objects`, with `resource_version` as the
  // resume point, atomically. Reports what changed.
  virtual StatusOr<ReplaceResult> Replace(std::vector<ObjectPtr> objects,
                                          std::string resource_version) = 0;

  // The streaming form of Replace: the list arrives through the session.
  // `sink` may be null; without one, a persistent store writes a list into
  // an empty store by its cheapest path (table files it ingests).
  virtual StatusOr<std::unique_ptr<ReplaceSession>> BeginReplace(ChangeSink sink) = 0;

  // The relist the store holds cut short, if any: one begun and not
  // finished (a crash, or its session abandoned). Default: none (a store
  // that keeps nothing across sessions).
  virtual StatusOr<std::optional<CutShortRelist>> GetCutShortRelist() const {
    return std::optional<CutShortRelist>();
  }
  // Begins a session that goes on with that relist from its progress: what
  // it wrote stays, and Finish deletes the stored objects that neither put.
  // FailedPrecondition if there is no progress to go on from. Default:
  // Unimplemented.
  virtual StatusOr<std::unique_ptr<ReplaceSession>> ContinueReplace(ChangeSink sink) {
    (void)sink;
    return Status::Unimplemented("this store cannot continue a relist");
  }

  // Null if no object has that key.
  virtual StatusOr<ObjectPtr> Get(const Object& object) const = 0;
  virtual StatusOr<ObjectPtr> GetByKey(std::string_view key) const = 0;

  // Everything, in key order. Prefer NewIterator() for large stores.
  virtual StatusOr<std::vector<ObjectPtr>> List() const = 0;
  virtual StatusOr<std::vector<std::string>> ListKeys() const = 0;
  virtual std::unique_ptr<ObjectIterator> NewIterator() const = 0;
  // Walks objects in key order from the first key not less than `start`: the
  // next page of a list starts just after the last key of the previous one.
  virtual std::unique_ptr<ObjectIterator> NewIteratorFrom(std::string_view start) const = 0;
  virtual StatusOr<size_t> Size() const = 0;

  // The resume resourceVersion: the one last committed. "" when none.
  virtual std::string LastSyncResourceVersion() const = 0;

  // A no-op for stores; queues use it to re-deliver their contents.
  virtual Status Resync() = 0;

  // The key this store files `object` under.
  virtual StatusOr<std::string> KeyOf(const Object& object) const = 0;
};

}  // namespace kcache

#endif  // KCACHE_STORE_H_
