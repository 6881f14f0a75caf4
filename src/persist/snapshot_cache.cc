// SPDX-License-Identifier: Apache-2.0

// OpenSnapshot: a snapshot file read in place as a read-only Cache. One
// verifying pass at open notes where each rows block starts and its first
// row; a read finds its block by binary search over those first rows,
// decompresses it (checking its checksum again) into a small LRU cache,
// and binary-searches the block's rows. Keyspace reads are StoredIndexer's,
// the same code that reads a RocksDB cache.

#include <fcntl.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <list>
#include <map>
#include <mutex>
#include <unordered_map>

#include "core/resource_version.h"
#include "kcache/snapshot.h"
#include "persist/db.h"
#include "persist/journal.h"
#include "persist/keyring.h"
#include "persist/rows.h"
#include "persist/snapshot_format.h"
#include "persist/stored_indexer.h"

namespace kcache {
namespace {

using storage::Family;

struct Row {
  Family family;
  std::string_view key, value;
};

// A rows block, decompressed, with its rows located.
struct Block {
  std::string raw;
  std::vector<Row> rows;  // views into raw
};

bool RowLess(Family fa, std::string_view ka, Family fb, std::string_view kb) {
  return fa != fb ? fa < fb : ka < kb;
}

// Where a rows block starts in the file, and its first row.
struct BlockRef {
  uint64_t offset;
  int number;
  Family family;
  std::string first_key;
};

class SnapshotRows final : public storage::Rows, public std::enable_shared_from_this<SnapshotRows> {
 public:
  SnapshotRows(std::string path, int fd, std::vector<BlockRef> blocks, size_t cache_bytes)
      : path_(std::move(path)), fd_(fd), blocks_(std::move(blocks)), capacity_(cache_bytes) {}
  ~SnapshotRows() override { ::close(fd_); }

  std::unique_ptr<storage::RowCursor> NewCursor(Family family, std::string limit) const override;

  StatusOr<std::optional<std::string>> Get(Family family, std::string_view key) const override {
    std::unique_ptr<storage::RowCursor> c = NewCursor(family, "");
    c->Seek(key);
    if (c->Valid() && c->key() == key) return std::optional<std::string>(std::string(c->value()));
    KCACHE_RETURN_IF_ERROR(c->status());
    return std::optional<std::string>();
  }

  // The file never changes under a reader: every view is the same.
  std::shared_ptr<const Rows> Pin() const override { return shared_from_this(); }

  std::shared_ptr<const storage::Keyring> keyring() const override { return keyring_; }
  void set_keyring(std::shared_ptr<const storage::Keyring> keyring) {
    keyring_ = std::move(keyring);
  }

  size_t blocks() const { return blocks_.size(); }
  size_t cached_bytes() const {
    std::lock_guard l(mu_);
    return cached_bytes_;
  }

  // The block that holds (family, key) if any block does: the last one
  // whose first row is not after it (0 if none).
  size_t Find(Family family, std::string_view key) const {
    auto it = std::upper_bound(blocks_.begin(), blocks_.end(), std::pair(family, key),
                               [](const std::pair<Family, std::string_view>& k, const BlockRef& b) {
                                 return RowLess(k.first, k.second, b.family, b.first_key);
                               });
    return it == blocks_.begin() ? 0 : static_cast<size_t>(it - blocks_.begin()) - 1;
  }

  // Block `i`, from the cache or from the file.
  StatusOr<std::shared_ptr<const Block>> Load(size_t i) const {
    {
      std::lock_guard l(mu_);
      if (auto it = cached_.find(i); it != cached_.end()) {
        lru_.splice(lru_.begin(), lru_, it->second.second);
        return it->second.first;
      }
    }
    // Read without the lock: other readers go on meanwhile.
    KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<const Block> block, Read(blocks_[i]));
    std::lock_guard l(mu_);
    if (auto it = cached_.find(i); it != cached_.end()) return it->second.first;
    lru_.push_front(i);
    cached_.emplace(i, std::pair(block, lru_.begin()));
    cached_bytes_ += block->raw.size();
    while (cached_bytes_ > capacity_ && lru_.size() > 1) {
      auto victim = cached_.find(lru_.back());
      cached_bytes_ -= victim->second.first->raw.size();
      cached_.erase(victim);
      lru_.pop_back();
    }
    return block;
  }

 private:
  StatusOr<std::shared_ptr<const Block>> Read(const BlockRef& ref) const {
    auto fail = [&](std::string_view what) {
      return Status::Corruption(path_ + ": block " + std::to_string(ref.number) + " at byte " +
                                std::to_string(ref.offset) + ": " + std::string(what));
    };
    auto read = [&](char* p, size_t n, uint64_t at) -> Status {
      while (n > 0) {
        ssize_t got = ::pread(fd_, p, n, static_cast<off_t>(at));
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) return Status::IOError("read " + path_ + ": " + std::strerror(errno));
        if (got == 0) return fail("the file is shorter than when it was opened");
        p += got;
        n -= static_cast<size_t>(got);
        at += static_cast<uint64_t>(got);
      }
      return Status::OK();
    };
    char header[snapshot::kBlockHeaderBytes];
    KCACHE_RETURN_IF_ERROR(read(header, sizeof(header), ref.offset));
    uint32_t stored_len, raw_len;
    if (Status st = snapshot::ParseBlockHeader(header, &stored_len, &raw_len); !st.ok())
      return fail(st.message());
    std::string stored(stored_len, '\0');
    KCACHE_RETURN_IF_ERROR(read(stored.data(), stored.size(), ref.offset + sizeof(header)));
    auto block = std::make_shared<Block>();
    snapshot::BlockType type;
    ZSTD_DCtx* dctx = ZSTD_createDCtx();
    Status st = snapshot::DecodeBlock(header, stored, dctx, &type, &block->raw);
    ZSTD_freeDCtx(dctx);
    if (!st.ok()) return fail(st.message());
    if (type != snapshot::BlockType::kRows) return fail("not the rows block it was when opened");
    snapshot::RowReader rows(block->raw);
    while (!rows.Done()) {
      Row r;
      if (st = rows.Next(&r.family, &r.key, &r.value); !st.ok()) return fail(st.message());
      block->rows.push_back(r);
    }
    if (block->rows.empty() || block->rows.front().family != ref.family ||
        block->rows.front().key != ref.first_key) {
      return fail("its rows changed since the file was opened");
    }
    return std::shared_ptr<const Block>(std::move(block));
  }

  const std::string path_;
  const int fd_;
  const std::vector<BlockRef> blocks_;  // ascending by first row
  const size_t capacity_;
  std::shared_ptr<const storage::Keyring> keyring_;  // set once, at open

  mutable std::mutex mu_;
  // Below: guarded by mu_. Most recently used first.
  mutable std::list<size_t> lru_;
  mutable std::unordered_map<size_t,
                             std::pair<std::shared_ptr<const Block>, std::list<size_t>::iterator>>
      cached_;
  mutable size_t cached_bytes_ = 0;
};

class SnapshotCursor final : public storage::RowCursor {
 public:
  SnapshotCursor(std::shared_ptr<const SnapshotRows> rows, Family family, std::string limit)
      : rows_(std::move(rows)), family_(family), limit_(std::move(limit)) {}

  void Seek(std::string_view target) override {
    status_ = Status::OK();
    block_.reset();
    if (rows_->blocks() == 0) return;
    if (!LoadBlock(rows_->Find(family_, target))) return;
    auto it = std::lower_bound(
        block_->rows.begin(), block_->rows.end(), target,
        [&](const Row& r, std::string_view t) { return RowLess(r.family, r.key, family_, t); });
    row_ = static_cast<size_t>(it - block_->rows.begin());
    Settle();
  }

  bool Valid() const override {
    if (!block_ || row_ >= block_->rows.size()) return false;
    const Row& r = block_->rows[row_];
    return r.family == family_ && (limit_.empty() || r.key < limit_);
  }

  void Next() override {
    ++row_;
    Settle();
  }

  std::string_view key() const override { return block_->rows[row_].key; }
  std::string_view value() const override { return block_->rows[row_].value; }
  Status status() const override { return status_; }

 private:
  bool LoadBlock(size_t i) {
    StatusOr<std::shared_ptr<const Block>> b = rows_->Load(i);
    if (!b.ok()) {
      status_ = b.status();
      block_.reset();
      return false;
    }
    index_ = i;
    block_ = *std::move(b);
    return true;
  }

  // Moves past the end of a block into the next one.
  void Settle() {
    while (block_ && row_ >= block_->rows.size()) {
      if (index_ + 1 >= rows_->blocks()) {
        block_.reset();
        return;
      }
      if (!LoadBlock(index_ + 1)) return;
      row_ = 0;
    }
  }

  const std::shared_ptr<const SnapshotRows> rows_;
  const Family family_;
  const std::string limit_;
  std::shared_ptr<const Block> block_;  // null: past the end
  size_t index_ = 0;                    // of block_
  size_t row_ = 0;                      // in block_
  Status status_;
};

std::unique_ptr<storage::RowCursor> SnapshotRows::NewCursor(Family family,
                                                            std::string limit) const {
  return std::make_unique<SnapshotCursor>(shared_from_this(), family, std::move(limit));
}

Status ReadOnly(const std::string& path) {
  return Status::FailedPrecondition("snapshot " + path + " is read-only");
}

class SnapshotIndexer final : public storage::StoredIndexer {
 public:
  static StatusOr<std::shared_ptr<SnapshotIndexer>> Open(std::shared_ptr<const storage::Rows> rows,
                                                         std::string ks, KeyspaceOptions options,
                                                         std::string path) {
    KCACHE_ASSIGN_OR_RETURN(Defs defs, DefsFor(options));
    std::shared_ptr<SnapshotIndexer> ix(new SnapshotIndexer(std::move(rows), std::move(ks),
                                                            std::move(options.key_func),
                                                            std::move(defs), std::move(path)));
    KCACHE_RETURN_IF_ERROR(ix->AdoptRecordedIndexes());
    return ix;
  }

  Status Add(ObjectPtr) override { return ReadOnly(path_); }
  Status Update(ObjectPtr) override { return ReadOnly(path_); }
  Status Delete(const ObjectPtr&) override { return ReadOnly(path_); }
  Status DeleteKey(std::string_view) override { return ReadOnly(path_); }
  Status Commit(const Transaction&, TransactionResult*) override { return ReadOnly(path_); }
  StatusOr<ReplaceResult> Replace(std::vector<ObjectPtr>, std::string) override {
    return ReadOnly(path_);
  }
  StatusOr<std::unique_ptr<ReplaceSession>> BeginReplace(ChangeSink) override {
    return ReadOnly(path_);
  }
  Status AddIndexers(const Indexers&) override { return ReadOnly(path_); }
  Status Resync() override { return Status::OK(); }
  StatusOr<size_t> Size() const override { return StoredCount(); }
  std::string LastSyncResourceVersion() const override { return StoredResumePoint(); }

 private:
  SnapshotIndexer(std::shared_ptr<const storage::Rows> rows, std::string ks, KeyFunc key_func,
                  Defs defs, std::string path)
      : StoredIndexer(std::move(rows), std::move(ks), std::move(key_func), std::move(defs)),
        path_(std::move(path)) {}

  const std::string path_;
};

class SnapshotCache final : public Cache {
 public:
  SnapshotCache(std::string path, SnapshotManifest manifest, std::shared_ptr<SnapshotRows> rows)
      : path_(std::move(path)), manifest_(std::move(manifest)), rows_(std::move(rows)) {}

  StatusOr<std::shared_ptr<Indexer>> OpenKeyspace(std::string_view name,
                                                  KeyspaceOptions options) override {
    KCACHE_RETURN_IF_ERROR(storage::CheckNoZero("keyspace name", name));
    if (name.empty()) return Status::InvalidArgument("keyspace name is empty");
    KCACHE_ASSIGN_OR_RETURN(
        std::shared_ptr<SnapshotIndexer> ix,
        SnapshotIndexer::Open(rows_, std::string(name), std::move(options), path_));
    return std::shared_ptr<Indexer>(std::move(ix));
  }

  StatusOr<std::vector<std::string>> ListKeyspaces() const override {
    std::vector<std::string> out;
    for (const KeyspaceStats& r : manifest_.resources) out.push_back(r.name);
    return out;
  }

  Status Refresh() override { return Status::OK(); }
  Status Compact() override { return ReadOnly(path_); }
  Status WaitForIndexMerges() override { return Status::OK(); }
  Status SetResourceInfo(std::string_view, const ResourceInfo&) override { return ReadOnly(path_); }
  Status SetClusterInfo(const ClusterInfo&) override { return ReadOnly(path_); }
  StatusOr<std::optional<ClusterInfo>> GetClusterInfo() const override { return manifest_.cluster; }
  StatusOr<std::optional<ResourceInfo>> GetResourceInfo(std::string_view keyspace) const override {
    const KeyspaceStats* r = Find(keyspace);
    return r ? r->resource : std::optional<ResourceInfo>();
  }

  CacheMemory Memory() const override { return {.block_cache = rows_->cached_bytes()}; }

  StatusOr<KeyspaceStats> Stats(std::string_view keyspace) const override {
    const KeyspaceStats* r = Find(keyspace);
    if (!r)
      return Status::NotFound("snapshot " + path_ + " has no keyspace " + std::string(keyspace));
    KeyspaceStats out = *r;
    out.journal = JournalStats{Window(*r), 0, 0};
    return out;
  }

  Status Checkpoint(const std::string& out_dir) const override {
    std::error_code ec;
    if (std::filesystem::exists(out_dir, ec))
      return Status::AlreadyExists("checkpoint " + path_ + " to " + out_dir + ": it exists");
    return ImportSnapshot(path_, out_dir).status();
  }

  Status Verify() const override { return VerifySnapshot(path_).status(); }

  // A snapshot carries no journal: its window is empty and starts at each
  // keyspace's resume point.
  StatusOr<JournalRead> ReadJournal(std::string_view keyspace, std::string_view after,
                                    size_t limit) const override {
    KCACHE_ASSIGN_OR_RETURN(const uint64_t from, storage::CheckJournalRead(keyspace, after, limit));
    const KeyspaceStats* r = Find(keyspace);
    if (!r) {
      return Status::NotFound("keyspace " + std::string(keyspace) +
                              " has no resume point: nothing was synced into it");
    }
    const std::string start = Window(*r);
    std::optional<uint64_t> s = ParseCanonicalResourceVersion(start);
    if (!s || from < *s) return storage::JournalExpired(keyspace, after, start);
    JournalRead out;
    out.resource_version = std::to_string(std::max(from, *s));
    return out;
  }

  const std::string& dir() const override { return path_; }

  std::shared_ptr<const storage::Keyring> keyring() const { return rows_->keyring(); }

 private:
  const KeyspaceStats* Find(std::string_view keyspace) const {
    for (const KeyspaceStats& r : manifest_.resources) {
      if (r.name == keyspace) return &r;
    }
    return nullptr;
  }
  // Where the (empty) journal window starts: "" while a relist was cut short.
  static std::string Window(const KeyspaceStats& r) {
    return r.relist_in_progress ? "" : r.resource_version;
  }

  const std::string path_;
  const SnapshotManifest manifest_;
  const std::shared_ptr<SnapshotRows> rows_;
};

}  // namespace

StatusOr<std::shared_ptr<Cache>> OpenSnapshot(const std::string& path,
                                              const SnapshotReadOptions& options) {
  // Blocks are read through this descriptor: a path replaced later does not
  // change what is read. (One replaced before the pass below is caught by
  // each block's checks.)
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Status::NotFound(path + ": no such file");
    return Status::IOError("open " + path + ": " + std::strerror(errno));
  }
  SnapshotManifest manifest;
  std::vector<BlockRef> blocks;
  // Per keyspace, the uncompressed bytes of its rows.
  std::map<std::string, uint64_t, std::less<>> bytes;
  uint64_t* last_bytes = nullptr;
  std::string last_ks;
  std::optional<std::string> keys;  // the keyring row, read by the pass
  Status st = snapshot::ReadAll(
      path, options.progress, &manifest,
      [&](Family family, std::string_view key, std::string_view value) -> Status {
        if (family == Family::kMeta) {
          if (key == storage::kKeysKey) keys = std::string(value);
          return Status::OK();
        }
        std::string_view ks = key.substr(0, key.find('\0'));
        if (!last_bytes || ks != last_ks) {
          last_ks.assign(ks);
          last_bytes = &bytes[last_ks];
        }
        *last_bytes += key.size() + value.size();
        return Status::OK();
      },
      [&](uint64_t offset, int number, std::string_view raw) -> Status {
        snapshot::RowReader rows(raw);
        if (rows.Done()) return Status::OK();  // no rows: nothing to find in it
        Family family;
        std::string_view key, value;
        // A malformed row is reported by the pass itself, with its place.
        if (!rows.Next(&family, &key, &value).ok()) return Status::OK();
        blocks.push_back(BlockRef{offset, number, family, std::string(key)});
        return Status::OK();
      },
      {.key_encryption_key = options.key_encryption_key});
  if (!st.ok()) {
    ::close(fd);
    return st;
  }
  // Each keyspace's share of the file, by the uncompressed size of its rows
  // (blocks mix keyspaces, so compressed sizes are not known per keyspace).
  uint64_t raw_total = 0;
  for (const auto& [ks, n] : bytes) raw_total += n;
  std::error_code ec;
  const uint64_t file_bytes = std::filesystem::file_size(path, ec);
  for (KeyspaceStats& r : manifest.resources) {
    auto b = bytes.find(r.name);
    if (b == bytes.end() || raw_total == 0 || ec) continue;
    r.bytes_on_disk =
        static_cast<uint64_t>(static_cast<long double>(file_bytes) * b->second / raw_total);
  }
  auto rows =
      std::make_shared<SnapshotRows>(path, fd, std::move(blocks), options.block_cache_bytes);
  // The keyring travels as a meta row (the pass checked it opens).
  StatusOr<std::shared_ptr<const storage::Keyring>> keyring =
      storage::Keyring::Load(keys, options.key_encryption_key);
  if (!keyring.ok()) return keyring.status().WithContext(path);
  rows->set_keyring(*std::move(keyring));
  return std::shared_ptr<Cache>(
      std::make_shared<SnapshotCache>(path, std::move(manifest), std::move(rows)));
}

// Here, where both kinds of Cache are known: a database's keyring, or the
// one a snapshot file carries.
StatusOr<EncryptionStatus> GetEncryptionStatus(const Cache& cache) {
  if (const std::shared_ptr<storage::Db>& db = storage::DbOf(cache)) {
    return db->keyring()->Describe();
  }
  if (const auto* snap = dynamic_cast<const SnapshotCache*>(&cache)) {
    return snap->keyring()->Describe();
  }
  return Status::InvalidArgument("not a cache of this library");
}

}  // namespace kcache
