// SPDX-License-Identifier: Apache-2.0

// The Indexer of one keyspace of a Cache, stored in RocksDB.

#ifndef KCACHE_SRC_PERSIST_ROCKS_INDEXER_H_
#define KCACHE_SRC_PERSIST_ROCKS_INDEXER_H_

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kcache/cache.h"
#include "persist/db.h"
#include "persist/encoding.h"
#include "persist/journal.h"
#include "persist/stored_indexer.h"
#include "util/rw_mutex.h"

namespace rocksdb {
class WriteBatch;
}

namespace kcache::storage {

class RocksReplaceSession;

// Thread-safety: safe for concurrent use; writes are serialized.
class RocksIndexer final : public StoredIndexer {
 public:
  // Loads the keyspace's resume point and count, and rebuilds its indexes
  // if their recorded versions differ from `options` (writable caches only).
  static StatusOr<std::shared_ptr<RocksIndexer>> Open(std::shared_ptr<Db> db, std::string ks,
                                                      KeyspaceOptions options);

  Status Add(ObjectPtr object) override;
  Status Update(ObjectPtr object) override;
  Status Delete(const ObjectPtr& object) override;
  Status DeleteKey(std::string_view key) override;
  Status Commit(const Transaction& txn, TransactionResult* result) override;
  StatusOr<ReplaceResult> Replace(std::vector<ObjectPtr> objects,
                                  std::string resource_version) override;
  StatusOr<std::unique_ptr<ReplaceSession>> BeginReplace(ChangeSink sink) override;
  StatusOr<std::optional<CutShortRelist>> GetCutShortRelist() const override;
  StatusOr<std::unique_ptr<ReplaceSession>> ContinueReplace(ChangeSink sink) override;
  StatusOr<size_t> Size() const override;
  std::string LastSyncResourceVersion() const override;
  Status Resync() override { return Status::OK(); }
  Status AddIndexers(const Indexers& indexers) override;

 private:
  friend class RocksReplaceSession;

  // The reverse index records a write has produced so far, by key; nullopt
  // for a key it deleted.
  using Pending = std::map<std::string, std::optional<std::vector<IndexEntry>>, std::less<>>;

  RocksIndexer(std::shared_ptr<Db> db, std::string ks, KeyFunc key_func, Defs defs);

  Status CheckWritable() const;
  // The sorted index entries of `object` under `defs`.
  static StatusOr<std::vector<IndexEntry>> EntriesOf(const Defs& defs, std::string_view key,
                                                     const Object& object);
  // The stored reverse record of `key` (nullopt if no object), or the
  // pending one.
  StatusOr<std::optional<std::vector<IndexEntry>>> CurrentEntries(const Pending& pending,
                                                                  const std::string& key) const;
  // Adds the writes for putting `object` under `key` to `batch`. If
  // `index_puts` is set, the index keys to put are appended to it instead,
  // for the caller to write (in key order: see RocksReplaceSession::Flush);
  // only safe where no other op of the batch touches the same keys.
  // In a sealed keyspace the object is sealed; an error then leaves
  // `batch` unusable.
  Status PutObject(rocksdb::WriteBatch* batch, const std::string& key, const Object& object,
                   const std::optional<std::vector<IndexEntry>>& old,
                   const std::vector<IndexEntry>& now,
                   std::vector<std::string>* index_puts = nullptr) const;
  // The record to store for `object` under `key`: sealed in a sealed
  // keyspace.
  StatusOr<std::string> EncodeRecord(const std::string& key, const Object& object) const;
  void DeleteObject(rocksdb::WriteBatch* batch, const std::string& key,
                    const std::vector<IndexEntry>& old) const;
  // A commit in three steps, under write_mu_: plan (keys and index entries
  // of each op), read (the stored reverse records of the keys touched), and
  // write (one WriteBatch with the resume point).
  struct PlannedOp {
    size_t index;  // in Transaction::ops
    std::string key;
    std::vector<IndexEntry> entries;  // empty for a delete
  };
  Status CommitLocked(const Transaction& txn, TransactionResult* result, bool single);
  // Plans every op that can be; returns the first op's error (OK if none),
  // named "op <i>" unless `single`.
  Status PlanCommit(const Transaction& txn, const Defs& defs, bool single,
                    std::vector<PlannedOp>* planned) const;
  // The stored reverse records of the planned keys (nullopt: no object).
  // An error here leaves the outcome unknown, so the commit writes nothing.
  StatusOr<Pending> ReadStoredEntries(const std::vector<PlannedOp>& planned) const;
  // The stored JSON of the planned keys that have an object (for the
  // journal's previous and deleted objects).
  using StoredJson = std::map<std::string, std::string, std::less<>>;
  StatusOr<StoredJson> ReadStoredJson(const std::vector<PlannedOp>& planned,
                                      const Pending& stored) const;
  // Applies `planned` over `current` into one batch and writes it; `done`
  // gets the indices of the ops written (none if the write fails).
  Status WriteCommit(const Transaction& txn, std::vector<PlannedOp>* planned, Pending* current,
                     std::vector<size_t>* done);
  // Writes `batch` for `by` (null: a writer other than a relist session);
  // REQUIRES write_mu_ held. A logged write (the default) first flushes the
  // keyspace's unlogged writes, if any, so that a crash never keeps it
  // without them: the keyspace stays a prefix of its writes. A write beside
  // a relist that writes no seen marks first has it mark what it wrote.
  Status Write(rocksdb::WriteBatch* batch, std::string_view what, bool logged = true,
               const RocksReplaceSession* by = nullptr);
  // Rebuilds every index of the keyspace from its objects.
  Status RebuildIndexesLocked();
  // Whether `family` holds a key in [start, limit).
  StatusOr<bool> AnyKeyIn(rocksdb::ColumnFamilyHandle* family, const std::string& start,
                          const std::string& limit) const;
  // Has the markless relist session mark the keys it wrote; REQUIRES
  // write_mu_ held and markless_ set.
  Status MarkRelistedKeys();
  Status LoadState();
  // Decides whether the keyspace is sealed (CacheOptions::encryption) and
  // seals what it holds if it is to be and is not yet. Writers only.
  Status PrepareSealing();

  const std::shared_ptr<Db> db_;

  // One writer at a time: a write reads reverse records, then replaces them.
  std::mutex write_mu_;
  JournalWriter journal_;  // guarded by write_mu_
  // Objects are stored sealed (encryption at rest); set by Open.
  bool sealed_ = false;
  // Batches written, so that a relist session can tell whether anything
  // else wrote the keyspace beside it. Guarded by write_mu_.
  uint64_t writes_ = 0;
  // Whether a batch was written without the WAL since the last flush.
  // Guarded by write_mu_.
  bool unflushed_unlogged_ = false;
  // The relist session, if any, that writes no seen marks: it writes an
  // empty keyspace alone, so every stored key is one it listed. Guarded by
  // write_mu_.
  RocksReplaceSession* markless_ = nullptr;

  mutable std::mutex state_mu_;
  // Below: guarded by state_mu_; mirrors of meta for writable caches.
  std::string rv_;
  bool relist_incomplete_ = false;
  size_t count_ = 0;
};

}  // namespace kcache::storage

#endif  // KCACHE_SRC_PERSIST_ROCKS_INDEXER_H_
