// SPDX-License-Identifier: Apache-2.0

// An open RocksDB database with kcache's column families, shared by the
// Cache and the Indexers it hands out.

#ifndef KCACHE_SRC_PERSIST_DB_H_
#define KCACHE_SRC_PERSIST_DB_H_

#include <rocksdb/db.h>
#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "kcache/cache.h"
#include "persist/cache_dir.h"
#include "persist/keyring.h"

// Whether ThreadSanitizer instruments this build: GCC defines
// __SANITIZE_THREAD__, clang answers __has_feature(thread_sanitizer).
#if defined(__SANITIZE_THREAD__)
#define KCACHE_PERSIST_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KCACHE_PERSIST_UNDER_TSAN 1
#endif
#endif

namespace kcache::storage {

struct Db {
  ~Db();

  rocksdb::DB* db = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::ColumnFamilyHandle* objects = nullptr;
  rocksdb::ColumnFamilyHandle* index = nullptr;
  rocksdb::ColumnFamilyHandle* rindex = nullptr;
  rocksdb::ColumnFamilyHandle* meta = nullptr;
  // Null only for a reader of a version 1 cache (no writer has added it).
  rocksdb::ColumnFamilyHandle* journal = nullptr;
  rocksdb::WriteOptions write_options;
  bool read_only = false;
  std::string dir;
  std::string registered_writer;  // as listed open for writing (db.cc); "" if not
  // Readers: what the cache directory was when opened, to tell it from a
  // cache removed or replaced since (SameCache).
  std::string identity;  // the IDENTITY file RocksDB writes at creation
  dev_t dir_device = 0;
  ino_t dir_inode = 0;
  // OK while `dir` holds the cache this reader opened; Expired, for good,
  // once it was removed or replaced. A secondary instance must not catch
  // up with another database's files: librocksdb 7.8 asserts.
  Status SameCache();

  // A reader's own files (its info log), in $TMPDIR; removed on close, or
  // after a kill by the next reader.
  std::unique_ptr<WorkDir> secondary_dir;
  CacheOptions options;

  // The keyring as last read (at open; a reader's again on Refresh) or
  // written. Never null. Thread-safe.
  std::shared_ptr<const Keyring> keyring() const;
  void set_keyring(std::shared_ptr<const Keyring> keyring);
  // Reads the keyring row again (a reader's Refresh).
  Status ReloadKeyring();
  // A reader: catches up with the writer (TryCatchUpWithPrimary), and then
  // once more. librocksdb 7.8's secondary instance reads the MANIFEST, then
  // lists the write-ahead logs; a flush that ends between the two deletes a
  // log whose commits are in a table file the MANIFEST it read does not
  // list, and it replays the later logs without them: a view with later
  // commits and not earlier ones (seen: a count of 156,786 pods beside
  // 126,527 of them). The second catch-up reads the flush's record, which
  // was written before the log was deleted, and the view is whole again.
  rocksdb::Status CatchUp();
  // Held by whatever writes the keyring row (persist/sealing.h).
  std::mutex keyring_update_mu;

  // The wall-clock time to record with a commit: decimal Unix milliseconds.
  std::string NowMillis() const;
  int64_t NowMs() const;

  // Writes `batch` with `write_options`. Thread-safe. After a write fails
  // for a cause outside the batch (an I/O error such as a full disk, or
  // corruption), writes stop: this and every later call return that first
  // error without calling into RocksDB, whose WAL writer must not be used
  // again after an error (librocksdb 7.8 asserts, aborting the process).
  // Reopening the cache, once the cause is gone, replays what was committed.
  rocksdb::Status Write(rocksdb::WriteBatch* batch);
  // Writes `batch` without the write-ahead log: durable only once a flush
  // has written the memtables it went into. Flushes are atomic across
  // families (DBOptions::atomic_flush), so after a crash the unlogged writes
  // that survive are a prefix of them, whole batches, and every logged write
  // survives. A caller keeps its own data whole by calling FlushAll before a
  // logged write that depends on its unlogged ones. Thread-safe.
  rocksdb::Status WriteUnlogged(rocksdb::WriteBatch* batch);
  // Ingests table files into their families, all of them or none
  // (IngestExternalFiles); an error from outside the files stops writes as
  // in Write. Thread-safe.
  rocksdb::Status Ingest(const std::vector<rocksdb::IngestExternalFileArg>& args);
  // Flushes every family's memtables as one atomic flush and waits for it.
  // Thread-safe.
  rocksdb::Status FlushAll();
  // One Put through Write.
  rocksdb::Status Put(rocksdb::ColumnFamilyHandle* family, std::string_view key,
                      std::string_view value);
  // The error that stopped writes; OK while they go on.
  rocksdb::Status WriteError() const;

  // While held, the label index family is not compacted automatically. An
  // initial list ingests one index table per segment, each spanning the
  // keyspace's whole index; compacted as they arrive, every entry would be
  // rewritten once per level. Held for the list and merged once after its
  // end (MergeIndex), each is rewritten once. Holds nest: the last one
  // released turns automatic compactions back on. Thread-safe.
  class IndexCompactionHold {
   public:
    ~IndexCompactionHold() { db_->ReleaseIndexCompactions(); }
    IndexCompactionHold(const IndexCompactionHold&) = delete;
    IndexCompactionHold& operator=(const IndexCompactionHold&) = delete;

   private:
    friend struct Db;
    explicit IndexCompactionHold(Db* db) : db_(db) {}
    Db* const db_;
  };
  std::unique_ptr<IndexCompactionHold> HoldIndexCompactions();
  // Compacts the label index family's keys in [start, limit) into its
  // bottom level, whether or not compactions are held, on the Db's merging
  // thread (kcache-merge, which waits for RocksDB's low-priority thread to
  // do it as a manual compaction), then releases `hold`: a first list ends, and
  // its informer syncs, without waiting for its index's merge. Until it
  // ends, reads find the entries in level 0, as during the list. Closing
  // the Db cancels a merge under way; RocksDB's automatic compactions
  // take the tables after the next open. Thread-safe.
  void MergeIndex(std::string start, std::string limit, std::unique_ptr<IndexCompactionHold> hold);
  // Blocks until every merge handed to MergeIndex so far has ended;
  // returns the first error of those that ended since the last call.
  // Thread-safe.
  rocksdb::Status WaitForIndexMerges();

 private:
  rocksdb::Status WriteWith(const rocksdb::WriteOptions& options, rocksdb::WriteBatch* batch);
  // Stops writes after `s`, an error from outside any batch; returns the
  // error that stopped them.
  rocksdb::Status StopWrites(const rocksdb::Status& s);

  void ReleaseIndexCompactions();

  Status gone_;  // SameCache's verdict once the cache is gone

  mutable std::mutex keyring_mu_;
  std::shared_ptr<const Keyring> keyring_;  // guarded by keyring_mu_

  std::mutex index_holds_mu_;
  int index_holds_ = 0;  // guarded by index_holds_mu_

  struct IndexMerge {
    std::string start, limit;
    std::unique_ptr<IndexCompactionHold> hold;
  };
  void RunIndexMerges();
  // Ends the merging thread, canceling a merge under way.
  void StopIndexMerges();
  std::mutex merges_mu_;
  std::condition_variable merges_cv_;
  std::deque<IndexMerge> merges_;  // guarded by merges_mu_
  bool merging_ = false;           // guarded by merges_mu_
  bool merges_stopped_ = false;    // guarded by merges_mu_
  rocksdb::Status merge_error_;    // guarded by merges_mu_
  std::atomic<bool> merge_canceled_{false};
  std::thread merger_;  // started by the first MergeIndex

  mutable std::mutex write_error_mu_;
  rocksdb::Status write_error_;  // guarded by write_error_mu_
  std::atomic<bool> writes_stopped_{false};

  // Under ThreadSanitizer, writes to one database are serialized. RocksDB
  // merges concurrent writers into one write group: the leader copies the
  // followers' batches, handed over by atomics inside librocksdb. Debian's
  // librocksdb is not instrumented, so TSan cannot see that hand-over and
  // reports each one as a race in our frames. Other builds keep group commit.
#if defined(KCACHE_PERSIST_UNDER_TSAN)
  std::mutex tsan_write_mu_;
#endif
};

// Opens `dir` with `options`; `read_only` opens a secondary instance. An
// absent or empty `dir` gets a new cache (unless read_only or
// !create_if_missing: NotFound), created atomically; a directory holding
// anything else than a cache is FailedPrecondition and left untouched.
StatusOr<std::shared_ptr<Db>> OpenDb(const std::string& dir, const CacheOptions& options,
                                     bool read_only);

// The options a plain RocksDB database would need to store objects the way
// a cache's objects column family does (for benchmarks that compare).
rocksdb::Options ObjectsLikeOptions(const CacheOptions& options);

// The options of column family `name` alone, for writing table files that
// a cache will ingest.
rocksdb::Options FamilyOnlyOptions(const std::string& name, const CacheOptions& options);
// Those of the objects family for a first list's table files
// (CacheOptions::fast_first_list).
rocksdb::Options FirstListObjectOptions(const CacheOptions& options);

// What Db::Ingest takes for table files of `family`: moved (linked) into
// the cache, not copied.
rocksdb::IngestExternalFileArg MovedTableFiles(rocksdb::ColumnFamilyHandle* family,
                                               std::vector<std::string> files);

// The column families that hold rows, in the order snapshots carry them:
// meta, objects, rindex, index.
std::vector<rocksdb::ColumnFamilyHandle*> RowFamilies(const Db& db);

// The database behind a Cache; null for a Cache that has none (a snapshot
// file's).
const std::shared_ptr<Db>& DbOf(const Cache& cache);

// A consistent view of `db` for reads, released when the last copy goes
// away (and keeping `db` open until then). Null for a read-only (secondary)
// instance: it has no snapshots, and its view changes only on Refresh().
using DbSnapshot = std::shared_ptr<const rocksdb::Snapshot>;
DbSnapshot TakeSnapshot(const std::shared_ptr<Db>& db);

}  // namespace kcache::storage

#endif  // KCACHE_SRC_PERSIST_DB_H_
