// SPDX-License-Identifier: Apache-2.0

// StoredIndexer: the reads of a keyspace whose rows are stored (in a
// RocksDB cache or a snapshot file): objects by key and in key order, index
// lookups, and the index definitions that say how each index is answered.
// The RocksDB store adds the writes; a snapshot file's store refuses them.

#ifndef KCACHE_SRC_PERSIST_STORED_INDEXER_H_
#define KCACHE_SRC_PERSIST_STORED_INDEXER_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kcache/cache.h"
#include "persist/rows.h"
#include "util/rw_mutex.h"

namespace kcache::storage {

class StoredIndexer : public Indexer {
 public:
  StatusOr<ObjectPtr> Get(const Object& object) const override;
  StatusOr<ObjectPtr> GetByKey(std::string_view key) const override;
  StatusOr<std::vector<ObjectPtr>> List() const override;
  StatusOr<std::vector<std::string>> ListKeys() const override;
  std::unique_ptr<ObjectIterator> NewIterator() const override;
  std::unique_ptr<ObjectIterator> NewIteratorFrom(std::string_view start) const override;
  StatusOr<std::string> KeyOf(const Object& object) const override { return key_func_(object); }

  StatusOr<std::vector<ObjectPtr>> Index(std::string_view name,
                                         const Object& object) const override;
  StatusOr<std::vector<std::string>> IndexKeys(std::string_view name,
                                               std::string_view value) const override;
  StatusOr<std::vector<ObjectPtr>> ByIndex(std::string_view name,
                                           std::string_view value) const override;
  std::unique_ptr<ObjectIterator> NewIndexIterator(std::string_view name,
                                                   std::string_view value) const override;
  StatusOr<std::vector<std::string>> ListIndexFuncValues(std::string_view name) const override;
  Indexers GetIndexers() const override;

 protected:
  struct IndexDef {
    IndexFunc fn;  // null: readable, not computable (a reader not given it)
    std::string version;
    // The namespace index of a keyspace keyed "namespace/name": answered
    // from the object keys, which keep each namespace contiguous; it has no
    // entries of its own.
    bool from_keys = false;
  };
  using Defs = std::map<std::string, IndexDef, std::less<>>;

  // The definitions `options` asks for: its indexers, then the namespace
  // and label indexes unless turned off. InvalidArgument for bad names.
  static StatusOr<Defs> DefsFor(const KeyspaceOptions& options);

  StoredIndexer(std::shared_ptr<const Rows> rows, std::string ks, KeyFunc key_func, Defs defs);

  // The (index name, version) pairs recorded in meta.
  StatusOr<std::map<std::string, std::string, std::less<>>> RecordedIndexVersions() const;
  // For readers: trusts the indexes on disk, and makes the ones it was not
  // given functions for queryable (kcache get --index).
  Status AdoptRecordedIndexes();
  // The keyspace's meta record `kind` ("rv", "count", "relist"); nullopt if
  // absent.
  StatusOr<std::optional<std::string>> ReadMeta(std::string_view kind) const;
  // Size() and LastSyncResourceVersion() as the meta records say.
  StatusOr<size_t> StoredCount() const;
  std::string StoredResumePoint() const;

  using ScanFn = std::function<Status(std::string_view key, std::string_view value)>;
  // Calls `fn` for each row of `family` in [begin, end) in key order, with
  // the key's first `strip` bytes removed; stops at fn's first error.
  Status Scan(Family family, const std::string& begin, const std::string& end, size_t strip,
              const ScanFn& fn) const;
  // Scan over this keyspace's objects: fn(store key, object record).
  Status ScanObjects(const ScanFn& fn) const;

  Status HasIndex(std::string_view name) const;
  // True if `name` is answered from the object keys (see IndexDef).
  bool FromKeys(std::string_view name) const;
  // The object of `record`, stored under `key` (a sealed one is opened).
  // Errors name the object ("object KEY of keyspace KS").
  StatusOr<ObjectPtr> Decode(std::string_view key, std::string_view record) const;

  const std::shared_ptr<const Rows> rows_;
  const std::string ks_;
  const KeyFunc key_func_;

  mutable RWMutex defs_mu_;
  Defs defs_;  // guarded by defs_mu_
};

}  // namespace kcache::storage

#endif  // KCACHE_SRC_PERSIST_STORED_INDEXER_H_
