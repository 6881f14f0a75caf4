// SPDX-License-Identifier: Apache-2.0

#include "kcache/cache.h"

#include <rocksdb/utilities/checkpoint.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>

#include "persist/bulk_load.h"
#include "persist/cache_dir.h"
#include "persist/db.h"
#include "persist/encoding.h"
#include "persist/journal.h"
#include "persist/keyspaces.h"
#include "persist/rocks_indexer.h"
#include "persist/rocks_status.h"
#include "persist/sealing.h"

namespace kcache {
namespace {

using storage::Db;

class CacheImpl final : public Cache {
 public:
  explicit CacheImpl(std::shared_ptr<Db> db) : db_(std::move(db)) {}

  StatusOr<std::shared_ptr<Indexer>> OpenKeyspace(std::string_view name,
                                                  KeyspaceOptions options) override {
    std::lock_guard l(mu_);
    auto it = open_.find(name);
    if (it != open_.end() && !it->second.expired()) {
      return Status::FailedPrecondition("keyspace " + std::string(name) + " is already open");
    }
    KCACHE_ASSIGN_OR_RETURN(
        std::shared_ptr<storage::RocksIndexer> store,
        storage::RocksIndexer::Open(db_, std::string(name), std::move(options)));
    open_[std::string(name)] = store;
    return std::shared_ptr<Indexer>(std::move(store));
  }

  StatusOr<std::vector<std::string>> ListKeyspaces() const override {
    return storage::ListKeyspaces(*db_, nullptr);
  }

  Status Refresh() override {
    if (!db_->read_only) return Status::OK();
    KCACHE_RETURN_IF_ERROR(db_->SameCache().WithContext("refresh"));
    KCACHE_RETURN_IF_ERROR(storage::FromRocks(db_->CatchUp(), "refresh " + db_->dir));
    return db_->ReloadKeyring().WithContext("refresh " + db_->dir);
  }

  Status WaitForIndexMerges() override {
    return storage::FromRocks(db_->WaitForIndexMerges(), "merge the label index of " + db_->dir);
  }

  Status Compact() override {
    if (db_->read_only) return Status::FailedPrecondition("the cache was opened read-only");
    KCACHE_RETURN_IF_ERROR(storage::FromRocks(db_->WriteError(), "compact " + db_->dir));
    // A merge's error is of no matter here: what it left, this compacts.
    db_->WaitForIndexMerges().PermitUncheckedError();
    rocksdb::CompactRangeOptions opts;
    opts.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForceOptimized;
    for (rocksdb::ColumnFamilyHandle* cf : db_->handles) {
      KCACHE_RETURN_IF_ERROR(storage::FromRocks(db_->db->Flush({}, cf), "flush " + db_->dir));
      KCACHE_RETURN_IF_ERROR(storage::FromRocks(db_->db->CompactRange(opts, cf, nullptr, nullptr),
                                                "compact " + db_->dir));
    }
    return Status::OK();
  }

  Status SetResourceInfo(std::string_view keyspace, const ResourceInfo& info) override {
    if (db_->read_only) return Status::FailedPrecondition("the cache was opened read-only");
    KCACHE_RETURN_IF_ERROR(storage::CheckNoZero("keyspace name", keyspace));
    const std::string key = storage::MetaKey("resource", keyspace);
    const std::string value = storage::ResourceInfoToJson(info).dump();
    // A restart records what it recorded before: one read, no write.
    std::string held;
    if (db_->db->Get({}, db_->meta, key, &held).ok() && held == value) return Status::OK();
    return storage::FromRocks(db_->Put(db_->meta, key, value),
                              "record resource of " + std::string(keyspace));
  }

  StatusOr<std::optional<ResourceInfo>> GetResourceInfo(std::string_view keyspace) const override {
    std::string value;
    rocksdb::Status s = db_->db->Get({}, db_->meta, storage::MetaKey("resource", keyspace), &value);
    if (s.IsNotFound()) return std::optional<ResourceInfo>();
    KCACHE_RETURN_IF_ERROR(
        storage::FromRocks(s, "read the resource record of " + std::string(keyspace)));
    KCACHE_ASSIGN_OR_RETURN(ResourceInfo info, storage::DecodeResourceInfo(value));
    return std::optional<ResourceInfo>(std::move(info));
  }

  Status SetClusterInfo(const ClusterInfo& info) override {
    if (db_->read_only) return Status::FailedPrecondition("the cache was opened read-only");
    return storage::FromRocks(
        db_->Put(db_->meta, storage::kClusterKey, storage::ClusterInfoToJson(info).dump()),
        "record the cluster of " + db_->dir);
  }

  StatusOr<std::optional<ClusterInfo>> GetClusterInfo() const override {
    std::string value;
    rocksdb::Status s = db_->db->Get({}, db_->meta, storage::kClusterKey, &value);
    if (s.IsNotFound()) return std::optional<ClusterInfo>();
    KCACHE_RETURN_IF_ERROR(storage::FromRocks(s, "read the cluster of " + db_->dir));
    KCACHE_ASSIGN_OR_RETURN(ClusterInfo info, storage::DecodeClusterInfo(value));
    return std::optional<ClusterInfo>(std::move(info));
  }

  CacheMemory Memory() const override {
    CacheMemory out;
    // One block cache serves every family: any family's property reads it.
    (void)db_->db->GetIntProperty(db_->objects, rocksdb::DB::Properties::kBlockCacheUsage,
                                  &out.block_cache);
    (void)db_->db->GetAggregatedIntProperty(rocksdb::DB::Properties::kSizeAllMemTables,
                                            &out.memtables);
    (void)db_->db->GetAggregatedIntProperty(rocksdb::DB::Properties::kEstimateTableReadersMem,
                                            &out.table_readers);
    return out;
  }

  StatusOr<KeyspaceStats> Stats(std::string_view keyspace) const override {
    KCACHE_ASSIGN_OR_RETURN(std::vector<std::string> names, ListKeyspaces());
    if (!std::binary_search(names.begin(), names.end(), keyspace)) {
      return Status::NotFound("the cache has no keyspace " + std::string(keyspace));
    }
    KCACHE_ASSIGN_OR_RETURN(KeyspaceStats out, storage::ReadKeyspaceMeta(*db_, nullptr, keyspace));
    const storage::KeyRange keys = storage::KeyspaceRange(keyspace);
    rocksdb::Range range(keys.start, keys.limit);
    rocksdb::SizeApproximationOptions so;
    so.include_memtables = true;
    so.include_files = true;
    for (rocksdb::ColumnFamilyHandle* cf : {db_->objects, db_->rindex, db_->index}) {
      uint64_t size = 0;
      if (db_->db->GetApproximateSizes(so, cf, &range, 1, &size).ok()) out.bytes_on_disk += size;
    }
    return out;
  }

  Status Checkpoint(const std::string& out_dir) const override {
    const std::string ctx = "checkpoint " + db_->dir + " to " + out_dir;
    // A writer whose writes stopped after an error is copied as a reader is:
    // a RocksDB checkpoint would flush through the failed writer.
    if (!db_->read_only && db_->WriteError().ok()) {
      rocksdb::Checkpoint* raw = nullptr;
      KCACHE_RETURN_IF_ERROR(storage::FromRocks(rocksdb::Checkpoint::Create(db_->db, &raw), ctx));
      std::unique_ptr<rocksdb::Checkpoint> checkpoint(raw);
      // Made in a private (0700) working directory and installed at once,
      // so that no other user can read its files (RocksDB creates them
      // 0644) at any instant; a new directory is 0700, as a cache is (an
      // existing one keeps its mode).
      StatusOr<std::unique_ptr<storage::NewDbSite>> site =
          storage::NewDbSite::Prepare(out_dir, "checkpoint");
      if (site.status().code() == StatusCode::kAlreadyExists) {
        return Status::AlreadyExists(ctx + ": " + out_dir + " already holds a cache");
      }
      if (!site.ok()) return site.status().WithContext(ctx);
      KCACHE_RETURN_IF_ERROR(
          storage::FromRocks(checkpoint->CreateCheckpoint((*site)->db_dir()), ctx));
      KCACHE_RETURN_IF_ERROR((*site)->Install().WithContext(ctx));
      return Status::OK();
    }
    // A reader's view is fixed until Refresh() (a stopped writer's for
    // good): copy it row by row.
    KCACHE_ASSIGN_OR_RETURN(std::unique_ptr<storage::BulkLoader> loader,
                            storage::BulkLoader::Create(out_dir, db_->options));
    std::vector<rocksdb::ColumnFamilyHandle*> families = storage::RowFamilies(*db_);
    for (int f = 0; f < storage::kFamilies; ++f) {
      std::unique_ptr<rocksdb::Iterator> it(db_->db->NewIterator({}, families[f]));
      for (it->SeekToFirst(); it->Valid(); it->Next()) {
        if (f == 0 && it->key() == storage::kFormatKey) continue;
        KCACHE_RETURN_IF_ERROR(loader->Add(static_cast<storage::Family>(f),
                                           storage::View(it->key()), storage::View(it->value())));
      }
      KCACHE_RETURN_IF_ERROR(storage::FromRocks(it->status(), ctx));
    }
    return loader->Finish();
  }

  Status Verify() const override {
    KCACHE_ASSIGN_OR_RETURN(std::vector<std::string> names, ListKeyspaces());
    for (const std::string& ks : names) KCACHE_RETURN_IF_ERROR(storage::VerifyKeyspace(db_, ks));
    return storage::VerifyRowsHaveKeyspaces(db_);
  }

  StatusOr<JournalRead> ReadJournal(std::string_view keyspace, std::string_view after,
                                    size_t limit) const override {
    storage::DbSnapshot snapshot = storage::TakeSnapshot(db_);
    return storage::ReadJournal(*db_, snapshot.get(), keyspace, after, limit);
  }

  const std::string& dir() const override { return db_->dir; }

  const std::shared_ptr<Db>& db() const { return db_; }

  // Rekey, with no keyspace open meanwhile.
  Status Rekey(const std::string& new_kek) {
    std::lock_guard l(mu_);
    for (const auto& [name, store] : open_) {
      if (!store.expired()) {
        return Status::FailedPrecondition("rekey: keyspace " + name +
                                          " is open; rekey a cache with no keyspace open");
      }
    }
    return storage::RekeyDb(*db_, new_kek);
  }

 private:
  const std::shared_ptr<Db> db_;
  std::mutex mu_;
  std::map<std::string, std::weak_ptr<storage::RocksIndexer>, std::less<>> open_;  // guarded by mu_
};

}  // namespace

namespace storage {
const std::shared_ptr<Db>& DbOf(const Cache& cache) {
  static const std::shared_ptr<Db> kNone;
  const auto* impl = dynamic_cast<const CacheImpl*>(&cache);
  return impl ? impl->db() : kNone;
}
}  // namespace storage

Status Rekey(Cache& cache, const std::string& new_key_encryption_key) {
  auto* impl = dynamic_cast<CacheImpl*>(&cache);
  if (!impl) return Status::FailedPrecondition("rekey: a snapshot file's cache is read-only");
  return impl->Rekey(new_key_encryption_key);
}

StatusOr<std::shared_ptr<Cache>> Cache::Open(const std::string& dir, const CacheOptions& options) {
  KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Db> db, storage::OpenDb(dir, options, false));
  return std::shared_ptr<Cache>(new CacheImpl(std::move(db)));
}

StatusOr<std::shared_ptr<Cache>> Cache::OpenReadOnly(const std::string& dir,
                                                     const CacheOptions& options) {
  KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Db> db, storage::OpenDb(dir, options, true));
  return std::shared_ptr<Cache>(new CacheImpl(std::move(db)));
}

}  // namespace kcache
