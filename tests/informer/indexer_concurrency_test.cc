// SPDX-License-Identifier: Apache-2.0

// Readers and writers on one Indexer at once, in memory and in RocksDB. Each
// reader checks that what it sees is consistent (every index entry matches
// its object, iterators move forward); the final state must equal what the
// writers did. Run under ThreadSanitizer by the test command.

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include "kcache/cache.h"
#include "kcache/indexer.h"
#include "testing/objects.h"
#include "testing/status_matchers.h"
#include "testing/temp_dir.h"

namespace kcache {
namespace {

using testing::Pod;

constexpr int kWriters = 4;
constexpr int kReaders = 3;
constexpr int kOpsPerWriter = 3000;
constexpr int kKeysPerWriter = 50;

StatusOr<std::vector<std::string>> ByGen(const Object& o) {
  auto it = o.labels().find("gen");
  if (it == o.labels().end()) return std::vector<std::string>{};
  return std::vector<std::string>{it->second};
}

StatusOr<std::vector<std::string>> ByWriter(const Object& o) {
  return std::vector<std::string>{o.labels().at("writer")};
}

// What writer `w` leaves behind for key `k`: -1 if deleted, else its gen.
int FinalGen(int w, int k) {
  int last = -1;
  for (int i = 0; i < kOpsPerWriter; ++i) {
    if (i % kKeysPerWriter != k) continue;
    last = (i + w) % 7 == 0 ? -1 : i % 5;
  }
  return last;
}

// The store under test; `rocks` stores in a RocksDB cache (its keyspace
// gets the "writer" index from the start rather than midway).
struct Store {
  std::shared_ptr<Indexer> indexer;
  std::shared_ptr<Cache> cache;  // keeps a RocksDB keyspace open
};

class IndexerConcurrencyTest : public ::testing::TestWithParam<bool> {
 protected:
  bool rocks() const { return GetParam(); }
  Store Make() {
    if (!rocks()) return {NewMemoryIndexer({.indexers = {{"gen", ByGen}}}), nullptr};
    auto cache = Cache::Open(dir_.path());
    EXPECT_OK(cache) << cache.status();
    KeyspaceOptions o;
    o.indexers = {{"gen", ByGen}, {"writer", ByWriter}};
    o.index_versions = {{"gen", "gen@1"}, {"writer", "writer@1"}};
    auto ks = (*cache)->OpenKeyspace("pods", o);
    EXPECT_OK(ks) << ks.status();
    return {*ks, *cache};
  }
  testing::TempDir dir_;
};

INSTANTIATE_TEST_SUITE_P(Stores, IndexerConcurrencyTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return std::string(p.param ? "Rocks" : "Memory");
                         });

// Design invariant: readers never see a half-applied write (an index entry
// without its object, or the reverse), whichever store.
TEST_P(IndexerConcurrencyTest, ReadersSeeConsistentIndexesWhileWritersRun) {
  Store made = Make();
  ASSERT_NE(made.indexer, nullptr);
  std::shared_ptr<Indexer> store = made.indexer;
  std::atomic<int> writers_done{0};
  std::atomic<long> reads{0};
  std::vector<std::thread> threads;

  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      struct Done {
        std::atomic<int>* n;
        ~Done() { ++*n; }
      } done{&writers_done};
      const std::string ns = "w" + std::to_string(w);
      for (int i = 0; i < kOpsPerWriter; ++i) {
        std::string name = "p" + std::to_string(i % kKeysPerWriter);
        if ((i + w) % 7 == 0) {
          ASSERT_OK(store->DeleteKey(ns + "/" + name));
        } else {
          ASSERT_OK(store->Update(
              Pod(name, ns, std::to_string(i), {{"gen", std::to_string(i % 5)}, {"writer", ns}})));
        }
        if (w == 0 && i == kOpsPerWriter / 2 && !rocks()) {
          ASSERT_OK(store->AddIndexers({{"writer", ByWriter}}));
        }
      }
    });
  }
  for (int r = 0; r < kReaders; ++r) {
    threads.emplace_back([&, r] {
      while (writers_done.load() < kWriters) {
        std::string gen = std::to_string(r % 5);
        auto objs = store->ByIndex("gen", gen);
        ASSERT_OK(objs);
        for (const ObjectPtr& o : *objs) ASSERT_EQ(o->labels().at("gen"), gen);
        auto ns = store->ByIndex(kNamespaceIndex, "w" + std::to_string(r));
        ASSERT_OK(ns);
        for (const ObjectPtr& o : *ns) ASSERT_EQ(o->namespace_(), "w" + std::to_string(r));
        std::string last;
        for (auto it = store->NewIterator(); it->Valid(); it->Next()) {
          ASSERT_LT(last, it->key());
          last = it->key();
        }
        ASSERT_LE(*store->Size(), size_t{kWriters * kKeysPerWriter});
        reads++;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_GT(reads.load(), 0);

  // The final contents are exactly what the writers left.
  size_t want_total = 0;
  for (int w = 0; w < kWriters; ++w) {
    for (int k = 0; k < kKeysPerWriter; ++k) {
      std::string key = "w" + std::to_string(w) + "/p" + std::to_string(k);
      ObjectPtr got = *store->GetByKey(key);
      int gen = FinalGen(w, k);
      if (gen < 0) {
        EXPECT_EQ(got, nullptr) << key;
      } else {
        ++want_total;
        ASSERT_NE(got, nullptr) << key;
        EXPECT_EQ(got->labels().at("gen"), std::to_string(gen)) << key;
      }
    }
  }
  EXPECT_EQ(*store->Size(), want_total);
  // Every index entry matches its object, and every object is indexed once.
  for (const char* index : {"gen", "writer", kNamespaceIndex}) {
    size_t entries = 0;
    for (const std::string& v : *store->ListIndexFuncValues(index)) {
      for (const ObjectPtr& o : *store->ByIndex(index, v)) {
        std::string have =
            std::string(index) == kNamespaceIndex ? o->namespace_() : o->labels().at(index);
        EXPECT_EQ(have, v) << index;
        ++entries;
      }
    }
    EXPECT_EQ(entries, want_total) << index;
  }
}

// Invariants 1 and 2 for a store's first list written as ingested table
// files (small memtables: past its first MiB, segments of 4 MiB; chunks of
// 1,000 pods, 1.8 MB): a reader beside it sees whole commits, each object
// with its index entries; a writer beside it, while the second chunk waits
// in an unfinished segment, first has that segment ingested and the listed
// keys marked, so that what it adds and the list lacks is deleted at the
// end, and a key of that segment it deletes and adds again stays.
TEST(IngestedListConcurrencyTest, ReadersAndAWriterBesideAnIngestedFirstList) {
  testing::TempDir dir;
  CacheOptions options;
  options.memtable_bytes = size_t{4} << 20;
  auto cache = Cache::Open(dir.path(), options);
  ASSERT_OK(cache) << cache.status();
  auto store = (*cache)->OpenKeyspace("pods");
  ASSERT_OK(store) << store.status();
  constexpr int kPods = 4000;
  auto name = [](int i) {
    char n[16];
    std::snprintf(n, sizeof n, "p%05d", i);
    return std::string(n);
  };
  const std::string pad(1500, 'x');
  std::atomic<int> put{0};
  std::atomic<bool> done{false};
  std::atomic<int> reads{0};
  std::thread reader([&] {
    while (!done) {
      auto keys = (*store)->ListKeys();
      ASSERT_OK(keys);
      size_t labelled = 0;
      for (const char* app : {"app=a0", "app=a1", "app=a2"}) {
        auto found = (*store)->IndexKeys(kLabelIndex, app);
        ASSERT_OK(found);
        labelled += found->size();
      }
      // The writer's extra pod is labelled too; reads of keys and of the
      // index are not one snapshot, so only a bound holds between them.
      ASSERT_LE(keys->size(), size_t{kPods + 1});
      ASSERT_LE(labelled, size_t{kPods + 1});
      reads++;
    }
  });
  std::thread writer([&] {
    while (put < 2100) std::this_thread::yield();
    ASSERT_OK((*store)->Add(Pod("zz", "ns", "9", {{"app", "a0"}})));
    ASSERT_OK((*store)->DeleteKey("ns/" + name(1500)));
    ASSERT_OK((*store)->Add(Pod(name(1500), "ns", "9", {{"app", "a1"}})));
  });
  auto session = (*store)->BeginReplace(nullptr);
  ASSERT_OK(session);
  for (int i = 0; i < kPods; ++i) {
    ASSERT_OK((*session)->Put(
        Pod(name(i), "ns", "7", {{"app", "a" + std::to_string(i % 3)}}, {{"pad", pad}})));
    put++;
  }
  writer.join();
  ASSERT_OK((*session)->Finish("7"));
  done = true;
  reader.join();
  EXPECT_GT(reads.load(), 0);
  EXPECT_OK((*cache)->Verify());
  EXPECT_EQ(*(*store)->Size(), size_t{kPods});
  EXPECT_EQ(*(*store)->GetByKey("ns/zz"), nullptr);
  ObjectPtr again = *(*store)->GetByKey("ns/" + name(1500));
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->resource_version(), "9");
  size_t labelled = 0;
  for (const char* app : {"app=a0", "app=a1", "app=a2"})
    labelled += (*store)->IndexKeys(kLabelIndex, app)->size();
  EXPECT_EQ(labelled, size_t{kPods});
}

}  // namespace
}  // namespace kcache
