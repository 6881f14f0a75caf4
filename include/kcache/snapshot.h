// SPDX-License-Identifier: Apache-2.0

// Snapshots: a whole cache as one portable, checksummed, zstd-compressed
// file, specified byte by byte in docs/snapshot-format.md.
//
// A snapshot carries every row of the cache (objects, index entries, resume
// points) as of one instant, and a manifest that describes them. Importing
// it gives a cache that resumes syncing from the snapshot's resume points,
// or relists with a diff when the server has forgotten them.
//
// Thread-safety: the functions are safe to call concurrently, on different
// files.

#ifndef KCACHE_SNAPSHOT_H_
#define KCACHE_SNAPSHOT_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kcache/cache.h"
#include "kcache/export.h"
#include "kcache/status_or.h"

namespace kcache {

// What a snapshot file says of itself.
struct KCACHE_EXPORT SnapshotManifest {
  int format_version = 0;  // of the file (docs/snapshot-format.md)
  int storage_format = 0;  // of the rows (docs/storage-format.md)
  std::chrono::system_clock::time_point created{};
  std::optional<ClusterInfo> cluster{};
  // One per keyspace, sorted by name; bytes_on_disk is 0 (unknown).
  std::vector<KeyspaceStats> resources{};
};

// How far an export, import or verification has got.
struct KCACHE_EXPORT SnapshotProgress {
  uint64_t objects = 0;        // object rows done
  uint64_t objects_total = 0;  // object rows in the snapshot, per its manifest
  uint64_t rows = 0;           // rows of every kind done
  uint64_t raw_bytes = 0;      // uncompressed row bytes done
  uint64_t file_bytes = 0;     // file bytes written or read
};
using SnapshotProgressFn = std::function<void(const SnapshotProgress&)>;

struct KCACHE_EXPORT ExportOptions {
  // zstd level of the blocks. Default: 1 (export runs near disk speed; level
  // 3 is about 10% smaller and half as fast).
  int zstd_level = 1;
  // Called after every block, on the exporting thread. Default: none.
  SnapshotProgressFn progress{};
  // The manifest's creation time. Default (empty): the system clock.
  std::function<std::chrono::system_clock::time_point()> wall_clock;
  // Keyspaces left out of the file entirely (objects, indexes, resume
  // point), e.g. {"secrets"}. Default: none.
  std::vector<std::string> exclude_keyspaces{};
};

struct KCACHE_EXPORT ImportOptions {
  // Options of the cache written. Default: CacheOptions{}.
  CacheOptions cache{};
  SnapshotProgressFn progress{};
};

// Writes every keyspace of `cache` to `path` as of one instant: a RocksDB
// snapshot of a writable cache, or a read-only cache's current view (call
// Refresh() first to catch up). Memory stays bounded by one block whatever
// the cache's size. The file is written beside `path` and renamed over it
// once complete and synced, with mode 0600. No file is kept whose objects
// do not match its counts: Aborted where a read-only cache's view of a
// cache being written changed as it was read (open it again and retry),
// Corruption otherwise.
KCACHE_EXPORT StatusOr<SnapshotManifest> ExportSnapshot(const Cache& cache, const std::string& path,
                                                        const ExportOptions& options = {});

// Builds a new cache in `cache_dir` (which must not exist, or be empty) from
// the snapshot at `path`, checking everything VerifySnapshot checks as it
// goes. On any error nothing is left at `cache_dir`.
KCACHE_EXPORT StatusOr<SnapshotManifest> ImportSnapshot(const std::string& path,
                                                        const std::string& cache_dir,
                                                        const ImportOptions& options = {});

struct KCACHE_EXPORT SnapshotReadOptions {
  // Decompressed rows blocks kept in memory (least recently used go
  // first). Default: 32 MiB.
  size_t block_cache_bytes = size_t{32} << 20;
  // Called after every block of the verifying pass at open.
  SnapshotProgressFn progress{};
  // The key-encryption key of a snapshot with encrypted keyspaces (see
  // VerifySnapshot). Default: none.
  std::string key_encryption_key{};
};

// Opens the snapshot at `path` as a read-only Cache, without importing it.
// Opening reads the file once, checking everything VerifySnapshot checks
// and noting where each block starts; reads then decompress only the
// blocks they touch, checking each block's checksum again, so a file
// changed since is reported as Corruption, never read as data. Memory:
// the block cache plus about 100 bytes per block.
//
// The Cache has each keyspace as the snapshot holds it: Stats() from the
// manifest (bytes_on_disk: its share of the file, by the uncompressed
// size of its rows); the
// journal is empty, so ReadJournal() answers from a keyspace's resume
// point on and Expired before it. Writes, SetResourceInfo() and Compact()
// fail with FailedPrecondition; Refresh() does nothing; Checkpoint() imports
// the file; Verify() reads it again. The Cache and its Indexers are safe
// for concurrent use. Errors: as VerifySnapshot's.
KCACHE_EXPORT StatusOr<std::shared_ptr<Cache>> OpenSnapshot(
    const std::string& path, const SnapshotReadOptions& options = {});

// Reads the whole file and checks it: the block checksums, the manifest
// against the rows (keyspaces, counts, resume points), the order of the
// rows, and that every keyspace's index entries and reverse index records
// agree. Errors: Corruption naming the block and byte offset, or the
// keyspace; Unimplemented for a newer format; NotFound; IOError.
// A snapshot of a cache with encrypted keyspaces (a keyring) is read only
// with its key-encryption key, which authenticates each sealed object:
// FailedPrecondition without it or with another (here, at OpenSnapshot and
// at ImportSnapshot, whose key is ImportOptions::cache.encryption's).
KCACHE_EXPORT StatusOr<SnapshotManifest> VerifySnapshot(const std::string& path,
                                                        SnapshotProgressFn progress = {},
                                                        const std::string& key_encryption_key = "");

// Reads only the header and manifest.
KCACHE_EXPORT StatusOr<SnapshotManifest> ReadSnapshotManifest(const std::string& path);

// True if `path` starts like a snapshot file (its magic bytes).
KCACHE_EXPORT bool LooksLikeSnapshot(const std::string& path);

}  // namespace kcache

#endif  // KCACHE_SNAPSHOT_H_
