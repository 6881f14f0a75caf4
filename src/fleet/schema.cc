// SPDX-License-Identifier: Apache-2.0

#include "fleet/schema.h"

#include <charconv>
#include <string>

#include "kcache/fleet.h"

namespace kcache::fleet {
namespace {

// Version 1: clusters, their resources and resume points, and the objects,
// partitioned by cluster. Objects are compressed with LZ4 rather than
// pglz: twice the rows a second in a COPY of pods, for a little more space
// (docs/fleet.md).
constexpr const char* kVersion1 = R"sql(
CREATE SCHEMA IF NOT EXISTS kcache;
CREATE TABLE kcache.schema_version (version integer NOT NULL);
INSERT INTO kcache.schema_version VALUES (0);
CREATE TABLE kcache.clusters (
  id serial UNIQUE,
  name text COLLATE "C" PRIMARY KEY,
  uid text NOT NULL DEFAULT '',
  server text NOT NULL DEFAULT '',
  version text NOT NULL DEFAULT '',
  registered_at timestamptz NOT NULL DEFAULT now(),
  fed_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE kcache.resources (
  cluster text COLLATE "C" NOT NULL REFERENCES kcache.clusters (name) ON DELETE CASCADE,
  resource text COLLATE "C" NOT NULL,
  info jsonb NOT NULL,
  PRIMARY KEY (cluster, resource));
CREATE TABLE kcache.feed_state (
  cluster text COLLATE "C" NOT NULL REFERENCES kcache.clusters (name) ON DELETE CASCADE,
  resource text COLLATE "C" NOT NULL,
  resource_version text NOT NULL,
  fed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (cluster, resource));
CREATE TABLE kcache.objects (
  cluster text COLLATE "C" NOT NULL,
  resource text COLLATE "C" NOT NULL,
  namespace text COLLATE "C" NOT NULL,
  name text COLLATE "C" NOT NULL,
  uid text NOT NULL,
  resource_version text NOT NULL,
  labels jsonb NOT NULL,
  object jsonb COMPRESSION lz4,
  sealed bytea,
  created_at timestamptz,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (cluster, resource, namespace, name)
) PARTITION BY LIST (cluster);
CREATE INDEX objects_by_name ON kcache.objects (resource, name);
)sql";

// Version 2: label queries by index, and a row per change fed (what
// changed in the last hour), kept for the feed's retention.
constexpr const char* kVersion2 = R"sql(
CREATE INDEX objects_by_labels ON kcache.objects USING gin (labels jsonb_path_ops);
CREATE TABLE kcache.changes (
  cluster text COLLATE "C" NOT NULL,
  resource text COLLATE "C" NOT NULL,
  resource_version text NOT NULL,
  namespace text COLLATE "C" NOT NULL,
  name text COLLATE "C" NOT NULL,
  type text NOT NULL CHECK (type IN ('ADDED', 'MODIFIED', 'DELETED')),
  at timestamptz NOT NULL DEFAULT clock_timestamp(),
  PRIMARY KEY (cluster, resource, resource_version, namespace, name)
) PARTITION BY LIST (cluster);
CREATE INDEX changes_by_time ON kcache.changes (cluster, at);
)sql";

Status Step(PgConn& conn, int version) {
  switch (version) {
    case 1:
      return conn.Exec(kVersion1);
    case 2: {
      KCACHE_RETURN_IF_ERROR(conn.Exec(kVersion2));
      // The clusters fed so far get their partitions of the new table.
      KCACHE_ASSIGN_OR_RETURN(PgResult clusters,
                              conn.Query("SELECT id, name FROM kcache.clusters"));
      for (int i = 0; i < clusters.rows(); ++i) {
        int id = 0;
        std::string_view text = clusters.get(i, 0);
        std::from_chars(text.data(), text.data() + text.size(), id);
        const std::string name(clusters.get(i, 1));
        KCACHE_RETURN_IF_ERROR(conn.Exec("CREATE TABLE IF NOT EXISTS kcache.changes_" +
                                         std::to_string(id) +
                                         " PARTITION OF kcache.changes FOR "
                                         "VALUES IN (" +
                                         conn.Literal(name) + ")"));
      }
      return Status::OK();
    }
  }
  return Status::Internal("no schema step to version " + std::to_string(version));
}

}  // namespace

StatusOr<int> SchemaVersion(PgConn& conn) {
  KCACHE_ASSIGN_OR_RETURN(PgResult exists,
                          conn.Query("SELECT to_regclass('kcache.schema_version') IS NOT NULL"));
  if (exists.get(0, 0) != "t") return 0;
  KCACHE_ASSIGN_OR_RETURN(PgResult v, conn.Query("SELECT version FROM kcache.schema_version"));
  if (v.rows() != 1) {
    return Status::Corruption("postgres: kcache.schema_version holds " + std::to_string(v.rows()) +
                              " rows, not one");
  }
  int version = 0;
  std::string_view text = v.get(0, 0);
  std::from_chars(text.data(), text.data() + text.size(), version);
  return version;
}

Status UpgradeSchema(PgConn& conn, int target) {
  for (;;) {
    KCACHE_RETURN_IF_ERROR(conn.Exec("BEGIN"));
    Status st = [&]() -> Status {
      KCACHE_RETURN_IF_ERROR(
          conn.Exec("SELECT pg_advisory_xact_lock(" + std::to_string(kLockClass) + ", 0)"));
      KCACHE_ASSIGN_OR_RETURN(int version, SchemaVersion(conn));
      if (version > kFleetSchemaVersion) {
        return Status::Unimplemented("postgres: the kcache schema is at version " +
                                     std::to_string(version) + ", newer than this kcache's " +
                                     std::to_string(kFleetSchemaVersion) + ": upgrade kcache");
      }
      if (version >= target) return Status::Cancelled("");  // done
      KCACHE_RETURN_IF_ERROR(Step(conn, version + 1)
                                 .WithContext("upgrading the kcache schema to version " +
                                              std::to_string(version + 1)));
      return conn.Exec("UPDATE kcache.schema_version SET version = " + std::to_string(version + 1));
    }();
    if (st.code() == StatusCode::kCancelled) return conn.Exec("COMMIT");
    if (!st.ok()) {
      if (conn.alive()) conn.Exec("ROLLBACK").IgnoreError();
      return st;
    }
    KCACHE_RETURN_IF_ERROR(conn.Exec("COMMIT"));
  }
}

Status CreatePartitions(PgConn& conn, int version, int id, const std::string& cluster) {
  const std::string values = " FOR VALUES IN (" + conn.Literal(cluster) + ")";
  KCACHE_RETURN_IF_ERROR(conn.Exec("CREATE TABLE IF NOT EXISTS kcache.objects_" +
                                   std::to_string(id) + " PARTITION OF kcache.objects" + values));
  if (version >= 2) {
    KCACHE_RETURN_IF_ERROR(conn.Exec("CREATE TABLE IF NOT EXISTS kcache.changes_" +
                                     std::to_string(id) + " PARTITION OF kcache.changes" + values));
  }
  return Status::OK();
}

}  // namespace kcache::fleet
