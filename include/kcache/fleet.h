// SPDX-License-Identifier: Apache-2.0

// The fleet feed: mirrors a cache into PostgreSQL, exactly once, so that
// one database holds the objects of many clusters (one feed per cluster,
// each from its own cache and machine).
//
// The feed reads the cache (its own read-only view of the directory, so
// that the writer never waits for the database) and follows each
// keyspace's change journal from the resume point the database records
// for it. Each transaction writes a run of changes and moves that resume
// point, so after a crash at any instant the database equals the cache at
// the database's resume points: no change lost, none applied twice. When
// the journal no longer reaches a resume point (outrun while the database
// was away, or restarted by a relist), the feed copies the keyspace again,
// rewriting only the rows whose uid or resourceVersion differ, in one
// transaction.
//
// The schema (kcache.*), its versions and the queries it serves are in
// docs/fleet.md.
//
// Thread-safety: a FleetFeed runs on one thread of its own; its methods
// may be called from any thread. `log` and `on_fatal` run on that thread,
// under no lock of the feed's.

#ifndef KCACHE_FLEET_H_
#define KCACHE_FLEET_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "kcache/export.h"
#include "kcache/status_or.h"

namespace kcache {

// The version of the kcache.* schema this library writes. A database at
// an older version is upgraded when a feed connects; a newer one is
// refused (Unimplemented).
inline constexpr int kFleetSchemaVersion = 2;

struct KCACHE_EXPORT FleetFeedOptions {
  // Where: a libpq connection string, "postgresql://user@host/db" or
  // "host=... dbname=...". Passwords come from PGPASSWORD or the password
  // file (PGPASSFILE, ~/.pgpass) rather than from here; either way none
  // is ever logged. Required.
  std::string conninfo{};
  // The cluster's name in the database ([A-Za-z0-9._-], at most 63
  // characters). The name is bound to the cluster's identity (its
  // kube-system namespace's uid, as the cache recorded it) on first use;
  // a cache of another cluster is then refused under it. Required.
  std::string cluster{};
  // Feed Secrets ("secrets") too. Default: false.
  bool include_secrets = false;
  // The cache's key-encryption key (EncryptionOptions), needed to feed its
  // sealed keyspaces: their objects leave the process sealed under this
  // key (the `sealed` column; docs/fleet.md says how to open one), never in
  // the clear. Default: empty (a sealed keyspace cannot be fed).
  std::string key_encryption_key{};
  // Journal changes per transaction. Default: 2,000.
  size_t batch = 2000;
  // How often the cache is looked at for new commits. Default: 100 ms.
  std::chrono::milliseconds poll{100};
  // Between tries to reach the database; doubles up to the maximum.
  // Defaults: 200 ms to 5 s.
  std::chrono::milliseconds retry_initial{200};
  std::chrono::milliseconds retry_max{5000};
  // kcache.changes keeps a row per change fed for this long. Default: 24 h.
  std::chrono::milliseconds changes_retention = std::chrono::hours(24);
  // How long to wait for another feed of the same cluster to let go (a
  // killed predecessor's session, until PostgreSQL notices) before the
  // feed is refused with Busy. Default: 15 s.
  std::chrono::milliseconds lock_wait{15000};
  // Block cache of the feed's read-only view. Default: 8 MiB.
  size_t block_cache_bytes = size_t{8} << 20;
  // One line per state change: copies, re-copies and why, the database
  // lost and regained. Optional.
  std::function<void(const std::string& line)> log{};
  // Called once if the feed stops for good: a refusal (another cluster
  // under the name, another live feed of it, a newer schema) that retrying
  // cannot end. Optional.
  std::function<void(const Status& error)> on_fatal{};
};

struct KCACHE_EXPORT FleetFeedStats {
  bool connected = false;
  uint64_t transactions = 0;    // committed
  uint64_t changes = 0;         // journal changes fed
  uint64_t copies = 0;          // keyspaces copied (first copies and re-copies)
  uint64_t rows_copied = 0;     // rows written by copies
  uint64_t rows_unchanged = 0;  // rows a re-copy found equal and left alone
  uint64_t errors = 0;          // failed rounds (the database away, included)
};

class KCACHE_EXPORT FleetFeed {
 public:
  // Starts feeding the cache in `cache_dir` (which a writer may hold open:
  // the feed reads it as Cache::OpenReadOnly does) to the database.
  // InvalidArgument for bad options. The database need not be reachable:
  // the feed retries until it is.
  static StatusOr<std::unique_ptr<FleetFeed>> Start(const std::string& cache_dir,
                                                    FleetFeedOptions options);
  // Stops, as Stop() does.
  virtual ~FleetFeed() = default;

  // Stops the feed and waits for its thread; a transaction under way is
  // rolled back. Returns the fatal error, if the feed stopped of one.
  virtual Status Stop() = 0;

  // Blocks until a whole round, begun after this call, found the database
  // at the cache's resume point for every keyspace it feeds (what was
  // committed to the cache before the call is in the database), or until
  // `timeout`: DeadlineExceeded, naming what was left. The fatal error if
  // the feed stopped.
  virtual Status WaitCaughtUp(std::chrono::milliseconds timeout) = 0;

  virtual FleetFeedStats Stats() const = 0;
};

// The name a cluster at `server` ("https://10.0.0.1:6443") is given when
// none is: its host and port, every character a name cannot hold as '-'
// ("10.0.0.1-6443").
KCACHE_EXPORT std::string DefaultFleetClusterName(const std::string& server);

// A connection string with its password (URI or key=value form) replaced
// by "***", for logs and errors.
KCACHE_EXPORT std::string RedactConninfo(const std::string& conninfo);

}  // namespace kcache

#endif  // KCACHE_FLEET_H_
