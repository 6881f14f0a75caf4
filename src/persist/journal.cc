// SPDX-License-Identifier: Apache-2.0

#include "persist/journal.h"

#include <rocksdb/slice.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <limits>

#include "core/resource_version.h"
#include "persist/encoding.h"
#include "persist/rocks_status.h"
#include "util/coding.h"

namespace kcache::storage {
namespace {

constexpr char kVersion = 0x01;
constexpr char kSealedVersion = 0x02;  // previous and json sealed

// The entries of `ks`: [ks + \0 + 8 zero bytes, ks + \1).
KeyRange EntryRange(std::string_view ks) {
  return {JournalEntryKey(ks, 0), KeyspaceRange(ks).limit};
}

// The resourceVersion of an entry key of `ks`; nullopt if malformed.
std::optional<uint64_t> EntryVersion(std::string_view ks, std::string_view key) {
  if (key.size() != ks.size() + 1 + 8) return std::nullopt;
  return util::GetBigEndian64(key.data() + ks.size() + 1);
}

StatusOr<std::optional<std::string>> GetOptional(const Db& db, const rocksdb::ReadOptions& ro,
                                                 rocksdb::ColumnFamilyHandle* cf,
                                                 const std::string& key, std::string_view what) {
  std::string value;
  rocksdb::Status s = db.db->Get(ro, cf, key, &value);
  if (s.IsNotFound()) return std::optional<std::string>();
  KCACHE_RETURN_IF_ERROR(FromRocks(s, std::string(what)));
  return std::optional<std::string>(std::move(value));
}

// What a sealed entry's previous object, or its object, is bound to.
std::string EntryContext(std::string context, bool previous) {
  context.push_back('\0');
  context.append(previous ? "previous" : "object");
  return context;
}

}  // namespace

Status DecodeJournalEntry(std::string_view record, JournalEntry* out) {
  auto bad = [](const char* what) {
    return Status::Corruption(std::string("journal entry: ") + what);
  };
  if (record.size() < 2 || (record[0] != kVersion && record[0] != kSealedVersion)) {
    return bad("unknown record version");
  }
  out->sealed = record[0] == kSealedVersion;
  int type = record[1];
  if (type < 1 || type > 3) return bad("unknown change type");
  out->type = static_cast<JournalEvent::Type>(type - 1);
  record.remove_prefix(2);
  uint64_t time;
  uint32_t klen, plen;
  if (!util::GetVarint64(&record, &time)) return bad("truncated time");
  out->time_ms = static_cast<int64_t>(time);
  if (!util::GetVarint32(&record, &klen) || record.size() < klen) return bad("truncated key");
  out->key = record.substr(0, klen);
  record.remove_prefix(klen);
  if (!util::GetVarint32(&record, &plen) || record.size() < plen) {
    return bad("truncated previous object");
  }
  out->previous = record.substr(0, plen);
  out->json = record.substr(plen);
  return Status::OK();
}

Status OpenJournalEntry(const Keyring* keyring, std::string_view ks, uint64_t rv, JournalEntry* e) {
  if (!e->sealed) return Status::OK();
  const std::string what =
      "journal entry " + std::to_string(rv) + " of keyspace " + std::string(ks);
  if (!keyring) {
    return Status::FailedPrecondition(what +
                                      " is encrypted at rest, and no key-encryption key was given");
  }
  const std::string context = JournalSealContext(ks, rv, e->key);
  if (!e->previous.empty()) {
    KCACHE_ASSIGN_OR_RETURN(e->opened_previous,
                            keyring->Open(e->previous, EntryContext(context, true), what));
    e->previous = e->opened_previous;
  }
  KCACHE_ASSIGN_OR_RETURN(e->opened_json,
                          keyring->Open(e->json, EntryContext(context, false), what));
  e->json = e->opened_json;
  return Status::OK();
}

std::string JournalStateKey(std::string_view ks) { return KeyspacePrefix(ks); }

std::string JournalEntryKey(std::string_view ks, uint64_t rv) {
  std::string key = KeyspacePrefix(ks);
  util::PutBigEndian64(&key, rv);
  return key;
}

std::string EncodeJournalState(const JournalStats& state) {
  std::string out(1, kVersion);
  util::PutVarint32(&out, static_cast<uint32_t>(state.start.size()));
  out += state.start;
  util::PutVarint64(&out, state.events);
  util::PutVarint64(&out, state.bytes);
  return out;
}

StatusOr<JournalStats> DecodeJournalState(std::string_view record) {
  auto bad = [](const char* what) {
    return Status::Corruption(std::string("journal state: ") + what);
  };
  if (record.empty() || record[0] != kVersion) return bad("unknown record version");
  record.remove_prefix(1);
  uint32_t len;
  uint64_t events, bytes;
  if (!util::GetVarint32(&record, &len) || record.size() < len) return bad("truncated start");
  JournalStats out;
  out.start = record.substr(0, len);
  record.remove_prefix(len);
  if (!util::GetVarint64(&record, &events) || !util::GetVarint64(&record, &bytes) ||
      !record.empty()) {
    return bad("malformed counts");
  }
  out.events = events;
  out.bytes = bytes;
  return out;
}

std::string EncodeJournalEntryHeader(JournalEvent::Type type, int64_t time_ms, std::string_view key,
                                     size_t previous_size, bool sealed) {
  std::string out(1, sealed ? kSealedVersion : kVersion);
  out.push_back(static_cast<char>(static_cast<int>(type) + 1));
  util::PutVarint64(&out, static_cast<uint64_t>(time_ms));
  util::PutVarint32(&out, static_cast<uint32_t>(key.size()));
  out += key;
  util::PutVarint32(&out, static_cast<uint32_t>(previous_size));
  return out;
}

std::string EncodeJournalEntry(JournalEvent::Type type, int64_t time_ms, std::string_view key,
                               std::string_view previous, std::string_view json) {
  std::string out = EncodeJournalEntryHeader(type, time_ms, key, previous.size(), false);
  out += previous;
  out += json;
  return out;
}

StatusOr<JournalStats> ReadJournalStats(const Db& db, const rocksdb::Snapshot* snapshot,
                                        std::string_view ks, std::string_view keyspace_rv) {
  JournalStats out;
  out.start = keyspace_rv;
  if (!db.journal) return out;  // a reader of a cache no writer has upgraded
  rocksdb::ReadOptions ro;
  ro.snapshot = snapshot;
  KCACHE_ASSIGN_OR_RETURN(
      std::optional<std::string> record,
      GetOptional(db, ro, db.journal, JournalStateKey(ks), "read journal of " + std::string(ks)));
  if (!record) return out;
  StatusOr<JournalStats> state = DecodeJournalState(*record);
  if (!state.ok()) return state.status().WithContext("keyspace " + std::string(ks));
  return state;
}

StatusOr<uint64_t> CheckJournalRead(std::string_view ks, std::string_view after, size_t limit) {
  if (limit == 0) return Status::InvalidArgument("journal read with a limit of 0");
  std::optional<uint64_t> from = ParseCanonicalResourceVersion(after);
  if (!from) {
    return Status::InvalidArgument("keyspace " + std::string(ks) + ": resourceVersion \"" +
                                   std::string(after) +
                                   "\" is not a decimal number the journal can order");
  }
  return *from;
}

Status JournalExpired(std::string_view ks, std::string_view after, std::string_view start) {
  return Status::Expired("keyspace " + std::string(ks) + ": resourceVersion " + std::string(after) +
                         " is older than the journal keeps" +
                         (ParseCanonicalResourceVersion(start)
                              ? " (it has the changes after " + std::string(start) + ")"
                              : std::string(" (it keeps no window)")));
}

StatusOr<JournalRead> ReadJournal(const Db& db, const rocksdb::Snapshot* snapshot,
                                  std::string_view ks, std::string_view after, size_t limit) {
  const std::string where = "keyspace " + std::string(ks);
  KCACHE_ASSIGN_OR_RETURN(const uint64_t from, CheckJournalRead(ks, after, limit));
  rocksdb::ReadOptions ro;
  ro.snapshot = snapshot;
  KCACHE_ASSIGN_OR_RETURN(std::optional<std::string> resume,
                          GetOptional(db, ro, db.meta, MetaKey("rv", ks), "read " + where));
  KCACHE_ASSIGN_OR_RETURN(JournalStats state,
                          ReadJournalStats(db, snapshot, ks, resume.value_or("")));
  if (!resume && state.start.empty() && state.events == 0) {
    return Status::NotFound(where + " has no resume point: nothing was synced into it");
  }
  std::optional<uint64_t> start = ParseCanonicalResourceVersion(state.start);
  if (!start || from < *start) return JournalExpired(ks, after, state.start);
  JournalRead out;
  uint64_t reached = from;
  if (db.journal && from < std::numeric_limits<uint64_t>::max()) {
    KeyRange range = EntryRange(ks);
    rocksdb::Slice upper(range.limit);
    ro.iterate_upper_bound = &upper;
    std::unique_ptr<rocksdb::Iterator> it(db.db->NewIterator(ro, db.journal));
    const std::shared_ptr<const Keyring> keyring = db.keyring();
    for (it->Seek(JournalEntryKey(ks, from + 1)); it->Valid(); it->Next()) {
      std::optional<uint64_t> rv = EntryVersion(ks, View(it->key()));
      if (!rv) return Status::Corruption(where + ": malformed journal key");
      if (out.events.size() == limit) {
        out.more = true;
        break;
      }
      JournalEntry e;
      KCACHE_RETURN_IF_ERROR(DecodeJournalEntry(View(it->value()), &e)
                                 .WithContext(where + " at " + std::to_string(*rv)));
      KCACHE_RETURN_IF_ERROR(OpenJournalEntry(keyring.get(), ks, *rv, &e));
      JournalEvent ev;
      ev.type = e.type;
      ev.key = e.key;
      ev.resource_version = std::to_string(*rv);
      auto parse = [&](std::string_view json, ObjectPtr* obj) -> Status {
        StatusOr<ObjectPtr> parsed = Object::ParseTrusted(json);
        if (!parsed.ok()) {
          return Status::Corruption(where + ": journal entry " + ev.resource_version + ": " +
                                    std::string(parsed.status().message()));
        }
        *obj = std::move(parsed).value();
        return Status::OK();
      };
      KCACHE_RETURN_IF_ERROR(parse(e.json, &ev.object));
      if (!e.previous.empty()) KCACHE_RETURN_IF_ERROR(parse(e.previous, &ev.previous));
      out.events.push_back(std::move(ev));
      reached = *rv;
    }
    KCACHE_RETURN_IF_ERROR(FromRocks(it->status(), "read journal of " + std::string(ks)));
  }
  if (!out.more && resume) {
    if (std::optional<uint64_t> r = ParseCanonicalResourceVersion(*resume))
      reached = std::max(reached, *r);
  }
  out.resource_version = std::to_string(reached);
  return out;
}

Status VerifyJournal(const Db& db, const rocksdb::Snapshot* snapshot, std::string_view ks,
                     std::string_view keyspace_rv) {
  if (!db.journal) return Status::OK();
  auto fail = [&](const std::string& what) {
    return Status::Corruption("keyspace " + std::string(ks) + ": journal: " + what);
  };
  rocksdb::ReadOptions ro;
  ro.snapshot = snapshot;
  KCACHE_ASSIGN_OR_RETURN(
      std::optional<std::string> record,
      GetOptional(db, ro, db.journal, JournalStateKey(ks), "verify journal of " + std::string(ks)));
  JournalStats state;
  if (record) {
    StatusOr<JournalStats> decoded = DecodeJournalState(*record);
    if (!decoded.ok()) return fail(std::string(decoded.status().message()));
    state = *std::move(decoded);
  }
  std::optional<uint64_t> start = ParseCanonicalResourceVersion(state.start);
  std::optional<uint64_t> resume = ParseCanonicalResourceVersion(keyspace_rv);
  KeyRange range = EntryRange(ks);
  rocksdb::Slice upper(range.limit);
  ro.iterate_upper_bound = &upper;
  std::unique_ptr<rocksdb::Iterator> it(db.db->NewIterator(ro, db.journal));
  uint64_t events = 0, bytes = 0;
  for (it->Seek(range.start); it->Valid(); it->Next()) {
    std::optional<uint64_t> rv = EntryVersion(ks, View(it->key()));
    if (!rv) return fail("malformed key");
    std::string at = "entry " + std::to_string(*rv);
    if (!start || *rv <= *start)
      return fail(at + " is not after the start \"" + state.start + "\"");
    if (resume && *rv > *resume) {
      return fail(at + " is after the resume point " + std::string(keyspace_rv));
    }
    JournalEntry e;
    if (Status st = DecodeJournalEntry(View(it->value()), &e); !st.ok()) {
      return fail(at + ": " + std::string(st.message()));
    }
    ++events;
    bytes += it->key().size() + it->value().size();
  }
  KCACHE_RETURN_IF_ERROR(FromRocks(it->status(), "verify journal of " + std::string(ks)));
  if (events != state.events || bytes != state.bytes) {
    return fail("the state says " + std::to_string(state.events) + " entries of " +
                std::to_string(state.bytes) + " bytes, found " + std::to_string(events) + " of " +
                std::to_string(bytes));
  }
  return Status::OK();
}

Status JournalWriter::Load(std::string_view keyspace_rv) {
  if (!db_->journal) return Status::OK();
  const std::string what = "load journal of " + ks_;
  KCACHE_ASSIGN_OR_RETURN(std::optional<std::string> record,
                          GetOptional(*db_, {}, db_->journal, JournalStateKey(ks_), what));
  KeyRange range = EntryRange(ks_);
  if (!enabled()) {
    // A journal left by a writer with the journal on would go stale.
    if (record) {
      rocksdb::WriteBatch batch;
      batch.DeleteRange(db_->journal, range.start, range.limit);
      batch.Delete(db_->journal, JournalStateKey(ks_));
      KCACHE_RETURN_IF_ERROR(FromRocks(db_->Write(&batch), what));
    }
    return Status::OK();
  }
  recorded_ = record.has_value();
  if (record) {
    StatusOr<JournalStats> state = DecodeJournalState(*record);
    if (!state.ok()) return state.status().WithContext("keyspace " + ks_);
    state_ = *std::move(state);
  } else {
    state_ = JournalStats{std::string(keyspace_rv), 0, 0};
  }
  floor_ = std::max(ParseCanonicalResourceVersion(state_.start).value_or(0),
                    ParseCanonicalResourceVersion(keyspace_rv).value_or(0));
  head_.reset();
  if (state_.events > 0) {
    rocksdb::Slice lower(range.start), upper(range.limit);
    rocksdb::ReadOptions ro;
    ro.iterate_lower_bound = &lower;
    ro.iterate_upper_bound = &upper;
    std::unique_ptr<rocksdb::Iterator> it(db_->db->NewIterator(ro, db_->journal));
    it->SeekToFirst();
    if (it->Valid()) {
      JournalEntry e;
      KCACHE_RETURN_IF_ERROR(
          DecodeJournalEntry(View(it->value()), &e).WithContext("keyspace " + ks_));
      head_ = e.time_ms;
    }
    it->SeekToLast();
    if (it->Valid()) {
      std::optional<uint64_t> last = EntryVersion(ks_, View(it->key()));
      if (!last) return Status::Corruption("keyspace " + ks_ + ": malformed journal key");
      floor_ = std::max(floor_, *last);
    }
    KCACHE_RETURN_IF_ERROR(FromRocks(it->status(), what));
  }
  return Status::OK();
}

JournalWriter::Pending JournalWriter::Begin() const {
  Pending p;
  p.state = state_;
  p.floor = floor_;
  p.head = head_;
  p.start_ok = ParseCanonicalResourceVersion(state_.start).has_value();
  return p;
}

Status JournalWriter::Append(Pending* p, rocksdb::WriteBatch* batch, JournalEvent::Type type,
                             std::string_view key, std::string_view rv, std::string_view json,
                             std::string_view previous, int64_t now_ms) const {
  if (!enabled() || p->reset) return Status::OK();
  std::optional<uint64_t> v = ParseCanonicalResourceVersion(rv);
  if (!v || *v <= p->floor || !p->start_ok) {
    p->reset = true;
    return Status::OK();
  }
  std::string sealed_previous, sealed_json;
  if (sealed_) {
    const std::shared_ptr<const Keyring> keyring = db_->keyring();
    const std::string context = JournalSealContext(ks_, *v, key);
    if (!previous.empty()) {
      KCACHE_ASSIGN_OR_RETURN(sealed_previous,
                              keyring->Seal(previous, EntryContext(context, true)));
      previous = sealed_previous;
    }
    KCACHE_ASSIGN_OR_RETURN(sealed_json, keyring->Seal(json, EntryContext(context, false)));
    json = sealed_json;
  }
  // The objects go into the batch as parts: no copy of them here.
  std::string header = EncodeJournalEntryHeader(type, now_ms, key, previous.size(), sealed_);
  std::string k = JournalEntryKey(ks_, *v);
  rocksdb::Slice key_part(k);
  rocksdb::Slice parts[3] = {header, rocksdb::Slice(previous.data(), previous.size()),
                             rocksdb::Slice(json.data(), json.size())};
  batch->Put(db_->journal, rocksdb::SliceParts(&key_part, 1), rocksdb::SliceParts(parts, 3));
  p->state.events += 1;
  p->state.bytes += k.size() + header.size() + previous.size() + json.size();
  p->floor = *v;
  if (!p->head) p->head = now_ms;
  p->changed = true;
  return Status::OK();
}

Status JournalWriter::Seal(Pending* p, rocksdb::WriteBatch* batch, std::string_view resume,
                           int64_t now_ms) const {
  if (!enabled()) return Status::OK();
  std::optional<uint64_t> r = ParseCanonicalResourceVersion(resume);
  if (p->reset) {
    KeyRange range = EntryRange(ks_);
    if (p->state.events > 0) batch->DeleteRange(db_->journal, range.start, range.limit);
    JournalStats fresh{r ? std::string(resume) : "", 0, 0};
    p->changed = !recorded_ || p->state.events > 0 || p->state.start != fresh.start;
    p->state = std::move(fresh);
    p->floor = r.value_or(0);
    p->head.reset();
  } else {
    if (r) p->floor = std::max(p->floor, *r);
    KCACHE_RETURN_IF_ERROR(Trim(p, batch, now_ms));
  }
  if (p->changed) batch->Put(db_->journal, JournalStateKey(ks_), EncodeJournalState(p->state));
  return Status::OK();
}

Status JournalWriter::Trim(Pending* p, rocksdb::WriteBatch* batch, int64_t now_ms) const {
  const JournalOptions& o = db_->options.journal;
  const int64_t max_age = o.max_age.count();
  const bool over_events = p->state.events > o.max_events;
  const bool over_bytes = p->state.bytes > o.max_bytes;
  const bool too_old = p->head && now_ms - *p->head > max_age;
  if (!over_events && !over_bytes && !too_old) return Status::OK();
  const size_t keep_events = over_events ? o.max_events / 10 * 9 : o.max_events;
  const size_t keep_bytes = over_bytes ? o.max_bytes / 10 * 9 : o.max_bytes;
  std::optional<uint64_t> start = ParseCanonicalResourceVersion(p->state.start);
  if (!start) return Status::Internal("keyspace " + ks_ + ": journal entries without a start");
  // Only stored entries are visible here; this commit's own are kept.
  KeyRange range = EntryRange(ks_);
  rocksdb::Slice upper(range.limit);
  rocksdb::ReadOptions ro;
  ro.iterate_upper_bound = &upper;
  std::unique_ptr<rocksdb::Iterator> it(db_->db->NewIterator(ro, db_->journal));
  std::optional<uint64_t> last_removed;
  p->head.reset();
  for (it->Seek(JournalEntryKey(ks_, *start + 1)); it->Valid(); it->Next()) {
    JournalEntry e;
    KCACHE_RETURN_IF_ERROR(
        DecodeJournalEntry(View(it->value()), &e).WithContext("keyspace " + ks_));
    if (p->state.events <= keep_events && p->state.bytes <= keep_bytes &&
        now_ms - e.time_ms <= max_age) {
      p->head = e.time_ms;
      break;
    }
    last_removed = EntryVersion(ks_, View(it->key()));
    if (!last_removed) return Status::Corruption("keyspace " + ks_ + ": malformed journal key");
    p->state.events -= 1;
    p->state.bytes -= std::min<uint64_t>(p->state.bytes, it->key().size() + it->value().size());
  }
  KCACHE_RETURN_IF_ERROR(FromRocks(it->status(), "trim journal of " + ks_));
  if (!p->head && p->state.events > 0) p->head = now_ms;  // only this commit's entries remain
  if (last_removed) {
    std::string end = *last_removed == std::numeric_limits<uint64_t>::max()
                          ? range.limit
                          : JournalEntryKey(ks_, *last_removed + 1);
    batch->DeleteRange(db_->journal, range.start, end);
    p->state.start = std::to_string(*last_removed);
    p->changed = true;
  }
  return Status::OK();
}

void JournalWriter::Committed(Pending p) {
  state_ = std::move(p.state);
  floor_ = p.floor;
  head_ = p.head;
  recorded_ = recorded_ || p.changed;
}

}  // namespace kcache::storage
