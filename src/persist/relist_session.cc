// SPDX-License-Identifier: Apache-2.0

// A keyspace's relist (Store::BeginReplace, ContinueReplace): the session
// that writes a list chunk by chunk, diffs it against what is stored, and
// leaves what a cut-short relist needs to go on. A part of RocksIndexer
// (rocks_indexer.h), apart from its single writes.

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

// The meta record "progress\0ks": where a relist cut short may go on from,
// committed with the objects it had put (ReplaceSession::Checkpoint).
struct RelistProgress {
  // Whether the relist wrote no seen marks: every stored key is one it
  // listed, in ascending order, and keys past `last_key` were written after
  // the checkpoint (they are listed again).
  bool markless = false;
  std::string last_key;  // its greatest key at the checkpoint (markless only)
  std::string progress;  // the lister's
};

// One byte, 'm' (markless) or 's' (seen marks), the last key, \0, the
// lister's progress. Keys hold no \0.
std::string EncodeRelistProgress(const RelistProgress& p) {
  std::string out(1, p.markless ? 'm' : 's');
  out.append(p.markless ? p.last_key : std::string()).push_back('\0');
  return out.append(p.progress);
}

std::optional<RelistProgress> DecodeRelistProgress(std::string_view v) {
  size_t zero = v.find('\0');
  if (v.empty() || (v[0] != 'm' && v[0] != 's') || zero == std::string_view::npos) {
    return std::nullopt;
  }
  return RelistProgress{v[0] == 'm', std::string(v.substr(1, zero - 1)),
                        std::string(v.substr(zero + 1))};
}

}  // namespace

// Writes a relist chunk by chunk. Every listed key is also recorded under
// meta "seen\0ks\0key" in the same batch as its object, so that Finish can
// find the stored keys the list did not have by walking reverse records and
// seen keys side by side, both in key order, with no key set in memory.
// A relist into an empty keyspace writes no such marks while it writes
// alone and its keys ascend: every stored key is then one it listed. The
// first write beside it, or its first key out of order, has it mark every
// stored key before going on. The keyspace's writer lock is taken per
// chunk, not for the whole session, so that callers may hold their own
// locks around Put without inverting the order.
class RocksReplaceSession final : public ReplaceSession {
 public:
  RocksReplaceSession(RocksIndexer* ix, ChangeSink sink) : ix_(ix), sink_(std::move(sink)) {
    std::shared_lock l(ix_->defs_mu_);
    defs_ = ix_->defs_;
  }

  Status Begin() {
    // Mark the relist: until the final batch, the resume point is void.
    // Seen keys left by an abandoned relist go in the same batch. Marks
    // exist only while a relist is marked, so none is deleted otherwise: a
    // range deletion in the memtable costs every later read of the family
    // until a flush (RocksDB re-fragments them per read), and a wide first
    // sync would leave one per type.
    std::lock_guard w(ix_->write_mu_);
    rocksdb::WriteBatch mark;
    mark.Put(ix_->db_->meta, MetaKey("relist", ix_->ks_), "1");
    mark.Delete(ix_->db_->meta, MetaKey("progress", ix_->ks_));
    bool abandoned;
    {
      std::lock_guard l(ix_->state_mu_);
      abandoned = ix_->relist_incomplete_;
    }
    if (abandoned) {
      KeyRange seen = SeenRange();
      mark.DeleteRange(ix_->db_->meta, seen.start, seen.limit);
    }
    KCACHE_RETURN_IF_ERROR(ix_->Write(&mark, "start relist of"));
    writes_seen_ = ix_->writes_;
    std::lock_guard l(ix_->state_mu_);
    ix_->relist_incomplete_ = true;
    none_stored_ = ix_->count_ == 0;
    if (none_stored_) ix_->markless_ = this;
    return Status::OK();
  }

  // Goes on with the relist cut short at `from`, keeping what it wrote
  // and its seen marks. A markless one first removes the keys written past
  // its checkpoint: they are listed again, and a markless session must not
  // meet a key it stored.
  Status Continue() {
    std::lock_guard w(ix_->write_mu_);
    KCACHE_ASSIGN_OR_RETURN(std::optional<std::string> record, ix_->ReadMeta("progress"));
    std::optional<RelistProgress> progress;
    if (record) progress = DecodeRelistProgress(*record);
    {
      std::lock_guard l(ix_->state_mu_);
      if (!ix_->relist_incomplete_) progress.reset();
    }
    if (!progress) {
      return Status::FailedPrecondition("keyspace " + ix_->ks_ +
                                        " holds no relist cut short with progress to go on from");
    }
    const RelistProgress& from = *progress;
    if (from.markless) KCACHE_RETURN_IF_ERROR(DeleteStored(&from.last_key));
    writes_seen_ = ix_->writes_;
    std::lock_guard l(ix_->state_mu_);
    ix_->relist_incomplete_ = true;
    none_stored_ = from.markless;
    if (from.markless) {
      last_key_ = from.last_key;
      ix_->markless_ = this;
    }
    return Status::OK();
  }

  ~RocksReplaceSession() override {
    {
      std::lock_guard w(ix_->write_mu_);
      if (Markless()) ix_->markless_ = nullptr;
    }
    ingester_.reset();  // stops it: what it had not ingested is dropped
    segment_.reset();   // closes its files before they go
    work_dir_.reset();
  }

  // Writes a seen mark for every stored key, and marks from then on.
  // REQUIRES: the writer lock held, and no key stored but the session's.
  Status MarkStored() {
    if (Markless()) ix_->markless_ = nullptr;
    KCACHE_RETURN_IF_ERROR(IngestSegment());
    const std::shared_ptr<Db>& db = ix_->db_;
    const auto [prefix, end] = KeyspaceRange(ix_->ks_);
    const std::string seen = SeenRange().start;
    rocksdb::Slice upper(end);
    rocksdb::ReadOptions ro;
    ro.iterate_upper_bound = &upper;
    ro.fill_cache = false;
    std::unique_ptr<rocksdb::Iterator> it(db->db->NewIterator(ro, db->rindex));
    rocksdb::WriteBatch batch;
    // The progress says markless: from now on, not every stored key need be
    // the relist's, so a crash must start it over.
    batch.Delete(db->meta, MetaKey("progress", ix_->ks_));
    for (it->Seek(prefix); it->Valid(); it->Next()) {
      batch.Put(db->meta, seen + std::string(View(it->key()).substr(prefix.size())), "");
      if (static_cast<size_t>(batch.Count()) == kChunk) {
        KCACHE_RETURN_IF_ERROR(ix_->Write(&batch, "relist", Logged(), this));
        batch.Clear();
      }
    }
    KCACHE_RETURN_IF_ERROR(FromRocks(it->status(), "relist " + ix_->ks_));
    if (batch.Count() > 0) KCACHE_RETURN_IF_ERROR(ix_->Write(&batch, "relist", Logged(), this));
    writes_seen_ = ix_->writes_;
    return Status::OK();
  }

  Status Put(ObjectPtr obj) override {
    KCACHE_RETURN_IF_ERROR(failed_);
    if (!obj) return Fail(Status::InvalidArgument("Replace with a null object"));
    StatusOr<std::string> key = ix_->key_func_(*obj);
    if (!key.ok()) return Fail(KeyError(*obj, key.status()));
    if (Status st = CheckNoZero("key", *key); !st.ok()) return Fail(st);
    StatusOr<std::vector<IndexEntry>> entries = RocksIndexer::EntriesOf(defs_, *key, *obj);
    if (!entries.ok()) return Fail(entries.status());
    chunk_bytes_ += obj->byte_size();
    auto [pos, fresh] = in_chunk_.emplace(*key, chunk_.size());
    Item item{*std::move(key), std::move(obj), *std::move(entries)};
    if (fresh) {
      chunk_.push_back(std::move(item));
    } else {  // a later duplicate wins, as in a map
      chunk_bytes_ -= chunk_[pos->second].obj->byte_size();
      chunk_[pos->second] = std::move(item);
    }
    return ChunkFull(chunk_.size(), chunk_bytes_) ? Flush() : Status::OK();
  }

  // Ends the chunk here, so that the progress goes into the cache with it.
  Status Checkpoint(std::string progress) override {
    KCACHE_RETURN_IF_ERROR(failed_);
    progress_ = std::move(progress);
    checkpointed_ = true;
    if (Status st = Flush(); !st.ok()) return Fail(st);
    return Status::OK();
  }

  StatusOr<size_t> Finish(std::string resource_version) override {
    KCACHE_RETURN_IF_ERROR(failed_);
    if (Status st = Flush(); !st.ok()) return Fail(st);
    std::lock_guard w(ix_->write_mu_);
    if (Status st = IngestSegment(); !st.ok()) return Fail(st);
    if (ingester_) {
      // Its segments' index tables, held in level 0, are merged at once
      // under the ingester's hold (released first, RocksDB's own compaction
      // would take them), and after the list: the merge, on one thread, is
      // a fifth of a 100k-pod sync's time, which the informer need not wait.
      auto [start, limit] = KeyspaceRange(ix_->ks_);
      std::unique_ptr<Db::IndexCompactionHold> hold = ingester_->TakeIndexHold();
      ingester_.reset();
      ix_->db_->MergeIndex(std::move(start), std::move(limit), std::move(hold));
    }
    const bool marked = !Markless();
    if (!marked) {
      // Into an empty keyspace, in key order, with nothing else writing:
      // every stored key was written by this session, which wrote no marks.
      ix_->markless_ = nullptr;
    } else if (Status st = DeleteStored(); !st.ok()) {
      return Fail(st);
    }
    rocksdb::WriteBatch done;
    if (marked) {
      KeyRange seen = SeenRange();
      done.DeleteRange(ix_->db_->meta, seen.start, seen.limit);
    }
    done.Put(ix_->db_->meta, MetaKey("rv", ix_->ks_), resource_version);
    done.Delete(ix_->db_->meta, MetaKey("relist", ix_->ks_));
    done.Delete(ix_->db_->meta, MetaKey("progress", ix_->ks_));
    const int64_t now_ms = ix_->db_->NowMs();
    done.Put(ix_->db_->meta, MetaKey("time", ix_->ks_), std::to_string(now_ms));
    // A list says what is, not what happened: the journal starts over at it.
    JournalWriter::Pending jp = ix_->journal_.Begin();
    ix_->journal_.Reset(&jp);
    if (Status st = ix_->journal_.Seal(&jp, &done, resource_version, now_ms); !st.ok()) {
      return Fail(st);
    }
    if (Status st = ix_->Write(&done, "finish relist of"); !st.ok()) return Fail(st);
    ix_->journal_.Committed(std::move(jp));
    std::lock_guard l(ix_->state_mu_);
    ix_->rv_ = std::move(resource_version);
    ix_->relist_incomplete_ = false;
    failed_ = Status::FailedPrecondition("the relist session has finished");
    return unchanged_;
  }

 private:
  struct Item {
    std::string key;
    ObjectPtr obj;
    std::vector<IndexEntry> entries;
  };

  KeyRange SeenRange() const {
    return PrefixRange(MetaKey("seen", ix_->ks_) + std::string(1, '\0'));
  }

  Status Fail(Status st) {
    if (failed_.ok()) failed_ = st;
    return st;
  }

  // Writes the pending chunk: changed objects, every key's seen mark, and
  // the count the chunk leaves, so that a relist cut short has a true count.
  Status Flush() {
    if (chunk_.empty() && !progress_) return Status::OK();
    std::lock_guard w(ix_->write_mu_);
    const size_t n = chunk_.size();
    std::vector<std::string> okeys(n);
    for (size_t i = 0; i < n; ++i) okeys[i] = ObjectKey(ix_->ks_, chunk_[i].key);
    // A relist into an empty keyspace, in ascending key order (as API
    // servers list), with nothing else writing beside it, cannot meet a key
    // it has stored: nothing is read back. Otherwise, from then on, every
    // key is looked up.
    none_stored_ = none_stored_ && NoOtherWrites() && AscendingChunk();
    if (!none_stored_ && Markless()) KCACHE_RETURN_IF_ERROR(MarkStored());
    const bool marking = !Markless();
    // A checkpoint goes with the chunk that ends at it.
    std::optional<std::string> record;
    if (progress_) {
      record = EncodeRelistProgress({!marking, last_key_, *std::move(progress_)});
      progress_.reset();
    }
    if (!marking && !sink_ && !Logged()) {
      if (!ingester_) ingester_ = std::make_unique<Ingester>(this);
      listed_bytes_ += chunk_bytes_;
      Chunk chunk{std::move(chunk_), std::move(okeys), chunk_bytes_, std::move(record),
                  checkpointed_};
      chunk_.clear();
      in_chunk_.clear();
      chunk_bytes_ = 0;
      return ingester_->Add(std::move(chunk));
    }
    KCACHE_RETURN_IF_ERROR(IngestSegment());
    size_t count = Count();
    std::vector<rocksdb::Slice> slices(okeys.begin(), okeys.end());
    std::vector<rocksdb::PinnableSlice> records(n), reverse(n);
    std::vector<rocksdb::Status> s1(n, rocksdb::Status::NotFound()), s2 = s1;
    const std::shared_ptr<Db>& db = ix_->db_;
    if (!none_stored_ && n > 0) {
      db->db->MultiGet({}, db->objects, n, slices.data(), records.data(), s1.data());
      db->db->MultiGet({}, db->rindex, n, slices.data(), reverse.data(), s2.data());
    }
    // One batch serves every chunk: its buffer, megabytes once grown, is
    // neither grown again nor touched afresh each time.
    rocksdb::WriteBatch& batch = batch_;
    batch.Clear();
    std::vector<StoreChange> changes;
    std::vector<std::string> index_puts;
    const std::string seen = SeenRange().start;
    const std::shared_ptr<const Keyring> keyring = db->keyring();
    for (size_t i = 0; i < n; ++i) {
      Item& item = chunk_[i];
      if (!s1[i].ok() && !s1[i].IsNotFound()) return FromRocks(s1[i], "relist " + ix_->ks_);
      if (!s2[i].ok() && !s2[i].IsNotFound()) return FromRocks(s2[i], "relist " + ix_->ks_);
      if (marking) batch.Put(db->meta, seen + item.key, "");
      std::optional<std::vector<IndexEntry>> old;
      ObjectPtr old_obj;
      if (s1[i].ok()) {
        std::string_view rv, json;
        std::string opened;
        KCACHE_RETURN_IF_ERROR(
            OpenObject(keyring.get(), ix_->ks_, item.key, View(records[i]), &rv, &json, &opened));
        if (!rv.empty() && rv == item.obj->resource_version() && json == item.obj->json() &&
            s2[i].ok()) {
          ++unchanged_;
          continue;
        }
        KCACHE_ASSIGN_OR_RETURN(old_obj, ix_->Decode(item.key, View(records[i])));
      }
      if (s2[i].ok()) {
        KCACHE_ASSIGN_OR_RETURN(auto e, DecodeEntries(View(reverse[i])));
        old = std::move(e);
      }
      KCACHE_RETURN_IF_ERROR(
          ix_->PutObject(&batch, item.key, *item.obj, old, item.entries, &index_puts));
      if (!old) ++count;
      changes.push_back({old_obj ? StoreChange::Type::kUpdated : StoreChange::Type::kAdded,
                         std::move(item.key), std::move(old_obj), std::move(item.obj)});
    }
    // A chunk's keys are distinct, so no other op of the batch touches its
    // index keys. Written in key order, each lands in the memtable next to
    // the one before, instead of after a search from the top of its skip
    // list (entries of one label value are spread over the whole chunk).
    std::sort(index_puts.begin(), index_puts.end());
    for (const std::string& k : index_puts) batch.Put(db->index, k, "");
    batch.Put(db->meta, MetaKey("count", ix_->ks_), std::to_string(count));
    if (record) batch.Put(db->meta, MetaKey("progress", ix_->ks_), *record);
    KCACHE_RETURN_IF_ERROR(ix_->Write(&batch, "relist", Logged(), this));
    writes_seen_ = ix_->writes_;
    listed_bytes_ += chunk_bytes_;
    SetCount(count);
    chunk_.clear();
    in_chunk_.clear();
    chunk_bytes_ = 0;
    if (sink_ && !changes.empty()) sink_(std::move(changes));
    return Status::OK();
  }

  // An initial list's segment: table files of its objects and reverse
  // records (keys ascending), and its index keys, ingested in one step.
  struct Segment {
    rocksdb::SstFileWriter objects, rindex;
    std::string objects_path, rindex_path;
    // The keys of its objects that have index entries, ascending.
    std::vector<std::string> keys;
    // Positions in `keys` by index entry (index and value), each list
    // ascending.
    std::unordered_map<std::string, std::vector<uint32_t>> index_keys;
    size_t added = 0;  // objects in it
    size_t bytes = 0;  // their JSON bytes
    // The last checkpoint's progress record among its chunks, if any.
    std::optional<std::string> record;
    Segment(const rocksdb::Options& objects_options, const rocksdb::Options& rindex_options,
            rocksdb::ColumnFamilyHandle* objects_cf, rocksdb::ColumnFamilyHandle* rindex_cf)
        : objects(rocksdb::EnvOptions(), objects_options, objects_cf),
          rindex(rocksdb::EnvOptions(), rindex_options, rindex_cf) {}
  };

  // A chunk handed to the ingester.
  struct Chunk {
    std::vector<Item> items;
    std::vector<std::string> okeys;  // the items' object keys
    size_t bytes = 0;                // their JSON bytes
    // The progress record of the checkpoint it ends at, if it does.
    std::optional<std::string> record;
    // Whether the session checkpoints: its segments then end at one.
    bool paged = false;
  };

  // The path of the session's next table file for `family`.
  StatusOr<std::string> NextTablePath(std::string_view family) {
    if (!work_dir_) {
      KCACHE_ASSIGN_OR_RETURN(work_dir_, WorkDir::Create(ix_->db_->dir, ".relist-"));
    }
    return work_dir_->path() + "/" + std::to_string(next_table_++) + "-" + std::string(family) +
           ".sst";
  }

  // Adds `chunk` (keys ascending, none stored) to the segment, and ingests
  // the segment once it holds a memtable budget's worth of JSON. Called by
  // the ingester's thread only.
  Status WriteChunk(const Chunk* chunk_in) {
    const Chunk& chunk = *chunk_in;
    const std::shared_ptr<Db>& db = ix_->db_;
    if (!segment_) {
      const CacheOptions& o = db->options;
      segment_ =
          std::make_unique<Segment>(FirstListObjectOptions(o),
                                    FamilyOnlyOptions(kReverseIndexCF, o), db->objects, db->rindex);
      KCACHE_ASSIGN_OR_RETURN(segment_->objects_path, NextTablePath(kObjectsCF));
      KCACHE_ASSIGN_OR_RETURN(segment_->rindex_path, NextTablePath(kReverseIndexCF));
      KCACHE_RETURN_IF_ERROR(FromRocks(segment_->objects.Open(segment_->objects_path),
                                       "relist " + ix_->ks_ + ": " + segment_->objects_path));
      KCACHE_RETURN_IF_ERROR(FromRocks(segment_->rindex.Open(segment_->rindex_path),
                                       "relist " + ix_->ks_ + ": " + segment_->rindex_path));
    }
    Segment& seg = *segment_;
    // Buffers reused across the chunk: a pod's record is kilobytes.
    std::string value, entries;
    for (size_t i = 0; i < chunk.items.size(); ++i) {
      const Item& item = chunk.items[i];
      if (ix_->sealed_) {
        KCACHE_ASSIGN_OR_RETURN(value, ix_->EncodeRecord(item.key, *item.obj));
      } else {
        value.clear();
        AppendObjectHeader(&value, item.obj->resource_version());
        value.append(item.obj->json());
      }
      const std::string& okey = chunk.okeys[i];
      KCACHE_RETURN_IF_ERROR(FromRocks(seg.objects.Put(okey, value), "relist " + ix_->ks_));
      entries.clear();
      AppendEntries(&entries, item.entries);
      KCACHE_RETURN_IF_ERROR(FromRocks(seg.rindex.Put(okey, entries), "relist " + ix_->ks_));
      if (item.entries.empty()) continue;
      const auto at = static_cast<uint32_t>(seg.keys.size());
      seg.keys.push_back(item.key);
      for (const auto& [index, v] : item.entries) {
        seg.index_keys[IndexKey(ix_->ks_, index, v, "")].push_back(at);
      }
    }
    seg.added += chunk.items.size();
    seg.bytes += chunk.bytes;
    if (chunk.record) seg.record = chunk.record;
    // A segment of a list that checkpoints ends at a checkpoint, so that
    // what the cache holds is what its progress says.
    if (seg.bytes >= db->options.memtable_bytes && (chunk.record || !chunk.paged)) {
      return IngestPending();
    }
    return Status::OK();
  }

  // Waits until the ingester has ingested every chunk handed to it.
  // REQUIRES: the writer lock held.
  Status IngestSegment() { return ingester_ ? ingester_->Drain() : Status::OK(); }

  // Ingests the pending segment, if any, with the count it leaves: its
  // objects, reverse records, index entries and count go into the cache
  // together or not at all (IngestExternalFiles is atomic across families).
  // Called by the ingester's thread only.
  Status IngestPending() {
    if (!segment_) return Status::OK();
    std::unique_ptr<Segment> seg = std::move(segment_);
    const std::shared_ptr<Db>& db = ix_->db_;
    const std::string what = "relist " + ix_->ks_;
    const size_t count = Count() + seg->added;
    std::vector<rocksdb::IngestExternalFileArg> args;
    if (seg->added > 0) {  // else a checkpoint alone
      KCACHE_RETURN_IF_ERROR(FromRocks(seg->objects.Finish(), what));
      KCACHE_RETURN_IF_ERROR(FromRocks(seg->rindex.Finish(), what));
      args.push_back(MovedTableFiles(db->objects, {seg->objects_path}));
      args.push_back(MovedTableFiles(db->rindex, {seg->rindex_path}));
    }
    auto write_table = [&](rocksdb::ColumnFamilyHandle* cf, const char* family,
                           auto&& put_all) -> Status {
      KCACHE_ASSIGN_OR_RETURN(std::string path, NextTablePath(family));
      rocksdb::SstFileWriter w(rocksdb::EnvOptions(), FamilyOnlyOptions(family, db->options), cf);
      KCACHE_RETURN_IF_ERROR(FromRocks(w.Open(path), what + ": " + path));
      KCACHE_RETURN_IF_ERROR(put_all(w));
      KCACHE_RETURN_IF_ERROR(FromRocks(w.Finish(), what + ": " + path));
      args.push_back(MovedTableFiles(cf, {std::move(path)}));
      return Status::OK();
    };
    // In key order: the entries' prefixes sorted (none is a prefix of
    // another: each ends with a separator no value holds), and each one's
    // keys as they came, ascending and distinct.
    std::vector<const std::string*> prefixes;
    prefixes.reserve(seg->index_keys.size());
    for (const auto& [prefix, keys] : seg->index_keys) prefixes.push_back(&prefix);
    std::sort(prefixes.begin(), prefixes.end(),
              [](const std::string* a, const std::string* b) { return *a < *b; });
    auto put_index = [&](rocksdb::SstFileWriter& w) -> Status {
      std::string k;
      for (const std::string* prefix : prefixes) {
        for (uint32_t at : seg->index_keys[*prefix]) {
          k.assign(*prefix).append(seg->keys[at]);
          KCACHE_RETURN_IF_ERROR(FromRocks(w.Put(k, ""), what));
        }
      }
      return Status::OK();
    };
    auto put_meta = [&](rocksdb::SstFileWriter& w) -> Status {
      KCACHE_RETURN_IF_ERROR(
          FromRocks(w.Put(MetaKey("count", ix_->ks_), std::to_string(count)), what));
      if (!seg->record) return Status::OK();
      return FromRocks(w.Put(MetaKey("progress", ix_->ks_), *seg->record), what);
    };
    if (!seg->index_keys.empty()) {
      KCACHE_RETURN_IF_ERROR(write_table(db->index, kIndexCF, put_index));
    }
    KCACHE_RETURN_IF_ERROR(write_table(db->meta, kMetaCF, put_meta));
    KCACHE_RETURN_IF_ERROR(FromRocks(db->Ingest(args), "ingest " + what));
    SetCount(count);
    return Status::OK();
  }

  // Writes an initial list's chunks into table files and ingests them, a
  // segment at a time, on its own thread, so that compressing the list
  // overlaps decoding it. At most two chunks wait for it. The keyspace's
  // writers wait for it to drain (IngestSegment) before anything else
  // writes or reads to write; it takes no lock of the keyspace.
  class Ingester {
   public:
    explicit Ingester(RocksReplaceSession* session)
        : session_(session), index_hold_(session->ix_->db_->HoldIndexCompactions()) {
      thread_ = std::thread([this] { Run(); });
      pthread_setname_np(thread_.native_handle(), "kcache-ingest");
    }
    ~Ingester() {
      {
        std::lock_guard l(mu_);
        stop_ = true;
      }
      cv_.notify_all();
      thread_.join();
    }

    // Queues `chunk`; returns the first error of the chunks before it.
    Status Add(Chunk chunk) {
      std::vector<Item> written;  // destroyed here, off the ingester's thread
      std::unique_lock l(mu_);
      cv_.wait(l, [&] { return queue_.size() < 2 || !error_.ok(); });
      if (!error_.ok()) return error_;
      queue_.push_back(std::move(chunk));
      written.swap(written_);
      cv_.notify_all();
      return Status::OK();
    }

    // The hold on the index's compactions, for the merge after the list.
    std::unique_ptr<Db::IndexCompactionHold> TakeIndexHold() { return std::move(index_hold_); }

    // Waits until every queued chunk is written and ingested.
    Status Drain() {
      std::vector<Item> written;
      std::unique_lock l(mu_);
      drain_ = true;
      cv_.notify_all();
      cv_.wait(l, [&] { return !drain_; });
      written.swap(written_);
      return error_;
    }

   private:
    void Run() {
      std::unique_lock l(mu_);
      for (;;) {
        cv_.wait(l, [&] { return stop_ || drain_ || !queue_.empty(); });
        if (stop_) return;
        Status st;
        if (!queue_.empty()) {
          Chunk chunk = std::move(queue_.front());
          queue_.pop_front();
          const bool failed = !error_.ok();
          cv_.notify_all();
          l.unlock();
          if (!failed) st = session_->WriteChunk(&chunk);
          l.lock();
          // Freeing a chunk's objects costs about as much as compressing
          // them: the session's thread, which has time to spare, does it.
          if (written_.empty()) {
            written_ = std::move(chunk.items);
          } else {
            written_.insert(written_.end(), std::make_move_iterator(chunk.items.begin()),
                            std::make_move_iterator(chunk.items.end()));
          }
        } else {
          const bool failed = !error_.ok();
          l.unlock();
          if (!failed) st = session_->IngestPending();
          l.lock();
          drain_ = false;
          cv_.notify_all();
        }
        if (!st.ok() && error_.ok()) error_ = st;
      }
    }

    RocksReplaceSession* const session_;
    // The segments' index tables stay in level 0 while it lasts (released
    // after its thread ends, unless taken for the merge).
    std::unique_ptr<Db::IndexCompactionHold> index_hold_;
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<Chunk> queue_;    // guarded by mu_
    std::vector<Item> written_;  // guarded by mu_: for Add to destroy
    bool drain_ = false;         // guarded by mu_
    bool stop_ = false;          // guarded by mu_
    Status error_;               // guarded by mu_
    std::thread thread_;
  };

  // Whether the session's next batch goes through the WAL: only until it
  // has listed an objects memtable's worth of JSON (a quarter of the
  // budget), counting objects left unchanged: a relist of a full keyspace
  // writes a seen mark for each.
  // Skipping the WAL after that loses nothing committed: the relist mark,
  // logged by Begin, makes a crash before Finish a relist, and Finish's
  // logged batch first flushes what went unlogged (RocksIndexer::Write).
  // A smaller relist stays logged: its final flush would cost more than
  // the log it saves.
  bool Logged() const { return listed_bytes_ < ix_->db_->options.memtable_bytes / 4; }

  // Whether the session writes no seen marks (see the class comment).
  // REQUIRES: the writer lock held.
  bool Markless() const { return ix_->markless_ == this; }

  // Whether nothing but this session wrote the keyspace since its last
  // batch. REQUIRES: the writer lock held.
  bool NoOtherWrites() const { return ix_->writes_ == writes_seen_; }

  // Whether the chunk's keys ascend, and all follow the session's earlier
  // keys; remembers its last.
  bool AscendingChunk() {
    for (const Item& item : chunk_) {
      if (!last_key_.empty() && item.key <= last_key_) return false;
      last_key_ = item.key;
    }
    return true;
  }

  size_t Count() const {
    std::lock_guard l(ix_->state_mu_);
    return ix_->count_;
  }
  void SetCount(size_t count) {
    std::lock_guard l(ix_->state_mu_);
    ix_->count_ = count;
  }

  // Deletes stored objects, a chunk at a time: those without a seen mark,
  // or (`past` set) all whose keys follow `*past`. It walks the reverse
  // records (one small record per object) beside the seen marks and reads
  // only the objects it deletes: a walk of the objects would decompress
  // every one of them, as long as a whole scan.
  // REQUIRES: the writer lock held.
  Status DeleteStored(const std::string* past = nullptr) {
    size_t count = Count();
    const std::shared_ptr<Db>& db = ix_->db_;
    const auto [prefix, end] = KeyspaceRange(ix_->ks_);
    const auto [sprefix, send] = SeenRange();
    rocksdb::Slice upper(end), supper(send);
    rocksdb::ReadOptions rro, sro;
    rro.iterate_upper_bound = &upper;
    sro.iterate_upper_bound = &supper;
    rro.fill_cache = sro.fill_cache = false;  // one pass: keep the cache for queries
    std::unique_ptr<rocksdb::Iterator> reverse(db->db->NewIterator(rro, db->rindex));
    std::unique_ptr<rocksdb::Iterator> seen(db->db->NewIterator(sro, db->meta));
    seen->Seek(sprefix);
    rocksdb::WriteBatch batch;
    std::vector<StoreChange> changes;
    auto flush = [&]() -> Status {
      if (changes.empty()) return Status::OK();
      batch.Put(db->meta, MetaKey("count", ix_->ks_), std::to_string(count));
      KCACHE_RETURN_IF_ERROR(ix_->Write(&batch, "relist", Logged(), this));
      SetCount(count);
      batch.Clear();
      if (sink_) sink_(std::move(changes));
      changes.clear();
      return Status::OK();
    };
    // Keys hold no \0: the first one after `*past` is not below *past + \0.
    for (reverse->Seek(past ? prefix + *past + std::string(1, '\0') : prefix); reverse->Valid();
         reverse->Next()) {
      std::string_view key = View(reverse->key()).substr(prefix.size());
      if (!past) {
        while (seen->Valid() && View(seen->key()).substr(sprefix.size()) < key) seen->Next();
        if (seen->Valid() && View(seen->key()).substr(sprefix.size()) == key) continue;
      }
      KCACHE_ASSIGN_OR_RETURN(std::vector<IndexEntry> old, DecodeEntries(View(reverse->value())));
      std::string k(key);
      KCACHE_ASSIGN_OR_RETURN(ObjectPtr old_obj, ix_->GetByKey(k));
      if (!old_obj) {
        return Status::Corruption("keyspace " + ix_->ks_ + ": the reverse index record of " + k +
                                  " has no object");
      }
      ix_->DeleteObject(&batch, k, old);
      --count;
      changes.push_back({StoreChange::Type::kDeleted, std::move(k), std::move(old_obj), nullptr});
      if (changes.size() == kChunk) KCACHE_RETURN_IF_ERROR(flush());
    }
    KCACHE_RETURN_IF_ERROR(FromRocks(reverse->status(), "relist " + ix_->ks_));
    KCACHE_RETURN_IF_ERROR(FromRocks(seen->status(), "relist " + ix_->ks_));
    return flush();
  }

  RocksIndexer* ix_;
  RocksIndexer::Defs defs_;
  ChangeSink sink_;
  std::vector<Item> chunk_;
  std::unordered_map<std::string, size_t> in_chunk_;
  rocksdb::WriteBatch batch_;         // Flush's, kept for its buffer
  std::unique_ptr<Segment> segment_;  // the ingester's, not yet ingested
  std::unique_ptr<Ingester> ingester_;
  std::unique_ptr<WorkDir> work_dir_;  // of the segments' table files
  int next_table_ = 0;
  size_t chunk_bytes_ = 0;   // JSON bytes of chunk_
  size_t listed_bytes_ = 0;  // JSON bytes of the chunks written, unchanged objects included
  size_t unchanged_ = 0;
  std::optional<std::string> progress_;  // the checkpoint the next chunk ends at
  bool checkpointed_ = false;            // whether Checkpoint was called
  bool none_stored_ = false;             // no key this session writes is stored yet
  uint64_t writes_seen_ = 0;             // the keyspace's writes after the session's last
  std::string last_key_;                 // the greatest key written so far
  Status failed_;
};

Status RocksIndexer::MarkRelistedKeys() { return markless_->MarkStored(); }

StatusOr<std::unique_ptr<ReplaceSession>> RocksIndexer::BeginReplace(ChangeSink sink) {
  KCACHE_RETURN_IF_ERROR(CheckWritable());
  auto session = std::make_unique<RocksReplaceSession>(this, std::move(sink));
  KCACHE_RETURN_IF_ERROR(session->Begin());
  return std::unique_ptr<ReplaceSession>(std::move(session));
}

StatusOr<std::optional<CutShortRelist>> RocksIndexer::GetCutShortRelist() const {
  bool incomplete;
  if (db_->read_only) {
    KCACHE_ASSIGN_OR_RETURN(std::optional<std::string> relist, ReadMeta("relist"));
    incomplete = relist.has_value();
  } else {
    std::lock_guard l(state_mu_);
    incomplete = relist_incomplete_;
  }
  if (!incomplete) return std::optional<CutShortRelist>();
  KCACHE_ASSIGN_OR_RETURN(std::optional<std::string> record, ReadMeta("progress"));
  CutShortRelist out;
  if (record) {
    if (std::optional<RelistProgress> p = DecodeRelistProgress(*record)) {
      out.progress = std::move(p->progress);
    }
  }
  return std::optional<CutShortRelist>(std::move(out));
}

StatusOr<std::unique_ptr<ReplaceSession>> RocksIndexer::ContinueReplace(ChangeSink sink) {
  KCACHE_RETURN_IF_ERROR(CheckWritable());
  auto session = std::make_unique<RocksReplaceSession>(this, std::move(sink));
  KCACHE_RETURN_IF_ERROR(session->Continue());
  return std::unique_ptr<ReplaceSession>(std::move(session));
}

}  // namespace kcache::storage
