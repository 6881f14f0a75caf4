// SPDX-License-Identifier: Apache-2.0

// The fleet feed against a real PostgreSQL (tests/postgres/with-postgres):
// a cache written here, fed by FleetFeed, compared row by row with the
// database at the database's resume point; the database stopped and
// started under it, a journal outrun, a relist, an older schema, refusals
// of another cluster under a name and of a second live feed, and sealed
// Secrets.

#include <atomic>
#include <mutex>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "crypto/aead.h"
#include "fleet/schema.h"
#include "kcache/cache.h"
#include "kcache/fleet.h"
#include "testing/fleet_db.h"
#include "testing/objects.h"
#include "testing/status_matchers.h"
#include "testing/temp_dir.h"

namespace kcache::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr auto kWait = std::chrono::seconds(60);

ObjectPtr PodAt(const std::string& ns, const std::string& name, int rv, const std::string& app,
                const std::string& uid = "") {
  return MakeObject(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name +
                    R"(","namespace":")" + ns + R"(","uid":")" + (uid.empty() ? "u-" + name : uid) +
                    R"(","resourceVersion":")" + std::to_string(rv) +
                    R"(","creationTimestamp":"2026-01-02T03:04:05Z","labels":{"app":")" + app +
                    R"("}},"spec":{"nodeName":"node-1"},"status":{"phase":"Running"}})");
}

class FleetFeedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = ConnectDb();
    ASSERT_NE(db_, nullptr);
    DropFleetSchema(*db_);
  }

  std::shared_ptr<Cache> OpenCache(const std::string& dir, const std::string& uid,
                                   CacheOptions options = {}) {
    auto cache = Cache::Open(dir, options);
    EXPECT_OK(cache);
    if (!cache.ok()) return nullptr;
    EXPECT_OK((*cache)->SetClusterInfo({"https://" + uid + ":6443", "v1.20.2", uid}));
    return *cache;
  }

  FleetFeedOptions Options(const std::string& cluster) {
    FleetFeedOptions o;
    o.conninfo = PostgresUrl();
    o.cluster = cluster;
    o.poll = std::chrono::milliseconds(20);
    o.retry_initial = std::chrono::milliseconds(50);
    o.retry_max = std::chrono::milliseconds(300);
    o.lock_wait = std::chrono::milliseconds(1500);
    o.log = [this](const std::string& line) {
      std::lock_guard l(log_mu_);
      log_ += line + "\n";
    };
    return o;
  }

  std::unique_ptr<FleetFeed> StartFeed(const std::string& dir, FleetFeedOptions o) {
    auto feed = FleetFeed::Start(dir, std::move(o));
    EXPECT_OK(feed);
    return feed.ok() ? *std::move(feed) : nullptr;
  }

  std::string Log() {
    std::lock_guard l(log_mu_);
    return log_;
  }

  // The database holds `keyspace` of `cache` exactly as the cache held it
  // at the database's resume point, which is the cache's own.
  void ExpectFed(const std::string& dir, const std::string& cluster, const std::string& keyspace) {
    auto view = Cache::OpenReadOnly(dir);
    ASSERT_OK(view);
    Cache& cache = **view;
    auto rv = DbResumePoint(*db_, cluster, keyspace);
    ASSERT_OK(rv);
    auto stats = cache.Stats(keyspace);
    ASSERT_OK(stats);
    EXPECT_EQ(*rv, stats->resource_version) << keyspace;
    auto want = CacheRowsAt(cache, keyspace, *rv);
    ASSERT_OK(want);
    auto have = DbRows(*db_, cluster, keyspace);
    ASSERT_OK(have);
    EXPECT_EQ(DescribeDiff(*want, *have), "") << keyspace << " at " << *rv;
    EXPECT_EQ(have->size(), stats->objects);
  }

  int64_t Count(const std::string& sql) {
    auto r = db_->Query(sql);
    EXPECT_OK(r);
    return r.ok() && r->rows() == 1 ? std::stoll(std::string(r->get(0, 0))) : -1;
  }

  std::unique_ptr<fleet::PgConn> db_;
  std::mutex log_mu_;
  std::string log_;
};

void Commit(Indexer& store, std::vector<ObjectPtr> put, std::vector<ObjectPtr> del, int rv) {
  Transaction txn;
  for (ObjectPtr& o : put) txn.Update(std::move(o));
  for (ObjectPtr& o : del) txn.Delete(std::move(o));
  txn.resource_version = std::to_string(rv);
  EXPECT_OK(store.Commit(txn, nullptr));
}

// Exactly once: the first copy, then each commit's changes, with the resume
// point in the same transaction; kcache.changes has one row per change.
TEST_F(FleetFeedTest, CopiesThenFollowsTheJournal) {
  TempDir dir;
  auto cache = OpenCache(dir.path(), "uid-a");
  ASSERT_NE(cache, nullptr);
  auto pods = cache->OpenKeyspace("pods");
  ASSERT_OK(pods);
  std::vector<ObjectPtr> first;
  for (int i = 0; i < 300; ++i)
    first.push_back(PodAt("ns-" + std::to_string(i % 3), "p" + std::to_string(i), 10, "web"));
  ASSERT_OK((*pods)->Replace(first, "10").status());

  auto feed = StartFeed(dir.path(), Options("alpha"));
  ASSERT_NE(feed, nullptr);
  ASSERT_OK(feed->WaitCaughtUp(kWait));
  ExpectFed(dir.path(), "alpha", "pods");
  EXPECT_THAT(Log(), HasSubstr("pods: copied 300 objects at resourceVersion 10"));

  // Each change with a resourceVersion of its own, as a watch reports them.
  Commit(**pods, {PodAt("ns-0", "p0", 11, "api"), PodAt("ns-9", "new", 12, "web")},
         {PodAt("ns-1", "p1", 13, "web")}, 13);
  Commit(**pods, {PodAt("ns-0", "p0", 14, "db")}, {}, 14);
  ASSERT_OK(feed->WaitCaughtUp(kWait));
  ExpectFed(dir.path(), "alpha", "pods");
  EXPECT_EQ(Count("SELECT count(*) FROM kcache.changes WHERE cluster = 'alpha'"), 4);
  EXPECT_EQ(Count("SELECT count(*) FROM kcache.changes WHERE type = 'DELETED' AND name = 'p1'"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM kcache.objects WHERE labels @> '{\"app\":\"db\"}'"), 1);
  FleetFeedStats stats = feed->Stats();
  EXPECT_EQ(stats.changes, 4u);
  EXPECT_EQ(stats.copies, 1u) << Log();
  EXPECT_OK(feed->Stop());

  // A restart goes on from the database's resume point: no copy again.
  Commit(**pods, {PodAt("ns-2", "p2", 15, "x")}, {}, 15);
  feed = StartFeed(dir.path(), Options("alpha"));
  ASSERT_OK(feed->WaitCaughtUp(kWait));
  ExpectFed(dir.path(), "alpha", "pods");
  EXPECT_EQ(feed->Stats().copies, 0u);
  EXPECT_EQ(feed->Stats().changes, 1u);
}

// The sync never waits for the database: with PostgreSQL stopped, commits
// go on and the feed retries; started again, the feed catches up from the
// journal.
TEST_F(FleetFeedTest, DatabaseStoppedAndStartedAgain) {
  TempDir dir;
  auto cache = OpenCache(dir.path(), "uid-a");
  auto pods = cache->OpenKeyspace("pods");
  ASSERT_OK(pods);
  ASSERT_OK((*pods)->Replace({PodAt("ns", "a", 5, "web")}, "5").status());
  auto feed = StartFeed(dir.path(), Options("alpha"));
  ASSERT_OK(feed->WaitCaughtUp(kWait));

  ASSERT_EQ(PostgresCtl("stop"), 0);
  for (int rv = 6; rv < 56; ++rv) {
    Commit(**pods, {PodAt("ns", "p" + std::to_string(rv % 7), rv, "v" + std::to_string(rv))}, {},
           rv);
  }
  EXPECT_THAT(feed->WaitCaughtUp(std::chrono::milliseconds(800)),
              StatusIs(StatusCode::kDeadlineExceeded));
  EXPECT_GT(feed->Stats().errors, 0u);
  ASSERT_EQ(PostgresCtl("start"), 0);
  db_ = ConnectDb();
  ASSERT_NE(db_, nullptr);
  ASSERT_OK(feed->WaitCaughtUp(kWait));
  ExpectFed(dir.path(), "alpha", "pods");
  EXPECT_EQ(feed->Stats().copies, 1u);  // the first one only
  EXPECT_THAT(Log(), HasSubstr("retrying; the cache goes on"));
  EXPECT_THAT(Log(), HasSubstr("the database is back"));
}

// A journal outrun while the feed was away, and a relist (which restarts
// the journal): the keyspace is copied again by comparison, and only rows
// whose uid or resourceVersion differ are written.
TEST_F(FleetFeedTest, JournalOutrunAndRelistCopyAgainByComparison) {
  TempDir dir;
  CacheOptions co;
  co.journal.max_events = 10;
  auto cache = OpenCache(dir.path(), "uid-a", co);
  auto pods = cache->OpenKeyspace("pods");
  ASSERT_OK(pods);
  std::vector<ObjectPtr> first;
  for (int i = 0; i < 100; ++i) first.push_back(PodAt("ns", "p" + std::to_string(i), 10, "web"));
  ASSERT_OK((*pods)->Replace(first, "10").status());
  auto feed = StartFeed(dir.path(), Options("alpha"));
  ASSERT_OK(feed->WaitCaughtUp(kWait));
  ASSERT_OK(feed->Stop());

  // 30 changes to 15 pods: the journal keeps the last 10.
  for (int rv = 11; rv <= 40; ++rv)
    Commit(**pods, {PodAt("ns", "p" + std::to_string(rv % 15), rv, "v")}, {}, rv);
  // A pod recreated under its name (another uid, same resourceVersion as
  // the database's row would not tell): written.
  Commit(**pods, {PodAt("ns", "p50", 10, "web", "other-uid")}, {}, 41);
  feed = StartFeed(dir.path(), Options("alpha"));
  ASSERT_OK(feed->WaitCaughtUp(kWait));
  ExpectFed(dir.path(), "alpha", "pods");
  FleetFeedStats stats = feed->Stats();
  EXPECT_EQ(stats.copies, 1u);
  EXPECT_EQ(stats.rows_copied, 16u);
  EXPECT_EQ(stats.rows_unchanged, 84u);
  EXPECT_THAT(Log(), HasSubstr("its journal no longer reaches resourceVersion 10"));

  // A relist: half the pods gone, one changed, the rest as they were.
  std::vector<ObjectPtr> listed;
  for (int i = 0; i < 50; ++i) {
    listed.push_back(i == 3 ? PodAt("ns", "p3", 60, "changed")
                            : *(*pods)->GetByKey("ns/p" + std::to_string(i)));
  }
  ASSERT_OK((*pods)->Replace(listed, "60").status());
  ASSERT_OK(feed->WaitCaughtUp(kWait));
  ExpectFed(dir.path(), "alpha", "pods");
  stats = feed->Stats();
  EXPECT_EQ(stats.copies, 2u);
  EXPECT_EQ(stats.rows_copied, 17u);
  EXPECT_EQ(stats.rows_unchanged, 84u + 49u);
}

// A database at schema version 1 (no changes table, no label index) is
// upgraded by the next feed, its rows kept; a newer one is refused.
TEST_F(FleetFeedTest, UpgradesAnOlderSchemaAndRefusesANewerOne) {
  ASSERT_OK(fleet::UpgradeSchema(*db_, 1));
  ASSERT_OK(db_->Exec(
      "INSERT INTO kcache.clusters (name, uid) VALUES ('old', 'uid-a');"
      "CREATE TABLE kcache.objects_1 PARTITION OF kcache.objects FOR VALUES IN ('old');"
      "INSERT INTO kcache.objects (cluster, resource, namespace, name, uid, resource_version, "
      "labels, object) VALUES ('old', 'pods', 'ns', 'gone', 'u-gone', '3', '{}', '{}');"
      "INSERT INTO kcache.feed_state VALUES ('old', 'pods', '3')"));
  EXPECT_EQ(Count("SELECT (to_regclass('kcache.changes') IS NULL)::int"), 1);
  TempDir dir;
  auto cache = OpenCache(dir.path(), "uid-a");
  auto pods = cache->OpenKeyspace("pods");
  ASSERT_OK((*pods)->Replace({PodAt("ns", "a", 5, "web")}, "5").status());
  auto feed = StartFeed(dir.path(), Options("old"));
  ASSERT_OK(feed->WaitCaughtUp(kWait));
  EXPECT_EQ(Count("SELECT version FROM kcache.schema_version"), kFleetSchemaVersion);
  EXPECT_EQ(Count("SELECT count(*) FROM kcache.changes_1"), 0);
  // resourceVersion 3 is before the cache's journal: copied by comparison.
  ExpectFed(dir.path(), "old", "pods");
  ASSERT_OK(feed->Stop());

  ASSERT_OK(db_->Exec("UPDATE kcache.schema_version SET version = 99"));
  feed = StartFeed(dir.path(), Options("old"));
  EXPECT_THAT(feed->WaitCaughtUp(kWait), StatusIs(StatusCode::kUnimplemented));
  EXPECT_THAT(std::string(feed->Stop().message()),
              HasSubstr("version 99, newer than this kcache's"));
}

// A cluster's name is bound to its identity (kube-system's uid): another
// cluster's cache under it is refused, naming both.
TEST_F(FleetFeedTest, RefusesAnotherClusterUnderATakenName) {
  TempDir a, b;
  auto ca = OpenCache(a.path(), "uid-a");
  auto cb = OpenCache(b.path(), "uid-b");
  ASSERT_OK((*ca->OpenKeyspace("pods"))->Replace({PodAt("ns", "a", 5, "web")}, "5").status());
  ASSERT_OK((*cb->OpenKeyspace("pods"))->Replace({PodAt("ns", "b", 7, "web")}, "7").status());
  auto fa = StartFeed(a.path(), Options("prod"));
  ASSERT_OK(fa->WaitCaughtUp(kWait));
  ASSERT_OK(fa->Stop());
  std::atomic<int> fatal{0};
  FleetFeedOptions o = Options("prod");
  o.on_fatal = [&](const Status&) { ++fatal; };
  auto fb = StartFeed(b.path(), o);
  Status st = fb->WaitCaughtUp(kWait);
  EXPECT_THAT(st, StatusIs(StatusCode::kFailedPrecondition));
  EXPECT_THAT(std::string(st.message()), HasSubstr("uid uid-a"));
  EXPECT_THAT(std::string(st.message()), HasSubstr("uid uid-b"));
  EXPECT_EQ(fatal.load(), 1);
  // Nothing of b's was written under a's name.
  auto rows = DbRows(*db_, "prod", "pods");
  ASSERT_OK(rows);
  EXPECT_EQ(rows->count("ns/a"), 1u);
  EXPECT_EQ(rows->count("ns/b"), 0u);
  // Under a name of its own it is fed beside a.
  auto fb2 = StartFeed(b.path(), Options("staging"));
  ASSERT_OK(fb2->WaitCaughtUp(kWait));
  ExpectFed(b.path(), "staging", "pods");
  EXPECT_EQ(Count("SELECT count(DISTINCT cluster) FROM kcache.objects"), 2);
}

// One live feed per cluster: a second is refused (Busy, naming the first);
// once the first is gone, a successor takes over.
TEST_F(FleetFeedTest, RefusesASecondLiveFeedOfACluster) {
  TempDir dir;
  auto cache = OpenCache(dir.path(), "uid-a");
  auto pods = cache->OpenKeyspace("pods");
  ASSERT_OK((*pods)->Replace({PodAt("ns", "a", 5, "web")}, "5").status());
  auto first = StartFeed(dir.path(), Options("alpha"));
  ASSERT_OK(first->WaitCaughtUp(kWait));
  auto second = StartFeed(dir.path(), Options("alpha"));
  Status st = second->WaitCaughtUp(kWait);
  EXPECT_THAT(st, StatusIs(StatusCode::kBusy));
  EXPECT_THAT(std::string(st.message()), HasSubstr("is being fed by another kcache"));
  EXPECT_THAT(std::string(st.message()), HasSubstr("kcache feed alpha"));
  ASSERT_OK(first->Stop());
  Commit(**pods, {PodAt("ns", "b", 6, "web")}, {}, 6);
  auto third = StartFeed(dir.path(), Options("alpha"));
  ASSERT_OK(third->WaitCaughtUp(kWait));
  ExpectFed(dir.path(), "alpha", "pods");
}

// Secrets are fed only when asked; from a sealed keyspace, only sealed
// bytes leave (under the key-encryption key), and they open to the object.
TEST_F(FleetFeedTest, SecretsOnlyWhenAskedAndSealed) {
  TempDir dir;
  const std::string kek(32, 'k');
  CacheOptions co;
  co.encryption.key_encryption_key = kek;
  auto cache = OpenCache(dir.path(), "uid-a", co);
  auto secrets = cache->OpenKeyspace("secrets");
  ASSERT_OK(secrets);
  ObjectPtr secret = MakeObject(
      R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"db","namespace":"ns","uid":"s1",)"
      R"("resourceVersion":"5","labels":{"app":"db"}},"data":{"password":"aHVudGVyMg=="}})");
  ASSERT_OK((*secrets)->Replace({secret}, "5").status());
  ASSERT_OK((*cache->OpenKeyspace("pods"))->Replace({PodAt("ns", "a", 5, "web")}, "5").status());

  auto feed = StartFeed(dir.path(), Options("alpha"));
  ASSERT_OK(feed->WaitCaughtUp(kWait));
  EXPECT_EQ(Count("SELECT count(*) FROM kcache.objects WHERE resource = 'secrets'"), 0);
  ASSERT_OK(feed->Stop());

  // Asked without the key: not fed, said once, and the rest is fed.
  FleetFeedOptions o = Options("alpha");
  o.include_secrets = true;
  feed = StartFeed(dir.path(), o);
  ASSERT_OK(feed->WaitCaughtUp(kWait));
  EXPECT_THAT(Log(), HasSubstr("secrets: sealed, and the feed was given no key-encryption key"));
  EXPECT_EQ(Count("SELECT count(*) FROM kcache.objects WHERE resource = 'secrets'"), 0);
  ASSERT_OK(feed->Stop());

  o.key_encryption_key = kek;
  feed = StartFeed(dir.path(), o);
  ASSERT_OK(feed->WaitCaughtUp(kWait));
  auto row = db_->Query(
      "SELECT object IS NULL, encode(sealed, 'hex'), labels::text FROM kcache.objects WHERE "
      "resource = 'secrets' AND name = 'db'");
  ASSERT_OK(row);
  ASSERT_EQ(row->rows(), 1);
  EXPECT_EQ(row->get(0, 0), "t");
  EXPECT_EQ(row->get(0, 2), R"({"app": "db"})");
  std::string hex(row->get(0, 1)), sealed;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    sealed += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  EXPECT_THAT(sealed, Not(HasSubstr("aHVudGVyMg==")));
  auto key = crypto::Key::FromBytes(kek);
  ASSERT_OK(key);
  const std::string context =
      std::string("kcache fleet") + '\0' + "alpha" + '\0' + "secrets" + '\0' + "ns" + '\0' + "db";
  auto opened = crypto::Open(*key, sealed, context);
  ASSERT_OK(opened);
  EXPECT_EQ(*opened, secret->json());
  // A sealed keyspace keeps no journal: each change is copied by comparison.
  ObjectPtr changed = MakeObject(
      R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"db","namespace":"ns","uid":"s1",)"
      R"("resourceVersion":"9"},"data":{}})");
  Commit(**secrets, {changed}, {}, 9);
  ASSERT_OK(feed->WaitCaughtUp(kWait));
  EXPECT_EQ(Count("SELECT resource_version::int FROM kcache.objects WHERE resource = 'secrets'"),
            9);
  EXPECT_EQ(Count("SELECT resource_version::int FROM kcache.feed_state WHERE resource = 'secrets'"),
            9);
}

TEST(RedactConninfoTest, NoPasswordSurvives) {
  EXPECT_EQ(RedactConninfo("postgresql://fleet:s3cret@db:5432/kcache"),
            "postgresql://fleet:***@db:5432/kcache");
  EXPECT_EQ(RedactConninfo("postgres://db/kcache?user=x&password=s3cret&sslmode=require"),
            "postgres://db/kcache?user=x&password=***&sslmode=require");
  EXPECT_EQ(RedactConninfo("host=db password='a secret' dbname=k"),
            "host=db password=*** dbname=k");
  EXPECT_EQ(RedactConninfo("host=db password=s3cret"), "host=db password=***");
  EXPECT_EQ(RedactConninfo("postgresql://fleet@db/kcache"), "postgresql://fleet@db/kcache");
}

TEST(DefaultFleetClusterNameTest, HostAndPortWithOnlyNameCharacters) {
  EXPECT_EQ(DefaultFleetClusterName("https://10.0.0.1:6443"), "10.0.0.1-6443");
  EXPECT_EQ(DefaultFleetClusterName("http://api.example.com/prefix"), "api.example.com");
  EXPECT_EQ(DefaultFleetClusterName("https://[::1]:443"), "---1--443");
  EXPECT_EQ(DefaultFleetClusterName(""), "cluster");
}

// A connection error names the database without its password.
TEST(FleetConnectTest, ErrorsNameTheDatabaseWithoutItsPassword) {
  auto conn = fleet::PgConn::Connect(
      "postgresql://fleet:s3cret@127.0.0.1:1/kcache?connect_timeout=2", "test");
  ASSERT_FALSE(conn.ok());
  EXPECT_THAT(conn.status(), StatusIs(StatusCode::kUnavailable));
  EXPECT_THAT(std::string(conn.status().message()), HasSubstr("fleet:***@127.0.0.1:1"));
  EXPECT_THAT(std::string(conn.status().message()), Not(HasSubstr("s3cret")));
}

}  // namespace
}  // namespace kcache::testing
