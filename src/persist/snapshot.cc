// SPDX-License-Identifier: Apache-2.0

#include "kcache/snapshot.h"

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "persist/bulk_load.h"
#include "persist/db.h"
#include "persist/encoding.h"
#include "persist/keyspaces.h"
#include "persist/rocks_status.h"
#include "persist/snapshot_format.h"

namespace kcache {
namespace {

namespace fs = std::filesystem;
using snapshot::BlockType;
using storage::Family;

// The keyspace a row of objects, rindex or index belongs to: its key up to
// the first zero byte.
std::string_view KeyspaceOf(std::string_view key) { return key.substr(0, key.find('\0')); }

// The keyspace of any row: as KeyspaceOf, but meta keys are kind + \0 + ks
// (the index versions "index" + \0 + ks + \0 + index); "" for "cluster".
std::string_view RowKeyspace(Family family, std::string_view key) {
  if (family != Family::kMeta) return KeyspaceOf(key);
  size_t zero = key.find('\0');
  if (zero == std::string_view::npos) return {};
  std::string_view rest = key.substr(zero + 1);
  return key.substr(0, zero) == "index" ? KeyspaceOf(rest) : rest;
}

uint64_t Hash(std::string_view s) { return std::hash<std::string_view>()(s); }

// Checks rows as they stream by, in constant memory per keyspace: their
// order, that they belong to the manifest's keyspaces, that counts and
// resume points agree with the manifest, and that each keyspace's objects,
// reverse index records and index entries agree. The last is checked with
// order-independent sums of hashes (multiset hashes), since the three come
// in different orders.
class RowChecker {
 public:
  // `kek`: the key-encryption key, where given; `parse_objects`: every
  // object is parsed and its resourceVersion compared with its record's.
  RowChecker(const SnapshotManifest& m, std::string kek, bool parse_objects)
      : manifest_(m), kek_(std::move(kek)), parse_objects_(parse_objects) {
    for (const KeyspaceStats& r : m.resources) state_[r.name];
  }

  Status Add(Family family, std::string_view key, std::string_view value) {
    int f = static_cast<int>(family);
    if (f < family_ || (f == family_ && key <= last_key_)) {
      return Status::Corruption(std::string("rows out of order at a row of ") +
                                storage::FamilyName(family));
    }
    if (f != family_) family_ = f;
    last_key_.assign(key);
    if (family == Family::kMeta) return AddMeta(key, value);
    std::string_view ks = KeyspaceOf(key);
    if (ks.size() == key.size())
      return Status::Corruption("a row of " + std::string(storage::FamilyName(family)) +
                                " has no keyspace");
    auto it = state_.find(ks);
    if (it == state_.end()) {
      return Status::Corruption("rows of keyspace " + std::string(ks) +
                                ", which the manifest does not list");
    }
    State& s = it->second;
    std::string_view rest = key.substr(ks.size() + 1);
    switch (family) {
      case Family::kObjects: {
        std::string_view rv, json;
        bool sealed = false;
        if (Status st = storage::DecodeObjectRecord(value, &rv, &json, &sealed); !st.ok()) {
          return Status::Corruption("object " + std::string(ks) + " " + std::string(rest) + ": " +
                                    std::string(st.message()));
        }
        // A sealed object is authenticated (the keyring row, a meta row,
        // came first; it is required where any object is sealed).
        std::string opened;
        if (sealed || parse_objects_) {
          if (sealed && !keyring_) {
            return Status::Corruption("object " + std::string(rest) + " of " + std::string(ks) +
                                      " is sealed, and the file has no keyring");
          }
          KCACHE_RETURN_IF_ERROR(
              storage::OpenObject(keyring_.get(), ks, rest, value, &rv, &json, &opened));
        }
        if (parse_objects_) KCACHE_RETURN_IF_ERROR(CheckParses(ks, rest, rv, json));
        ++s.objects;
        s.object_keys += Hash(rest);
        break;
      }
      case Family::kReverseIndex: {
        StatusOr<std::vector<storage::IndexEntry>> entries = storage::DecodeEntries(value);
        if (!entries.ok()) {
          return Status::Corruption("reverse index record " + std::string(ks) + " " +
                                    std::string(rest) + ": " +
                                    std::string(entries.status().message()));
        }
        s.reverse_keys += Hash(rest);
        ++s.reverse_records;
        for (const auto& [index, v] : *entries) {
          std::string entry = index;
          entry.push_back('\0');
          entry += v;
          entry.push_back('\0');
          entry += rest;
          s.listed_entries += Hash(entry);
          ++s.listed_count;
        }
        break;
      }
      case Family::kIndex:
        s.index_entries += Hash(rest);
        ++s.index_count;
        break;
      case Family::kMeta:
        break;
    }
    return Status::OK();
  }

  Status Finish() const {
    for (const KeyspaceStats& r : manifest_.resources) {
      const State& s = state_.at(r.name);
      auto fail = [&](const std::string& what) {
        return Status::Corruption("keyspace " + r.name + ": " + what);
      };
      if (!s.has_rv && !s.has_count)
        return fail("the manifest lists it, the rows have no resume point or count");
      if (s.objects != r.objects) {
        return fail("the manifest says " + std::to_string(r.objects) + " objects, the file has " +
                    std::to_string(s.objects));
      }
      if (s.count != s.objects) {
        return fail("its count record says " + std::to_string(s.count) + " objects, the file has " +
                    std::to_string(s.objects));
      }
      if (s.rv != r.resource_version)
        return fail("the manifest's resume point differs from the rows'");
      if (s.reverse_records != s.objects || s.reverse_keys != s.object_keys) {
        return fail("objects and reverse index records do not match");
      }
      if (s.index_count != s.listed_count || s.index_entries != s.listed_entries) {
        return fail("index entries do not match the reverse index records (" +
                    std::to_string(s.index_count) + " entries, " + std::to_string(s.listed_count) +
                    " listed)");
      }
    }
    return Status::OK();
  }

 private:
  struct State {
    bool has_rv = false, has_count = false;
    std::string rv;
    uint64_t count = 0, objects = 0, reverse_records = 0, index_count = 0, listed_count = 0;
    uint64_t object_keys = 0, reverse_keys = 0, index_entries = 0, listed_entries = 0;
  };

  static Status CheckParses(std::string_view ks, std::string_view key, std::string_view rv,
                            std::string_view json) {
    const std::string what = "object " + std::string(key) + " of " + std::string(ks);
    StatusOr<ObjectPtr> obj = Object::Parse(std::string(json));
    if (!obj.ok()) return Status::Corruption(what + ": " + std::string(obj.status().message()));
    if ((*obj)->resource_version() != rv) {
      return Status::Corruption(what + ": its resourceVersion is \"" + (*obj)->resource_version() +
                                "\", its record's \"" + std::string(rv) + "\"");
    }
    return Status::OK();
  }

  Status AddMeta(std::string_view key, std::string_view value) {
    if (key == storage::kKeysKey) {
      if (kek_.empty()) {
        return Status::FailedPrecondition(
            "it holds objects encrypted at rest, and no key-encryption key was given");
      }
      std::optional<std::string> row{std::string(value)};
      KCACHE_ASSIGN_OR_RETURN(keyring_, storage::Keyring::Load(row, kek_));
      return Status::OK();
    }
    size_t zero = key.find('\0');
    if (zero == std::string_view::npos) return Status::OK();  // "cluster"
    std::string_view kind = key.substr(0, zero), ks = key.substr(zero + 1);
    if (kind != "rv" && kind != "count") return Status::OK();
    auto it = state_.find(ks);
    if (it == state_.end()) {
      return Status::Corruption("a " + std::string(kind) + " record of keyspace " +
                                std::string(ks) + ", which the manifest does not list");
    }
    if (kind == "rv") {
      it->second.has_rv = true;
      it->second.rv = value;
    } else {
      it->second.has_count = true;
      it->second.count = std::strtoull(std::string(value).c_str(), nullptr, 10);
    }
    return Status::OK();
  }

  const SnapshotManifest& manifest_;
  const std::string kek_;
  const bool parse_objects_;
  std::shared_ptr<const storage::Keyring> keyring_;  // once its row is read
  std::map<std::string, State, std::less<>> state_;
  int family_ = 0;
  std::string last_key_;
};

}  // namespace

namespace snapshot {

Status ReadAll(const std::string& path, const SnapshotProgressFn& progress,
               SnapshotManifest* manifest, const RowFn& row, const BlockFn& block,
               const ReadAllOptions& options) {
  KCACHE_ASSIGN_OR_RETURN(std::unique_ptr<snapshot::FileReader> reader,
                          snapshot::FileReader::Open(path));
  BlockType type;
  std::string_view raw;
  KCACHE_RETURN_IF_ERROR(reader->Next(&type, &raw));
  if (type != BlockType::kManifest)
    return Status::Corruption(path + ": the first block is not the manifest");
  StatusOr<SnapshotManifest> m = snapshot::DecodeManifest(raw);
  if (!m.ok()) return Status::Corruption(path + ": " + std::string(m.status().message()));
  if (m->format_version != reader->version()) {
    return Status::Corruption(path + ": the manifest says formatVersion " +
                              std::to_string(m->format_version) + ", the file header " +
                              std::to_string(reader->version()));
  }
  if (m->storage_format < 1 || m->storage_format > storage::kFormatVersion) {
    return Status::Unimplemented(path + ": its rows are in storage format " +
                                 std::to_string(m->storage_format) + ", this kcache reads 1 to " +
                                 std::to_string(storage::kFormatVersion));
  }
  *manifest = *std::move(m);
  if (!row) return Status::OK();

  RowChecker checker(*manifest, options.key_encryption_key, options.parse_objects);
  SnapshotProgress p;
  for (const KeyspaceStats& r : manifest->resources) p.objects_total += r.objects;
  for (;;) {
    uint64_t at = reader->offset();
    KCACHE_RETURN_IF_ERROR(reader->Next(&type, &raw));
    const std::string where =
        path + ": block " + std::to_string(reader->block() - 1) + " at byte " + std::to_string(at);
    if (type == BlockType::kManifest) return Status::Corruption(where + ": a second manifest");
    if (type == BlockType::kEnd) {
      nlohmann::json end = nlohmann::json::parse(raw, nullptr, false);
      if (!end.is_object() || end.value("rows", uint64_t{0}) != p.rows ||
          end.value("blocks", uint64_t{0}) != static_cast<uint64_t>(reader->block() - 1)) {
        return Status::Corruption(where + ": the end block's totals do not match the file");
      }
      if (!reader->AtEnd()) return Status::Corruption(path + ": bytes follow the end block");
      break;
    }
    if (block) KCACHE_RETURN_IF_ERROR(block(at, reader->block() - 1, raw));
    RowReader rows(raw);
    while (!rows.Done()) {
      Family family;
      std::string_view key, value;
      if (Status st = rows.Next(&family, &key, &value); !st.ok())
        return Status::Corruption(where + ": " + std::string(st.message()));
      if (Status st = checker.Add(family, key, value); !st.ok()) {
        // A missing or wrong key is told apart from damage.
        if (st.code() == StatusCode::kFailedPrecondition) return st.WithContext(path);
        return Status::Corruption(where + ": " + std::string(st.message()));
      }
      if (Status st = row(family, key, value); !st.ok()) {
        if (st.code() != StatusCode::kCorruption) return st;
        return Status::Corruption(where + ": " + std::string(st.message()));
      }
      ++p.rows;
      if (family == Family::kObjects) ++p.objects;
    }
    p.raw_bytes += raw.size();
    p.file_bytes = reader->offset();
    if (progress) progress(p);
  }
  if (Status st = checker.Finish(); !st.ok())
    return Status::Corruption(path + ": " + std::string(st.message()));
  return Status::OK();
}

}  // namespace snapshot

using snapshot::ReadAll;

namespace {

using Excluded = std::set<std::string, std::less<>>;

// The manifest of an export of `db` at `snap`: its cluster, and the counts
// and resume points of the keyspaces not `excluded`; `with_keyring` says
// whether the keyring goes with the rows (it does where a keyspace they
// hold is sealed, or being sealed: it lists none yet, and makes them
// format 3).
StatusOr<SnapshotManifest> ManifestOf(const storage::Db& db, const rocksdb::Snapshot* snap,
                                      const ExportOptions& options, const Excluded& excluded,
                                      bool* with_keyring) {
  SnapshotManifest m;
  m.format_version = snapshot::kFormatVersion;
  m.storage_format = storage::kRowsFormatVersion;
  m.created = options.wall_clock ? options.wall_clock() : std::chrono::system_clock::now();
  rocksdb::ReadOptions ro;
  ro.snapshot = snap;
  std::string value;
  rocksdb::Status s = db.db->Get(ro, db.meta, storage::kClusterKey, &value);
  if (s.ok()) {
    KCACHE_ASSIGN_OR_RETURN(ClusterInfo c, storage::DecodeClusterInfo(value));
    m.cluster = std::move(c);
  } else if (!s.IsNotFound()) {
    return storage::FromRocks(s, "read the cluster of " + db.dir);
  }
  KCACHE_ASSIGN_OR_RETURN(std::vector<std::string> keyspaces, storage::ListKeyspaces(db, snap));
  for (const std::string& ks : keyspaces) {
    if (excluded.count(ks)) continue;
    KCACHE_ASSIGN_OR_RETURN(KeyspaceStats r, storage::ReadKeyspaceMeta(db, snap, ks));
    m.resources.push_back(std::move(r));
  }
  *with_keyring = false;
  s = db.db->Get(ro, db.meta, storage::kKeysKey, &value);
  if (!s.ok() && !s.IsNotFound()) return storage::FromRocks(s, "read the keyring of " + db.dir);
  if (s.ok()) {
    KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<const storage::Keyring> ring,
                            storage::Keyring::Load(value, ""));
    const EncryptionStatus e = ring->Describe();
    *with_keyring = e.keyspaces.empty();
    for (const std::string& ks : e.keyspaces) {
      for (const KeyspaceStats& r : m.resources) *with_keyring = *with_keyring || r.name == ks;
    }
  }
  if (*with_keyring) m.storage_format = storage::kSealedRowsFormatVersion;
  return m;
}

// Writes the rows of `m`'s keyspaces at `snap` to `out` in blocks, and
// checks each keyspace's objects against the manifest's count.
Status WriteRows(const storage::Db& db, const rocksdb::Snapshot* snap, const SnapshotManifest& m,
                 bool with_keyring, const Excluded& excluded, const ExportOptions& options,
                 snapshot::FileWriter& out, SnapshotProgress* p, uint64_t* blocks) {
  std::string block;
  auto flush = [&]() -> Status {
    KCACHE_RETURN_IF_ERROR(out.WriteBlock(BlockType::kRows, block));
    ++*blocks;
    p->raw_bytes += block.size();
    p->file_bytes = out.bytes();
    block.clear();
    if (options.progress) options.progress(*p);
    return Status::OK();
  };
  // Objects written per keyspace, to be checked against the manifest's
  // counts before the file is kept.
  std::map<std::string, uint64_t, std::less<>> written;
  for (const KeyspaceStats& r : m.resources) written[r.name] = 0;
  rocksdb::ReadOptions ro;
  ro.snapshot = snap;
  ro.fill_cache = false;  // one pass over everything: keep the block cache for queries
  ro.readahead_size = size_t{2} << 20;
  std::vector<rocksdb::ColumnFamilyHandle*> families = storage::RowFamilies(db);
  for (int f = 0; f < storage::kFamilies; ++f) {
    std::unique_ptr<rocksdb::Iterator> it(db.db->NewIterator(ro, families[f]));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      const Family family = static_cast<Family>(f);
      const std::string_view key = storage::View(it->key());
      if (family == Family::kMeta && key == storage::kFormatKey) continue;
      if (family == Family::kMeta && !with_keyring && key == storage::kKeysKey) continue;
      if (!excluded.empty() && excluded.count(RowKeyspace(family, key))) continue;
      auto count = written.find(KeyspaceOf(key));
      if (family != Family::kMeta && count == written.end()) {
        // A file its own verify would refuse is never written.
        return Status::Corruption("export " + db.dir + ": keyspace " +
                                  std::string(KeyspaceOf(key)) + " has " +
                                  storage::FamilyName(family) +
                                  " rows but no count or resume point (kcache verify says more)");
      }
      snapshot::AppendRow(&block, family, key, storage::View(it->value()));
      ++p->rows;
      if (family == Family::kObjects) {
        ++p->objects;
        ++count->second;
      }
      if (block.size() >= snapshot::kBlockTarget) KCACHE_RETURN_IF_ERROR(flush());
    }
    KCACHE_RETURN_IF_ERROR(storage::FromRocks(it->status(), "read " + db.dir));
  }
  for (const KeyspaceStats& r : m.resources) {
    const uint64_t n = written.find(r.name)->second;
    if (n == r.objects) continue;
    const std::string what = "export " + db.dir + ": keyspace " + r.name + " counts " +
                             std::to_string(r.objects) + " objects, and " + std::to_string(n) +
                             " were read";
    // A writer's cache is read through one RocksDB snapshot: a mismatch is
    // damage. A reader's view can still lack commits of a log its writer
    // deleted as it caught up (Db::CatchUp narrows that to two flushes
    // within one catch-up): a view opened again is whole.
    if (db.read_only)
      return Status::Aborted(
          what + ": the view of a cache being written changed while it was read; read it again");
    return Status::Corruption(what);
  }
  if (!block.empty()) KCACHE_RETURN_IF_ERROR(flush());
  return Status::OK();
}

}  // namespace

StatusOr<SnapshotManifest> ExportSnapshot(const Cache& cache, const std::string& path,
                                          const ExportOptions& options) {
  if (!storage::DbOf(cache)) {
    return Status::FailedPrecondition(cache.dir() +
                                      " is a snapshot file already: copy the file instead");
  }
  const storage::Db& db = *storage::DbOf(cache);
  // A writable cache is read through a RocksDB snapshot; a reader's view
  // changes only on Refresh(), and secondary instances have no snapshots.
  storage::DbSnapshot snapshot_view = storage::TakeSnapshot(storage::DbOf(cache));
  const rocksdb::Snapshot* snap = snapshot_view.get();
  const Excluded excluded(options.exclude_keyspaces.begin(), options.exclude_keyspaces.end());
  bool with_keyring = false;
  KCACHE_ASSIGN_OR_RETURN(SnapshotManifest m,
                          ManifestOf(db, snap, options, excluded, &with_keyring));
  SnapshotProgress p;
  for (const KeyspaceStats& r : m.resources) p.objects_total += r.objects;

  // Written in a working directory beside `path`, renamed over it once
  // complete.
  KCACHE_ASSIGN_OR_RETURN(std::unique_ptr<storage::WorkDir> work,
                          storage::WorkDir::Beside(path, "partial"));
  const std::string tmp = work->path() + "/snapshot";
  KCACHE_ASSIGN_OR_RETURN(std::unique_ptr<snapshot::FileWriter> out,
                          snapshot::FileWriter::Create(tmp, options.zstd_level));
  KCACHE_RETURN_IF_ERROR(out->WriteBlock(BlockType::kManifest, snapshot::EncodeManifest(m)));
  uint64_t blocks = 1;
  KCACHE_RETURN_IF_ERROR(
      WriteRows(db, snap, m, with_keyring, excluded, options, *out, &p, &blocks));
  nlohmann::json end = {{"blocks", blocks}, {"rows", p.rows}, {"rawBytes", p.raw_bytes}};
  KCACHE_RETURN_IF_ERROR(out->WriteBlock(BlockType::kEnd, end.dump()));
  KCACHE_RETURN_IF_ERROR(out->Close());
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return Status::IOError("rename " + tmp + " to " + path + ": " + ec.message());
  return m;
}

StatusOr<SnapshotManifest> ImportSnapshot(const std::string& path, const std::string& cache_dir,
                                          const ImportOptions& options) {
  SnapshotManifest m;
  // Read the manifest before creating anything: a file that is no snapshot
  // at all leaves no trace.
  KCACHE_RETURN_IF_ERROR(ReadAll(path, {}, &m, {}));
  KCACHE_ASSIGN_OR_RETURN(std::unique_ptr<storage::BulkLoader> loader,
                          storage::BulkLoader::Create(cache_dir, options.cache));
  KCACHE_RETURN_IF_ERROR(ReadAll(
      path, options.progress, &m,
      [&](Family f, std::string_view k, std::string_view v) { return loader->Add(f, k, v); }, {},
      {.key_encryption_key = options.cache.encryption.key_encryption_key}));
  KCACHE_RETURN_IF_ERROR(loader->Finish());
  return m;
}

StatusOr<SnapshotManifest> VerifySnapshot(const std::string& path, SnapshotProgressFn progress,
                                          const std::string& key_encryption_key) {
  SnapshotManifest m;
  // Beyond what every read checks: each object is parsed, and its
  // resourceVersion is the one its record carries. (Whether a key is the
  // object's namespace/name depends on the application's key function,
  // which the file does not record.)
  KCACHE_RETURN_IF_ERROR(ReadAll(
      path, progress, &m, [](Family, std::string_view, std::string_view) { return Status::OK(); },
      {}, {.key_encryption_key = key_encryption_key, .parse_objects = true}));
  return m;
}

StatusOr<SnapshotManifest> ReadSnapshotManifest(const std::string& path) {
  SnapshotManifest m;
  KCACHE_RETURN_IF_ERROR(ReadAll(path, {}, &m, {}));
  return m;
}

bool LooksLikeSnapshot(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[8];
  return in.read(magic, sizeof(magic)) && std::memcmp(magic, snapshot::kMagic, sizeof(magic)) == 0;
}

}  // namespace kcache
