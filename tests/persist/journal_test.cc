// SPDX-License-Identifier: Apache-2.0

// The change journal: what commits append, how a reader follows it, the
// window's bounds, relists, restarts and upgrades of version 1 caches.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <rocksdb/db.h>

#include "kcache/cache.h"
#include "persist/encoding.h"
#include "testing/objects.h"
#include "testing/status_matchers.h"
#include "testing/temp_dir.h"

namespace kcache::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Type = JournalEvent::Type;

std::shared_ptr<Cache> OpenCache(const std::string& dir, CacheOptions options = {}) {
  auto cache = Cache::Open(dir, options);
  EXPECT_OK(cache) << cache.status();
  return cache.ok() ? *cache : nullptr;
}

std::shared_ptr<Indexer> OpenPods(const std::shared_ptr<Cache>& cache) {
  auto store = cache->OpenKeyspace("pods");
  EXPECT_OK(store) << store.status();
  return store.ok() ? *store : nullptr;
}

// "TYPE key@rv" for each event, with "<-rv" for a previous object.
std::vector<std::string> Describe(const JournalRead& read) {
  std::vector<std::string> out;
  for (const JournalEvent& e : read.events) {
    const char* type = e.type == Type::kAdded      ? "ADDED"
                       : e.type == Type::kModified ? "MODIFIED"
                                                   : "DELETED";
    std::string s = std::string(type) + " " + e.key + "@" + e.resource_version;
    if (e.object) s += " obj@" + e.object->resource_version();
    if (e.previous) s += " <-" + e.previous->resource_version();
    out.push_back(s);
  }
  return out;
}

JournalRead Read(const Cache& cache, std::string_view after, size_t limit = 1000) {
  auto read = cache.ReadJournal("pods", after, limit);
  EXPECT_OK(read) << read.status();
  return read.ok() ? *read : JournalRead{};
}

void Commit(Indexer& store, std::vector<Transaction::Op> ops,
            std::optional<std::string> rv = std::nullopt) {
  Transaction txn;
  txn.ops = std::move(ops);
  txn.resource_version = std::move(rv);
  EXPECT_OK(store.Commit(txn, nullptr));
}

Transaction::Op Put(ObjectPtr o) { return {Transaction::OpType::kUpdate, std::move(o), {}}; }
Transaction::Op Del(ObjectPtr o) { return {Transaction::OpType::kDelete, std::move(o), {}}; }

// Invariant 1 (one WriteBatch per commit): each commit's changes are in the
// journal with the resume point they moved, objects and previous objects
// included.
TEST(JournalTest, CommitsAppendTheirChanges) {
  TempDir dir;
  auto cache = OpenCache(dir.path());
  auto pods = OpenPods(cache);
  ASSERT_OK(pods->Replace({Pod("a", "ns", "5")}, "5").status());
  Commit(*pods, {Put(Pod("b", "ns", "6"))});
  Commit(*pods, {Put(Pod("a", "ns", "7", {{"app", "x"}})), Del(Pod("b", "ns", "8"))});

  JournalRead all = Read(*cache, "5");
  EXPECT_THAT(Describe(all), ElementsAre("ADDED ns/b@6 obj@6", "MODIFIED ns/a@7 obj@7 <-5",
                                         "DELETED ns/b@8 obj@8"));
  EXPECT_EQ(all.resource_version, "8");
  EXPECT_FALSE(all.more);
  EXPECT_EQ(all.events[1].object->labels().at("app"), "x");
  EXPECT_THAT(Describe(Read(*cache, "7")), ElementsAre("DELETED ns/b@8 obj@8"));
  EXPECT_TRUE(Read(*cache, "8").events.empty());

  auto stats = cache->Stats("pods");
  ASSERT_OK(stats);
  EXPECT_EQ(stats->journal.start, "5");
  EXPECT_EQ(stats->journal.events, 3u);
  EXPECT_GT(stats->journal.bytes, 0u);
  EXPECT_OK(cache->Verify());
}

TEST(JournalTest, DeletingByKeyJournalsTheStoredObject) {
  TempDir dir;
  auto cache = OpenCache(dir.path());
  auto pods = OpenPods(cache);
  ASSERT_OK(pods->Replace({Pod("a", "ns", "5", {{"app", "x"}})}, "5").status());
  Transaction txn;
  txn.DeleteKey("ns/a");
  txn.DeleteKey("ns/absent");  // deletes nothing, journals nothing
  txn.resource_version = "9";
  ASSERT_OK(pods->Commit(txn, nullptr));
  JournalRead read = Read(*cache, "5");
  EXPECT_THAT(Describe(read), ElementsAre("DELETED ns/a@9 obj@5"));
  EXPECT_EQ(read.events[0].object->labels().at("app"), "x");
}

TEST(JournalTest, ALimitCutsTheReadWhereTheNextOneStarts) {
  TempDir dir;
  auto cache = OpenCache(dir.path());
  auto pods = OpenPods(cache);
  ASSERT_OK(pods->Replace({}, "10").status());
  for (int i = 11; i <= 15; ++i)
    Commit(*pods, {Put(Pod("p" + std::to_string(i), "ns", std::to_string(i)))});
  JournalRead first = Read(*cache, "10", 2);
  EXPECT_THAT(Describe(first), ElementsAre("ADDED ns/p11@11 obj@11", "ADDED ns/p12@12 obj@12"));
  EXPECT_TRUE(first.more);
  EXPECT_EQ(first.resource_version, "12");
  JournalRead rest = Read(*cache, first.resource_version, 10);
  EXPECT_EQ(rest.events.size(), 3u);
  EXPECT_FALSE(rest.more);
  EXPECT_EQ(rest.resource_version, "15");
}

TEST(JournalTest, TheResumePointMovesWithoutChanges) {
  TempDir dir;
  auto cache = OpenCache(dir.path());
  auto pods = OpenPods(cache);
  ASSERT_OK(pods->Replace({}, "10").status());
  Commit(*pods, {}, "20");  // a bookmark
  JournalRead read = Read(*cache, "10");
  EXPECT_TRUE(read.events.empty());
  EXPECT_EQ(read.resource_version, "20");
  // A change at or below the resume point cannot be journaled in order:
  // the window restarts at the commit's resume point.
  Commit(*pods, {Put(Pod("late", "ns", "15"))}, "21");
  EXPECT_THAT(cache->ReadJournal("pods", "20", 10), StatusIs(StatusCode::kExpired));
  EXPECT_TRUE(Read(*cache, "21").events.empty());
  Commit(*pods, {Put(Pod("next", "ns", "22"))});
  EXPECT_THAT(Describe(Read(*cache, "21")), ElementsAre("ADDED ns/next@22 obj@22"));
  EXPECT_OK(cache->Verify());
}

TEST(JournalTest, ReadsOutsideTheWindowFailClearly) {
  TempDir dir;
  auto cache = OpenCache(dir.path());
  auto pods = OpenPods(cache);
  ASSERT_OK(pods->Replace({}, "10").status());
  auto old = cache->ReadJournal("pods", "9", 10);
  EXPECT_THAT(old, StatusIs(StatusCode::kExpired));
  EXPECT_THAT(std::string(old.status().message()),
              HasSubstr("resourceVersion 9 is older than the journal keeps (it has the changes "
                        "after 10)"));
  EXPECT_THAT(cache->ReadJournal("pods", "x1", 10), StatusIs(StatusCode::kInvalidArgument));
  EXPECT_THAT(cache->ReadJournal("pods", "010", 10), StatusIs(StatusCode::kInvalidArgument));
  EXPECT_THAT(cache->ReadJournal("pods", "10", 0), StatusIs(StatusCode::kInvalidArgument));
  EXPECT_THAT(cache->ReadJournal("nodes", "10", 10), StatusIs(StatusCode::kNotFound));
  // Ahead of the resume point: nothing yet, and the reader stays there.
  JournalRead ahead = Read(*cache, "50");
  EXPECT_TRUE(ahead.events.empty());
  EXPECT_EQ(ahead.resource_version, "50");
}

TEST(JournalTest, TrimsToItsEventBound) {
  TempDir dir;
  CacheOptions options;
  options.journal.max_events = 10;
  auto cache = OpenCache(dir.path(), options);
  auto pods = OpenPods(cache);
  ASSERT_OK(pods->Replace({}, "100").status());
  for (int i = 101; i <= 130; ++i) Commit(*pods, {Put(Pod("p", "ns", std::to_string(i)))});
  auto stats = cache->Stats("pods");
  ASSERT_OK(stats);
  EXPECT_LE(stats->journal.events, 10u);
  EXPECT_GE(stats->journal.events, 9u);
  // The window starts right before the oldest entry kept.
  JournalRead read = Read(*cache, stats->journal.start);
  ASSERT_EQ(read.events.size(), stats->journal.events);
  EXPECT_EQ(read.events.front().resource_version,
            std::to_string(std::stoi(stats->journal.start) + 1));
  EXPECT_EQ(read.events.back().resource_version, "130");
  EXPECT_THAT(cache->ReadJournal("pods", std::to_string(std::stoi(stats->journal.start) - 1), 10),
              StatusIs(StatusCode::kExpired));
  EXPECT_OK(cache->Verify());
}

TEST(JournalTest, TrimsToItsByteBound) {
  TempDir dir;
  CacheOptions options;
  options.journal.max_bytes = 4096;
  auto cache = OpenCache(dir.path(), options);
  auto pods = OpenPods(cache);
  ASSERT_OK(pods->Replace({}, "100").status());
  for (int i = 101; i <= 200; ++i) Commit(*pods, {Put(Pod("p", "ns", std::to_string(i)))});
  auto stats = cache->Stats("pods");
  ASSERT_OK(stats);
  EXPECT_LE(stats->journal.bytes, 4096u);
  EXPECT_GT(stats->journal.events, 3u);
  EXPECT_EQ(Read(*cache, stats->journal.start).events.size(), stats->journal.events);
  EXPECT_OK(cache->Verify());
}

TEST(JournalTest, TrimsEntriesOlderThanItsAgeBound) {
  TempDir dir;
  auto now = std::chrono::system_clock::time_point(std::chrono::hours(1000));
  CacheOptions options;
  options.wall_clock = [&now] { return now; };
  options.journal.max_age = std::chrono::minutes(10);
  auto cache = OpenCache(dir.path(), options);
  auto pods = OpenPods(cache);
  ASSERT_OK(pods->Replace({}, "100").status());
  Commit(*pods, {Put(Pod("a", "ns", "101"))});
  Commit(*pods, {Put(Pod("b", "ns", "102"))});
  now += std::chrono::minutes(9);
  Commit(*pods, {Put(Pod("c", "ns", "103"))});
  EXPECT_EQ(Read(*cache, "100").events.size(), 3u);
  now += std::chrono::minutes(2);  // a and b are 11 minutes old, c 2
  Commit(*pods, {Put(Pod("d", "ns", "104"))});
  EXPECT_THAT(cache->ReadJournal("pods", "100", 10), StatusIs(StatusCode::kExpired));
  EXPECT_THAT(Describe(Read(*cache, "102")),
              ElementsAre("ADDED ns/c@103 obj@103", "ADDED ns/d@104 obj@104"));
  EXPECT_OK(cache->Verify());
}

// A relist says what is, not what happened: readers behind it must list
// again, and the window starts at the list's resourceVersion.
TEST(JournalTest, ARelistRestartsTheWindow) {
  TempDir dir;
  auto cache = OpenCache(dir.path());
  auto pods = OpenPods(cache);
  ASSERT_OK(pods->Replace({Pod("a", "ns", "5")}, "5").status());
  Commit(*pods, {Put(Pod("b", "ns", "6"))});
  ASSERT_OK(pods->Replace({Pod("a", "ns", "5"), Pod("c", "ns", "90")}, "100").status());
  EXPECT_THAT(cache->ReadJournal("pods", "6", 10), StatusIs(StatusCode::kExpired));
  EXPECT_TRUE(Read(*cache, "100").events.empty());
  Commit(*pods, {Put(Pod("d", "ns", "101"))});
  EXPECT_THAT(Describe(Read(*cache, "100")), ElementsAre("ADDED ns/d@101 obj@101"));
  auto stats = cache->Stats("pods");
  ASSERT_OK(stats);
  EXPECT_EQ(stats->journal.start, "100");
  EXPECT_EQ(stats->journal.events, 1u);
  EXPECT_OK(cache->Verify());
}

// A relist cut short changed objects without journaling them: a commit
// after it cannot continue the window.
TEST(JournalTest, ACommitAfterAnUnfinishedRelistRestartsTheWindow) {
  TempDir dir;
  auto cache = OpenCache(dir.path());
  auto pods = OpenPods(cache);
  ASSERT_OK(pods->Replace({Pod("a", "ns", "5")}, "5").status());
  Commit(*pods, {Put(Pod("b", "ns", "6"))});
  {
    auto session = pods->BeginReplace(nullptr);
    ASSERT_OK(session);
    ASSERT_OK((*session)->Put(Pod("c", "ns", "7")));
    for (int i = 0; i < 1000; ++i)
      ASSERT_OK((*session)->Put(Pod("p" + std::to_string(i), "ns", "7")));
  }  // abandoned: c and 1,000 more were written, unjournaled
  Commit(*pods, {Put(Pod("d", "ns", "8"))});
  EXPECT_THAT(cache->ReadJournal("pods", "6", 10), StatusIs(StatusCode::kExpired));
  EXPECT_TRUE(Read(*cache, "8").events.empty());
  EXPECT_OK(cache->Verify());
}

// The journal survives restarts: a reader resumes where it was, and the
// writer keeps appending in order.
TEST(JournalTest, SurvivesReopening) {
  TempDir dir;
  {
    auto cache = OpenCache(dir.path());
    auto pods = OpenPods(cache);
    ASSERT_OK(pods->Replace({}, "10").status());
    Commit(*pods, {Put(Pod("a", "ns", "11"))});
    Commit(*pods, {Put(Pod("a", "ns", "12"))});
  }
  auto cache = OpenCache(dir.path());
  auto pods = OpenPods(cache);
  EXPECT_THAT(Describe(Read(*cache, "10")),
              ElementsAre("ADDED ns/a@11 obj@11", "MODIFIED ns/a@12 obj@12 <-11"));
  Commit(*pods, {Put(Pod("a", "ns", "13"))});
  EXPECT_THAT(Describe(Read(*cache, "12")), ElementsAre("MODIFIED ns/a@13 obj@13 <-12"));
  // After a restart too, a change below the last journaled one restarts
  // the window.
  Commit(*pods, {Put(Pod("b", "ns", "12"))}, "14");
  EXPECT_THAT(cache->ReadJournal("pods", "13", 10), StatusIs(StatusCode::kExpired));
  EXPECT_OK(cache->Verify());
}

TEST(JournalTest, AReaderFollowsTheWriter) {
  TempDir dir;
  auto cache = OpenCache(dir.path());
  auto pods = OpenPods(cache);
  ASSERT_OK(pods->Replace({}, "10").status());
  auto reader = Cache::OpenReadOnly(dir.path());
  ASSERT_OK(reader);
  Commit(*pods, {Put(Pod("a", "ns", "11"))});
  EXPECT_TRUE(Read(**reader, "10").events.empty());  // its view is as of opening
  ASSERT_OK((*reader)->Refresh());
  EXPECT_THAT(Describe(Read(**reader, "10")), ElementsAre("ADDED ns/a@11 obj@11"));
}

TEST(JournalTest, OffKeepsNoEntriesAndDropsOldOnes) {
  TempDir dir;
  {
    auto cache = OpenCache(dir.path());
    auto pods = OpenPods(cache);
    ASSERT_OK(pods->Replace({}, "10").status());
    Commit(*pods, {Put(Pod("a", "ns", "11"))});
  }
  CacheOptions off;
  off.journal.max_events = 0;
  {
    auto cache = OpenCache(dir.path(), off);
    auto pods = OpenPods(cache);
    // Entries an earlier writer left would go stale: they are gone.
    EXPECT_THAT(cache->ReadJournal("pods", "10", 10), StatusIs(StatusCode::kExpired));
    Commit(*pods, {Put(Pod("b", "ns", "12"))});
    auto stats = cache->Stats("pods");
    ASSERT_OK(stats);
    EXPECT_EQ(stats->journal.events, 0u);
    EXPECT_EQ(stats->journal.start, "12");  // only from the resume point
    EXPECT_TRUE(Read(*cache, "12").events.empty());
    EXPECT_THAT(cache->ReadJournal("pods", "11", 10), StatusIs(StatusCode::kExpired));
    EXPECT_OK(cache->Verify());
  }
  // Turned on again, the window starts at the resume point.
  auto cache = OpenCache(dir.path());
  auto pods = OpenPods(cache);
  Commit(*pods, {Put(Pod("c", "ns", "13"))});
  EXPECT_THAT(Describe(Read(*cache, "12")), ElementsAre("ADDED ns/c@13 obj@13"));
  EXPECT_OK(cache->Verify());
}

// A cache written before the journal (storage format 1) is read as it is
// and upgraded by its next writer, its window starting at each resume point.
TEST(JournalTest, AVersion1CacheIsUpgradedByItsWriter) {
  TempDir dir;
  {
    auto cache = OpenCache(dir.path());
    auto pods = OpenPods(cache);
    ASSERT_OK(pods->Replace({Pod("a", "ns", "5")}, "5").status());
  }
  {  // Make it version 1: no journal family, format "1".
    rocksdb::DB* raw = nullptr;
    std::vector<std::string> names;
    ASSERT_TRUE(rocksdb::DB::ListColumnFamilies({}, dir.path(), &names).ok());
    std::vector<rocksdb::ColumnFamilyDescriptor> cfs;
    for (const std::string& n : names) cfs.emplace_back(n, rocksdb::ColumnFamilyOptions());
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    ASSERT_TRUE(rocksdb::DB::Open({}, dir.path(), cfs, &handles, &raw).ok());
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == storage::kJournalCF) {
        ASSERT_TRUE(raw->DropColumnFamily(handles[i]).ok());
      }
      if (names[i] == storage::kMetaCF) {
        ASSERT_TRUE(raw->Put({}, handles[i], "format", "1").ok());
      }
    }
    for (auto* h : handles) raw->DestroyColumnFamilyHandle(h);
    delete raw;
  }
  {
    auto reader = Cache::OpenReadOnly(dir.path());
    ASSERT_OK(reader);
    EXPECT_TRUE(Read(**reader, "5").events.empty());
    EXPECT_THAT((*reader)->ReadJournal("pods", "4", 10), StatusIs(StatusCode::kExpired));
  }
  auto cache = OpenCache(dir.path());
  auto pods = OpenPods(cache);
  Commit(*pods, {Put(Pod("a", "ns", "6"))});
  EXPECT_THAT(Describe(Read(*cache, "5")), ElementsAre("MODIFIED ns/a@6 obj@6 <-5"));
  EXPECT_OK(cache->Verify());
  cache.reset();
  pods.reset();
  std::vector<std::string> names;
  ASSERT_TRUE(rocksdb::DB::ListColumnFamilies({}, dir.path(), &names).ok());
  EXPECT_THAT(names, ::testing::Contains(storage::kJournalCF));
  auto again = Cache::OpenReadOnly(dir.path());
  ASSERT_OK(again);
  EXPECT_EQ(Read(**again, "5").events.size(), 1u);
}

}  // namespace
}  // namespace kcache::testing
