// SPDX-License-Identifier: Apache-2.0

// The kcache.* schema in PostgreSQL, by version, and the upgrade from any
// earlier version to kFleetSchemaVersion (docs/fleet.md, "Schema").

#ifndef KCACHE_SRC_FLEET_SCHEMA_H_
#define KCACHE_SRC_FLEET_SCHEMA_H_

#include <string>

#include "fleet/pg.h"
#include "kcache/status_or.h"

namespace kcache::fleet {

// The advisory lock keys kcache takes: (kLockClass, 0) while the schema
// or the clusters' partitions change (a transaction's), and (kLockClass,
// cluster id) for the session of the one feed of a cluster.
inline constexpr int kLockClass = 0x6b63;  // "kc"

// The version the database holds; 0 where there is no kcache schema.
StatusOr<int> SchemaVersion(PgConn& conn);

// Brings the schema to `target` (default: kFleetSchemaVersion), one
// version at a time, each in a transaction under the schema lock, so that
// feeds starting together upgrade once. Unimplemented if the database is
// newer than this library reads.
Status UpgradeSchema(PgConn& conn, int target);

// The partitions of cluster `id`, named `cluster`, for every partitioned
// table at `version`. Call under the schema lock.
Status CreatePartitions(PgConn& conn, int version, int id, const std::string& cluster);

}  // namespace kcache::fleet

#endif  // KCACHE_SRC_FLEET_SCHEMA_H_
