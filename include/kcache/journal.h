// SPDX-License-Identifier: Apache-2.0

// The change journal of a Cache: every commit to a keyspace also appends
// its changes (type, key, resourceVersion and objects) in the same RocksDB
// WriteBatch, so that a reader can follow a keyspace from any
// resourceVersion inside the journal's window, as a watch of the API server
// does, also after either side restarts.
//
// The window: the journal holds every change after its start
// resourceVersion, up to the keyspace's resume point. Old entries are
// trimmed on commit when a bound is passed; a relist (Replace) drops them
// all, since a list says what is, not what happened, and the window then
// starts at the list's resourceVersion. A reader asking for changes after a
// resourceVersion older than the start gets Expired, as a watch gets 410
// Gone, and must list again.
//
// The journal compares resourceVersions as unsigned decimal integers (the
// API server's etcd revisions). A change whose resourceVersion is not one,
// or is not above every earlier one, cannot be journaled: that commit
// restarts the window at its resume point.
//
// The layout is specified in docs/storage-format.md.
//
// Thread-safety: these are plain values; the journal itself is read and
// written through Cache, which is thread-safe, and a commit's changes are
// appended in that commit's one atomic write.

#ifndef KCACHE_JOURNAL_H_
#define KCACHE_JOURNAL_H_

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "kcache/export.h"
#include "kcache/object.h"

namespace kcache {

// Bounds of each keyspace's journal (CacheOptions::journal). A commit
// trims the oldest entries until the journal is within every bound again;
// it never trims its own entries, so one large commit may exceed a bound
// until the next.
struct KCACHE_EXPORT JournalOptions {
  // Changes kept. 0 turns the journal off: readers can then follow a
  // keyspace only from its current resume point. Default: 100,000.
  size_t max_events = 100000;
  // Bytes of entries kept (keys and values, before compression).
  // Default: 64 MiB.
  size_t max_bytes = size_t{64} << 20;
  // Entries older than this (by CacheOptions::wall_clock) are trimmed.
  // Default: 1 hour.
  std::chrono::milliseconds max_age = std::chrono::hours(1);
};

// One journaled change.
struct KCACHE_EXPORT JournalEvent {
  enum class Type { kAdded, kModified, kDeleted };
  Type type = Type::kAdded;
  std::string key{};
  // The change's resourceVersion; strictly increasing within a keyspace.
  std::string resource_version{};
  // The object after the change; for kDeleted its last state (the deleted
  // object as the watch reported it, else as it was stored).
  ObjectPtr object{};
  // kModified: the object before the change (a reader filtering by
  // selector needs it to turn a change that leaves its selection into a
  // deletion); null otherwise.
  ObjectPtr previous{};
};

// The result of Cache::ReadJournal.
struct KCACHE_EXPORT JournalRead {
  // The changes after the requested resourceVersion, oldest first.
  std::vector<JournalEvent> events{};
  // Where to read on from: the last event's resourceVersion if the limit
  // cut the read (`more`), else the later of the requested resourceVersion
  // and the keyspace's resume point (which moves also without changes,
  // e.g. on watch bookmarks).
  std::string resource_version{};
  bool more = false;
};

// The state of one keyspace's journal (KeyspaceStats::journal).
struct KCACHE_EXPORT JournalStats {
  // Changes after this resourceVersion are all in the journal; "" if the
  // keyspace has no usable window.
  std::string start{};
  size_t events = 0;
  size_t bytes = 0;
};

}  // namespace kcache

#endif  // KCACHE_JOURNAL_H_
