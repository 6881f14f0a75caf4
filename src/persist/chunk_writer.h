// SPDX-License-Identifier: Apache-2.0

// Writes split into batches (a relist, an index rebuild): ChunkWriter and
// the bounds of one batch, shared by a keyspace's writer (rocks_indexer.cc)
// and its relist session (relist_session.cc).

#ifndef KCACHE_SRC_PERSIST_CHUNK_WRITER_H_
#define KCACHE_SRC_PERSIST_CHUNK_WRITER_H_

#include <rocksdb/write_batch.h>

#include <cstddef>
#include <functional>

#include "kcache/status.h"

namespace kcache::storage {

// Bounds of one batch when a write is split (Replace, rebuilds): objects,
// and bytes of JSON, so that large objects do not hold tens of megabytes in
// flight (a chunk is held twice: as objects and as the batch).
inline constexpr size_t kChunk = 1000;
inline constexpr size_t kChunkBytes = size_t{8} << 20;

inline bool ChunkFull(size_t objects, size_t bytes) {
  return objects >= kChunk || bytes >= kChunkBytes;
}

// Collects writes and writes them every kChunk objects or kChunkBytes. `seal` adds what
// each batch must carry (such as the count) just before it is written.
class ChunkWriter {
 public:
  using WriteFn = std::function<Status(rocksdb::WriteBatch*)>;
  using SealFn = std::function<void(rocksdb::WriteBatch*)>;

  ChunkWriter(WriteFn write, SealFn seal = nullptr)
      : write_(std::move(write)), seal_(std::move(seal)) {}

  rocksdb::WriteBatch* batch() { return &batch_; }
  // One object's writes are in batch().
  Status Next() { return ChunkFull(++pending_, batch_.GetDataSize()) ? Flush() : Status::OK(); }
  Status Finish() { return pending_ || batch_.Count() ? Flush() : Status::OK(); }

 private:
  Status Flush() {
    if (seal_) seal_(&batch_);
    KCACHE_RETURN_IF_ERROR(write_(&batch_));
    batch_.Clear();
    pending_ = 0;
    return Status::OK();
  }

  WriteFn write_;
  SealFn seal_;
  rocksdb::WriteBatch batch_;
  size_t pending_ = 0;
};

// Reads the records of every key of `keys` (a map by store key) from `cf`
// in one MultiGet, and calls fn(key, mapped value, status, record) for each
// in key order; stops at fn's first error.
template <typename Map, typename Fn>
Status MultiGetEach(const Db& db, rocksdb::ColumnFamilyHandle* cf, std::string_view ks, Map* keys,
                    Fn fn) {
  std::vector<std::string> okeys;  // in the map's order, which the loop below relies on
  okeys.reserve(keys->size());
  for (const auto& entry : *keys) okeys.push_back(ObjectKey(ks, entry.first));
  std::vector<rocksdb::Slice> slices(okeys.begin(), okeys.end());
  std::vector<rocksdb::PinnableSlice> records(okeys.size());
  std::vector<rocksdb::Status> statuses(okeys.size());
  db.db->MultiGet({}, cf, okeys.size(), slices.data(), records.data(), statuses.data());
  size_t i = 0;
  for (auto& entry : *keys) {
    KCACHE_RETURN_IF_ERROR(fn(entry.first, entry.second, statuses[i], records[i]));
    ++i;
  }
  return Status::OK();
}

}  // namespace kcache::storage

#endif  // KCACHE_SRC_PERSIST_CHUNK_WRITER_H_
