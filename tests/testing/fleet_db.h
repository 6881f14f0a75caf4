// SPDX-License-Identifier: Apache-2.0

// Test helpers for the fleet feed: the PostgreSQL that
// tests/postgres/with-postgres started, and the comparison of a database's
// rows with a cache at the database's resume points.

#ifndef KCACHE_TESTS_TESTING_FLEET_DB_H_
#define KCACHE_TESTS_TESTING_FLEET_DB_H_

#include <map>
#include <memory>
#include <string>

#include "fleet/pg.h"
#include "kcache/cache.h"
#include "kcache/status_or.h"

namespace kcache::testing {

// $KCACHE_POSTGRES_URL; a test failure (not a skip) when unset.
std::string PostgresUrl();
// $KCACHE_POSTGRES_CTL ARG ("stop" or "start"); its exit code.
int PostgresCtl(const std::string& arg);

// A connection to PostgresUrl(); null (and a test failure) if none.
std::unique_ptr<fleet::PgConn> ConnectDb();

// Empties the database: drops the kcache schema.
void DropFleetSchema(fleet::PgConn& conn);

// One object as compared: "uid@resourceVersion " then its JSON, re-dumped
// (jsonb reorders keys; nlohmann sorts them, so both print alike).
using FleetRows = std::map<std::string, std::string>;  // "ns/name" -> that

// The rows of (cluster, resource); sealed rows as "uid@rv sealed".
StatusOr<FleetRows> DbRows(fleet::PgConn& conn, const std::string& cluster,
                           const std::string& resource);
// The database's resume point of (cluster, resource); "" if none.
StatusOr<std::string> DbResumePoint(fleet::PgConn& conn, const std::string& cluster,
                                    const std::string& resource);

// The objects of `keyspace` of `cache` as they were at resourceVersion
// `rv` (at or before the cache's resume point): the current ones, with the
// journal's changes after `rv` undone. Expired if the journal no longer
// reaches `rv`. A key deleted after `rv` reads "*": there, as what the
// journal does not say (DescribeDiff accepts any row for it).
StatusOr<FleetRows> CacheRowsAt(Cache& cache, const std::string& keyspace, const std::string& rv);

// A one-line account of how `want` and `have` differ ("" if equal).
std::string DescribeDiff(const FleetRows& want, const FleetRows& have);

}  // namespace kcache::testing

#endif  // KCACHE_TESTS_TESTING_FLEET_DB_H_
