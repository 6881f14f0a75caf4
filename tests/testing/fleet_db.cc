// SPDX-License-Identifier: Apache-2.0

#include "testing/fleet_db.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace kcache::testing {
namespace {

std::string Normal(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  return j.is_discarded() ? "unparsable: " + std::string(text) : j.dump();
}

std::string Describe(const Object& o) {
  return o.meta().uid + "@" + o.resource_version() + " " + Normal(o.json());
}

std::string KeyOf(const Object& o) {
  return o.namespace_().empty() ? o.name() : o.namespace_() + "/" + o.name();
}

}  // namespace

std::string PostgresUrl() {
  const char* url = std::getenv("KCACHE_POSTGRES_URL");
  if (!url || !*url) {
    ADD_FAILURE() << "KCACHE_POSTGRES_URL is unset: run under tests/postgres/with-postgres";
    return "";
  }
  return url;
}

int PostgresCtl(const std::string& arg) {
  const char* ctl = std::getenv("KCACHE_POSTGRES_CTL");
  if (!ctl || !*ctl) {
    ADD_FAILURE() << "KCACHE_POSTGRES_CTL is unset: run under tests/postgres/with-postgres";
    return -1;
  }
  return std::system((std::string(ctl) + " " + arg).c_str());
}

std::unique_ptr<fleet::PgConn> ConnectDb() {
  auto conn = fleet::PgConn::Connect(PostgresUrl(), "kcache test");
  if (!conn.ok()) {
    ADD_FAILURE() << conn.status();
    return nullptr;
  }
  return *std::move(conn);
}

void DropFleetSchema(fleet::PgConn& conn) {
  Status st = conn.Exec("DROP SCHEMA IF EXISTS kcache CASCADE");
  EXPECT_TRUE(st.ok()) << st;
}

StatusOr<FleetRows> DbRows(fleet::PgConn& conn, const std::string& cluster,
                           const std::string& resource) {
  KCACHE_ASSIGN_OR_RETURN(
      fleet::PgResult r,
      conn.Query("SELECT namespace, name, uid, resource_version, object::text, sealed IS NOT NULL "
                 "FROM kcache.objects WHERE cluster = $1 AND resource = $2",
                 {cluster, resource}));
  FleetRows rows;
  for (int i = 0; i < r.rows(); ++i) {
    const std::string ns(r.get(i, 0)), name(r.get(i, 1));
    std::string v = std::string(r.get(i, 2)) + "@" + std::string(r.get(i, 3)) + " ";
    v += r.get(i, 5) == "t" ? "sealed" : Normal(r.get(i, 4));
    rows[ns.empty() ? name : ns + "/" + name] = v;
  }
  return rows;
}

StatusOr<std::string> DbResumePoint(fleet::PgConn& conn, const std::string& cluster,
                                    const std::string& resource) {
  KCACHE_ASSIGN_OR_RETURN(fleet::PgResult r,
                          conn.Query("SELECT resource_version FROM kcache.feed_state WHERE "
                                     "cluster = $1 AND resource = $2",
                                     {cluster, resource}));
  return r.rows() == 0 ? std::string() : std::string(r.get(0, 0));
}

StatusOr<FleetRows> CacheRowsAt(Cache& cache, const std::string& keyspace, const std::string& rv) {
  KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Indexer> indexer, cache.OpenKeyspace(keyspace));
  FleetRows rows;
  for (auto it = indexer->NewIterator(); it->Valid(); it->Next()) {
    rows[KeyOf(*it->object())] = Describe(*it->object());
  }
  // Every change after `rv`, undone newest first.
  std::vector<JournalEvent> after;
  std::string from = rv;
  for (;;) {
    KCACHE_ASSIGN_OR_RETURN(JournalRead read, cache.ReadJournal(keyspace, from, 10000));
    for (JournalEvent& e : read.events) after.push_back(std::move(e));
    if (!read.more) break;
    from = read.resource_version;
  }
  for (auto e = after.rbegin(); e != after.rend(); ++e) {
    const std::string key = KeyOf(*e->object);
    switch (e->type) {
      case JournalEvent::Type::kAdded:
        rows.erase(key);
        break;
      case JournalEvent::Type::kModified:
        rows[key] = Describe(*e->previous);
        break;
      case JournalEvent::Type::kDeleted:
        // The journal keeps the deletion's object (the watch's), not the
        // state it ended: the key was there, as what is not known.
        rows[key] = "*";
        break;
    }
  }
  return rows;
}

std::string DescribeDiff(const FleetRows& want, const FleetRows& have) {
  size_t missing = 0, extra = 0, other = 0;
  std::string example;
  for (const auto& [k, v] : want) {
    auto it = have.find(k);
    if (it == have.end()) {
      ++missing;
      if (example.empty()) example = "missing " + k;
    } else if (it->second != v && v != "*") {
      ++other;
      if (example.empty())
        example = k + ": want " + v.substr(0, 200) + ", have " + it->second.substr(0, 200);
    }
  }
  for (const auto& [k, v] : have) {
    if (!want.count(k)) {
      ++extra;
      if (example.empty()) example = "extra " + k;
    }
  }
  if (missing + extra + other == 0) return "";
  return std::to_string(missing) + " missing, " + std::to_string(extra) + " extra, " +
         std::to_string(other) + " different (" + example + ")";
}

}  // namespace kcache::testing
