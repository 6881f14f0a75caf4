// SPDX-License-Identifier: Apache-2.0

// A snapshot file read in place (OpenSnapshot): every read answers as the
// cache it was exported from does, across many blocks and a block cache
// smaller than the file; writes are refused; the journal is an empty window
// at each resume point; a file damaged after opening is reported, never
// read as data.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "kcache/cache.h"
#include "kcache/snapshot.h"
#include "persist/snapshot_format.h"
#include "testing/objects.h"
#include "testing/status_matchers.h"
#include "testing/temp_dir.h"

namespace kcache {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::Pod;

using testing::ByNode;
using testing::ByNodeOptions;

constexpr int kPods = 6000;

std::vector<std::string> Keys(Indexer& s) {
  auto keys = s.ListKeys();
  EXPECT_OK(keys) << keys.status();
  return keys.ok() ? *keys : std::vector<std::string>{};
}

// "key rv" of each object an iterator yields, then its status.
std::vector<std::string> Walk(std::unique_ptr<ObjectIterator> it) {
  std::vector<std::string> out;
  for (; it->Valid(); it->Next()) out.push_back(it->key() + " " + it->object()->resource_version());
  if (!it->status().ok()) out.push_back("error: " + it->status().ToString());
  return out;
}

class SnapshotCacheTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    auto cache = Cache::Open(dir_->Sub("cache"));
    ASSERT_OK(cache) << cache.status();
    auto pods = (*cache)->OpenKeyspace("pods", ByNodeOptions());
    ASSERT_OK(pods) << pods.status();
    // Enough bytes for several 1 MiB blocks: a padding annotation.
    const std::string pad(400, 'x');
    Transaction txn;
    for (int i = 0; i < kPods; ++i) {
      txn.Add(Pod("p" + std::to_string(i), "ns-" + std::to_string(i % 7), std::to_string(i + 1),
                  {{"app", "a" + std::to_string(i % 11)}},
                  {{"node", "n" + std::to_string(i % 13)}, {"pad", pad}}));
    }
    txn.resource_version = "10000";
    ASSERT_OK((*pods)->Commit(txn, nullptr));
    auto nodes = (*cache)->OpenKeyspace("nodes");
    ASSERT_OK(nodes);
    for (int i = 0; i < 5; ++i) {
      ASSERT_OK((*nodes)->Add(Pod("node-" + std::to_string(i), "", std::to_string(20 + i))));
    }
    // A cluster-scoped and a namespaced object in one keyspace.
    auto mixed = (*cache)->OpenKeyspace("mixed");
    ASSERT_OK(mixed);
    ASSERT_OK((*mixed)->Add(Pod("top", "", "31")));
    ASSERT_OK((*mixed)->Add(Pod("inner", "ns-a", "32")));
    ASSERT_OK((*cache)->SetResourceInfo(
        "pods", ResourceInfo({.version = "v1", .resource = "pods", .kind = "Pod"})));
    ASSERT_OK((*cache)->SetClusterInfo({"https://10.0.0.1:6443", "v1.20.2"}));
    auto m = ExportSnapshot(**cache, dir_->Sub("cache.kcs"));
    ASSERT_OK(m) << m.status();
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  void SetUp() override {
    auto rocks = Cache::OpenReadOnly(dir_->Sub("cache"));
    ASSERT_OK(rocks) << rocks.status();
    rocks_ = *rocks;
    SnapshotReadOptions o;
    o.block_cache_bytes = 1;  // one block at a time: every move between blocks reads the file
    auto snap = OpenSnapshot(file(), o);
    ASSERT_OK(snap) << snap.status();
    snap_ = *snap;
  }

  static std::string file() { return dir_->Sub("cache.kcs"); }

  static testing::TempDir* dir_;
  std::shared_ptr<Cache> rocks_, snap_;
};

testing::TempDir* SnapshotCacheTest::dir_ = nullptr;

TEST_F(SnapshotCacheTest, TheFileSpansSeveralBlocks) {
  int blocks = 0;  // rows blocks: progress is reported after each
  auto counted = VerifySnapshot(file(), [&](const SnapshotProgress&) { ++blocks; });
  ASSERT_OK(counted);
  EXPECT_GE(blocks, 3) << "raise kPods or the padding";
}

TEST_F(SnapshotCacheTest, KeyspacesStatsAndClusterAreTheCaches) {
  auto a = rocks_->ListKeyspaces(), b = snap_->ListKeyspaces();
  ASSERT_OK(a);
  ASSERT_OK(b);
  EXPECT_EQ(*a, *b);
  for (const std::string& ks : *a) {
    SCOPED_TRACE(ks);
    auto x = rocks_->Stats(ks), y = snap_->Stats(ks);
    ASSERT_OK(x);
    ASSERT_OK(y);
    EXPECT_EQ(x->objects, y->objects);
    EXPECT_EQ(x->resource_version, y->resource_version);
    EXPECT_EQ(x->relist_in_progress, y->relist_in_progress);
    EXPECT_EQ(x->indexes, y->indexes);
    EXPECT_EQ(x->resource.has_value(), y->resource.has_value());
    EXPECT_GT(y->bytes_on_disk, 0u);
    EXPECT_EQ(y->journal.start, y->resource_version);
  }
  EXPECT_EQ(snap_->Stats("pods")->resource->kind, "Pod");
  EXPECT_EQ(snap_->Stats("nope").status().code(), StatusCode::kNotFound);
  auto cluster = snap_->GetClusterInfo();
  ASSERT_OK(cluster);
  ASSERT_TRUE(cluster->has_value());
  EXPECT_EQ((*cluster)->version, "v1.20.2");
  EXPECT_EQ(snap_->dir(), file());
}

// A snapshot's memory is its cache of decompressed blocks: empty until read,
// then at least one block, which may exceed the capacity of one byte.
TEST_F(SnapshotCacheTest, MemoryIsTheBlocksItHolds) {
  EXPECT_EQ(snap_->Memory().block_cache, 0u);
  auto pods = snap_->OpenKeyspace("pods", ByNodeOptions());
  ASSERT_OK(pods) << pods.status();
  ASSERT_EQ(Keys(**pods).size(), size_t{kPods});
  const CacheMemory m = snap_->Memory();
  EXPECT_GT(m.block_cache, 0u);
  EXPECT_EQ(m.memtables, 0u);
}

// Every read of StoredIndexer, over the RocksDB rows and over the file's
// rows, gives the same answer.
TEST_F(SnapshotCacheTest, EveryReadAnswersAsTheCache) {
  for (const std::string ks : {"pods", "nodes", "mixed", "absent"}) {
    SCOPED_TRACE(ks);
    KeyspaceOptions o = ks == "pods" ? ByNodeOptions() : KeyspaceOptions{};
    auto a = rocks_->OpenKeyspace(ks, o);
    auto b = snap_->OpenKeyspace(ks, o);
    ASSERT_OK(a) << a.status();
    ASSERT_OK(b) << b.status();
    Indexer& r = **a;
    Indexer& s = **b;
    EXPECT_EQ(*r.Size(), *s.Size());
    EXPECT_EQ(r.LastSyncResourceVersion(), s.LastSyncResourceVersion());
    const std::vector<std::string> keys = Keys(r);
    EXPECT_EQ(keys, Keys(s));
    EXPECT_EQ(Walk(r.NewIterator()), Walk(s.NewIterator()));
    // Iterators from a key, including ones between and past the keys.
    for (const std::string start : {"", "ns-3/", "ns-3/p5", "ns-6/p9999", "node-2", "zzz", "!"}) {
      SCOPED_TRACE(start);
      EXPECT_EQ(Walk(r.NewIteratorFrom(start)), Walk(s.NewIteratorFrom(start)));
    }
    // Point reads of every key (object bytes as stored), and of absent ones.
    for (const std::string& k : keys) {
      auto x = r.GetByKey(k), y = s.GetByKey(k);
      ASSERT_OK(y) << y.status();
      ASSERT_TRUE(*y) << k;
      ASSERT_EQ((*x)->json(), (*y)->json()) << k;
    }
    for (const std::string k : {"", "a", "ns-0/p", "ns-9/p1", "\x7f"}) {
      auto y = s.GetByKey(k);
      ASSERT_OK(y);
      EXPECT_FALSE(*y) << k;
    }
    // Indexes: their values, and what each value lists.
    for (const std::string& index :
         {std::string(kNamespaceIndex), std::string(kLabelIndex), std::string("by-node")}) {
      SCOPED_TRACE(index);
      auto vx = r.ListIndexFuncValues(index), vy = s.ListIndexFuncValues(index);
      ASSERT_OK(vy);
      EXPECT_EQ(*vx, *vy);
      std::vector<std::string> values = *vx;
      values.push_back("no-such-value");
      for (const std::string& v : values) {
        SCOPED_TRACE(v);
        auto kx = r.IndexKeys(index, v), ky = s.IndexKeys(index, v);
        EXPECT_EQ(kx.status().code(), ky.status().code());
        if (kx.ok()) {
          EXPECT_EQ(*kx, *ky);
        }
        EXPECT_EQ(Walk(r.NewIndexIterator(index, v)), Walk(s.NewIndexIterator(index, v)));
      }
    }
    if (ks == "pods") {
      auto probe = Pod("x", "ns-2", "", {{"app", "a3"}}, {{"node", "n4"}});
      auto ix = r.Index("by-node", *probe), iy = s.Index("by-node", *probe);
      ASSERT_OK(iy) << iy.status();
      EXPECT_EQ(testing::Names(*ix), testing::Names(*iy));
      EXPECT_EQ(iy->size(), static_cast<size_t>((kPods + 12) / 13) - (4 >= kPods % 13 ? 1 : 0));
    }
  }
}

TEST_F(SnapshotCacheTest, WritesAreRefused) {
  auto pods = snap_->OpenKeyspace("pods");
  ASSERT_OK(pods);
  EXPECT_EQ((*pods)->Add(Pod("new", "ns-0", "1")).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ((*pods)->DeleteKey("ns-0/p0").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ((*pods)->Replace({}, "1").status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ((*pods)->AddIndexers({{"x", ByNode}}).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(snap_->Compact().code(), StatusCode::kFailedPrecondition);
  Status st = snap_->SetClusterInfo({"https://x", "v1"});
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(st.message()), HasSubstr("is read-only"));
  EXPECT_OK(snap_->Refresh());
  // Nothing changed.
  EXPECT_EQ(*(*pods)->Size(), static_cast<size_t>(kPods));
  // A snapshot file is not exported again: it is copied.
  EXPECT_EQ(ExportSnapshot(*snap_, dir_->Sub("again.kcs")).status().code(),
            StatusCode::kFailedPrecondition);
}

// The journal of a snapshot is an empty window at each resume point: a
// watcher from the snapshot's resourceVersion (or later) gets no events and
// is told where it stands; one from before gets Expired (410), as from a
// cache whose journal starts there.
TEST_F(SnapshotCacheTest, JournalIsAnEmptyWindowAtEachResumePoint) {
  auto at = snap_->ReadJournal("pods", "10000", 100);
  ASSERT_OK(at) << at.status();
  EXPECT_TRUE(at->events.empty());
  EXPECT_EQ(at->resource_version, "10000");
  EXPECT_FALSE(at->more);
  auto later = snap_->ReadJournal("pods", "12000", 100);
  ASSERT_OK(later);
  EXPECT_EQ(later->resource_version, "12000");
  auto before = snap_->ReadJournal("pods", "9999", 100);
  EXPECT_EQ(before.status().code(), StatusCode::kExpired) << before.status();
  EXPECT_THAT(std::string(before.status().message()), HasSubstr("has the changes after 10000"));
  EXPECT_EQ(snap_->ReadJournal("pods", "x1", 100).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(snap_->ReadJournal("pods", "10000", 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(snap_->ReadJournal("absent", "1", 10).status().code(), StatusCode::kNotFound);
}

TEST_F(SnapshotCacheTest, CheckpointImportsTheFileAndVerifyReadsItAgain) {
  EXPECT_OK(snap_->Verify());
  const std::string out = dir_->Sub("checkpoint-" + std::to_string(::getpid()));
  ASSERT_OK(snap_->Checkpoint(out));
  EXPECT_EQ(snap_->Checkpoint(out).code(), StatusCode::kAlreadyExists);
  auto copy = Cache::OpenReadOnly(out);
  ASSERT_OK(copy) << copy.status();
  auto pods = (*copy)->OpenKeyspace("pods");
  ASSERT_OK(pods);
  EXPECT_EQ(*(*pods)->Size(), static_cast<size_t>(kPods));
  EXPECT_EQ((*pods)->LastSyncResourceVersion(), "10000");
}

// Many readers at once over a cache of one block: loads, evictions and
// cursors moving between blocks race (run under ThreadSanitizer).
TEST_F(SnapshotCacheTest, ConcurrentReadersSeeTheSameObjects) {
  auto pods = snap_->OpenKeyspace("pods", ByNodeOptions());
  ASSERT_OK(pods);
  std::shared_ptr<Indexer> s = *pods;
  const std::vector<std::string> keys = Keys(*s);
  ASSERT_EQ(keys.size(), static_cast<size_t>(kPods));
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      size_t n = 0;
      for (auto it = s->NewIterator(); it->Valid(); it->Next()) ++n;
      if (n != keys.size()) ++failures;
      for (size_t i = t; i < keys.size(); i += 97) {
        auto o = s->GetByKey(keys[i]);
        if (!o.ok() || !*o || std::string((*o)->name()) != keys[i].substr(keys[i].find('/') + 1))
          ++failures;
      }
      auto byNode = s->ByIndex("by-node", "n" + std::to_string(t));
      if (!byNode.ok() || byNode->empty()) ++failures;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
}

// A file damaged after opening: the damaged block is reported as
// Corruption, with the file and the block's place, when a read reaches it.
TEST_F(SnapshotCacheTest, AFileDamagedAfterOpeningIsReportedNotRead) {
  const std::string path = dir_->Sub("damaged.kcs");
  fs::copy_file(file(), path, fs::copy_options::overwrite_existing);
  SnapshotReadOptions o;
  o.block_cache_bytes = 1;
  auto snap = OpenSnapshot(path, o);
  ASSERT_OK(snap);
  auto pods = (*snap)->OpenKeyspace("pods");
  ASSERT_OK(pods);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(path) / 2));
    char c = 0;
    f.read(&c, 1);
    f.seekp(static_cast<std::streamoff>(fs::file_size(path) / 2));
    c ^= 0x20;
    f.write(&c, 1);
  }
  auto list = (*pods)->List();
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(list.status().code(), StatusCode::kCorruption) << list.status();
  EXPECT_THAT(std::string(list.status().message()), HasSubstr(path + ": block "));
  EXPECT_THAT(std::string(list.status().message()), HasSubstr("checksum mismatch"));
  // Cut short: a read past the end says so.
  fs::resize_file(path, fs::file_size(path) / 3);
  auto keys = (*pods)->ListKeys();
  EXPECT_EQ(keys.status().code(), StatusCode::kCorruption) << keys.status();
}

}  // namespace
}  // namespace kcache
