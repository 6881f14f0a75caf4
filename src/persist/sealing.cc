// SPDX-License-Identifier: Apache-2.0

#include "persist/sealing.h"

#include <rocksdb/write_batch.h>

#include "crypto/aead.h"
#include "persist/encoding.h"
#include "persist/rocks_status.h"

namespace kcache::storage {
namespace {

constexpr size_t kBatchBytes = size_t{4} << 20;

// Records `ring` (and the format version that has keyrings) in one write.
Status WriteKeyring(Db& db, std::shared_ptr<const Keyring> ring) {
  rocksdb::WriteBatch batch;
  batch.Put(db.meta, kKeysKey, ring->Encode());
  batch.Put(db.meta, kFormatKey, std::to_string(kFormatVersion));
  KCACHE_RETURN_IF_ERROR(FromRocks(db.Write(&batch), "write the keyring of " + db.dir));
  db.set_keyring(std::move(ring));
  return Status::OK();
}

// Rewrites every record of `ks` that is not sealed with `ring`'s current
// data key, and drops the keyspace's journal.
Status Reseal(Db& db, const Keyring& ring, const std::string& ks) {
  const KeyRange range = KeyspaceRange(ks);
  rocksdb::ReadOptions ro;
  rocksdb::Slice upper(range.limit);
  ro.iterate_upper_bound = &upper;
  ro.fill_cache = false;
  // The iterator reads one state of the keyspace (its implicit snapshot);
  // the caller keeps other writers away.
  std::unique_ptr<rocksdb::Iterator> it(db.db->NewIterator(ro, db.objects));
  rocksdb::WriteBatch batch;
  auto flush = [&]() -> Status {
    KCACHE_RETURN_IF_ERROR(FromRocks(db.Write(&batch), "seal keyspace " + ks));
    batch.Clear();
    return Status::OK();
  };
  for (it->Seek(range.start); it->Valid(); it->Next()) {
    std::string_view okey = View(it->key());
    std::string_view key = okey.substr(range.start.size());
    std::string_view rv, body;
    bool sealed = false;
    KCACHE_RETURN_IF_ERROR(DecodeObjectRecord(View(it->value()), &rv, &body, &sealed)
                               .WithContext("keyspace " + ks + ", object " + std::string(key)));
    if (sealed) {
      StatusOr<uint32_t> id = crypto::SealedKeyId(body);
      if (id.ok() && *id == ring.current()) continue;
    }
    std::string_view json;
    std::string opened;
    KCACHE_RETURN_IF_ERROR(OpenObject(&ring, ks, key, View(it->value()), &rv, &json, &opened));
    KCACHE_ASSIGN_OR_RETURN(std::string record, SealObject(ring, ks, key, rv, json));
    batch.Put(db.objects, it->key(), record);
    if (batch.GetDataSize() >= kBatchBytes) KCACHE_RETURN_IF_ERROR(flush());
  }
  KCACHE_RETURN_IF_ERROR(FromRocks(it->status(), "seal keyspace " + ks));
  if (db.journal) batch.DeleteRange(db.journal, range.start, range.limit);
  return flush();
}

// Flushes and compacts the keyspace's objects and journal, so that the
// versions a reseal replaced leave the live files.
Status Purge(Db& db, const std::string& ks) {
  KCACHE_RETURN_IF_ERROR(FromRocks(db.FlushAll(), "flush " + db.dir));
  const KeyRange range = KeyspaceRange(ks);
  rocksdb::Slice begin(range.start), end(range.limit);
  rocksdb::CompactRangeOptions o;
  o.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
  for (rocksdb::ColumnFamilyHandle* family : {db.objects, db.journal}) {
    if (!family) continue;
    KCACHE_RETURN_IF_ERROR(
        FromRocks(db.db->CompactRange(o, family, &begin, &end), "compact keyspace " + ks));
  }
  return Status::OK();
}

}  // namespace

Status SealKeyspace(Db& db, const std::string& ks) {
  std::lock_guard l(db.keyring_update_mu);
  std::shared_ptr<const Keyring> ring = db.keyring();
  if (ring->Sealed(ks)) return Status::OK();
  if (ring->empty()) {
    KCACHE_ASSIGN_OR_RETURN(ring, ring->WithDataKey());
    KCACHE_RETURN_IF_ERROR(WriteKeyring(db, ring));
  }
  KCACHE_RETURN_IF_ERROR(Reseal(db, *ring, ks));
  KCACHE_RETURN_IF_ERROR(WriteKeyring(db, ring->WithKeyspace(ks)));
  return Purge(db, ks);
}

Status RekeyDb(Db& db, const std::string& new_kek) {
  if (db.read_only) return Status::FailedPrecondition("rekey: the cache was opened read-only");
  std::lock_guard l(db.keyring_update_mu);
  std::shared_ptr<const Keyring> ring = db.keyring();
  if (ring->empty()) {
    return Status::FailedPrecondition("rekey: " + db.dir +
                                      " has no keyring: none of its keyspaces is encrypted");
  }
  if (!ring->unlocked()) {
    return Status::FailedPrecondition("rekey: " + db.dir +
                                      " is encrypted, and no key-encryption key was given");
  }
  if (!new_kek.empty()) {
    KCACHE_ASSIGN_OR_RETURN(ring, ring->Rewrapped(new_kek));
    KCACHE_RETURN_IF_ERROR(WriteKeyring(db, ring));
  }
  KCACHE_ASSIGN_OR_RETURN(ring, ring->WithDataKey());
  KCACHE_RETURN_IF_ERROR(WriteKeyring(db, ring));
  const EncryptionStatus described = ring->Describe();
  for (const std::string& ks : described.keyspaces) {
    KCACHE_RETURN_IF_ERROR(Reseal(db, *ring, ks));
  }
  KCACHE_RETURN_IF_ERROR(WriteKeyring(db, ring->OnlyCurrent()));
  for (const std::string& ks : described.keyspaces) KCACHE_RETURN_IF_ERROR(Purge(db, ks));
  return Status::OK();
}

}  // namespace kcache::storage
