#include "kcache/cache.h"

#include <map>
#include <mutex>
#include <set>

#include "storage/db.h"
#include "storage/encoding.h"
#include "storage/rocks_indexer.h"
#include "storage/rocks_status.h"

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
    KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<storage::RocksIndexer> store,
                            storage::RocksIndexer::Open(db_, std::string(name), std::move(options)));
    open_[std::string(name)] = store;
    return std::shared_ptr<Indexer>(std::move(store));
  }

  StatusOr<std::vector<std::string>> ListKeyspaces() const override {
    std::set<std::string> names;
    std::unique_ptr<rocksdb::Iterator> it(db_->db->NewIterator({}, db_->meta));
    for (const char* kind : {"rv", "count"}) {
      std::string prefix = storage::MetaKey(kind, "");
      for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
        names.insert(it->key().ToString().substr(prefix.size()));
      }
    }
    KCACHE_RETURN_IF_ERROR(storage::FromRocks(it->status(), "list keyspaces of " + db_->dir));
    return std::vector<std::string>(names.begin(), names.end());
  }

  Status Refresh() override {
    if (!db_->read_only) return Status::OK();
    return storage::FromRocks(db_->db->TryCatchUpWithPrimary(), "refresh " + db_->dir);
  }

  Status Compact() override {
    if (db_->read_only) return Status::FailedPrecondition("the cache was opened read-only");
    rocksdb::CompactRangeOptions opts;
    opts.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForceOptimized;
    for (rocksdb::ColumnFamilyHandle* cf : db_->handles) {
      KCACHE_RETURN_IF_ERROR(storage::FromRocks(db_->db->Flush({}, cf), "flush " + db_->dir));
      KCACHE_RETURN_IF_ERROR(
          storage::FromRocks(db_->db->CompactRange(opts, cf, nullptr, nullptr), "compact " + db_->dir));
    }
    return Status::OK();
  }

  Status Verify() const override {
    KCACHE_ASSIGN_OR_RETURN(std::vector<std::string> names, ListKeyspaces());
    for (const std::string& ks : names) KCACHE_RETURN_IF_ERROR(storage::VerifyKeyspace(*db_, ks));
    return Status::OK();
  }

  const std::string& dir() const override { return db_->dir; }

 private:
  const std::shared_ptr<Db> db_;
  std::mutex mu_;
  std::map<std::string, std::weak_ptr<storage::RocksIndexer>, std::less<>> open_;  // guarded by mu_
};

}  // namespace

StatusOr<std::unique_ptr<Cache>> Cache::Open(const std::string& dir, const CacheOptions& options) {
  KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Db> db, storage::OpenDb(dir, options, false));
  return std::unique_ptr<Cache>(new CacheImpl(std::move(db)));
}

StatusOr<std::unique_ptr<Cache>> Cache::OpenReadOnly(const std::string& dir,
                                                     const CacheOptions& options) {
  KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Db> db, storage::OpenDb(dir, options, true));
  return std::unique_ptr<Cache>(new CacheImpl(std::move(db)));
}

}  // namespace kcache
