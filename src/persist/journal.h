// SPDX-License-Identifier: Apache-2.0

// The change journal of a cache's keyspaces (include/kcache/journal.h):
// its keys and records, the reader, and the writer a keyspace's indexer
// drives from its commits.

#ifndef KCACHE_SRC_PERSIST_JOURNAL_H_
#define KCACHE_SRC_PERSIST_JOURNAL_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "kcache/journal.h"
#include "kcache/status_or.h"
#include "persist/db.h"

namespace rocksdb {
class WriteBatch;
}

namespace kcache::storage {

// The state record's key: ks + \0.
std::string JournalStateKey(std::string_view ks);
// An entry's key: ks + \0 + big-endian 64-bit resourceVersion.
std::string JournalEntryKey(std::string_view ks, uint64_t rv);

// The state record: 0x01 + varint32(len(start)) + start + varint64(events)
// + varint64(bytes).
std::string EncodeJournalState(const JournalStats& state);
StatusOr<JournalStats> DecodeJournalState(std::string_view record);

// An entry: 0x01 + type (1 added, 2 modified, 3 deleted) + varint64(Unix
// milliseconds) + varint32(len(key)) + key + varint32(len(previous)) +
// previous + json. In a sealed keyspace the version is 0x02 and previous
// (unless empty) and json are each sealed, bound to the entry's keyspace,
// resourceVersion and key and to which of the two it is.
std::string EncodeJournalEntry(JournalEvent::Type type, int64_t time_ms, std::string_view key,
                               std::string_view previous, std::string_view json);
// An entry's fields; views into its record.
struct JournalEntry {
  JournalEvent::Type type;
  int64_t time_ms;
  std::string_view key, previous, json;
  bool sealed = false;                       // previous and json are sealed, until OpenJournalEntry
  std::string opened_previous, opened_json;  // what they view once opened
};
// Splits an entry; Corruption naming the field if malformed.
Status DecodeJournalEntry(std::string_view record, JournalEntry* out);
// Opens a sealed entry's objects (entry `rv` of `ks`) in place; nothing for
// a plain one. FailedPrecondition without a keyring or a locked one,
// Corruption for what does not open.
Status OpenJournalEntry(const Keyring* keyring, std::string_view ks, uint64_t rv, JournalEntry* e);
// The entry without its objects: everything up to varint32(len(previous)).
std::string EncodeJournalEntryHeader(JournalEvent::Type type, int64_t time_ms, std::string_view key,
                                     size_t previous_size, bool sealed);

// The journal's state as of `snapshot` (null: the current view). Without a
// state record (the journal is off, or nothing was journaled yet), the
// window starts at the keyspace's resume point `keyspace_rv`.
StatusOr<JournalStats> ReadJournalStats(const Db& db, const rocksdb::Snapshot* snapshot,
                                        std::string_view ks, std::string_view keyspace_rv);

// The checks every Cache::ReadJournal makes first: `after` as a number;
// InvalidArgument for a limit of 0 or an `after` the journal cannot order.
StatusOr<uint64_t> CheckJournalRead(std::string_view ks, std::string_view after, size_t limit);
// The Expired error of a read after `after`, older than the window that
// starts at `start` ("": the keyspace keeps no window).
Status JournalExpired(std::string_view ks, std::string_view after, std::string_view start);

// Cache::ReadJournal over `snapshot` (null: the current view).
StatusOr<JournalRead> ReadJournal(const Db& db, const rocksdb::Snapshot* snapshot,
                                  std::string_view ks, std::string_view after, size_t limit);

// Cross-checks a keyspace's journal: entries above the start and at most
// the resume point, counts and bytes as recorded.
Status VerifyJournal(const Db& db, const rocksdb::Snapshot* snapshot, std::string_view ks,
                     std::string_view keyspace_rv);

// Writes one keyspace's journal from its commits.
//
// Thread-safety: used under the keyspace's writer lock.
class JournalWriter {
 public:
  // One commit's journal writes, between Begin() and Committed().
  struct Pending {
    JournalStats state;
    uint64_t floor = 0;           // entries must be above this
    std::optional<int64_t> head;  // time of the oldest entry, if any
    bool start_ok = false;        // state.start is a version entries can follow
    bool reset = false;           // restart the window at the resume point
    bool changed = false;         // the state record must be written
  };

  JournalWriter(std::shared_ptr<Db> db, std::string ks) : db_(std::move(db)), ks_(std::move(ks)) {}

  // Reads the journal's state; `keyspace_rv` is the keyspace's resume
  // point. With the journal off, removes what an earlier writer left.
  Status Load(std::string_view keyspace_rv);

  bool enabled() const { return db_->options.journal.max_events > 0 && db_->journal; }
  // Seal the objects of entries from now on (the keyspace is sealed).
  void set_sealed(bool sealed) { sealed_ = sealed; }

  Pending Begin() const;
  // Adds one change to `batch` (sealed, in a sealed keyspace). A change
  // that cannot be journaled (its resourceVersion is not above every
  // earlier one) makes the commit restart the window instead. An error
  // (sealing failed) leaves `batch` unusable.
  Status Append(Pending* p, rocksdb::WriteBatch* batch, JournalEvent::Type type,
                std::string_view key, std::string_view rv, std::string_view json,
                std::string_view previous, int64_t now_ms) const;
  // Drops every entry: the window restarts at the commit's resume point (a
  // relist).
  void Reset(Pending* p) const { p->reset = true; }
  // Adds the trimming and the state record to `batch`; `resume` is the
  // resume point the batch commits.
  Status Seal(Pending* p, rocksdb::WriteBatch* batch, std::string_view resume,
              int64_t now_ms) const;
  // The batch was written.
  void Committed(Pending p);

 private:
  // Adds to `batch` the removal of the oldest entries until `p` is within
  // the bounds (down to 90% of a count or byte bound it passed, so that
  // trimming runs once per many commits).
  Status Trim(Pending* p, rocksdb::WriteBatch* batch, int64_t now_ms) const;

  const std::shared_ptr<Db> db_;
  const std::string ks_;
  JournalStats state_;
  uint64_t floor_ = 0;
  std::optional<int64_t> head_;
  bool recorded_ = false;  // a state record exists
  bool sealed_ = false;
};

}  // namespace kcache::storage

#endif  // KCACHE_SRC_PERSIST_JOURNAL_H_
