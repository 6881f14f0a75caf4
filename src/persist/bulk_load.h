// SPDX-License-Identifier: Apache-2.0

// BulkLoader: builds a new cache directory from rows (keys and values of the
// storage format) through RocksDB table files, ingested in one step, so that
// loading skips the write-ahead log, memtables and compaction.
//
// The cache is built out of sight and installed at the target by Finish()
// (NewDbSite): a load that fails or is abandoned leaves nothing at the
// target that could be opened as a cache.
//
// Thread-safety: used by one thread.

#ifndef KCACHE_SRC_PERSIST_BULK_LOAD_H_
#define KCACHE_SRC_PERSIST_BULK_LOAD_H_

#include <rocksdb/sst_file_writer.h>

#include <array>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kcache/cache.h"
#include "persist/cache_dir.h"
#include "persist/encoding.h"

namespace kcache::storage {

class BulkLoader {
 public:
  // `target` must not exist, or be an empty directory.
  static StatusOr<std::unique_ptr<BulkLoader>> Create(const std::string& target,
                                                      const CacheOptions& options = {});
  ~BulkLoader();  // removes the working directory

  // Keys of one family must come in strictly ascending order; families may
  // interleave. The meta key "format" is refused: the new cache records its
  // own.
  Status Add(Family family, std::string_view key, std::string_view value);

  // Ingests the table files into a new cache, closes it and installs it at
  // the target.
  Status Finish();

 private:
  BulkLoader(std::string target, std::unique_ptr<NewDbSite> site, CacheOptions options);
  Status Roll(Family family);

  const std::string target_;
  const std::unique_ptr<NewDbSite> site_;
  const CacheOptions options_;
  bool sealed_ = false;  // a keyring row was loaded: the cache is format 3
  struct Writer {
    std::unique_ptr<rocksdb::SstFileWriter> file;
    std::vector<std::string> done;
  };
  std::array<Writer, kFamilies> writers_;
  int next_file_ = 0;
};

}  // namespace kcache::storage

#endif  // KCACHE_SRC_PERSIST_BULK_LOAD_H_
