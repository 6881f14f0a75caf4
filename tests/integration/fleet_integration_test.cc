// SPDX-License-Identifier: Apache-2.0

// The fleet against the real kube-apiserver: the real cluster and two
// synthetic ones (kcache serve) fed by `kcache sync --postgres` into one
// PostgreSQL (tests/postgres/with-postgres inside tests/cluster/with-cluster).
// Changes made with kubectl while the sync runs reach the database; at the
// end the database equals each cache at the database's resume points; the
// real cluster is recorded under its kube-system uid; Secrets leave sealed;
// and one query reads all three clusters.

#include <chrono>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "crypto/aead.h"
#include "integration/cluster.h"
#include "testing/command.h"
#include "testing/eventually.h"
#include "testing/fleet_db.h"
#include "testing/status_matchers.h"
#include "testing/temp_dir.h"
#include "util/base64.h"

#include <fstream>

namespace kcache::testing {
namespace {

using ::testing::HasSubstr;

constexpr char kPassword[] = "kcache-fleet-test-password-93ad";

std::string Kubectl(const std::string& args) {
  return "kubectl --kubeconfig " + Cluster::Get().File("kubeconfig") + " " + args + " 2>&1";
}

std::string Psql(fleet::PgConn& db, const std::string& sql) {
  auto r = db.Query(sql);
  EXPECT_OK(r) << sql;
  return r.ok() && r->rows() > 0 ? std::string(r->get(0, 0)) : "";
}

TEST(FleetIntegrationTest, RealAndSyntheticClustersIntoOneDatabase) {
  auto db = ConnectDb();
  ASSERT_NE(db, nullptr);
  DropFleetSchema(*db);
  const std::string ns = Cluster::Get().Namespace("fleet");
  for (int i = 0; i < 5; ++i) {
    CommandResult made = RunCommand(Kubectl("create configmap cm-" + std::to_string(i) + " -n " +
                                            ns + " --from-literal=v=" + std::to_string(i)));
    ASSERT_EQ(made.exit_code, 0) << made.output;
  }
  CommandResult secret = RunCommand(
      Kubectl("create secret generic db -n " + ns + " --from-literal=password=" + kPassword));
  ASSERT_EQ(secret.exit_code, 0) << secret.output;

  TempDir dir;
  const std::string key = dir.Sub("key");
  std::ofstream(key) << Base64Encode(crypto::Key::Generate()->bytes()) << "\n";
  const std::string postgres = " --postgres '" + PostgresUrl() + "'";

  // The synthetic clusters, synced until fed.
  ServeProcess a = StartServe("--listen 127.0.0.1:0 --pods 150 --namespaces 2 --nodes 3 --seed 31");
  ServeProcess b = StartServe("--listen 127.0.0.1:0 --pods 120 --namespaces 2 --nodes 2 --seed 32");
  for (auto [name, server] : {std::pair{"synthetic-a", &a}, std::pair{"synthetic-b", &b}}) {
    CommandResult r =
        RunCommand(KcacheBin() + " sync pods nodes --until-synced --cache " + dir.Sub(name) +
                   " --server " + server->url + postgres + " --cluster " + name + " 2>&1");
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }

  // The real one, live, with its Secrets sealed.
  Background sync = StartCommand(KcacheBin() + " sync configmaps secrets -n " + ns + " --cache " +
                                 dir.Sub("real") + " --kubeconfig " +
                                 Cluster::Get().File("kubeconfig") + " --encryption-key-file " +
                                 key + " --postgres-secrets" + postgres + " --cluster real 2>&1");
  ASSERT_GT(sync.pid, 0);
  auto count = [&](const std::string& where) {
    return Psql(*db, "SELECT count(*) FROM kcache.objects WHERE cluster = 'real' AND " + where);
  };
  CommandResult listed = RunCommand(Kubectl("get configmaps -n " + ns + " --no-headers -o name"));
  ASSERT_EQ(listed.exit_code, 0) << listed.output;
  const std::string on_server =
      std::to_string(std::count(listed.output.begin(), listed.output.end(), '\n'));
  if (!Eventually(
          [&] {
            return count("resource = 'configmaps' AND namespace = '" + ns + "'") == on_server;
          },
          std::chrono::seconds(60))) {
    kill(sync.pid, SIGTERM);
    FAIL() << "the configmaps did not reach the database; the sync's log:\n" << Drain(sync.out);
  }

  // Changes while the sync runs.
  ASSERT_EQ(
      RunCommand(Kubectl("create configmap late -n " + ns + " --from-literal=v=late")).exit_code,
      0);
  ASSERT_EQ(RunCommand(Kubectl("label configmap cm-1 -n " + ns + " tier=gold")).exit_code, 0);
  ASSERT_EQ(RunCommand(Kubectl("delete configmap cm-2 -n " + ns)).exit_code, 0);
  EXPECT_TRUE(Eventually(
      [&] {
        return count("name = 'late'") == "1" && count("name = 'cm-2'") == "0" &&
               count("labels @> '{\"tier\": \"gold\"}'") == "1";
      },
      std::chrono::seconds(60)));
  EXPECT_EQ(Psql(*db,
                 "SELECT count(*) FROM kcache.changes WHERE cluster = 'real' AND name IN "
                 "('late', 'cm-1', 'cm-2') AND type IN ('ADDED', 'MODIFIED', 'DELETED')"),
            "3");
  EXPECT_EQ(Stop(sync, SIGTERM), 0);

  // Each cache and the database agree at the database's resume points.
  for (auto [name, keyspaces] :
       {std::pair<std::string, std::vector<std::string>>{"real", {"configmaps"}},
        {"synthetic-a", {"pods", "nodes"}},
        {"synthetic-b", {"pods", "nodes"}}}) {
    auto cache = Cache::OpenReadOnly(dir.Sub(name));
    ASSERT_OK(cache);
    for (const std::string& ks : keyspaces) {
      auto rv = DbResumePoint(*db, name, ks);
      ASSERT_OK(rv);
      auto stats = (*cache)->Stats(ks);
      ASSERT_OK(stats);
      EXPECT_EQ(*rv, stats->resource_version) << name << " " << ks;
      auto want = CacheRowsAt(**cache, ks, *rv);
      ASSERT_OK(want);
      auto have = DbRows(*db, name, ks);
      ASSERT_OK(have);
      EXPECT_EQ(DescribeDiff(*want, *have), "") << name << " " << ks;
    }
  }

  // The real cluster under its identity.
  CommandResult uid = RunCommand(Kubectl("get namespace kube-system -o jsonpath={.metadata.uid}"));
  ASSERT_EQ(uid.exit_code, 0);
  EXPECT_EQ(Psql(*db, "SELECT uid FROM kcache.clusters WHERE name = 'real'"), uid.output);
  EXPECT_EQ(Psql(*db, "SELECT count(*) FROM kcache.clusters"), "3");

  // Secrets: sealed bytes only.
  EXPECT_EQ(count("resource = 'secrets' AND name = 'db' AND object IS NULL AND sealed IS NOT NULL"),
            "1");
  EXPECT_EQ(Psql(*db, "SELECT count(*) FROM kcache.objects WHERE object::text LIKE '%" +
                          Base64Encode(kPassword) + "%' OR encode(sealed, 'escape') LIKE '%" +
                          Base64Encode(kPassword) + "%'"),
            "0");

  // One query across the fleet.
  CommandResult cms =
      RunCommand(KcacheBin() + " get configmaps -n " + ns + " --cluster real" + postgres + " 2>&1");
  EXPECT_EQ(cms.exit_code, 0) << cms.output;
  EXPECT_THAT(cms.output, HasSubstr("real      late"));
  CommandResult nodes =
      RunCommand(KcacheBin() + " get nodes --all-clusters --no-headers" + postgres + " 2>&1");
  EXPECT_EQ(nodes.exit_code, 0) << nodes.output;
  size_t lines = std::count(nodes.output.begin(), nodes.output.end(), '\n');
  EXPECT_EQ(lines, 5u) << nodes.output;
  EXPECT_EQ(
      Psql(*db, "SELECT string_agg(DISTINCT cluster, ',' ORDER BY cluster) FROM kcache.objects"),
      "real,synthetic-a,synthetic-b");
}

}  // namespace
}  // namespace kcache::testing
