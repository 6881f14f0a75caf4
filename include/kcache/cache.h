// SPDX-License-Identifier: Apache-2.0

// Cache: one RocksDB database in a directory, holding the stores of many
// resources (keyspaces) with their indexes and resume points.
//
// Every Commit of a keyspace's Indexer writes its objects, their index
// entries and the resume resourceVersion in one RocksDB WriteBatch: after a
// crash at any instant the reopened store is exactly the one at its last
// resume point. A Replace (relist) is written in chunks between a
// "relist in progress" marker and a final batch that moves the resume point;
// a crash in between leaves the marker, and the reopened store then reports
// no resume point ("") so that its owner relists.
//
// The on-disk layout is specified in docs/storage-format.md.
//
// Thread-safety: a Cache and the Indexers it hands out are safe for
// concurrent use by multiple threads. Indexers keep the database open and
// may outlive the Cache object.

#ifndef KCACHE_CACHE_H_
#define KCACHE_CACHE_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kcache/api_resource.h"
#include "kcache/encryption.h"
#include "kcache/export.h"
#include "kcache/indexer.h"
#include "kcache/journal.h"

namespace kcache {

enum class SyncMode {
  // A commit is in RocksDB's write-ahead log (in the page cache) when it
  // returns: it survives a crash of the process, not of the machine. (A
  // relist's batches past a quarter of memtable_bytes skip the log; its
  // last batch, which makes it the keyspace's state, comes after a flush
  // of them, in either mode.)
  kNone,
  // A commit is fsynced before it returns; RocksDB groups concurrent
  // commits into one fsync (group commit).
  kEveryCommit,
};

struct KCACHE_EXPORT CacheOptions {
  // Create the directory and an empty cache if there is none. Default: true.
  bool create_if_missing = true;
  // Default: SyncMode::kNone.
  SyncMode sync = SyncMode::kNone;
  // LRU block cache shared by all keyspaces; index and filter blocks are
  // charged to it too. Default: 64 MiB.
  size_t block_cache_bytes = size_t{64} << 20;
  // Memory for memtables across all column families: the objects and
  // journal families start a new memtable at a quarter of it, the index
  // families at an eighth, the others at a sixteenth, and the oldest
  // memtables are flushed when all of them together pass it, every family
  // at once. While a full memtable is flushed, writes go on into the next.
  // Default: 64 MiB.
  size_t memtable_bytes = size_t{64} << 20;
  // Background flush and compaction threads. Default: 2 (more than the
  // machine's cores starve reads while compaction runs).
  int background_jobs = 2;
  // zstd dictionary per SST file for object blocks, trained on samples;
  // 0 turns dictionaries off. Default: 0 (see docs/benchmarks.md).
  size_t zstd_dictionary_bytes = 0;
  // A keyspace's first list, written straight into table files, compresses
  // its objects with LZ4 rather than zstd: about 3x the speed and 1.4x the
  // bytes on pods (docs/benchmarks.md). Compaction rewrites them with zstd
  // as they change, and Cache::Compact() all at once. Default: true.
  bool fast_first_list = true;
  // The wall-clock time recorded with every commit (a keyspace's last sync
  // time). Default (empty): std::chrono::system_clock::now.
  std::function<std::chrono::system_clock::time_point()> wall_clock;
  // Bounds of each keyspace's change journal (see journal.h).
  JournalOptions journal{};
  // Encryption at rest of chosen keyspaces (see encryption.h). Default:
  // no key; nothing is sealed.
  EncryptionOptions encryption{};
};

// A column a custom resource definition adds to kubectl's table
// (spec.versions[].additionalPrinterColumns).
struct KCACHE_EXPORT PrinterColumn {
  std::string name{};       // "Ready"
  std::string type{};       // "string", "integer", "number", "boolean" or "date"
  std::string format{};     // "", "name", ...
  std::string json_path{};  // ".status.ready"
  int32_t priority = 0;     // > 0: only in -o wide
  bool operator==(const PrinterColumn&) const = default;
};

// The part of a resource a keyspace holds: what its lists and watches
// asked for.
struct KCACHE_EXPORT ResourceSelection {
  std::string namespace_{};      // "": every namespace
  std::string label_selector{};  // "": every label
  std::string field_selector{};  // "": every field
  bool operator==(const ResourceSelection&) const = default;
};

// What a keyspace holds, recorded by whoever syncs it, so that offline
// readers (kcache get, tree, snapshots) know kinds, scopes, names and
// columns without a server: the resource type as discovery reported it
// (verbs aside), and what the cache adds.
struct KCACHE_EXPORT ResourceInfo : ApiResource {
  // A custom resource's table columns; empty for built-in resources (their
  // tables are kubectl's) and for definitions that declare none.
  std::vector<PrinterColumn> printer_columns{};
  bool custom = false;  // served from a CustomResourceDefinition
  // The selection the keyspace's objects were listed with; unset where not
  // recorded (by an older kcache, or by other code than InformerFactory).
  std::optional<ResourceSelection> selection{};

  ResourceInfo() = default;
  // `type`'s names and scope; its verbs are not recorded.
  explicit ResourceInfo(const ApiResource& type) : ApiResource(type) { verbs.clear(); }
  bool operator==(const ResourceInfo&) const = default;
};

// The cluster a cache mirrors, where known.
struct KCACHE_EXPORT ClusterInfo {
  std::string server{};   // "https://10.0.0.1:6443"
  std::string version{};  // the server's gitVersion, "v1.20.2"; may be empty
  // The uid of the cluster's kube-system namespace, which lives as long as
  // the cluster: what tells one cluster from another at the same address.
  // Empty where unknown (not readable, or recorded by an older kcache).
  std::string uid{};
};

// One keyspace's state, as Cache::Stats reports it.
struct KCACHE_EXPORT KeyspaceStats {
  std::string name{};
  uint64_t objects = 0;
  // Approximate bytes of the keyspace's objects and index entries in
  // RocksDB's files and memtables.
  uint64_t bytes_on_disk = 0;
  // The resume point as recorded (also while a relist is incomplete).
  std::string resource_version{};
  bool relist_in_progress = false;
  // The time of the last commit; unset if none was recorded.
  std::optional<std::chrono::system_clock::time_point> last_sync{};
  std::optional<ResourceInfo> resource{};
  // (index name, version) of the indexes recorded on disk.
  std::vector<std::pair<std::string, std::string>> indexes{};
  JournalStats journal{};
};

// The memory a cache holds, by kind: what of a process's memory the
// configured caches account for (CacheOptions::block_cache_bytes and
// memtable_bytes). Figures are RocksDB's own accounting, approximate.
struct KCACHE_EXPORT CacheMemory {
  // Blocks in the block cache, index and filter blocks included. At most
  // block_cache_bytes, unless pinned blocks need more. A snapshot: its
  // cache of decompressed blocks.
  uint64_t block_cache = 0;
  // Active and immutable memtables of every column family, those being
  // flushed included.
  uint64_t memtables = 0;
  // Table readers' memory outside the block cache.
  uint64_t table_readers = 0;
};

struct KCACHE_EXPORT KeyspaceOptions {
  // Default: MetaNamespaceKeyFunc.
  KeyFunc key_func = MetaNamespaceKeyFunc;
  // Extra indexes. Default: none.
  Indexers indexers{};
  // A version for each index in `indexers`: change it whenever the
  // function's output changes. An index whose version is missing here, or
  // differs from the one recorded on disk, is rebuilt when the keyspace is
  // opened, so an index is never silently stale. Default: none (rebuild on
  // every open).
  std::map<std::string, std::string, std::less<>> index_versions{};
  // Maintain kNamespaceIndex. Default: true.
  bool namespace_index = true;
  // Maintain kLabelIndex. Default: true.
  bool label_index = true;
};

class KCACHE_EXPORT Cache {
 public:
  // A Cache is shared (informers, their factory and listers keep it open),
  // so it is returned as a shared_ptr: the database closes with its last
  // user.
  //
  // Opens the cache in `dir`, or creates one if `dir` is absent or an empty
  // directory (a mount point included). Creation is atomic: the cache is
  // built out of sight and installed at once, so a crash leaves no cache or
  // a whole one (docs/storage-format.md, "Creating a cache"). Errors:
  // Busy if another process has it open for writing; Corruption for damaged
  // files or a missing column family; Unimplemented for a newer format
  // version; NotFound if absent and !create_if_missing; FailedPrecondition
  // if `dir` holds something other than a cache (such as a cache's files
  // without their CURRENT file), which is left untouched.
  static StatusOr<std::shared_ptr<Cache>> Open(const std::string& dir,
                                               const CacheOptions& options = {});

  // Opens `dir` for reading only, also while another process writes it
  // (a RocksDB secondary instance). Reads see the cache as of opening or
  // of the last Refresh(). Writes fail with FailedPrecondition.
  static StatusOr<std::shared_ptr<Cache>> OpenReadOnly(const std::string& dir,
                                                       const CacheOptions& options = {});

  virtual ~Cache() = default;

  // The store of one keyspace (a resource: "pods", "deployments.apps").
  // Opening a keyspace checks its recorded index versions and rebuilds
  // indexes that differ. A keyspace may be opened once per Cache.
  virtual StatusOr<std::shared_ptr<Indexer>> OpenKeyspace(std::string_view name,
                                                          KeyspaceOptions options = {}) = 0;

  // Keyspaces that hold a resume point or objects, sorted.
  virtual StatusOr<std::vector<std::string>> ListKeyspaces() const = 0;

  // Read-only caches: catch up with the writer. No-op for writable caches.
  // Expired, for good, once the cache directory was removed or replaced by
  // another cache since opening (its IDENTITY file or the directory itself
  // differs): the reader keeps its last view, and must be reopened to read
  // the new cache.
  virtual Status Refresh() = 0;

  // Flushes memtables and compacts every column family completely, so that
  // reads meet no overlapping files. Blocks until done. FailedPrecondition
  // for read-only caches.
  virtual Status Compact() = 0;

  // Blocks until the label index merges that keyspaces' first lists left
  // running have ended. A first list ingested as table files ends, and its
  // informer syncs, before its index is merged into one sorted run; until
  // then label lookups read the list's tables side by side, correct but
  // slower (docs/storage-format.md). Returns the first error of a merge
  // ended since the last call; an unmerged index stays correct. Closing
  // the cache cancels a merge under way. OK at once for read-only caches.
  virtual Status WaitForIndexMerges() = 0;

  // Records what `keyspace` holds (see ResourceInfo). A record equal to the
  // one held is not written again. FailedPrecondition for read-only caches.
  virtual Status SetResourceInfo(std::string_view keyspace, const ResourceInfo& info) = 0;
  // What `keyspace` holds as recorded; unset if nothing was recorded. One
  // point read, unlike Stats().
  virtual StatusOr<std::optional<ResourceInfo>> GetResourceInfo(
      std::string_view keyspace) const = 0;
  // Records the cluster the cache mirrors.
  virtual Status SetClusterInfo(const ClusterInfo& info) = 0;
  // Unset if none was recorded.
  virtual StatusOr<std::optional<ClusterInfo>> GetClusterInfo() const = 0;
  // NotFound for a keyspace with neither objects nor a resume point.
  virtual StatusOr<KeyspaceStats> Stats(std::string_view keyspace) const = 0;

  // The memory the cache holds now. Cheap enough to call every few
  // milliseconds.
  virtual CacheMemory Memory() const = 0;

  // Writes a consistent copy of the whole cache to `out_dir` (absent or an
  // empty directory), openable with Open(). A writable cache makes a RocksDB
  // checkpoint (hard links where the filesystem allows); a read-only one
  // copies its current view row by row, since only the writer may pin
  // files. The copy appears under `out_dir` complete or not at all.
  virtual Status Checkpoint(const std::string& out_dir) const = 0;

  // Cross-checks every keyspace: each index entry has its object and its
  // reverse entry, each object's reverse entries exist, counts match.
  // Corruption naming the first mismatch.
  virtual Status Verify() const = 0;

  // The journaled changes of `keyspace` after resourceVersion `after`, at
  // most `limit` of them (see journal.h). Expired if `after` is older than
  // the journal's window; InvalidArgument if `after` is not a decimal
  // resourceVersion. A read-only cache reads its view as of its last
  // Refresh().
  virtual StatusOr<JournalRead> ReadJournal(std::string_view keyspace, std::string_view after,
                                            size_t limit) const = 0;

  virtual const std::string& dir() const = 0;
};

}  // namespace kcache

#endif  // KCACHE_CACHE_H_
