// SPDX-License-Identifier: Apache-2.0

#include "persist/keyspaces.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

#include "persist/encoding.h"
#include "persist/journal.h"
#include "persist/rocks_status.h"

namespace kcache::storage {

StatusOr<std::vector<std::string>> ListKeyspaces(const Db& db, const rocksdb::Snapshot* snapshot) {
  std::set<std::string> names;
  rocksdb::ReadOptions ro;
  ro.snapshot = snapshot;
  std::unique_ptr<rocksdb::Iterator> it(db.db->NewIterator(ro, db.meta));
  for (const char* kind : {"rv", "count"}) {
    std::string prefix = MetaKey(kind, "");
    for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
      names.insert(it->key().ToString().substr(prefix.size()));
    }
  }
  KCACHE_RETURN_IF_ERROR(FromRocks(it->status(), "list keyspaces of " + db.dir));
  return std::vector<std::string>(names.begin(), names.end());
}

StatusOr<KeyspaceStats> ReadKeyspaceMeta(const Db& db, const rocksdb::Snapshot* snapshot,
                                         std::string_view ks) {
  rocksdb::ReadOptions ro;
  ro.snapshot = snapshot;
  KeyspaceStats out;
  out.name = ks;
  auto get = [&](std::string_view kind, std::string* value) -> StatusOr<bool> {
    rocksdb::Status s = db.db->Get(ro, db.meta, MetaKey(kind, ks), value);
    if (s.IsNotFound()) return false;
    KCACHE_RETURN_IF_ERROR(FromRocks(s, "read " + std::string(kind) + " of " + std::string(ks)));
    return true;
  };
  std::string value;
  KCACHE_ASSIGN_OR_RETURN(bool has, get("count", &value));
  if (has) out.objects = std::strtoull(value.c_str(), nullptr, 10);
  KCACHE_ASSIGN_OR_RETURN(has, get("rv", &value));
  if (has) out.resource_version = value;
  KCACHE_ASSIGN_OR_RETURN(out.relist_in_progress, get("relist", &value));
  KCACHE_ASSIGN_OR_RETURN(has, get("time", &value));
  if (has) {
    out.last_sync = std::chrono::system_clock::time_point(
        std::chrono::milliseconds(std::strtoll(value.c_str(), nullptr, 10)));
  }
  KCACHE_ASSIGN_OR_RETURN(has, get("resource", &value));
  if (has) {
    KCACHE_ASSIGN_OR_RETURN(out.resource, DecodeResourceInfo(value));
  }
  std::string prefix = IndexVersionKey(ks, "");
  std::unique_ptr<rocksdb::Iterator> it(db.db->NewIterator(ro, db.meta));
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    out.indexes.emplace_back(it->key().ToString().substr(prefix.size()), it->value().ToString());
  }
  KCACHE_RETURN_IF_ERROR(FromRocks(it->status(), "read indexes of " + std::string(ks)));
  KCACHE_ASSIGN_OR_RETURN(out.journal, ReadJournalStats(db, snapshot, ks, out.resource_version));
  return out;
}

Status VerifyRowsHaveKeyspaces(const std::shared_ptr<Db>& db_ptr) {
  const Db& db = *db_ptr;
  DbSnapshot snap = TakeSnapshot(db_ptr);
  rocksdb::ReadOptions ro;
  ro.snapshot = snap.get();
  // A keyspace has metadata from its first write on: a relist's mark, then
  // its count with every chunk, then its resume point.
  std::set<std::string, std::less<>> known;
  {
    std::unique_ptr<rocksdb::Iterator> it(db.db->NewIterator(ro, db.meta));
    for (const char* kind : {"rv", "count", "relist"}) {
      const std::string prefix = MetaKey(kind, "");
      for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
        known.insert(it->key().ToString().substr(prefix.size()));
      }
    }
    KCACHE_RETURN_IF_ERROR(FromRocks(it->status(), "read the keyspaces of " + db.dir));
  }
  const std::pair<rocksdb::ColumnFamilyHandle*, const char*> families[] = {
      {db.objects, "object"}, {db.rindex, "reverse index"}, {db.index, "index"}};
  for (const auto& [family, what] : families) {
    std::unique_ptr<rocksdb::Iterator> it(db.db->NewIterator(ro, family));
    // One seek per keyspace: past each known one's rows to the next row.
    for (it->SeekToFirst(); it->Valid();) {
      const std::string_view key = View(it->key());
      const std::string_view ks = key.substr(0, key.find('\0'));
      if (!known.count(ks)) {
        return Status::Corruption(
            "keyspace " + std::string(ks) + " has " + what +
            " rows (the first: " + std::string(key.substr(std::min(key.size(), ks.size() + 1))) +
            ") but no metadata (no count, resume point or relist mark): rows left by a damaged "
            "or cut MANIFEST, or written behind kcache's back");
      }
      it->Seek(KeyspaceRange(ks).limit);
    }
    KCACHE_RETURN_IF_ERROR(FromRocks(it->status(), "read " + db.dir));
  }
  return Status::OK();
}

Status VerifyKeyspace(const std::shared_ptr<Db>& db_ptr, std::string_view ks) {
  const Db& db = *db_ptr;
  const auto [prefix, end] = KeyspaceRange(ks);
  rocksdb::ReadOptions ro;
  DbSnapshot snap = TakeSnapshot(db_ptr);
  ro.snapshot = snap.get();
  auto fail = [&](const std::string& what) {
    return Status::Corruption("keyspace " + std::string(ks) + ": " + what);
  };
  rocksdb::Slice upper(end);
  ro.iterate_upper_bound = &upper;

  // Reverse records: one per object, listing exactly the forward entries.
  std::map<std::string, std::vector<IndexEntry>> reverse;
  std::unique_ptr<rocksdb::Iterator> r(db.db->NewIterator(ro, db.rindex));
  for (r->Seek(prefix); r->Valid(); r->Next()) {
    std::string key = r->key().ToString().substr(prefix.size());
    auto entries = DecodeEntries(std::string_view(r->value().data(), r->value().size()));
    if (!entries.ok())
      return fail("reverse record of " + key + ": " + std::string(entries.status().message()));
    reverse.emplace(std::move(key), std::move(entries).value());
  }
  if (!r->status().ok()) return FromRocks(r->status(), "verify");

  size_t objects = 0;
  const std::shared_ptr<const Keyring> keyring = db.keyring();
  std::unique_ptr<rocksdb::Iterator> o(db.db->NewIterator(ro, db.objects));
  for (o->Seek(prefix); o->Valid(); o->Next()) {
    std::string key = o->key().ToString().substr(prefix.size());
    std::string_view rv, json;
    bool sealed = false;
    std::string opened;
    Status st = DecodeObjectRecord(View(o->value()), &rv, &json, &sealed);
    // A sealed object is checked whole (authenticated) where the key was
    // given; without it, its record's layout only.
    if (st.ok() && sealed && keyring->unlocked()) {
      st = OpenObject(keyring.get(), ks, key, View(o->value()), &rv, &json, &opened);
    }
    if (!st.ok()) return fail("object " + key + ": " + std::string(st.message()));
    if (!reverse.count(key)) return fail("object " + key + " has no reverse index record");
    ++objects;
  }
  if (!o->status().ok()) return FromRocks(o->status(), "verify");
  if (reverse.size() != objects) return fail("a reverse index record has no object");

  size_t forward = 0, listed = 0;
  for (const auto& [key, entries] : reverse) listed += entries.size();
  std::unique_ptr<rocksdb::Iterator> f(db.db->NewIterator(ro, db.index));
  for (f->Seek(prefix); f->Valid(); f->Next()) {
    std::string_view k(f->key().data(), f->key().size());
    k.remove_prefix(prefix.size());
    size_t a = k.find('\0');
    size_t b = a == std::string_view::npos ? a : k.find('\0', a + 1);
    if (b == std::string_view::npos) return fail("malformed index key");
    std::string index(k.substr(0, a)), value(k.substr(a + 1, b - a - 1)), key(k.substr(b + 1));
    auto it = reverse.find(key);
    if (it == reverse.end())
      return fail("index entry " + index + "=" + value + " for missing object " + key);
    if (!std::binary_search(it->second.begin(), it->second.end(), IndexEntry{index, value})) {
      return fail("index entry " + index + "=" + value + " of " + key +
                  " is not in its reverse record");
    }
    ++forward;
  }
  if (!f->status().ok()) return FromRocks(f->status(), "verify");
  if (forward != listed) return fail("reverse records list entries missing from the index");

  std::string count;
  rocksdb::Status s = db.db->Get(ro, db.meta, MetaKey("count", ks), &count);
  size_t recorded = s.ok() ? std::strtoull(count.c_str(), nullptr, 10) : 0;
  if (!s.ok() && !s.IsNotFound()) return FromRocks(s, "verify");
  if (recorded != objects) {
    return fail("count says " + std::to_string(recorded) + " objects, found " +
                std::to_string(objects));
  }
  std::string rv;
  s = db.db->Get(ro, db.meta, MetaKey("rv", ks), &rv);
  if (!s.ok() && !s.IsNotFound()) return FromRocks(s, "verify");
  return VerifyJournal(db, snap.get(), ks, rv);
}

}  // namespace kcache::storage
