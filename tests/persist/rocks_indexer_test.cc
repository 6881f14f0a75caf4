// SPDX-License-Identifier: Apache-2.0

// The RocksDB store: the conformance suite, plus what only a persistent
// store has (reopening, relist markers, index versions, open errors, a
// reader beside a writer).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <rocksdb/db.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kcache/cache.h"
#include "kcache/lister.h"
#include "kcache/snapshot.h"
#include "persist/db.h"
#include "persist/encoding.h"
#include "testing/counting_indexer.h"
#include "testing/indexer_conformance.h"
#include "testing/objects.h"
#include "testing/raw_rows.h"
#include "testing/status_matchers.h"
#include "testing/temp_dir.h"

namespace kcache::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Every store of the conformance suite gets its own cache directory, kept
// until the end of the test program.
std::vector<std::unique_ptr<TempDir>>& Dirs() {
  static std::vector<std::unique_ptr<TempDir>> dirs;  // removed at exit
  return dirs;
}

std::shared_ptr<Indexer> MakeRocks(const IndexerSpec& spec) {
  Dirs().push_back(std::make_unique<TempDir>());
  auto cache = Cache::Open(Dirs().back()->path());
  EXPECT_OK(cache) << cache.status();
  auto store = (*cache)->OpenKeyspace("pods", {.key_func = spec.key_func,
                                               .indexers = spec.indexers,
                                               .namespace_index = spec.namespace_index,
                                               .label_index = false});
  EXPECT_OK(store) << store.status();
  return *store;  // keeps the database open after the Cache object is gone
}

INSTANTIATE_TEST_SUITE_P(Rocks, IndexerConformanceTest,
                         ::testing::Values(IndexerFactory(MakeRocks)));

StatusOr<std::vector<std::string>> LabelApp(const Object& o) {
  auto it = o.labels().find("app");
  if (it == o.labels().end()) return std::vector<std::string>{};
  return std::vector<std::string>{it->second};
}

StatusOr<std::vector<std::string>> LabelTier(const Object& o) {
  auto it = o.labels().find("tier");
  if (it == o.labels().end()) return std::vector<std::string>{};
  return std::vector<std::string>{it->second};
}

void PutRawMeta(const std::string& dir, const std::string& key, const std::string& value) {
  WriteRaw(dir, storage::kMetaCF, key, value);
}

std::shared_ptr<Indexer> OpenPods(const std::string& dir, KeyspaceOptions options = {}) {
  auto cache = Cache::Open(dir);
  EXPECT_OK(cache) << cache.status();
  if (!cache.ok()) return nullptr;
  auto store = (*cache)->OpenKeyspace("pods", std::move(options));
  EXPECT_OK(store) << store.status();
  return store.ok() ? *store : nullptr;
}

TEST(RocksIndexerTest, ContentsAndResumePointSurviveReopen) {
  TempDir dir;
  {
    auto store = OpenPods(dir.path());
    Transaction txn;
    txn.Add(Pod("a", "ns1", "5", {{"app", "web"}}));
    txn.Add(Pod("b", "ns2", "6", {{"app", "db"}}));
    txn.resource_version = "7";
    ASSERT_OK(store->Commit(txn, nullptr));
  }
  auto store = OpenPods(dir.path());
  EXPECT_EQ(store->LastSyncResourceVersion(), "7");
  EXPECT_EQ(*store->Size(), 2u);
  EXPECT_THAT(*store->ListKeys(), ElementsAre("ns1/a", "ns2/b"));
  EXPECT_EQ((*store->GetByKey("ns1/a"))->labels().at("app"), "web");
  EXPECT_THAT(*store->IndexKeys(kNamespaceIndex, "ns2"), ElementsAre("ns2/b"));
  EXPECT_THAT(*store->IndexKeys(kLabelIndex, "app=web"), ElementsAre("ns1/a"));
  auto cache = Cache::OpenReadOnly(dir.path());
  ASSERT_OK(cache) << cache.status();
  Status verified = (*cache)->Verify();
  EXPECT_OK(verified) << verified;
  EXPECT_THAT(*(*cache)->ListKeyspaces(), ElementsAre("pods"));
}

// A clean close flushes, so the next open has no log to replay.
TEST(RocksIndexerTest, CleanCloseLeavesNoLogToReplay) {
  TempDir dir;
  {
    auto store = OpenPods(dir.path());
    Transaction txn;
    for (int i = 0; i < 3000; ++i) txn.Add(Pod("p" + std::to_string(i), "ns", std::to_string(i)));
    ASSERT_OK(store->Commit(txn, nullptr));
  }
  uintmax_t log_bytes = 0, table_bytes = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    if (e.path().extension() == ".log") log_bytes += e.file_size();
    if (e.path().extension() == ".sst") table_bytes += e.file_size();
  }
  EXPECT_LT(log_bytes, 4096u);
  EXPECT_GT(table_bytes, 0u);
  auto store = OpenPods(dir.path());
  EXPECT_EQ(*store->Size(), 3000u);
  EXPECT_EQ(store->LastSyncResourceVersion(), "2999");
}

// A write-ahead log cut short (a crash mid-write, a disk that lost its
// tail): RocksDB's point-in-time recovery replays it up to the last whole
// record, so the cache opens, for readers and the writer, at a commit as
// committed: its objects and its resume point together (invariant 1), never
// half a commit, and never further back than a shorter cut.
// A cache whose 40 commits of 10 new pods each are in its write-ahead log,
// copied to `copy` before any close, as a crash leaves it (no fork:
// RocksDB's threads would not follow). Returns the largest log's path.
std::string CrashedWithLoggedCommits(const TempDir& dir, const std::string& copy) {
  {
    auto store = OpenPods(dir.Sub("live-" + std::filesystem::path(copy).filename().string()));
    for (int c = 1; c <= 40; ++c) {
      Transaction txn;
      for (int i = 0; i < 10; ++i)
        txn.Add(Pod("p" + std::to_string(c * 10 + i), "ns", std::to_string(c)));
      txn.resource_version = std::to_string(c);
      EXPECT_OK(store->Commit(txn, nullptr));
    }
    std::filesystem::copy(dir.Sub("live-" + std::filesystem::path(copy).filename().string()), copy,
                          std::filesystem::copy_options::recursive);
  }
  std::string wal;
  for (const auto& e : std::filesystem::directory_iterator(copy)) {
    if (e.path().extension() == ".log" &&
        (wal.empty() || e.file_size() > std::filesystem::file_size(wal)))
      wal = e.path();
  }
  return wal;
}

TEST(RocksIndexerTest, AWalCutShortOpensAtTheLastWholeCommit) {
  TempDir dir;
  const std::string source = dir.Sub("crashed");
  const std::string wal = CrashedWithLoggedCommits(dir, source);
  ASSERT_FALSE(wal.empty());
  const uintmax_t size = std::filesystem::file_size(wal);
  ASSERT_GT(size, 40u * 10 * 100) << "the commits are in the log, not in tables";
  int last = -1;
  for (uintmax_t cut : {size / 8, size / 4, size / 2, size * 3 / 4, size - 7, size}) {
    SCOPED_TRACE("log cut at " + std::to_string(cut) + " of " + std::to_string(size));
    const std::string copy = dir.Sub("cut-" + std::to_string(cut));
    std::filesystem::copy(source, copy, std::filesystem::copy_options::recursive);
    std::filesystem::resize_file(copy + "/" + std::filesystem::path(wal).filename().string(), cut);
    for (bool writer : {false, true}) {
      auto cache = writer ? Cache::Open(copy) : Cache::OpenReadOnly(copy);
      ASSERT_OK(cache) << cache.status();
      EXPECT_OK((*cache)->Verify());
      auto pods = (*cache)->OpenKeyspace("pods");
      ASSERT_OK(pods);
      const std::string rv = (*pods)->LastSyncResourceVersion();
      const int commits = rv.empty() ? 0 : std::stoi(rv);
      EXPECT_EQ(*(*pods)->Size(), static_cast<size_t>(commits) * 10) << "resume point " << rv;
      EXPECT_GE(commits, last);
      if (cut == size) {
        EXPECT_EQ(commits, 40);
      } else if (cut == size - 7) {
        EXPECT_EQ(commits, 39) << "the commit whose record was cut is lost, alone";
      }
      if (writer) last = commits;
    }
  }
  EXPECT_GT(last, 0);
}

// 64 garbage bytes inside a write-ahead log used to get two answers: readers
// refused with "Corruption: checksum mismatch" (no file named), while a
// writer (sync, snapshot export) opened and silently dropped every commit
// from the damage on. Now both refuse, naming the log and the ways out, and
// leave it as it is; a log cut short (a crash) still opens
// (AWalCutShortOpensAtTheLastWholeCommit).
TEST(RocksIndexerTest, DamageInsideAWalIsRefusedAlikeByReadersAndWriters) {
  TempDir dir;
  const std::string copy = dir.Sub("damaged");
  const std::string wal = CrashedWithLoggedCommits(dir, copy);
  ASSERT_FALSE(wal.empty());
  const uintmax_t size = std::filesystem::file_size(wal);
  {
    std::fstream f(wal, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size / 2));
    std::mt19937 rng(3);
    for (int i = 0; i < 64; ++i) f.put(static_cast<char>(rng()));
  }
  const std::string name = std::filesystem::path(wal).filename().string();
  for (bool writer : {false, true, false}) {
    SCOPED_TRACE(writer ? "writer" : "reader");
    auto cache = writer ? Cache::Open(copy) : Cache::OpenReadOnly(copy);
    EXPECT_TRUE(cache.status().IsCorruption()) << cache.status();
    EXPECT_THAT(std::string(cache.status().message()),
                HasSubstr("write-ahead log " + name + " is damaged before its end"));
    EXPECT_THAT(std::string(cache.status().message()),
                HasSubstr("restore a snapshot (kcache snapshot import) or sync into a new cache"));
    EXPECT_EQ(std::filesystem::file_size(wal), size);
  }
}

// A reader following a cache that is removed and created again (a new
// sync after `rm -rf`, or into the same emptied directory) used to abort the
// process: the secondary instance caught up with another database's
// MANIFEST and librocksdb 7.8 asserted. Now Refresh notices the cache is
// another one (its directory or IDENTITY differs) and is Expired for good;
// the reader keeps answering from its last view until it is reopened.
TEST(RocksIndexerTest, ARefreshOfARemovedOrReplacedCacheIsExpiredNotACrash) {
  TempDir dir;
  for (bool same_directory : {false, true}) {
    SCOPED_TRACE(same_directory ? "replaced inside its directory" : "removed and created again");
    const std::string path = dir.Sub(same_directory ? "inplace" : "moved");
    {
      auto store = OpenPods(path);
      ASSERT_OK(store->Add(Pod("old", "ns", "1")));
    }
    auto reader = Cache::OpenReadOnly(path);
    ASSERT_OK(reader);
    auto pods = (*reader)->OpenKeyspace("pods");
    ASSERT_OK(pods);
    ASSERT_OK((*reader)->Refresh());
    if (same_directory) {
      for (const auto& e : std::filesystem::directory_iterator(path)) {
        std::filesystem::remove_all(e.path());
      }
    } else {
      std::filesystem::remove_all(path);
      Status gone = (*reader)->Refresh();
      EXPECT_EQ(gone.code(), StatusCode::kExpired) << gone;
      EXPECT_THAT(std::string(gone.message()), HasSubstr("was removed"));
    }
    {
      auto store = OpenPods(path);
      ASSERT_OK(store->Add(Pod("new", "ns", "2")));
    }
    Status replaced = (*reader)->Refresh();
    EXPECT_EQ(replaced.code(), StatusCode::kExpired) << replaced;
    EXPECT_THAT(std::string(replaced.message()), HasSubstr("the cache " + path));
    EXPECT_THAT(std::string(replaced.message()), HasSubstr("reopen it"));
    auto old = (*pods)->GetByKey("ns/old");
    ASSERT_OK(old);
    EXPECT_NE(*old, nullptr) << "the last view stays";
    EXPECT_EQ(*(*pods)->GetByKey("ns/new"), nullptr) << "never a mix of the two caches";
    auto reopened = Cache::OpenReadOnly(path);
    ASSERT_OK(reopened);
    EXPECT_OK((*reopened)->Refresh());
  }
}

TEST(RocksIndexerTest, KeyspacesAreSeparate) {
  TempDir dir;
  auto cache = Cache::Open(dir.path());
  ASSERT_OK(cache);
  auto pods = *(*cache)->OpenKeyspace("pods");
  auto nodes = *(*cache)->OpenKeyspace("nodes");
  ASSERT_OK(pods->Add(Pod("x", "ns", "1")));
  ASSERT_OK(nodes->Add(Pod("x", "", "2")));
  EXPECT_THAT(*pods->ListKeys(), ElementsAre("ns/x"));
  EXPECT_THAT(*nodes->ListKeys(), ElementsAre("x"));
  ASSERT_OK(nodes->Replace({}, "3"));
  EXPECT_EQ(*pods->Size(), 1u);
  EXPECT_EQ(pods->LastSyncResourceVersion(), "1");
  EXPECT_THAT(*(*cache)->ListKeyspaces(), ElementsAre("nodes", "pods"));
  EXPECT_TRUE((*cache)->OpenKeyspace("pods").status().code() == StatusCode::kFailedPrecondition);
  EXPECT_OK((*cache)->Verify());
}

// Invariant 3: a relist that did not finish leaves no resume point, so the
// next start relists; the next Replace clears the marker.
TEST(RocksIndexerTest, UnfinishedRelistVoidsTheResumePoint) {
  TempDir dir;
  {
    auto store = OpenPods(dir.path());
    ASSERT_OK(store->Replace({Pod("a", "ns", "1")}, "10"));
  }
  // The marker a crash between a relist's first and last batch leaves.
  PutRawMeta(dir.path(), storage::MetaKey("relist", "pods"), "1");
  auto store = OpenPods(dir.path());
  EXPECT_EQ(store->LastSyncResourceVersion(), "");
  EXPECT_EQ(*store->Size(), 1u);  // contents kept, only the resume point is void
  auto result = store->Replace({Pod("a", "ns", "1"), Pod("b", "ns", "2")}, "11");
  ASSERT_OK(result);
  EXPECT_EQ(result->unchanged, 1u);
  EXPECT_EQ(result->changes.size(), 1u);
  EXPECT_EQ(store->LastSyncResourceVersion(), "11");
}

// Invariant 3: a streamed relist reports chunk by chunk, rewrites nothing
// unchanged, deletes what the list lacks, and moves the resume point only at
// Finish; an abandoned one leaves no resume point, and the next relist
// (whose stale seen marks are cleared) gets it right.
TEST(RocksIndexerTest, StreamedRelistInChunks) {
  TempDir dir;
  auto store = OpenPods(dir.path());
  std::vector<ObjectPtr> first;
  for (int i = 0; i < 2500; ++i) first.push_back(Pod("p" + std::to_string(10000 + i), "ns", "1"));
  ASSERT_OK(store->Replace(first, "10"));
  {
    auto abandoned = store->BeginReplace(nullptr);
    ASSERT_OK(abandoned);
    ASSERT_OK((*abandoned)->Put(Pod("p10000", "ns", "1")));
  }
  EXPECT_EQ(store->LastSyncResourceVersion(), "");
  std::vector<size_t> chunks;
  std::map<StoreChange::Type, size_t> by_type;
  auto session = store->BeginReplace([&](std::vector<StoreChange> changes) {
    chunks.push_back(changes.size());
    for (auto& c : changes) ++by_type[c.type];
  });
  ASSERT_OK(session);
  // Keep the first 2000 (every tenth changed), drop 500, add 100.
  for (int i = 0; i < 2000; ++i) {
    ASSERT_OK((*session)->Put(Pod("p" + std::to_string(10000 + i), "ns", i % 10 == 0 ? "2" : "1")));
  }
  for (int i = 0; i < 100; ++i) ASSERT_OK((*session)->Put(Pod("q" + std::to_string(i), "ns", "2")));
  EXPECT_EQ(store->LastSyncResourceVersion(), "");
  auto unchanged = (*session)->Finish("20");
  ASSERT_OK(unchanged) << unchanged.status();
  EXPECT_EQ(*unchanged, 1800u);
  EXPECT_EQ(by_type[StoreChange::Type::kUpdated], 200u);
  EXPECT_EQ(by_type[StoreChange::Type::kAdded], 100u);
  EXPECT_EQ(by_type[StoreChange::Type::kDeleted], 500u);
  EXPECT_GE(chunks.size(), 3u);  // reported as chunks commit, not at the end
  EXPECT_EQ(store->LastSyncResourceVersion(), "20");
  EXPECT_EQ(*store->Size(), 2100u);
  auto cache = Cache::OpenReadOnly(dir.path());
  ASSERT_OK(cache);
  EXPECT_OK((*cache)->Verify());
}

// Pod "ns/c<i>", `i` zero-padded so that keys ascend with it.
ObjectPtr Numbered(int i, const std::string& rv = "1") {
  char name[16];
  std::snprintf(name, sizeof name, "c%05d", i);
  return Pod(name, "ns", rv, {{"app", "a" + std::to_string(i % 3)}});
}

// The progress of the keyspace's relist cut short ("-" if none).
std::string CutShort(const Indexer& store) {
  auto cut = store.GetCutShortRelist();
  EXPECT_OK(cut);
  return cut.ok() && cut->has_value() ? (*cut)->progress : "-";
}

// A relist of pods [0, n) into `store`, checkpointed with `progress`
// after them, to be abandoned or put to more by the caller.
std::unique_ptr<ReplaceSession> CheckpointedAfter(Indexer& store, int n,
                                                  const std::string& progress) {
  auto session = store.BeginReplace(nullptr);
  EXPECT_OK(session);
  if (!session.ok()) return nullptr;
  for (int i = 0; i < n; ++i) EXPECT_OK((*session)->Put(Numbered(i)));
  EXPECT_OK((*session)->Checkpoint(progress));
  return *std::move(session);
}

void ExpectVerified(const std::string& dir) {
  auto cache = Cache::OpenReadOnly(dir);
  ASSERT_OK(cache) << cache.status();
  Status verified = (*cache)->Verify();
  EXPECT_OK(verified) << verified;
}

// Invariant 3 with the progress kept: a checkpoint is committed with the
// objects put before it (those put after it and not yet written are lost
// with the session); a session reopened after the cache is continues from
// it, and the relist ends as one that was never cut.
TEST(RocksIndexerTest, ARelistCutShortContinuesFromItsLastCheckpoint) {
  TempDir dir;
  {
    auto store = OpenPods(dir.path());
    EXPECT_EQ(CutShort(*store), "-");
    auto session = CheckpointedAfter(*store, 10, "page 2");
    ASSERT_NE(session, nullptr);
    for (int i = 10; i < 15; ++i) ASSERT_OK(session->Put(Numbered(i)));
  }  // abandoned: as a crash after the checkpoint
  auto store = OpenPods(dir.path());
  EXPECT_EQ(CutShort(*store), "page 2");
  EXPECT_EQ(store->LastSyncResourceVersion(), "");
  EXPECT_EQ(*store->Size(), 10u);
  std::vector<StoreChange> changes;
  auto session = store->ContinueReplace(
      [&](std::vector<StoreChange> c) { changes.insert(changes.end(), c.begin(), c.end()); });
  ASSERT_OK(session) << session.status();
  for (int i = 10; i < 20; ++i) ASSERT_OK((*session)->Put(Numbered(i)));
  auto unchanged = (*session)->Finish("9");
  ASSERT_OK(unchanged);
  EXPECT_EQ(*unchanged, 0u);
  EXPECT_EQ(changes.size(), 10u) << "the ten it added, nothing deleted";
  EXPECT_EQ(store->LastSyncResourceVersion(), "9");
  EXPECT_EQ(*store->Size(), 20u);
  EXPECT_EQ(store->IndexKeys(kLabelIndex, "app=a0")->size(), 7u);
  EXPECT_EQ(CutShort(*store), "-");
  auto again = store->ContinueReplace(nullptr);
  EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition) << again.status();
  ExpectVerified(dir.path());
}

// A relist into an empty keyspace writes no seen marks, so it must never
// meet a key it stored: keys written after its last checkpoint (a chunk
// that filled mid-page) are removed, and reported deleted, before it goes
// on; listed again, they are counted once.
TEST(RocksIndexerTest, AContinuedFirstListDropsWhatFollowsItsCheckpoint) {
  TempDir dir;
  {
    auto store = OpenPods(dir.path());
    auto session = CheckpointedAfter(*store, 10, "after 10");
    ASSERT_NE(session, nullptr);
    for (int i = 10; i < 1010; ++i) ASSERT_OK(session->Put(Numbered(i)));  // one chunk written
  }
  auto store = OpenPods(dir.path());
  EXPECT_EQ(*store->Size(), 1010u);
  EXPECT_EQ(CutShort(*store), "after 10");
  std::map<StoreChange::Type, size_t> by_type;
  auto session = store->ContinueReplace([&](std::vector<StoreChange> changes) {
    for (auto& c : changes) ++by_type[c.type];
  });
  ASSERT_OK(session);
  EXPECT_EQ(*store->Size(), 10u);
  for (int i = 10; i < 1500; ++i) ASSERT_OK((*session)->Put(Numbered(i)));
  ASSERT_OK((*session)->Finish("9"));
  EXPECT_EQ(by_type[StoreChange::Type::kDeleted], 1000u);
  EXPECT_EQ(by_type[StoreChange::Type::kAdded], 1490u);
  EXPECT_EQ(*store->Size(), 1500u);
  EXPECT_EQ(store->ListKeys()->size(), 1500u);
  EXPECT_EQ(store->IndexKeys(kLabelIndex, "app=a1")->size(), 500u);
  ExpectVerified(dir.path());
}

// A relist over a full keyspace marks what it listed: continued, it keeps
// its marks, so that Finish deletes exactly what neither session listed.
TEST(RocksIndexerTest, AContinuedRelistDeletesWhatNeitherSessionListed) {
  TempDir dir;
  {
    auto store = OpenPods(dir.path());
    std::vector<ObjectPtr> old;
    for (int i = 0; i < 30; ++i) old.push_back(Numbered(i));
    ASSERT_OK(store->Replace(old, "5"));
    auto session = store->BeginReplace(nullptr);
    ASSERT_OK(session);
    for (int i = 0; i < 10; i += 2) ASSERT_OK((*session)->Put(Numbered(i, i == 4 ? "8" : "1")));
    ASSERT_OK((*session)->Checkpoint("half"));
  }
  auto store = OpenPods(dir.path());
  EXPECT_EQ(CutShort(*store), "half");
  EXPECT_EQ(*store->Size(), 30u);
  auto session = store->ContinueReplace(nullptr);
  ASSERT_OK(session);
  for (int i = 10; i < 20; i += 2) ASSERT_OK((*session)->Put(Numbered(i)));
  ASSERT_OK((*session)->Put(Numbered(40)));
  auto unchanged = (*session)->Finish("9");
  ASSERT_OK(unchanged);
  EXPECT_EQ(*unchanged, 5u) << "this session's unchanged objects";
  std::vector<std::string> want;
  for (int i = 0; i < 20; i += 2) want.push_back("ns/" + Numbered(i)->name());
  want.push_back("ns/c00040");
  EXPECT_EQ(*store->ListKeys(), want);
  EXPECT_EQ((*store->GetByKey("ns/c00004"))->resource_version(), "8");
  ExpectVerified(dir.path());
}

// A relist begun afresh drops the progress of the one cut short; one cut
// short before any checkpoint leaves none, and cannot be continued.
TEST(RocksIndexerTest, AFreshRelistDropsTheProgressOfTheOneCutShort) {
  TempDir dir;
  auto store = OpenPods(dir.path());
  ASSERT_NE(CheckpointedAfter(*store, 1, "one"), nullptr);  // abandoned at once
  EXPECT_EQ(CutShort(*store), "one");
  {
    auto session = store->BeginReplace(nullptr);
    ASSERT_OK(session);
    ASSERT_OK((*session)->Put(Numbered(1)));
  }
  EXPECT_EQ(CutShort(*store), "");
  EXPECT_EQ(store->ContinueReplace(nullptr).status().code(), StatusCode::kFailedPrecondition);
  auto result = store->Replace({Numbered(1)}, "3");
  ASSERT_OK(result);
  EXPECT_EQ(CutShort(*store), "-");
  EXPECT_EQ(*store->ListKeys(), std::vector<std::string>{"ns/c00001"});
}

// A first list written as ingested table files ends each segment at a
// checkpoint: what a cut leaves is exactly what its progress says, so the
// continued list stays on the ingesting path with nothing to drop.
TEST(RocksIndexerTest, AnIngestedFirstListEndsItsSegmentsAtCheckpoints) {
  TempDir dir;
  CacheOptions options;
  options.memtable_bytes = size_t{1} << 20;  // logged up to 256 KiB, then segments of 1 MiB
  // Pages of 1,200 objects: each is two chunks (1,000 and 200), and a
  // segment fills up at the first chunk of a page.
  constexpr int kPage = 1200, kPages = 10;
  auto padded = [](int i) {
    char name[16];
    std::snprintf(name, sizeof name, "c%05d", i);
    return MakeObject(R"({"metadata":{"name":")" + std::string(name) +
                      R"(","namespace":"ns","resourceVersion":"1","labels":{"app":"a"}},"pad":")" +
                      std::string(600, 'x') + R"("})");
  };
  int cut_at = 7;  // pages put before the cut, the last one half
  {
    auto cache = Cache::Open(dir.path(), options);
    ASSERT_OK(cache);
    auto store = (*cache)->OpenKeyspace("pods");
    ASSERT_OK(store);
    auto session = (*store)->BeginReplace(nullptr);
    ASSERT_OK(session);
    for (int p = 0; p < cut_at; ++p) {
      for (int i = 0; i < kPage; ++i) ASSERT_OK((*session)->Put(padded(p * kPage + i)));
      ASSERT_OK((*session)->Checkpoint(std::to_string(p + 1)));
    }
    for (int i = 0; i < kPage / 2; ++i) ASSERT_OK((*session)->Put(padded(cut_at * kPage + i)));
  }
  auto cache = Cache::Open(dir.path(), options);
  ASSERT_OK(cache);
  auto store = (*cache)->OpenKeyspace("pods");
  ASSERT_OK(store);
  const int from = std::atoi(CutShort(**store).c_str());
  EXPECT_GT(from, 2) << "some segments went in";
  EXPECT_LE(from, cut_at);
  EXPECT_EQ(*(*store)->Size(), static_cast<size_t>(from * kPage)) << "nothing past the checkpoint";
  auto session = (*store)->ContinueReplace(nullptr);
  ASSERT_OK(session);
  for (int p = from; p < kPages; ++p) {
    for (int i = 0; i < kPage; ++i) ASSERT_OK((*session)->Put(padded(p * kPage + i)));
    if (p + 1 < kPages) {
      ASSERT_OK((*session)->Checkpoint(std::to_string(p + 1)));
    }
  }
  ASSERT_OK((*session)->Finish("9"));
  session->reset();  // a session must not outlive its store
  EXPECT_EQ(*(*store)->Size(), static_cast<size_t>(kPages * kPage));
  EXPECT_EQ((*store)->ListKeys()->size(), static_cast<size_t>(kPages * kPage));
  EXPECT_EQ((*store)->IndexKeys(kLabelIndex, "app=a")->size(), static_cast<size_t>(kPages * kPage));
  cache->reset();
  store->reset();
  ExpectVerified(dir.path());
}

// The memtable budget is shared out among the families, so that the objects
// family alone cannot grow past it while another family's memtable is the
// one the write-buffer manager flushes.
TEST(RocksIndexerTest, EachFamilysMemtableIsItsShareOfTheBudget) {
  TempDir dir;
  CacheOptions options;
  options.memtable_bytes = size_t{32} << 20;
  auto db = storage::OpenDb(dir.path() + "/c", options, /*read_only=*/false);
  ASSERT_OK(db) << db.status();
  EXPECT_EQ((*db)->db->GetOptions((*db)->objects).write_buffer_size, size_t{8} << 20);
  EXPECT_EQ((*db)->db->GetOptions((*db)->index).write_buffer_size, size_t{4} << 20);
  EXPECT_EQ((*db)->db->GetOptions((*db)->rindex).write_buffer_size, size_t{4} << 20);
  EXPECT_EQ((*db)->db->GetOptions((*db)->meta).write_buffer_size, size_t{2} << 20);
}

// Pod "ns/p<i>" with 10 KB of padding, which zstd shrinks to almost nothing
// on disk but which takes its whole size in memtables and cached blocks.
ObjectPtr PaddedPod(int i) {
  return MakeObject(R"({"metadata":{"name":"p)" + std::to_string(i) +
                    R"(","namespace":"ns","resourceVersion":"1"},"pad":")" +
                    std::string(10000, 'x') + R"("})");
}

// Commits PaddedPod(from) .. PaddedPod(from + 199) at resourceVersion `rv`.
void CommitPadded(Indexer& store, int from, const std::string& rv) {
  Transaction txn;
  for (int i = from; i < from + 200; ++i) txn.Add(PaddedPod(i));
  txn.resource_version = rv;
  ASSERT_OK(store.Commit(txn, nullptr));
}

// Cache::Memory reports what the configured caches hold: written objects
// in memtables until flushed, then read blocks in the block cache.
TEST(RocksIndexerTest, MemoryReportsMemtablesThenBlockCache) {
  TempDir dir;
  auto cache = Cache::Open(dir.path());
  ASSERT_OK(cache) << cache.status();
  auto store = (*cache)->OpenKeyspace("pods");
  ASSERT_OK(store) << store.status();
  CommitPadded(**store, 0, "1");
  CacheMemory written = (*cache)->Memory();
  EXPECT_GE(written.memtables, 200u * 10000) << "the objects are in the memtables";

  ASSERT_OK((*cache)->Compact());
  CacheMemory flushed = (*cache)->Memory();
  EXPECT_LT(flushed.memtables, written.memtables / 10);
  size_t n = 0;
  for (auto it = (*store)->NewIterator(); it->Valid(); it->Next()) ++n;
  EXPECT_EQ(n, 200u);
  CacheMemory read = (*cache)->Memory();
  // zstd shrinks the repeated padding, so the blocks hold far less than the
  // JSON; some must be there, within the configured size.
  EXPECT_GT(read.block_cache, flushed.block_cache);
  EXPECT_LE(read.block_cache, CacheOptions().block_cache_bytes);
}

// A read-only cache reports its own memory: the blocks its reads bring into
// its block cache, and the writer's unflushed commits that Refresh replays
// into its own memtables.
TEST(RocksIndexerTest, AReadOnlyCacheReportsItsOwnMemory) {
  TempDir dir;
  auto writer = Cache::Open(dir.path());
  ASSERT_OK(writer) << writer.status();
  auto pods = (*writer)->OpenKeyspace("pods");
  ASSERT_OK(pods) << pods.status();
  CommitPadded(**pods, 0, "1");
  ASSERT_OK((*writer)->Compact());

  auto reader = Cache::OpenReadOnly(dir.path());
  ASSERT_OK(reader) << reader.status();
  auto seen = (*reader)->OpenKeyspace("pods");
  ASSERT_OK(seen) << seen.status();
  const CacheMemory opened = (*reader)->Memory();
  size_t n = 0;
  for (auto it = (*seen)->NewIterator(); it->Valid(); it->Next()) ++n;
  EXPECT_EQ(n, 200u);
  const CacheMemory read = (*reader)->Memory();
  EXPECT_GT(read.block_cache, opened.block_cache);
  EXPECT_LE(read.block_cache, CacheOptions().block_cache_bytes);

  CommitPadded(**pods, 200, "2");
  ASSERT_OK((*reader)->Refresh());
  const CacheMemory refreshed = (*reader)->Memory();
  EXPECT_GE(refreshed.memtables, read.memtables + 200u * 10000)
      << "the writer's new objects are replayed into the reader's memtables";
  EXPECT_EQ(*(*seen)->Size(), 400u);
}

// A relist into an empty keyspace reads nothing back: not the objects it
// writes, nor, at its end, the keys it did not list (every stored key is
// one it wrote). Before, that last walk read every object again and left
// the block cache full of them.
TEST(RocksIndexerTest, AnInitialRelistReadsNoObjectBack) {
  TempDir dir;
  auto cache = Cache::Open(dir.path());
  ASSERT_OK(cache) << cache.status();
  auto store = (*cache)->OpenKeyspace("pods");
  ASSERT_OK(store) << store.status();
  auto session = (*store)->BeginReplace(nullptr);
  ASSERT_OK(session);
  // Past the first chunk (8 MiB), then that chunk into tables, so that a
  // read of it would go through the block cache.
  for (int i = 0; i < 900; ++i) ASSERT_OK((*session)->Put(PaddedPod(10000 + i)));
  ASSERT_OK((*cache)->Compact());
  for (int i = 900; i < 1000; ++i) ASSERT_OK((*session)->Put(PaddedPod(10000 + i)));
  ASSERT_OK((*session)->Finish("20"));
  // Index and filter blocks only: the first chunk's blocks are ~8 MB.
  EXPECT_LT((*cache)->Memory().block_cache, size_t{256} << 10);
  EXPECT_EQ(*(*store)->Size(), 1000u);
}

// A new keyspace's open and its first list delete no ranges: a range
// deletion in a memtable is fragmented again by every later read of its
// family until a flush, and a wide first sync (a keyspace per type) would
// leave thousands. A relist over stored objects marks what it sees and
// deletes the marks as one range at its end.
TEST(RocksIndexerTest, ANewKeyspacesFirstListDeletesNoRange) {
  TempDir dir;
  auto cache = Cache::Open(dir.path());
  ASSERT_OK(cache) << cache.status();
  const std::shared_ptr<storage::Db>& db = storage::DbOf(**cache);
  // Range deletions written so far, counted in the tables a flush makes.
  auto range_deletions = [&] {
    const std::vector<rocksdb::ColumnFamilyHandle*> families = {db->meta, db->index, db->rindex};
    EXPECT_TRUE(db->db->Flush(rocksdb::FlushOptions(), families).ok());
    uint64_t total = 0;
    for (rocksdb::ColumnFamilyHandle* family : families) {
      rocksdb::TablePropertiesCollection tables;
      EXPECT_TRUE(db->db->GetPropertiesOfAllTables(family, &tables).ok());
      for (const auto& [file, properties] : tables) total += properties->num_range_deletions;
    }
    return total;
  };
  for (const char* name : {"pods", "configmaps", "widgets.example.com"}) {
    auto store = (*cache)->OpenKeyspace(
        name, {.indexers = {{"team", LabelApp}}, .index_versions = {{"team", "1"}}});
    ASSERT_OK(store) << store.status();
    ASSERT_OK(
        (*store)->Replace({Pod("a", "ns", "1", {{"app", "web"}}), Pod("b", "ns", "2")}, "10"));
  }
  EXPECT_EQ(range_deletions(), 0u);
  auto pods = (*cache)->OpenKeyspace(
      "pods", {.indexers = {{"team", LabelApp}}, .index_versions = {{"team", "1"}}});
  ASSERT_OK(pods);
  auto again = (*pods)->Replace({Pod("a", "ns", "1", {{"app", "web"}})}, "11");
  ASSERT_OK(again) << again.status();
  EXPECT_EQ(*(*pods)->Size(), 1u);
  EXPECT_GE(range_deletions(), 1u);
  EXPECT_OK((*cache)->Verify());
}

// CacheOptions::fast_first_list: a first list's object tables are written
// with LZ4 (zstd with the option off), and Cache::Compact() rewrites them
// with zstd, the objects family's compression; the objects read alike.
TEST(RocksIndexerTest, AFirstListIsWrittenWithLz4UntilCompacted) {
  for (bool fast : {true, false}) {
    SCOPED_TRACE(fast ? "fast_first_list" : "zstd first list");
    TempDir dir;
    CacheOptions options;
    options.memtable_bytes = size_t{1} << 20;  // ingested past 256 KiB
    options.fast_first_list = fast;
    auto cache = Cache::Open(dir.path(), options);
    ASSERT_OK(cache) << cache.status();
    const std::shared_ptr<storage::Db>& db = storage::DbOf(**cache);
    // The compressions of the objects family's tables, with their counts.
    auto compressions = [&] {
      rocksdb::TablePropertiesCollection tables;
      EXPECT_TRUE(db->db->GetPropertiesOfAllTables(db->objects, &tables).ok());
      std::map<std::string, int> out;
      for (const auto& [file, props] : tables) ++out[props->compression_name];
      return out;
    };
    auto pods = (*cache)->OpenKeyspace("pods");
    ASSERT_OK(pods);
    auto session = (*pods)->BeginReplace(nullptr);
    ASSERT_OK(session);
    const std::string pad(1100, 'x');
    for (int i = 0; i < 3000; ++i) {
      char name[16];
      std::snprintf(name, sizeof name, "p%05d", i);
      ASSERT_OK((*session)->Put(Pod(name, "ns", "7", {}, {{"pad", pad}})));
    }
    ASSERT_OK((*session)->Finish("7"));
    std::map<std::string, int> written = compressions();
    ASSERT_FALSE(written.empty());
    const std::string first = fast ? "LZ4" : "ZSTD";
    EXPECT_GE(written[first], 2) << "segments of the list";
    ASSERT_OK((*cache)->Compact());
    std::map<std::string, int> compacted = compressions();
    EXPECT_EQ(compacted.count("LZ4"), 0u);
    EXPECT_GE(compacted["ZSTD"], 1);
    EXPECT_EQ(*(*pods)->Size(), 3000u);
    auto p = (*pods)->GetByKey("ns/p01234");
    ASSERT_OK(p);
    EXPECT_NE((*p)->json().find(pad), std::string_view::npos);
  }
}

// An initial list ingested as table files holds off the label index's
// automatic compactions while it lasts (one overlapping index table per
// segment), then merges its index once, after it ends: the entries read
// the same before the merge ends and after, none of its tables is left in
// level 0, and compactions are back on. Holds nest across keyspaces; a
// session dropped unfinished releases its hold.
TEST(RocksIndexerTest, AnIngestedFirstListMergesItsIndexOnce) {
  TempDir dir;
  CacheOptions options;
  options.memtable_bytes = size_t{1} << 20;  // a segment per 1,000 pods below
  auto cache = Cache::Open(dir.path(), options);
  ASSERT_OK(cache) << cache.status();
  const std::shared_ptr<storage::Db>& db = storage::DbOf(**cache);
  auto held = [&] { return db->db->GetOptions(db->index).disable_auto_compactions; };
  // Level-0 tables of the index family that hold keys of keyspace `ks`
  // (a table flushed from a memtable may hold several keyspaces').
  auto l0_tables_of = [&](std::string_view ks) {
    const storage::KeyRange range = storage::KeyspaceRange(ks);
    rocksdb::ColumnFamilyMetaData meta;
    db->db->GetColumnFamilyMetaData(db->index, &meta);
    int n = 0;
    for (const rocksdb::SstFileMetaData& f : meta.levels[0].files) {
      n += f.largestkey >= range.start && f.smallestkey < range.limit;
    }
    return n;
  };
  auto pods = (*cache)->OpenKeyspace("pods");
  auto cms = (*cache)->OpenKeyspace("configmaps");
  ASSERT_OK(pods);
  ASSERT_OK(cms);
  const std::string pad(1100, 'x');
  auto fill = [&](ReplaceSession* s, int n) {
    for (int i = 0; i < n; ++i) {
      char name[16];
      std::snprintf(name, sizeof name, "p%05d", i);
      ASSERT_OK(
          s->Put(Pod(name, "ns", "7", {{"app", "a" + std::to_string(i % 5)}}, {{"pad", pad}})));
    }
  };
  auto pod_session = (*pods)->BeginReplace(nullptr);
  auto cm_session = (*cms)->BeginReplace(nullptr);
  ASSERT_OK(pod_session);
  ASSERT_OK(cm_session);
  EXPECT_FALSE(held());
  // 44 segments: at least 40 ingested by now (the first may go to the
  // bottom level; the ingester may hold two chunks and a segment).
  fill(pod_session->get(), 45000);
  EXPECT_TRUE(held());
  fill(cm_session->get(), 3000);
  // Ingested segments of pods' index, each over all five values, and not
  // compacted: past RocksDB's trigger of 8, and past the 36 level-0 tables
  // at which it would stop writes if compactions were on. Held, they stop
  // none: another keyspace still commits.
  EXPECT_GE(l0_tables_of("pods"), 37);
  auto nodes = (*cache)->OpenKeyspace("nodes");
  ASSERT_OK(nodes);
  ASSERT_OK((*nodes)->Add(Pod("n1", "", "3")));
  ASSERT_OK((*pod_session)->Finish("7"));
  EXPECT_TRUE(held()) << "configmaps' list still ingests";
  ASSERT_OK((*cm_session)->Finish("7"));
  auto a3 = (*pods)->IndexKeys(kLabelIndex, "app=a3");  // merged or not
  ASSERT_OK(a3);
  EXPECT_EQ(a3->size(), 9000u);
  ASSERT_OK((*cache)->WaitForIndexMerges());
  EXPECT_FALSE(held());
  EXPECT_EQ(l0_tables_of("pods"), 0);
  EXPECT_EQ(l0_tables_of("configmaps"), 0);
  a3 = (*pods)->IndexKeys(kLabelIndex, "app=a3");
  ASSERT_OK(a3);
  EXPECT_EQ(a3->size(), 9000u);
  EXPECT_EQ(*(*cms)->Size(), 3000u);
  EXPECT_OK((*cache)->Verify());  // invariant 3: index, rindex and objects agree

  auto secrets = (*cache)->OpenKeyspace("secrets");
  ASSERT_OK(secrets);
  auto dropped = (*secrets)->BeginReplace(nullptr);
  ASSERT_OK(dropped);
  fill(dropped->get(), 3000);
  EXPECT_TRUE(held());
  dropped->reset();
  EXPECT_FALSE(held());
}

// Invariant 3: a cache closed as soon as its first list ends, its index's
// merge canceled or not yet begun, opens whole: every entry is there, and
// RocksDB's own compactions, back on, merge the tables left in level 0.
TEST(RocksIndexerTest, ACacheClosedBeforeItsIndexMergeEndsLosesNothing) {
  TempDir dir;
  CacheOptions options;
  options.memtable_bytes = size_t{1} << 20;  // a segment per 1,000 pods below
  const std::string pad(1100, 'x');
  {
    auto cache = Cache::Open(dir.path(), options);
    ASSERT_OK(cache) << cache.status();
    auto pods = (*cache)->OpenKeyspace("pods");
    ASSERT_OK(pods);
    auto session = (*pods)->BeginReplace(nullptr);
    ASSERT_OK(session);
    for (int i = 0; i < 20000; ++i) {
      char name[16];
      std::snprintf(name, sizeof name, "p%05d", i);
      ASSERT_OK((*session)->Put(
          Pod(name, "ns", "7", {{"app", "a" + std::to_string(i % 5)}}, {{"pad", pad}})));
    }
    ASSERT_OK((*session)->Finish("7"));
  }
  auto cache = Cache::Open(dir.path(), options);
  ASSERT_OK(cache) << cache.status();
  auto pods = (*cache)->OpenKeyspace("pods");
  ASSERT_OK(pods);
  EXPECT_EQ((*pods)->LastSyncResourceVersion(), "7");
  auto a3 = (*pods)->IndexKeys(kLabelIndex, "app=a3");
  ASSERT_OK(a3);
  EXPECT_EQ(a3->size(), 4000u);
  EXPECT_OK((*cache)->Verify());
  EXPECT_OK((*cache)->WaitForIndexMerges());  // none was handed to this one
}

// Invariant 3 on damage: a relist that must delete what it did not list,
// and finds a reverse index record without its object, stops with an error
// that names the key, and moves no resume point.
TEST(RocksIndexerTest, ARelistFindingAReverseRecordWithoutObjectSaysWhich) {
  TempDir dir;
  {
    auto store = OpenPods(dir.path());
    ASSERT_OK(store->Replace({Pod("a", "ns", "1"), Pod("b", "ns", "1")}, "10"));
  }
  WriteRaw(dir.path(), storage::kObjectsCF, storage::ObjectKey("pods", "ns/b"), std::nullopt);
  auto store = OpenPods(dir.path());
  auto result = store->Replace({Pod("a", "ns", "1")}, "11");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kCorruption) << result.status();
  EXPECT_THAT(std::string(result.status().message()), HasSubstr("ns/b has no object"));
  EXPECT_EQ(store->LastSyncResourceVersion(), "");
}

// A relist into an empty pods keyspace that records the size of each chunk
// it commits.
class ChunkedRelistTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = OpenPods(dir_.path());
    ASSERT_NE(store_, nullptr);
    auto session = store_->BeginReplace(
        [this](std::vector<StoreChange> changes) { chunks_.push_back(changes.size()); });
    ASSERT_OK(session) << session.status();
    session_ = *std::move(session);
  }

  // Pod p<100+i> in namespace ns with `pad` bytes of padding.
  static ObjectPtr PaddedPod(int i, size_t pad) {
    return MakeObject(R"({"metadata":{"name":"p)" + std::to_string(100 + i) +
                      R"(","namespace":"ns","resourceVersion":"1"},"pad":")" +
                      std::string(pad, 'x') + R"("})");
  }

  TempDir dir_;
  std::shared_ptr<Indexer> store_;
  std::vector<size_t> chunks_;
  std::unique_ptr<ReplaceSession> session_;
};

// Large objects are committed in chunks bounded by bytes as well as by
// count, so that a relist of 1 MB objects does not hold a thousand of them
// (and their batch) at once.
TEST_F(ChunkedRelistTest, LargeObjectsCommitInChunksOfBoundedBytes) {
  for (int i = 0; i < 40; ++i) ASSERT_OK(session_->Put(PaddedPod(i, 1 << 20)));
  ASSERT_OK(session_->Finish("20"));
  EXPECT_EQ(*store_->Size(), 40u);
  ASSERT_GE(chunks_.size(), 4u);
  for (size_t n : chunks_) EXPECT_LE(n, 9u) << "a chunk of " << n << " objects of 1 MiB";
  auto cache = Cache::OpenReadOnly(dir_.path());
  ASSERT_OK(cache);
  EXPECT_OK((*cache)->Verify());
}

// A key repeated within a chunk replaces the earlier object, and the
// chunk's bytes count the replacement: small objects replaced by large ones
// fill the chunk as large ones do.
TEST_F(ChunkedRelistTest, ARepeatedKeyCountsTheReplacementsBytes) {
  for (int i = 0; i < 8; ++i) ASSERT_OK(session_->Put(PaddedPod(i, 10)));
  for (int i = 0; i < 8; ++i) ASSERT_OK(session_->Put(PaddedPod(i, 1100 * 1024)));
  for (int i = 8; i < 12; ++i) ASSERT_OK(session_->Put(PaddedPod(i, 10)));
  ASSERT_OK(session_->Finish("20"));
  EXPECT_EQ(*store_->Size(), 12u);
  ASSERT_EQ(chunks_.size(), 2u);
  EXPECT_EQ(chunks_[0], 8u) << "8 objects of 1.1 MiB pass the chunk's 8 MiB";
  EXPECT_EQ(chunks_[1], 4u);
  auto big = store_->GetByKey("ns/p107");
  ASSERT_OK(big);
  ASSERT_NE(*big, nullptr);
  EXPECT_GT((*big)->byte_size(), 1100u * 1024);
}

// A relist into an empty keyspace reads nothing back, and writes no seen
// marks, while its keys ascend and nothing else writes; a key out of order,
// a key repeated in a later chunk, or a commit beside it turns the lookups
// and the marks back on. Either way the indexes end consistent with the
// objects (design invariant 1, atomic commit: index entries are committed
// with their objects), and the relist leaves what a relist with marks all
// along leaves: what another writer added beside it and the list lacks is
// deleted; a listed key that another writer deleted and added again stays.
TEST(RocksIndexerTest, RelistIntoAnEmptyKeyspaceStaysConsistentWhateverTheOrder) {
  for (int variant = 0; variant < 6; ++variant) {
    SCOPED_TRACE("variant " + std::to_string(variant));
    TempDir dir;
    auto store = OpenPods(dir.path());
    auto session = store->BeginReplace(nullptr);
    ASSERT_OK(session);
    auto label = [](int i, const char* v) { return Labels{{"app", v + std::to_string(i % 7)}}; };
    for (int i = 0; i < 2500; ++i) {
      ASSERT_OK((*session)->Put(Pod("p" + std::to_string(10000 + i), "ns", "1", label(i, "a"))));
    }
    if (variant == 1) {  // a key of the first chunk again, changed, in the third
      ASSERT_OK((*session)->Put(Pod("p10003", "ns", "2", label(3, "b"))));
    } else if (variant == 2) {  // a key before the ones written
      ASSERT_OK((*session)->Put(Pod("a0", "ns", "1", label(0, "b"))));
    } else if (variant == 3) {  // a commit beside the relist, then a key of it again
      ASSERT_OK(store->Add(Pod("z9", "ns", "1", label(9, "c"))));
      ASSERT_OK((*session)->Put(Pod("z9", "ns", "2", label(9, "b"))));
    } else if (variant == 4) {  // a commit beside the relist of a key it lacks
      ASSERT_OK(store->Add(Pod("z8", "ns", "1", label(8, "c"))));
    } else if (variant == 5) {  // a listed key deleted and added again beside it
      ASSERT_OK(store->DeleteKey("ns/p10003"));
      ASSERT_OK(store->Add(Pod("p10003", "ns", "3", label(3, "c"))));
    }
    ASSERT_OK((*session)->Finish("20"));
    auto cache = Cache::OpenReadOnly(dir.path());
    ASSERT_OK(cache);
    EXPECT_OK((*cache)->Verify());
    const size_t want = variant == 2 || variant == 3 ? 2501 : 2500;
    EXPECT_EQ(*store->Size(), want);
    auto a3 = store->IndexKeys(kLabelIndex, "app=a3");
    ASSERT_OK(a3);
    if (variant == 1) {
      EXPECT_THAT(*a3, ::testing::Not(::testing::Contains("ns/p10003")));
      EXPECT_THAT(*store->IndexKeys(kLabelIndex, "app=b3"), ElementsAre("ns/p10003"));
    }
    if (variant == 3) {
      EXPECT_THAT(*store->IndexKeys(kLabelIndex, "app=c2"), ::testing::IsEmpty());
      EXPECT_THAT(*store->IndexKeys(kLabelIndex, "app=b2"), ElementsAre("ns/z9"));
    }
    if (variant == 4) {
      EXPECT_EQ(*store->GetByKey("ns/z8"), nullptr);
      EXPECT_THAT(*store->IndexKeys(kLabelIndex, "app=c1"), ::testing::IsEmpty());
    }
    if (variant == 5) {
      EXPECT_THAT(*store->IndexKeys(kLabelIndex, "app=c3"), ElementsAre("ns/p10003"));
    }
  }
}

// Indexes whose definition changed are rebuilt on open, never stale.
TEST(RocksIndexerTest, ChangedIndexVersionsAreRebuilt) {
  TempDir dir;
  {
    auto store =
        OpenPods(dir.path(), {.indexers = {{"team", LabelApp}}, .index_versions = {{"team", "1"}}});
    ASSERT_OK(store->Add(Pod("a", "ns", "1", {{"app", "web"}, {"tier", "front"}})));
    ASSERT_OK(store->Add(Pod("b", "ns", "2", {{"app", "db"}, {"tier", "back"}})));
    EXPECT_THAT(*store->IndexKeys("team", "web"), ElementsAre("ns/a"));
  }
  {  // Same version: kept as it is.
    auto store =
        OpenPods(dir.path(), {.indexers = {{"team", LabelApp}}, .index_versions = {{"team", "1"}}});
    EXPECT_THAT(*store->IndexKeys("team", "web"), ElementsAre("ns/a"));
  }
  {  // New version with a new function: rebuilt.
    auto store = OpenPods(dir.path(),
                          {.indexers = {{"team", LabelTier}}, .index_versions = {{"team", "2"}}});
    EXPECT_THAT(*store->IndexKeys("team", "web"), ::testing::IsEmpty());
    EXPECT_THAT(*store->IndexKeys("team", "back"), ElementsAre("ns/b"));
    EXPECT_THAT(*store->ListIndexFuncValues("team"), ElementsAre("back", "front"));
  }
  {  // An index that is no longer configured disappears; namespace stays.
    auto store = OpenPods(dir.path());
    EXPECT_EQ(store->IndexKeys("team", "back").status().code(), StatusCode::kNotFound);
    EXPECT_THAT(*store->IndexKeys(kNamespaceIndex, "ns"), ElementsAre("ns/a", "ns/b"));
  }
  auto cache = Cache::Open(dir.path());
  ASSERT_OK(cache);
  EXPECT_OK((*cache)->Verify());
}

TEST(RocksIndexerTest, LabelIndexServesListers) {
  TempDir dir;
  auto inner = OpenPods(dir.path());
  for (int i = 0; i < 300; ++i) {
    ASSERT_OK(inner->Add(Pod("p" + std::to_string(i), "ns" + std::to_string(i % 3),
                             std::to_string(i), {{"app", i % 30 == 0 ? "rare" : "common"}})));
  }
  auto store = std::make_shared<CountingIndexer>(inner);
  Lister pods(store, {"", "pods"});
  auto rare = pods.List(*LabelSelector::Parse("app=rare"));
  ASSERT_OK(rare);
  EXPECT_EQ(rare->size(), 10u);
  EXPECT_EQ(store->scanned(), 0u);
  EXPECT_EQ(store->fetched(), 10u);
  EXPECT_EQ(pods.Namespace("ns0").List(*LabelSelector::Parse("app=rare"))->size(), 10u);
  EXPECT_EQ(pods.Namespace("ns1").List(LabelSelector::Everything())->size(), 100u);
}

TEST(RocksIndexerTest, ZeroBytesAreRefused) {
  TempDir dir;
  auto store = OpenPods(dir.path(), {.key_func = [](const Object&) -> StatusOr<std::string> {
                          return std::string("a\0b", 3);
                        }});
  Status st = store->Add(Pod("x"));
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_THAT(std::string(st.message()), HasSubstr("zero byte"));
  auto cache = Cache::Open(dir.Sub("other"));
  EXPECT_TRUE((*cache)->OpenKeyspace(std::string("a\0b", 3)).status().IsInvalidArgument());
}

// Invariant 6: bad databases get clear errors and are left as they are.
TEST(RocksIndexerTest, OpenErrorsNameTheProblem) {
  TempDir dir;
  {  // Locked by this process.
    auto first = Cache::Open(dir.path());
    ASSERT_OK(first);
    auto second = Cache::Open(dir.path());
    ASSERT_FALSE(second.ok());
    EXPECT_EQ(second.status().code(), StatusCode::kBusy) << second.status();
    EXPECT_THAT(std::string(second.status().message()), HasSubstr("in use by another process"));
  }
  {  // Locked by another process.
    int ready[2];
    ASSERT_EQ(pipe(ready), 0);
    pid_t child = fork();
    if (child == 0) {
      auto c = Cache::Open(dir.path());
      char b = c.ok() ? 'y' : 'n';
      (void)!write(ready[1], &b, 1);
      pause();
      _exit(0);
    }
    char b = 0;
    ASSERT_EQ(read(ready[0], &b, 1), 1);
    ASSERT_EQ(b, 'y');
    auto locked = Cache::Open(dir.path());
    EXPECT_EQ(locked.status().code(), StatusCode::kBusy) << locked.status();
    // A reader is still welcome.
    auto reader = Cache::OpenReadOnly(dir.path());
    EXPECT_OK(reader) << reader.status();
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
  }
  EXPECT_TRUE(Cache::Open(dir.Sub("absent"), {.create_if_missing = false}).status().IsNotFound());
  EXPECT_TRUE(Cache::OpenReadOnly(dir.Sub("absent")).status().IsNotFound());

  {  // A newer format.
    PutRawMeta(dir.path(), storage::kFormatKey, "4");
    auto newer = Cache::Open(dir.path());
    EXPECT_EQ(newer.status().code(), StatusCode::kUnimplemented) << newer.status();
    EXPECT_THAT(std::string(newer.status().message()), HasSubstr("format version 4 is newer"));
  }
  {  // A RocksDB database that is not a cache.
    rocksdb::DB* raw = nullptr;
    rocksdb::Options o;
    o.create_if_missing = true;
    rocksdb::Status opened = rocksdb::DB::Open(o, dir.Sub("plain"), &raw);
    ASSERT_TRUE(opened.ok()) << opened.ToString();
    delete raw;
    auto plain = Cache::Open(dir.Sub("plain"));
    EXPECT_TRUE(plain.status().IsCorruption()) << plain.status();
    EXPECT_THAT(std::string(plain.status().message()),
                HasSubstr("column family 'objects' is missing"));
  }
  {  // A MANIFEST cut short: the error names it and the ways out, instead
     // of only the family its lost part recorded.
    const std::string cut = dir.Sub("cut");
    {
      auto c = Cache::Open(cut);
      ASSERT_OK(c);
      auto pods = (*c)->OpenKeyspace("pods");
      ASSERT_OK(pods);
      ASSERT_OK((*pods)->Add(testing::Pod("a", "ns", "5")));
    }
    std::string manifest;
    std::ifstream(cut + "/CURRENT") >> manifest;
    // The first records only: the default family's, before the others'.
    std::filesystem::resize_file(cut + "/" + manifest, 64);
    auto opened = Cache::Open(cut);
    EXPECT_TRUE(opened.status().IsCorruption()) << opened.status();
    EXPECT_THAT(std::string(opened.status().message()),
                HasSubstr("in " + cut + "/" + manifest +
                          ", which may be damaged or cut short: restore a snapshot (kcache "
                          "snapshot import) or sync into a new cache"));
    EXPECT_FALSE(Cache::OpenReadOnly(cut).ok());
  }
  {  // A damaged CURRENT file.
    ASSERT_OK(Cache::Open(dir.Sub("damaged")));
    std::ofstream(dir.Sub("damaged") + "/CURRENT", std::ios::trunc) << "MANIFEST-999999\n";
    auto damaged = Cache::Open(dir.Sub("damaged"));
    EXPECT_FALSE(damaged.ok());
    EXPECT_THAT(std::string(damaged.status().message()), HasSubstr(dir.Sub("damaged")));
  }
}

// Every file of `dir` with its size, to show that a refused open touched
// nothing.
std::map<std::string, uintmax_t> Files(const std::string& dir) {
  std::map<std::string, uintmax_t> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    out[e.path().filename().string()] = e.is_regular_file() ? e.file_size() : 0;
  }
  return out;
}

// A MANIFEST cut after its first records used to open as a valid, empty
// cache (15 of 30 cuts of a synced cache's MANIFEST): Verify passed, exports
// and readers saw no resources, and a writer's open deleted the table files
// the lost records listed. Now every cut is refused with Corruption, by
// readers and writers alike, or opens as the whole cache: a committed
// keyspace is never silently gone (docs/reliability.md).
TEST(RocksIndexerTest, ACutManifestNeverOpensAsAnEmptyCache) {
  TempDir dir;
  const std::string whole = dir.Sub("whole");
  {
    auto c = Cache::Open(whole);
    ASSERT_OK(c);
    for (const char* ks : {"pods", "configmaps"}) {
      auto store = (*c)->OpenKeyspace(ks);
      ASSERT_OK(store);
      Transaction txn;
      for (int i = 0; i < 200; ++i) txn.Add(Pod("p" + std::to_string(i), "ns", std::to_string(i)));
      txn.resource_version = "200";
      ASSERT_OK((*store)->Commit(txn, nullptr));
    }
  }  // closed: flushed, the WAL gone
  std::string manifest;
  std::ifstream(whole + "/CURRENT") >> manifest;
  const uintmax_t size = std::filesystem::file_size(whole + "/" + manifest);
  int refused = 0, opened = 0;
  for (uintmax_t cut = 40; cut < size + 40; cut += 40) {
    SCOPED_TRACE("MANIFEST cut to " + std::to_string(std::min(cut, size)) + " of " +
                 std::to_string(size) + " bytes");
    const std::string copy = dir.Sub("cut" + std::to_string(cut));
    std::filesystem::copy(whole, copy);
    std::filesystem::resize_file(copy + "/" + manifest, std::min(cut, size));
    const auto before = Files(copy);
    auto reader = Cache::OpenReadOnly(copy);
    auto writer = Cache::Open(copy);
    EXPECT_EQ(reader.ok(), writer.ok()) << reader.status() << " / " << writer.status();
    if (!writer.ok()) {
      ++refused;
      EXPECT_TRUE(writer.status().IsCorruption()) << writer.status();
      EXPECT_TRUE(reader.status().IsCorruption()) << reader.status();
      // Refused, the writer deleted nothing: it is refused again.
      EXPECT_EQ(Files(copy).size(), before.size());
      EXPECT_TRUE(Cache::Open(copy).status().IsCorruption());
      continue;
    }
    ++opened;
    EXPECT_OK((*writer)->Verify());
    auto names = (*writer)->ListKeyspaces();
    ASSERT_OK(names);
    EXPECT_THAT(*names, ElementsAre("configmaps", "pods"));
    for (const std::string& ks : *names) {
      auto stats = (*writer)->Stats(ks);
      ASSERT_OK(stats);
      EXPECT_EQ(stats->objects, 200u) << ks;
    }
  }
  EXPECT_GE(opened, 1);  // the whole MANIFEST
  EXPECT_GE(refused, 5) << "of " << size / 40 << " cuts";
}

// Rows whose keyspace has no metadata (what a lost MANIFEST record or a
// hand edit can leave) fail Verify, and an export refuses to write a file
// that its own verify would refuse.
TEST(RocksIndexerTest, RowsOfAKeyspaceWithoutMetadataFailVerifyAndExport) {
  TempDir dir;
  auto c = Cache::Open(dir.Sub("c"));
  ASSERT_OK(c);
  auto pods = (*c)->OpenKeyspace("pods");
  ASSERT_OK(pods);
  ASSERT_OK((*pods)->Add(Pod("a", "ns", "5")));
  ASSERT_OK((*c)->Verify());
  const std::shared_ptr<storage::Db>& db = storage::DbOf(**c);
  ASSERT_TRUE(db);
  ASSERT_TRUE(db->Put(db->objects, storage::ObjectKey("ghosts", "ns/g"), "x").ok());
  Status verify = (*c)->Verify();
  EXPECT_TRUE(verify.IsCorruption()) << verify;
  EXPECT_THAT(std::string(verify.message()), HasSubstr("keyspace ghosts has object rows"));
  auto exported = ExportSnapshot(**c, dir.Sub("s.kcs"));
  EXPECT_TRUE(exported.status().IsCorruption()) << exported.status();
  EXPECT_THAT(std::string(exported.status().message()), HasSubstr("keyspace ghosts"));
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("s.kcs")));
}

// A directory that holds a damaged cache (its CURRENT file lost) or other
// files is refused with what is wrong and the way out, and left exactly as
// it was: never taken for a new cache and overwritten.
TEST(RocksIndexerTest, ADirectoryThatIsNotAWholeCacheIsRefusedAndLeftAlone) {
  TempDir dir;
  {
    auto cache = Cache::Open(dir.Sub("lost"));
    ASSERT_OK(cache);
    ASSERT_OK((*(*cache)->OpenKeyspace("pods"))->Add(Pod("p", "ns", "1")));
  }
  std::filesystem::remove(dir.Sub("lost") + "/CURRENT");
  const auto before = Files(dir.Sub("lost"));
  for (bool read_only : {false, true}) {
    auto opened = read_only ? Cache::OpenReadOnly(dir.Sub("lost")) : Cache::Open(dir.Sub("lost"));
    EXPECT_EQ(opened.status().code(), StatusCode::kFailedPrecondition) << opened.status();
    EXPECT_THAT(std::string(opened.status().message()), HasSubstr("no CURRENT file"));
    EXPECT_THAT(std::string(opened.status().message()), HasSubstr("kcache snapshot import"));
  }
  EXPECT_EQ(Files(dir.Sub("lost")), before);

  std::filesystem::create_directory(dir.Sub("other"));
  std::ofstream(dir.Sub("other") + "/notes.txt") << "mine\n";
  auto other = Cache::Open(dir.Sub("other"));
  EXPECT_EQ(other.status().code(), StatusCode::kFailedPrecondition) << other.status();
  EXPECT_THAT(std::string(other.status().message()), HasSubstr("not empty (notes.txt)"));
  EXPECT_EQ(Files(dir.Sub("other")), (std::map<std::string, uintmax_t>{{"notes.txt", 5}}));

  std::ofstream(dir.Sub("file")) << "x";
  auto file = Cache::Open(dir.Sub("file"));
  EXPECT_EQ(file.status().code(), StatusCode::kFailedPrecondition) << file.status();
  EXPECT_THAT(std::string(file.status().message()), HasSubstr("not a directory"));
}

// A reader of a cache whose table file is gone, cut short or has a damaged
// footer is refused at open, naming the file, instead of answering as if
// the objects in it did not exist (a RocksDB secondary instance tolerates
// missing files, because its writer may have just deleted them).
TEST(RocksIndexerTest, AReaderRefusesACacheWithADamagedTableFile) {
  TempDir dir;
  {
    auto cache = Cache::Open(dir.Sub("c"));
    ASSERT_OK(cache);
    auto store = *(*cache)->OpenKeyspace("pods");
    Transaction txn;
    for (int i = 0; i < 3000; ++i) txn.Add(Pod("p" + std::to_string(i), "ns", std::to_string(i)));
    txn.resource_version = "3000";
    ASSERT_OK(store->Commit(txn, nullptr));
  }  // closed: the objects are in table files
  std::string largest;
  uintmax_t size = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.Sub("c"))) {
    if (e.path().extension() == ".sst" && e.file_size() > size) {
      size = e.file_size();
      largest = e.path().string();
    }
  }
  ASSERT_FALSE(largest.empty());
  const std::string name = std::filesystem::path(largest).filename().string();
  std::filesystem::copy(dir.Sub("c"), dir.Sub("good"));
  struct Damage {
    const char* what;
    std::function<void(const std::string&)> apply;
  } damages[] = {
      {"deleted", [](const std::string& f) { std::filesystem::remove(f); }},
      {"cut short", [size](const std::string& f) { std::filesystem::resize_file(f, size / 2); }},
      {"footer",
       [size](const std::string& f) {  // its magic number
         std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
         io.seekp(static_cast<std::streamoff>(size - 8));
         io.write("\xde\xad\xbe\xef\xde\xad\xbe\xef", 8);
       }},
  };
  for (const Damage& d : damages) {
    SCOPED_TRACE(d.what);
    std::filesystem::remove_all(dir.Sub("c"));
    std::filesystem::copy(dir.Sub("good"), dir.Sub("c"));
    d.apply(dir.Sub("c") + "/" + name);
    auto reader = Cache::OpenReadOnly(dir.Sub("c"));
    if (reader.ok()) {
      ADD_FAILURE() << "a reader opened a cache with its table file " << d.what;
      continue;
    }
    EXPECT_EQ(reader.status().code(), StatusCode::kCorruption) << reader.status();
    // Named by its number (RocksDB may name it by its old .ldb suffix).
    EXPECT_THAT(std::string(reader.status().message()), HasSubstr(name.substr(0, name.find('.'))));
  }
}

// A reader's working directory is in $TMPDIR, removed when it closes, and
// one that a killed reader left is removed by the next reader.
TEST(RocksIndexerTest, ReadersCleanUpTheirWorkingDirectoriesInTmpdir) {
  TempDir dir, tmp;
  ASSERT_OK(Cache::Open(dir.Sub("c")));
  pid_t dead = fork();
  if (dead == 0) _exit(0);
  waitpid(dead, nullptr, 0);
  const std::string stale = tmp.Sub("kcache-reader-" + std::to_string(dead) + "-abcdef");
  std::filesystem::create_directory(stale);
  std::ofstream(stale + "/LOG") << "left by a killed reader\n";
  const char* old = std::getenv("TMPDIR");
  const std::string saved = old ? old : "";
  setenv("TMPDIR", tmp.path().c_str(), 1);
  {
    auto reader = Cache::OpenReadOnly(dir.Sub("c"));
    ASSERT_OK(reader) << reader.status();
    EXPECT_FALSE(std::filesystem::exists(stale));
    std::vector<std::string> mine;
    for (const auto& e : std::filesystem::directory_iterator(tmp.path()))
      mine.push_back(e.path().filename().string());
    ASSERT_EQ(mine.size(), 1u) << ::testing::PrintToString(mine);
    EXPECT_EQ(mine[0].rfind("kcache-reader-" + std::to_string(getpid()) + "-", 0), 0u) << mine[0];
  }
  EXPECT_TRUE(std::filesystem::is_empty(tmp.path()));
  if (old) {
    setenv("TMPDIR", saved.c_str(), 1);
  } else {
    unsetenv("TMPDIR");
  }
}

// Invariant 6: a flipped byte in a table file is found by Verify, which
// names the damage; nothing is rewritten.
TEST(RocksIndexerTest, VerifyFindsDamagedTables) {
  TempDir dir;
  {
    auto cache = Cache::Open(dir.path());
    auto store = *(*cache)->OpenKeyspace("pods");
    Transaction txn;
    for (int i = 0; i < 2000; ++i) txn.Add(Pod("p" + std::to_string(i), "ns", std::to_string(i)));
    ASSERT_OK(store->Commit(txn, nullptr));
  }
  {  // Reopening replays the log into a table file.
    auto cache = Cache::Open(dir.path());
    ASSERT_OK(cache);
    auto store = *(*cache)->OpenKeyspace("pods");
    ASSERT_OK((*cache)->Verify());
  }
  std::string largest;
  uintmax_t size = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    if (e.path().extension() == ".sst" && e.file_size() > size) {
      size = e.file_size();
      largest = e.path();
    }
  }
  ASSERT_FALSE(largest.empty());
  {
    std::fstream f(largest, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size / 3));
    char junk[64];
    std::memset(junk, 0x5a, sizeof junk);
    f.write(junk, sizeof junk);
  }
  auto cache = Cache::OpenReadOnly(dir.path());
  ASSERT_OK(cache) << cache.status();
  Status st = (*cache)->Verify();
  EXPECT_TRUE(st.IsCorruption()) << st << " (damaged " << largest << ", " << size << " bytes)";
}

TEST(RocksIndexerTest, ReaderBesideAWriter) {
  TempDir dir;
  auto writer_cache = Cache::Open(dir.path());
  ASSERT_OK(writer_cache);
  auto writer = *(*writer_cache)->OpenKeyspace("pods");
  ASSERT_OK(writer->Add(Pod("a", "ns", "1")));

  auto reader_cache = Cache::OpenReadOnly(dir.path());
  ASSERT_OK(reader_cache) << reader_cache.status();
  auto reader = *(*reader_cache)->OpenKeyspace("pods");
  EXPECT_THAT(*reader->ListKeys(), ElementsAre("ns/a"));
  EXPECT_EQ(reader->LastSyncResourceVersion(), "1");

  ASSERT_OK(writer->Add(Pod("b", "ns", "2")));
  ASSERT_OK((*reader_cache)->Refresh());
  EXPECT_THAT(*reader->ListKeys(), ElementsAre("ns/a", "ns/b"));
  EXPECT_EQ(reader->LastSyncResourceVersion(), "2");
  EXPECT_EQ(*reader->Size(), 2u);
  EXPECT_EQ(reader->Add(Pod("c", "ns", "3")).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ((*reader_cache)->Compact().code(), StatusCode::kFailedPrecondition);
  ASSERT_OK((*writer_cache)->Compact());
  EXPECT_THAT(*writer->ListKeys(), ElementsAre("ns/a", "ns/b"));
}

TEST(RocksIndexerTest, SyncEveryCommit) {
  TempDir dir;
  auto cache = Cache::Open(dir.path(), {.sync = SyncMode::kEveryCommit});
  ASSERT_OK(cache);
  auto store = *(*cache)->OpenKeyspace("pods");
  ASSERT_OK(store->Add(Pod("a", "ns", "1")));
  EXPECT_EQ(store->LastSyncResourceVersion(), "1");
}

}  // namespace
}  // namespace kcache::testing
