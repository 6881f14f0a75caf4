// SPDX-License-Identifier: Apache-2.0

// What a cache's rows say of its keyspaces: which there are, each one's
// recorded state (Cache::Stats), and the cross-checks of Cache::Verify.
// Above the database (db.h) and the journal (journal.h), which know
// nothing of each other.

#ifndef KCACHE_SRC_PERSIST_KEYSPACES_H_
#define KCACHE_SRC_PERSIST_KEYSPACES_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kcache/cache.h"
#include "kcache/status_or.h"
#include "persist/db.h"

namespace kcache::storage {

// Keyspaces that hold a resume point or objects, sorted, as of `snapshot`
// (null: the current state).
StatusOr<std::vector<std::string>> ListKeyspaces(const Db& db, const rocksdb::Snapshot* snapshot);

// A keyspace's meta records (everything of KeyspaceStats but bytes_on_disk)
// as of `snapshot` (null: the current state).
StatusOr<KeyspaceStats> ReadKeyspaceMeta(const Db& db, const rocksdb::Snapshot* snapshot,
                                         std::string_view ks);

// Every object, reverse index and index row belongs to a keyspace that has
// metadata (Cache::Verify).
Status VerifyRowsHaveKeyspaces(const std::shared_ptr<Db>& db);

// Structural checks of one keyspace (Cache::Verify).
Status VerifyKeyspace(const std::shared_ptr<Db>& db, std::string_view ks);

}  // namespace kcache::storage

#endif  // KCACHE_SRC_PERSIST_KEYSPACES_H_
