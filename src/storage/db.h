// An open RocksDB database with kcache's column families, shared by the
// Cache and the Indexers it hands out.

#ifndef KCACHE_SRC_STORAGE_DB_H_
#define KCACHE_SRC_STORAGE_DB_H_

#include <rocksdb/db.h>

#include <memory>
#include <string>
#include <vector>

#include "kcache/cache.h"

namespace kcache::storage {

struct Db {
  ~Db();

  rocksdb::DB* db = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::ColumnFamilyHandle* objects = nullptr;
  rocksdb::ColumnFamilyHandle* index = nullptr;
  rocksdb::ColumnFamilyHandle* rindex = nullptr;
  rocksdb::ColumnFamilyHandle* meta = nullptr;
  rocksdb::WriteOptions write_options;
  bool read_only = false;
  std::string dir;
  std::string secondary_dir;  // read-only caches: removed on close
};

// Opens `dir` with `options`; `read_only` opens a secondary instance.
StatusOr<std::shared_ptr<Db>> OpenDb(const std::string& dir, const CacheOptions& options,
                                     bool read_only);

// The options a plain RocksDB database would need to store objects the way
// a cache's objects column family does (for benchmarks that compare).
rocksdb::Options ObjectsLikeOptions(const CacheOptions& options);

// Structural checks of one keyspace (Cache::Verify).
Status VerifyKeyspace(const Db& db, std::string_view ks);

}  // namespace kcache::storage

#endif  // KCACHE_SRC_STORAGE_DB_H_
