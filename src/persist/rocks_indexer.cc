// SPDX-License-Identifier: Apache-2.0

#include "persist/rocks_indexer.h"

#include <rocksdb/sst_file_writer.h>
#include <rocksdb/write_batch.h>

#include <pthread.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <shared_mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "core/store_errors.h"
#include "persist/chunk_writer.h"
#include "persist/rocks_status.h"
#include "persist/sealing.h"

namespace kcache::storage {
namespace {

Status ReadOnlyError() { return Status::FailedPrecondition("the cache was opened read-only"); }

}  // namespace

RocksIndexer::RocksIndexer(std::shared_ptr<Db> db, std::string ks, KeyFunc key_func, Defs defs)
    : StoredIndexer(DbRows(db), std::move(ks), std::move(key_func), std::move(defs)),
      db_(std::move(db)),
      journal_(db_, ks_) {}

StatusOr<std::shared_ptr<RocksIndexer>> RocksIndexer::Open(std::shared_ptr<Db> db, std::string ks,
                                                           KeyspaceOptions options) {
  KCACHE_RETURN_IF_ERROR(CheckNoZero("keyspace name", ks));
  if (ks.empty()) return Status::InvalidArgument("keyspace name is empty");
  KCACHE_ASSIGN_OR_RETURN(Defs defs, DefsFor(options));
  std::shared_ptr<RocksIndexer> store(
      new RocksIndexer(std::move(db), std::move(ks), std::move(options.key_func), std::move(defs)));
  KCACHE_RETURN_IF_ERROR(store->LoadState());
  if (store->db_->read_only) {
    KCACHE_RETURN_IF_ERROR(store->AdoptRecordedIndexes());
    return store;
  }
  KCACHE_RETURN_IF_ERROR(store->PrepareSealing());
  // Compare the recorded index versions with the configured ones.
  KCACHE_ASSIGN_OR_RETURN(auto recorded, store->RecordedIndexVersions());
  bool same = recorded.size() == store->defs_.size();
  for (const auto& [name, def] : store->defs_) {
    auto r = recorded.find(name);
    same = same && r != recorded.end() && r->second == def.version && !def.version.empty();
  }
  if (!same) {
    std::lock_guard w(store->write_mu_);
    KCACHE_RETURN_IF_ERROR(store->RebuildIndexesLocked());
  }
  {
    std::lock_guard w(store->write_mu_);
    std::string rv;
    {
      std::lock_guard l(store->state_mu_);
      rv = store->rv_;
    }
    store->journal_.set_sealed(store->sealed_);
    KCACHE_RETURN_IF_ERROR(store->journal_.Load(rv));
  }
  return store;
}

Status RocksIndexer::LoadState() {
  KCACHE_ASSIGN_OR_RETURN(std::optional<std::string> rv, ReadMeta("rv"));
  KCACHE_ASSIGN_OR_RETURN(std::optional<std::string> relist, ReadMeta("relist"));
  KCACHE_ASSIGN_OR_RETURN(std::optional<std::string> count, ReadMeta("count"));
  std::lock_guard l(state_mu_);
  rv_ = rv.value_or("");
  relist_incomplete_ = relist.has_value();
  count_ = count ? std::strtoull(count->c_str(), nullptr, 10) : 0;
  return Status::OK();
}

Status RocksIndexer::PrepareSealing() {
  const EncryptionOptions& e = db_->options.encryption;
  const bool wanted = !e.key_encryption_key.empty() &&
                      std::find(e.keyspaces.begin(), e.keyspaces.end(), ks_) != e.keyspaces.end();
  std::shared_ptr<const Keyring> ring = db_->keyring();
  if (!ring->Sealed(ks_) && !wanted) return Status::OK();
  if (ring->Sealed(ks_) && !ring->unlocked()) {
    return Status::FailedPrecondition(
        "keyspace " + ks_ +
        " is encrypted at rest: writing it needs the cache's key-encryption key, or its objects "
        "would be stored in the clear");
  }
  if (!ring->Sealed(ks_)) KCACHE_RETURN_IF_ERROR(SealKeyspace(*db_, ks_));
  sealed_ = true;
  return Status::OK();
}

Status RocksIndexer::CheckWritable() const {
  return db_->read_only ? ReadOnlyError() : Status::OK();
}

StatusOr<std::vector<IndexEntry>> RocksIndexer::EntriesOf(const Defs& defs, std::string_view key,
                                                          const Object& object) {
  std::vector<IndexEntry> out;
  for (const auto& [name, def] : defs) {
    if (def.from_keys) continue;
    StatusOr<std::vector<std::string>> values = def.fn(object);
    if (!values.ok()) return IndexFuncError(key, name, values.status());
    for (std::string& v : *values) {
      KCACHE_RETURN_IF_ERROR(CheckNoZero("index value of " + std::string(key), v));
      out.emplace_back(name, std::move(v));
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

StatusOr<std::optional<std::vector<IndexEntry>>> RocksIndexer::CurrentEntries(
    const Pending& pending, const std::string& key) const {
  if (auto p = pending.find(key); p != pending.end()) return p->second;
  rocksdb::PinnableSlice record;
  rocksdb::Status s = db_->db->Get({}, db_->rindex, ObjectKey(ks_, key), &record);
  if (s.IsNotFound()) return std::optional<std::vector<IndexEntry>>();
  if (!s.ok()) return FromRocks(s, "read " + ks_);
  KCACHE_ASSIGN_OR_RETURN(std::vector<IndexEntry> entries, DecodeEntries(View(record)));
  return std::optional<std::vector<IndexEntry>>(std::move(entries));
}

StatusOr<std::string> RocksIndexer::EncodeRecord(const std::string& key,
                                                 const Object& object) const {
  if (sealed_) {
    return SealObject(*db_->keyring(), ks_, key, object.resource_version(), object.json());
  }
  return EncodeObject(object.resource_version(), object.json());
}

Status RocksIndexer::PutObject(rocksdb::WriteBatch* batch, const std::string& key,
                               const Object& object,
                               const std::optional<std::vector<IndexEntry>>& old,
                               const std::vector<IndexEntry>& now,
                               std::vector<std::string>* index_puts) const {
  // Both lists are sorted: remove what went, add what came (all of `now`
  // for a new object, without copying it).
  std::vector<IndexEntry> gone, came;
  if (old) {
    std::set_difference(old->begin(), old->end(), now.begin(), now.end(), std::back_inserter(gone));
    std::set_difference(now.begin(), now.end(), old->begin(), old->end(), std::back_inserter(came));
  }
  for (const auto& [index, value] : gone)
    batch->Delete(db_->index, IndexKey(ks_, index, value, key));
  for (const auto& [index, value] : old ? came : now) {
    if (index_puts) {
      index_puts->push_back(IndexKey(ks_, index, value, key));
    } else {
      batch->Put(db_->index, IndexKey(ks_, index, value, key), "");
    }
  }
  std::string okey = ObjectKey(ks_, key);
  if (!old || !gone.empty() || !came.empty()) batch->Put(db_->rindex, okey, EncodeEntries(now));
  if (sealed_) {
    KCACHE_ASSIGN_OR_RETURN(std::string record, EncodeRecord(key, object));
    batch->Put(db_->objects, okey, record);
    return Status::OK();
  }
  // Header and JSON go into the batch as two parts: no intermediate copy.
  std::string header = EncodeObjectHeader(object.resource_version());
  rocksdb::Slice key_part(okey);
  rocksdb::Slice value_parts[2] = {header,
                                   rocksdb::Slice(object.json().data(), object.json().size())};
  batch->Put(db_->objects, rocksdb::SliceParts(&key_part, 1), rocksdb::SliceParts(value_parts, 2));
  return Status::OK();
}

void RocksIndexer::DeleteObject(rocksdb::WriteBatch* batch, const std::string& key,
                                const std::vector<IndexEntry>& old) const {
  for (const auto& [index, value] : old)
    batch->Delete(db_->index, IndexKey(ks_, index, value, key));
  std::string okey = ObjectKey(ks_, key);
  batch->Delete(db_->rindex, okey);
  batch->Delete(db_->objects, okey);
}

Status RocksIndexer::Write(rocksdb::WriteBatch* batch, std::string_view what, bool logged,
                           const RocksReplaceSession* by) {
  if (markless_ && markless_ != by) KCACHE_RETURN_IF_ERROR(MarkRelistedKeys());
  ++writes_;
  if (!logged) {
    unflushed_unlogged_ = true;
    return FromRocks(db_->WriteUnlogged(batch), std::string(what) + " " + ks_);
  }
  if (unflushed_unlogged_) {
    KCACHE_RETURN_IF_ERROR(FromRocks(db_->FlushAll(), std::string(what) + " " + ks_));
    unflushed_unlogged_ = false;
  }
  return FromRocks(db_->Write(batch), std::string(what) + " " + ks_);
}

Status RocksIndexer::Add(ObjectPtr object) {
  Transaction txn;
  txn.Add(std::move(object));
  KCACHE_RETURN_IF_ERROR(CheckWritable());
  std::lock_guard w(write_mu_);
  return CommitLocked(txn, nullptr, /*single=*/true);
}

Status RocksIndexer::Update(ObjectPtr object) { return Add(std::move(object)); }

Status RocksIndexer::Delete(const ObjectPtr& object) {
  Transaction txn;
  txn.Delete(object);
  KCACHE_RETURN_IF_ERROR(CheckWritable());
  std::lock_guard w(write_mu_);
  return CommitLocked(txn, nullptr, /*single=*/true);
}

Status RocksIndexer::DeleteKey(std::string_view key) {
  Transaction txn;
  txn.DeleteKey(std::string(key));
  KCACHE_RETURN_IF_ERROR(CheckWritable());
  std::lock_guard w(write_mu_);
  return CommitLocked(txn, nullptr, /*single=*/true);
}

Status RocksIndexer::Commit(const Transaction& txn, TransactionResult* result) {
  KCACHE_RETURN_IF_ERROR(CheckWritable());
  std::lock_guard w(write_mu_);
  return CommitLocked(txn, result, /*single=*/false);
}

Status RocksIndexer::CommitLocked(const Transaction& txn, TransactionResult* result, bool single) {
  // What a relist beside this commit has written must be in the cache, and
  // marked, before the commit reads what is stored.
  if (markless_) KCACHE_RETURN_IF_ERROR(MarkRelistedKeys());
  Defs defs;
  {
    std::shared_lock l(defs_mu_);
    defs = defs_;
  }
  std::vector<PlannedOp> planned;
  Status first_error = PlanCommit(txn, defs, single, &planned);
  KCACHE_ASSIGN_OR_RETURN(Pending stored, ReadStoredEntries(planned));
  std::vector<size_t> done;
  KCACHE_RETURN_IF_ERROR(WriteCommit(txn, &planned, &stored, &done));
  if (result) {
    result->successful_indices.insert(result->successful_indices.end(), done.begin(), done.end());
  }
  return first_error;
}

Status RocksIndexer::PlanCommit(const Transaction& txn, const Defs& defs, bool single,
                                std::vector<PlannedOp>* planned) const {
  Status first_error;
  for (size_t i = 0; i < txn.ops.size(); ++i) {
    const Transaction::Op& op = txn.ops[i];
    auto fail = [&](const Status& st) {
      if (first_error.ok()) first_error = single ? st : st.WithContext("op " + std::to_string(i));
    };
    std::string key;
    if (op.type == Transaction::OpType::kDelete && !op.key.empty()) {
      key = op.key;
    } else if (!op.object) {
      fail(Status::InvalidArgument("null object"));
      continue;
    } else {
      StatusOr<std::string> k = key_func_(*op.object);
      if (!k.ok()) {
        fail(KeyError(*op.object, k.status()));
        continue;
      }
      key = std::move(k).value();
    }
    if (Status st = CheckNoZero("key", key); !st.ok()) {
      fail(st);
      continue;
    }
    std::vector<IndexEntry> now;
    if (op.type != Transaction::OpType::kDelete) {
      StatusOr<std::vector<IndexEntry>> e = EntriesOf(defs, key, *op.object);
      if (!e.ok()) {
        fail(e.status());
        continue;
      }
      now = std::move(e).value();
    }
    planned->push_back(PlannedOp{i, std::move(key), std::move(now)});
  }
  return first_error;
}

StatusOr<RocksIndexer::Pending> RocksIndexer::ReadStoredEntries(
    const std::vector<PlannedOp>& planned) const {
  Pending stored;
  for (const PlannedOp& p : planned) stored[p.key];
  Status read =
      MultiGetEach(*db_, db_->rindex, ks_, &stored,
                   [&](const std::string&, std::optional<std::vector<IndexEntry>>& entries,
                       const rocksdb::Status& st, const rocksdb::PinnableSlice& record) -> Status {
                     if (st.IsNotFound()) return Status::OK();
                     // A read error leaves the outcome of the batch unknown: write nothing.
                     if (!st.ok()) return FromRocks(st, "read " + ks_);
                     KCACHE_ASSIGN_OR_RETURN(entries, DecodeEntries(View(record)));
                     return Status::OK();
                   });
  if (!read.ok()) return read;
  return stored;
}

StatusOr<RocksIndexer::StoredJson> RocksIndexer::ReadStoredJson(
    const std::vector<PlannedOp>& planned, const Pending& stored) const {
  StoredJson out;
  for (const PlannedOp& p : planned) {
    auto s = stored.find(p.key);
    if (s != stored.end() && s->second) out[p.key];
  }
  const std::shared_ptr<const Keyring> keyring = db_->keyring();
  Status read =
      MultiGetEach(*db_, db_->objects, ks_, &out,
                   [&](const std::string& key, std::string& json, const rocksdb::Status& st,
                       const rocksdb::PinnableSlice& record) -> Status {
                     if (st.IsNotFound()) {
                       return Status::Corruption("keyspace " + ks_ + ": object " + key +
                                                 " has a reverse index record but no object");
                     }
                     if (!st.ok()) return FromRocks(st, "read " + ks_);
                     std::string_view rv, body;
                     std::string opened;
                     KCACHE_RETURN_IF_ERROR(
                         OpenObject(keyring.get(), ks_, key, View(record), &rv, &body, &opened));
                     json.assign(body);
                     return Status::OK();
                   });
  if (!read.ok()) return read;
  return out;
}

Status RocksIndexer::WriteCommit(const Transaction& txn, std::vector<PlannedOp>* planned,
                                 Pending* current, std::vector<size_t>* done) {
  size_t count;
  std::string rv;
  bool relisting;
  {
    std::lock_guard l(state_mu_);
    count = count_;
    rv = rv_;
    relisting = relist_incomplete_;
  }
  // The journal records each change with the object before it.
  const bool journal = journal_.enabled();
  StoredJson stored_json;
  if (journal) {
    KCACHE_ASSIGN_OR_RETURN(stored_json, ReadStoredJson(*planned, *current));
  }
  std::map<std::string_view, std::string_view> json_now;  // key: JSON after the ops so far
  auto json_before = [&](const std::string& key) -> std::string_view {
    if (auto j = json_now.find(key); j != json_now.end()) return j->second;
    auto s = stored_json.find(key);
    return s == stored_json.end() ? std::string_view() : std::string_view(s->second);
  };
  JournalWriter::Pending jp = journal_.Begin();
  // An unfinished relist changed objects the journal does not record: its
  // window cannot go on.
  if (relisting) journal_.Reset(&jp);
  const int64_t now_ms = db_->NowMs();
  using Type = JournalEvent::Type;

  // The writes, in op order; `current` follows each key through the batch.
  rocksdb::WriteBatch batch;
  std::string last_rv;
  for (PlannedOp& p : *planned) {
    const Transaction::Op& op = txn.ops[p.index];
    std::optional<std::vector<IndexEntry>>& entries = (*current)[p.key];
    if (op.type == Transaction::OpType::kDelete) {
      if (entries) {
        DeleteObject(&batch, p.key, *entries);
        --count;
        if (journal) {
          // The watch's last state of the object, else the stored one.
          std::string_view event_rv;
          if (op.object && !op.object->resource_version().empty()) {
            event_rv = op.object->resource_version();
          } else if (txn.resource_version) {
            event_rv = *txn.resource_version;
          }
          KCACHE_RETURN_IF_ERROR(journal_.Append(&jp, &batch, Type::kDeleted, p.key, event_rv,
                                                 op.object ? op.object->json() : json_before(p.key),
                                                 "", now_ms));
          json_now[p.key] = std::string_view();
        }
      }
      entries = std::nullopt;
    } else {
      KCACHE_RETURN_IF_ERROR(PutObject(&batch, p.key, *op.object, entries, p.entries));
      if (journal) {
        KCACHE_RETURN_IF_ERROR(
            journal_.Append(&jp, &batch, entries ? Type::kModified : Type::kAdded, p.key,
                            op.object->resource_version(), op.object->json(),
                            entries ? json_before(p.key) : std::string_view(), now_ms));
        json_now[p.key] = op.object->json();
      }
      if (!entries) ++count;
      entries = std::move(p.entries);
    }
    done->push_back(p.index);
    if (op.object && !op.object->resource_version().empty()) {
      last_rv = op.object->resource_version();
    }
  }
  if (txn.resource_version) {
    rv = *txn.resource_version;
  } else if (!last_rv.empty()) {
    rv = last_rv;
  }
  if (done->empty() && !txn.resource_version) return Status::OK();
  // Atomic commit: objects, index entries and the resume point in one batch.
  batch.Put(db_->meta, MetaKey("rv", ks_), rv);
  batch.Put(db_->meta, MetaKey("count", ks_), std::to_string(count));
  batch.Put(db_->meta, MetaKey("time", ks_), std::to_string(now_ms));
  KCACHE_RETURN_IF_ERROR(journal_.Seal(&jp, &batch, rv, now_ms));
  if (Status st = Write(&batch, "commit to"); !st.ok()) {
    done->clear();
    return st;
  }
  journal_.Committed(std::move(jp));
  std::lock_guard l(state_mu_);
  rv_ = rv;
  count_ = count;
  return Status::OK();
}

StatusOr<ReplaceResult> RocksIndexer::Replace(std::vector<ObjectPtr> objects,
                                              std::string resource_version) {
  KCACHE_RETURN_IF_ERROR(CheckWritable());
  {  // Keys and index entries first: a bad object fails the Replace before
     // anything is written.
    Defs defs;
    {
      std::shared_lock l(defs_mu_);
      defs = defs_;
    }
    for (const ObjectPtr& obj : objects) {
      if (!obj) return Status::InvalidArgument("Replace with a null object");
      StatusOr<std::string> key = key_func_(*obj);
      if (!key.ok()) return KeyError(*obj, key.status());
      KCACHE_RETURN_IF_ERROR(CheckNoZero("key", *key));
      KCACHE_RETURN_IF_ERROR(EntriesOf(defs, *key, *obj).status());
    }
  }
  ReplaceResult result;
  KCACHE_ASSIGN_OR_RETURN(auto session, BeginReplace([&](std::vector<StoreChange> changes) {
                            for (StoreChange& c : changes) result.changes.push_back(std::move(c));
                          }));
  for (ObjectPtr& obj : objects) KCACHE_RETURN_IF_ERROR(session->Put(std::move(obj)));
  KCACHE_ASSIGN_OR_RETURN(result.unchanged, session->Finish(std::move(resource_version)));
  return result;
}

StatusOr<bool> RocksIndexer::AnyKeyIn(rocksdb::ColumnFamilyHandle* family, const std::string& start,
                                      const std::string& limit) const {
  rocksdb::Slice upper(limit);
  rocksdb::ReadOptions ro;
  ro.iterate_upper_bound = &upper;
  std::unique_ptr<rocksdb::Iterator> it(db_->db->NewIterator(ro, family));
  it->Seek(start);
  KCACHE_RETURN_IF_ERROR(FromRocks(it->status(), "read the indexes of " + ks_));
  return it->Valid();
}

Status RocksIndexer::RebuildIndexesLocked() {
  Defs defs;
  {
    std::shared_lock l(defs_mu_);
    defs = defs_;
  }
  const auto [prefix, end] = KeyspaceRange(ks_);
  {
    // Only ranges that hold keys are deleted: a range deletion in the
    // memtable costs every later read of its family until a flush (RocksDB
    // fragments them again per read), and a new keyspace, one per type on
    // a wide first sync, holds none.
    rocksdb::WriteBatch clear;
    KeyRange versions = PrefixRange(IndexVersionKey(ks_, ""));
    for (const auto& [family, start, limit] :
         {std::tuple(db_->index, prefix, end), std::tuple(db_->rindex, prefix, end),
          std::tuple(db_->meta, versions.start, versions.limit)}) {
      KCACHE_ASSIGN_OR_RETURN(bool any, AnyKeyIn(family, start, limit));
      if (any) clear.DeleteRange(family, start, limit);
    }
    if (clear.Count() > 0) KCACHE_RETURN_IF_ERROR(Write(&clear, "clear indexes of"));
  }
  ChunkWriter rebuild([this](rocksdb::WriteBatch* b) { return Write(b, "rebuild indexes of"); });
  KCACHE_RETURN_IF_ERROR(ScanObjects([&](std::string_view key, std::string_view record) -> Status {
    KCACHE_ASSIGN_OR_RETURN(ObjectPtr obj, Decode(key, record));
    KCACHE_ASSIGN_OR_RETURN(std::vector<IndexEntry> entries, EntriesOf(defs, key, *obj));
    for (const auto& [index, value] : entries) {
      rebuild.batch()->Put(db_->index, IndexKey(ks_, index, value, key), "");
    }
    rebuild.batch()->Put(db_->rindex, ObjectKey(ks_, key), EncodeEntries(entries));
    return rebuild.Next();
  }));
  // The versions go last: a rebuild cut short is redone on the next open.
  for (const auto& [name, def] : defs) {
    rebuild.batch()->Put(db_->meta, IndexVersionKey(ks_, name), def.version);
  }
  return rebuild.Finish();
}

Status RocksIndexer::AddIndexers(const Indexers& indexers) {
  KCACHE_RETURN_IF_ERROR(CheckWritable());
  std::lock_guard w(write_mu_);
  if (markless_) KCACHE_RETURN_IF_ERROR(MarkRelistedKeys());
  Defs added;
  {
    std::shared_lock l(defs_mu_);
    std::vector<std::string> taken;
    for (const auto& [name, fn] : indexers) {
      if (defs_.count(name)) taken.push_back(name);
      KCACHE_RETURN_IF_ERROR(CheckNoZero("index name", name));
      added[name] = IndexDef{fn, ""};  // unversioned: rebuilt on the next open
    }
    KCACHE_RETURN_IF_ERROR(IndexerConflictError(taken));
  }
  // Backfill: compute every new entry before writing any, so a failing
  // function adds nothing.
  std::vector<rocksdb::WriteBatch> batches(1);
  size_t pending = 0;
  KCACHE_RETURN_IF_ERROR(ScanObjects([&](std::string_view k, std::string_view record) -> Status {
    std::string key(k);
    KCACHE_ASSIGN_OR_RETURN(ObjectPtr obj, Decode(key, record));
    KCACHE_ASSIGN_OR_RETURN(std::vector<IndexEntry> fresh, EntriesOf(added, key, *obj));
    KCACHE_ASSIGN_OR_RETURN(auto old, CurrentEntries({}, key));
    std::vector<IndexEntry> all = old ? *old : std::vector<IndexEntry>{};
    all.insert(all.end(), fresh.begin(), fresh.end());
    std::sort(all.begin(), all.end());
    for (const auto& [index, value] : fresh) {
      batches.back().Put(db_->index, IndexKey(ks_, index, value, key), "");
    }
    batches.back().Put(db_->rindex, ObjectKey(ks_, key), EncodeEntries(all));
    if (++pending == kChunk) {
      batches.emplace_back();
      pending = 0;
    }
    return Status::OK();
  }));
  for (const auto& [name, def] : added)
    batches.back().Put(db_->meta, IndexVersionKey(ks_, name), "");
  for (auto& b : batches) KCACHE_RETURN_IF_ERROR(Write(&b, "add indexes to"));
  std::unique_lock l(defs_mu_);
  for (auto& [name, def] : added) defs_.emplace(name, std::move(def));
  return Status::OK();
}

StatusOr<size_t> RocksIndexer::Size() const {
  if (db_->read_only) return StoredCount();  // the writer's mirror is not ours
  std::lock_guard l(state_mu_);
  return count_;
}

std::string RocksIndexer::LastSyncResourceVersion() const {
  if (db_->read_only) return StoredResumePoint();
  std::lock_guard l(state_mu_);
  return relist_incomplete_ ? "" : rv_;
}

}  // namespace kcache::storage
