// SPDX-License-Identifier: Apache-2.0

// SharedIndexInformer over kcache serve, with a RocksDB cache: first sync,
// handlers, restarts from a checkpoint, expired checkpoints and faults.
#include "kcache/informer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <mutex>
#include <set>

#include <nlohmann/json.hpp>
#include <thread>

#include "kcache/cache.h"
#include "kcache/lister.h"
#include "testing/fake_clock.h"
#include "testing/fake_lister_watcher.h"
#include "testing/objects.h"
#include "testing/process_stats.h"
#include "testing/recording_handler.h"
#include "testing/serve_fixture.h"
#include "testing/status_matchers.h"
#include "testing/temp_dir.h"

namespace kcache {
namespace {

using ::testing::ElementsAre;
using testing::Eventually;
using testing::ServeFixture;
using ::testing::UnorderedElementsAre;

using Recorder = testing::RecordingHandler;

InformerOptions Fast(bool streaming = true) {
  InformerOptions o;
  o.reflector.streaming_list = streaming;
  o.reflector.backoff_initial = std::chrono::milliseconds(10);
  o.reflector.backoff_max = std::chrono::milliseconds(50);
  o.reflector.sync_quiet_period = std::chrono::milliseconds(50);
  o.reflector.seed = 7;
  return o;
}

// For a start whose resume point has left the server's history: the watch
// must end in 410 and a relist. A quiet period that a loaded machine could
// outlast before the 410 arrives would count the resumed watch as synced
// instead; this one only a failing run waits out.
InformerOptions ExpiredResume() {
  InformerOptions o = Fast();
  o.reflector.sync_quiet_period = std::chrono::seconds(5);
  return o;
}

struct CacheInformer {
  CacheInformer(ServeFixture& f, const std::string& dir, InformerOptions o = Fast()) {
    auto c = Cache::Open(dir);
    EXPECT_OK(c) << c.status();
    cache = std::move(c).value();
    auto ks = cache->OpenKeyspace("configmaps");
    EXPECT_OK(ks) << ks.status();
    indexer = *ks;
    informer =
        SharedIndexInformer::Create(NewListWatch(f.client, ServeFixture::ConfigMaps()), indexer, o);
  }
  ~CacheInformer() { informer->Stop(); }
  std::shared_ptr<Recorder> Handler(StartMode mode = StartMode::kReplay) {
    auto r = std::make_shared<Recorder>();
    auto reg = informer->AddEventHandler(r, {std::chrono::milliseconds(0), mode});
    EXPECT_OK(reg) << reg.status();
    registrations.push_back(*reg);
    return r;
  }
  std::set<std::string> Names() {
    std::set<std::string> out;
    auto all = indexer->List();
    EXPECT_OK(all);
    for (auto& o : *all) out.insert(o->name());
    return out;
  }
  std::shared_ptr<Cache> cache;
  std::shared_ptr<Indexer> indexer;
  std::shared_ptr<SharedIndexInformer> informer;
  std::vector<std::shared_ptr<HandlerRegistration>> registrations;
};

// A first sync into `dir`, stopped once synced: a cache with a checkpoint.
void SyncOnce(ServeFixture& f, const std::string& dir) {
  CacheInformer c(f, dir);
  ASSERT_OK(c.informer->Start());
  ASSERT_TRUE(c.informer->WaitForSync(std::chrono::seconds(20)));
}

TEST(InformerTest, FirstSyncListsOnceThenWatches) {
  ServeFixture f;
  for (int i = 0; i < 30; ++i) f.Create("cm-" + std::to_string(i));
  testing::TempDir dir;
  for (bool streaming : {true, false}) {
    SCOPED_TRACE(streaming ? "streaming list" : "paginated LIST");
    CacheInformer c(f, dir.Sub(streaming ? "s" : "p"), Fast(streaming));
    auto h = c.Handler();
    ASSERT_OK(c.informer->Start());
    ASSERT_TRUE(c.informer->WaitForSync(std::chrono::seconds(20)));
    EXPECT_EQ(c.Names().size(), 30u);
    ASSERT_TRUE(Eventually([&] { return c.registrations[0]->HasSynced(); }));
    EXPECT_EQ(h->size(), 30u);
    for (const std::string& call : h->calls()) EXPECT_THAT(call, ::testing::EndsWith(" initial"));
    ReflectorStats s = c.informer->stats();
    EXPECT_EQ(s.lists, 1u);
    EXPECT_EQ(s.list_requests, streaming ? 0u : 1u);
    EXPECT_EQ(s.listed_objects, 30u);
  }
}

// Invariant 5 for read-your-writes: over opaque versions
// WaitForResourceVersion, which compares as integers, refuses; the fallback,
// WaitForObjectVersion, waits for one object's exact version (or its
// deletion).
TEST(InformerTest, WaitsForAnObjectsVersionWhereVersionsAreOpaque) {
  ServeFixture f;
  f.Create("a", "1");
  testing::TempDir dir;
  InformerOptions o = Fast();
  o.reflector.ordered_resource_versions = false;
  CacheInformer c(f, dir.path(), o);
  ASSERT_OK(c.informer->Start());
  ASSERT_TRUE(c.informer->WaitForSync(std::chrono::seconds(20)));
  EXPECT_EQ(c.informer->WaitForResourceVersion("1", std::chrono::seconds(1)).code(),
            StatusCode::kFailedPrecondition);
  f.Update("a", "2");
  auto written = f.client->Get(ServeFixture::ConfigMaps().InNamespace("default"), "a");
  ASSERT_OK(written) << written.status();
  const std::string rv = (*written)->resource_version();
  ASSERT_OK(c.informer->WaitForObjectVersion("default/a", rv, std::chrono::seconds(20)));
  EXPECT_EQ(*(*c.indexer->GetByKey("default/a"))->FieldValue("data.k"), "2");
  EXPECT_EQ(c.informer->WaitForObjectVersion("default/a", "999999", std::chrono::milliseconds(200))
                .code(),
            StatusCode::kDeadlineExceeded);
  EXPECT_FALSE(c.informer->GetStaleness(rv).versions_behind.has_value());  // not comparable
  f.Delete("a");
  EXPECT_OK(c.informer->WaitForObjectVersion("default/a", "999999", std::chrono::seconds(20)));
}

// Invariant 2: a handler hears of a change only after the store has it, and
// in watch order.
TEST(InformerTest, StoreFirstThenHandlersInWatchOrder) {
  ServeFixture f;
  testing::TempDir dir;
  CacheInformer c(f, dir.path());
  auto h = c.Handler();
  std::atomic<int> stale{0};
  h->on_call = [&](const std::string& call) {
    std::string name = call.substr(call.find(' ') + 1);
    name = name.substr(0, name.find(' '));
    auto stored = c.indexer->GetByKey("default/" + name);
    bool deleted = call.rfind("delete", 0) == 0;
    if (!stored.ok() || (deleted ? *stored != nullptr : *stored == nullptr)) ++stale;
  };
  ASSERT_OK(c.informer->Start());
  ASSERT_TRUE(c.informer->WaitForSync(std::chrono::seconds(20)));
  // One change at a time, so that the store is never ahead of the handler
  // by more than the change it is hearing about.
  std::vector<std::function<void()>> changes = {
      [&] { f.Create("a", "1"); }, [&] { f.Update("a", "2"); }, [&] { f.Create("b", "1"); },
      [&] { f.Update("a", "3"); }, [&] { f.Delete("b"); }};
  for (size_t i = 0; i < changes.size(); ++i) {
    changes[i]();
    ASSERT_TRUE(Eventually([&] { return h->size() == i + 1; }))
        << ::testing::PrintToString(h->calls());
  }
  EXPECT_THAT(h->calls(),
              ElementsAre("add a live", "update a 1>2", "add b live", "update a 2>3", "delete b"));
  EXPECT_EQ(stale, 0);
}

// Invariant 2: a slow handler holds up neither ingestion nor other handlers.
TEST(InformerTest, SlowHandlerHasItsOwnQueue) {
  ServeFixture f;
  testing::TempDir dir;
  CacheInformer c(f, dir.path());
  auto fast = c.Handler();
  auto slow = std::make_shared<Recorder>();
  std::mutex gate;
  std::unique_lock held(gate);
  slow->on_call = [&](const std::string&) { std::lock_guard l(gate); };
  auto reg = c.informer->AddEventHandler(slow);
  ASSERT_OK(reg);
  ASSERT_OK(c.informer->Start());
  ASSERT_TRUE(c.informer->WaitForSync(std::chrono::seconds(20)));
  for (int i = 0; i < 20; ++i) f.Create("cm-" + std::to_string(i));
  ASSERT_TRUE(Eventually([&] { return fast->size() == 20 && c.Names().size() == 20; }));
  EXPECT_EQ(slow->size(), 0u);
  // The slow handler's queue may get the last change just after the fast
  // one heard it: all but the one it is stuck in wait.
  EXPECT_TRUE(Eventually([&] { return (*reg)->Backlog() >= 19u; })) << (*reg)->Backlog();
  held.unlock();
  ASSERT_TRUE(Eventually([&] { return slow->size() == 20; }));
  EXPECT_EQ((*reg)->Backlog(), 0u);
}

// Invariants 2 and 7: a thousand handlers share the handler pool's threads
// (kcache-handler, at most 16), each in watch order; four that block, as
// many as the pool starts with, hold up neither ingestion nor the others.
TEST(InformerTest, AThousandHandlersShareABoundedPool) {
  ServeFixture f;
  testing::TempDir dir;
  CacheInformer c(f, dir.path());
  std::mutex gate;
  std::unique_lock held(gate);
  std::vector<std::shared_ptr<Recorder>> blocked, free;
  for (int i = 0; i < 1000; ++i) {
    auto r = std::make_shared<Recorder>();
    if (i % 333 == 0) {
      r->on_call = [&](const std::string&) { std::lock_guard l(gate); };
      blocked.push_back(r);
    } else {
      free.push_back(r);
    }
    ASSERT_OK(
        c.informer->AddEventHandler(r, {std::chrono::milliseconds(0), StartMode::kChangesOnly}));
  }
  ASSERT_OK(c.informer->Start());
  ASSERT_TRUE(c.informer->WaitForSync(std::chrono::seconds(20)));
  for (int i = 0; i < 5; ++i) f.Create("cm-" + std::to_string(i));
  ASSERT_TRUE(Eventually([&] {
    for (const auto& r : free) {
      if (r->size() != 5) return false;
    }
    return true;
  })) <<
      [&] {
        std::map<size_t, int> sizes;
        for (const auto& r : free) ++sizes[r->size()];
        std::string out = "handlers by calls received:";
        for (auto [n, k] : sizes)
          out += " " + std::to_string(k) + " with " + std::to_string(n) + ";";
        return out + " store " + std::to_string(c.Names().size()) + ", handler threads " +
               std::to_string(testing::ThreadsNamed("kcache-handler"));
      }();
  const std::vector<std::string> want = free[0]->calls();
  ASSERT_EQ(want.size(), 5u);
  for (const auto& r : free) ASSERT_EQ(r->calls(), want) << "each handler in watch order";
  EXPECT_EQ(c.Names().size(), 5u);
  EXPECT_LE(testing::ThreadsNamed("kcache-handler"), 16);
  EXPECT_GE(testing::ThreadsNamed("kcache-handler"), 1);
  held.unlock();
  ASSERT_TRUE(Eventually([&] {
    for (const auto& r : blocked) {
      if (r->size() != 5) return false;
    }
    return true;
  }));
  for (const auto& r : blocked) EXPECT_EQ(r->calls(), want);
}

// Invariant 3: a restart with a checkpoint watches from it; the only LIST
// is the limit=1 probe. Replay handlers get every cached object, changes-only
// handlers exactly what changed while down.
TEST(InformerTest, RestartResumesWithoutList) {
  ServeFixture f;
  for (int i = 0; i < 50; ++i) f.Create("cm-" + std::to_string(i), "1");
  testing::TempDir dir;
  ASSERT_NO_FATAL_FAILURE(SyncOnce(f, dir.path()));
  // Changes while down.
  f.Create("new", "1");
  f.Update("cm-1", "2");
  f.Delete("cm-2");
  int64_t lists = f.Lists("configmaps"), items = f.ListedItems("configmaps");

  CacheInformer c(f, dir.path());
  auto replay = c.Handler(StartMode::kReplay);
  auto changes = c.Handler(StartMode::kChangesOnly);
  ASSERT_OK(c.informer->Start());
  ASSERT_TRUE(c.informer->WaitForSync(std::chrono::seconds(20)));
  ASSERT_TRUE(Eventually(
      [&] { return c.registrations[0]->HasSynced() && c.registrations[1]->HasSynced(); }));
  // Synced may be declared on a quiet stream before the last change arrives
  // (docs/informers.md); the changes themselves must all come.
  ASSERT_TRUE(Eventually([&] { return changes->size() == 3 && replay->size() == 53; }));
  EXPECT_EQ(f.Lists("configmaps") - lists, 1);  // the probe
  EXPECT_LE(f.ListedItems("configmaps") - items, 1);
  EXPECT_EQ(c.informer->stats().lists, 0u);
  EXPECT_THAT(changes->calls(), ElementsAre("add new live", "update cm-1 1>2", "delete cm-2"));
  // 50 cached objects replayed, then the three changes.
  auto calls = replay->calls();
  ASSERT_EQ(calls.size(), 53u);
  EXPECT_THAT(std::vector<std::string>(calls.end() - 3, calls.end()),
              ElementsAre("add new live", "update cm-1 1>2", "delete cm-2"));
  EXPECT_EQ(c.Names().size(), 50u);
  EXPECT_TRUE(c.Names().count("new"));
  EXPECT_FALSE(c.Names().count("cm-2"));
}

// Invariant 3: a checkpoint older than the server's history leads to one
// relist, diffed against the store: unchanged objects are not announced,
// vanished ones are deleted with a tombstone.
TEST(InformerTest, ExpiredCheckpointRelistsWithDiff) {
  serve::ServeOptions o = testing::QuietCluster();
  o.history = 5;
  ServeFixture f(o);
  for (int i = 0; i < 40; ++i) f.Create("cm-" + std::to_string(i), "1");
  testing::TempDir dir;
  ASSERT_NO_FATAL_FAILURE(SyncOnce(f, dir.path()));
  f.Create("new", "1");
  f.Update("cm-1", "2");
  f.Delete("cm-2");
  for (int i = 0; i < 10; ++i)
    f.Create("pad-" + std::to_string(i), "1", "ns-1");  // pushes history out
  f.Delete("cm-3");

  CacheInformer c(f, dir.path(), ExpiredResume());
  auto changes = c.Handler(StartMode::kChangesOnly);
  ASSERT_OK(c.informer->Start());
  ASSERT_TRUE(c.informer->WaitForSync(std::chrono::seconds(20)));
  ASSERT_TRUE(Eventually([&] { return c.registrations[0]->HasSynced() && changes->size() >= 14; }));
  EXPECT_EQ(c.informer->stats().lists, 1u);
  std::vector<std::string> calls = changes->calls();
  std::vector<std::string> expected = {"add new initial", "update cm-1 1>2",
                                       "delete cm-2 tombstone", "delete cm-3 tombstone"};
  for (int i = 0; i < 10; ++i) expected.push_back("add pad-" + std::to_string(i) + " initial");
  EXPECT_THAT(calls, ::testing::UnorderedElementsAreArray(expected));
  // As client-go's informers: a relist announces its deletions first.
  ASSERT_GE(calls.size(), 2u);
  EXPECT_THAT(std::vector<std::string>(calls.begin(), calls.begin() + 2),
              UnorderedElementsAre("delete cm-2 tombstone", "delete cm-3 tombstone"));
  EXPECT_EQ(c.Names().size(), 38u + 1u + 10u);
}

// Invariant 3, as kube-apiserver answers: the resume point has left the
// watch window but not the list window (etcd keeps revisions until a
// compaction), so a paginated LIST at it would be answered Exact, with the
// expired state. The relist asks NotOlderThan, lists once, and stays synced
// on a working watch: no loop of LISTs.
TEST(InformerTest, ExpiredWatchInsideTheListWindowRelistsOnce) {
  serve::ServeOptions o = testing::QuietCluster();
  o.history = 5;
  o.list_history = 1000;
  ServeFixture f(o);
  for (int i = 0; i < 40; ++i) f.Create("cm-" + std::to_string(i), "1");
  testing::TempDir dir;
  ASSERT_NO_FATAL_FAILURE(SyncOnce(f, dir.path()));
  f.Update("cm-1", "2");
  f.Delete("cm-2");
  for (int i = 0; i < 10; ++i) f.Create("pad-" + std::to_string(i), "1", "ns-1");

  InformerOptions io = ExpiredResume();
  io.reflector.streaming_list = false;
  CacheInformer c(f, dir.path(), io);
  ASSERT_OK(c.informer->Start());
  ASSERT_TRUE(c.informer->WaitForSync(std::chrono::seconds(20)));
  const std::string before = (*c.indexer->GetByKey("default/cm-4"))->resource_version();
  f.Update("cm-4", "2");  // the watch after the relist works
  ASSERT_TRUE(Eventually([&] {
    auto cm = c.indexer->GetByKey("default/cm-4");
    return cm.ok() && *cm && (*cm)->resource_version() != before;
  }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(c.informer->stats().lists, 1u);
  EXPECT_EQ(c.Names().size(), 49u);
  EXPECT_EQ(c.indexer->GetByKey("default/cm-2").value(), nullptr);
}

// A relist over a full store holds its changed objects until it ends, to
// announce deletions first; with no handler there is no one to announce
// them to, and nothing is held: memory stays flat in what changed (design
// invariant 4, memory bounded by configuration).
TEST(InformerTest, ARelistWithNoHandlerHoldsNoChangedObjects) {
  serve::ServeOptions o = testing::QuietCluster();
  o.history = 5;
  ServeFixture f(o);
  constexpr int kObjects = 2500;  // chunks of 1,000 are committed on the way
  for (int i = 0; i < kObjects; ++i) f.Create("cm-" + std::to_string(10000 + i), "1");
  testing::TempDir dir;
  ASSERT_NO_FATAL_FAILURE(SyncOnce(f, dir.path()));
  for (int i = 0; i < kObjects; ++i) f.Update("cm-" + std::to_string(10000 + i), "2");

  std::mutex mu;
  std::vector<std::weak_ptr<const Object>> stored;  // what the relist stored, in order
  size_t alive_at_end = 0;
  InformerOptions io = ExpiredResume();
  io.transform = [&](ObjectPtr obj) -> StatusOr<ObjectPtr> {
    std::lock_guard l(mu);
    if (stored.size() == kObjects - 1) {  // two chunks committed before this one
      for (size_t i = 0; i < 2000; ++i) alive_at_end += !stored[i].expired();
    }
    ObjectPtr copy = *Object::Parse(std::string(obj->json()));
    stored.push_back(copy);
    return copy;
  };
  CacheInformer c(f, dir.path(), io);
  ASSERT_OK(c.informer->Start());
  ASSERT_TRUE(c.informer->WaitForSync(std::chrono::seconds(60)));
  EXPECT_EQ(c.informer->stats().lists, 1u);
  std::lock_guard l(mu);
  ASSERT_GE(stored.size(), static_cast<size_t>(kObjects));
  EXPECT_EQ(alive_at_end, 0u) << "changed objects of committed chunks are still held";
}

// A first list cut short after some pages leaves objects in the store that
// no handler has heard of: the next list, which continues from the last
// page committed, is announced as a first list, so every handler still
// hears of every object.
TEST(InformerTest, FirstListCutShortIsAnnouncedWhole) {
  serve::ServeOptions o = testing::QuietCluster();
  // Requests 1-2000 create; 2001 and 2002 are the first two pages (one
  // store chunk of 1,000 objects, written), 2003 the third fails.
  o.api.faults.internal_error = *serve::RequestSet::Parse("fault", "2003");
  ServeFixture f(o);
  for (int i = 0; i < 2000; ++i) f.Create("cm-" + std::to_string(i));
  testing::TempDir dir;
  CacheInformer c(f, dir.path(), Fast(false));
  auto h = c.Handler();
  ASSERT_OK(c.informer->Start());
  ASSERT_TRUE(c.informer->WaitForSync(std::chrono::seconds(20)));
  ASSERT_TRUE(Eventually([&] { return c.registrations[0]->HasSynced(); }));
  EXPECT_EQ(f.Metric("kcache_serve_faults_total{fault=\"internal-error\"}"), 1);
  EXPECT_EQ(c.informer->stats().list_requests, 3u + 2u) << "the third page again, and the fourth";
  EXPECT_EQ(c.informer->stats().continued_lists, 1u);
  EXPECT_EQ(h->size(), 2000u);
  std::vector<std::string> calls = h->calls();
  std::set<std::string> added(calls.begin(), calls.end());
  EXPECT_EQ(added.size(), 2000u);
}

// A stream cut mid-event is reopened from the last resourceVersion with no
// relist; 429 backs off and watches again; 410 and a malformed event relist.
TEST(InformerTest, WatchFaults) {
  struct Case {
    const char* name;
    serve::RequestSet serve::Faults::*fault;
    uint64_t lists;
  };
  for (const Case& k :
       {Case{"cut", &serve::Faults::cut, 1}, Case{"throttle", &serve::Faults::throttle, 1},
        Case{"expire", &serve::Faults::expire, 2},
        // An ERROR event of code 500: with no retry window, client-go relists.
        Case{"internal error", &serve::Faults::internal_error, 2},
        Case{"malformed", &serve::Faults::malformed, 2}}) {
    SCOPED_TRACE(k.name);
    serve::ServeOptions o = testing::QuietCluster();
    // Resource requests are numbered: 1 creates "first", 2 is the LIST,
    // 3 the watch.
    auto set = serve::RequestSet::Parse("fault", "3");
    ASSERT_OK(set);
    o.api.faults.*k.fault = *set;
    ServeFixture f(o);
    f.Create("first");
    testing::TempDir dir;
    CacheInformer c(f, dir.path(), Fast(false));
    ASSERT_OK(c.informer->Start());
    ASSERT_TRUE(c.informer->WaitForSync(std::chrono::seconds(20)));
    ASSERT_TRUE(Eventually([&] { return f.Metric("kcache_serve_watches") == 1; }));
    f.Create("second");
    ASSERT_TRUE(Eventually([&] {
      return c.Names().count("second") == 1 && c.informer->stats().lists == k.lists;
    })) << c.informer->stats().lists;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_EQ(c.informer->stats().lists, k.lists);
    EXPECT_THAT(c.Names(), UnorderedElementsAre("first", "second"));
  }
}

TEST(InformerTest, HandlerAddedWhileRunningGetsCachedObjects) {
  ServeFixture f;
  f.Create("a");
  testing::TempDir dir;
  CacheInformer c(f, dir.path());
  auto h1 = c.Handler();
  ASSERT_OK(c.informer->Start());
  ASSERT_TRUE(c.informer->WaitForSync(std::chrono::seconds(20)));
  auto h2 = c.Handler();
  ASSERT_TRUE(Eventually([&] { return c.registrations[1]->HasSynced(); }));
  EXPECT_THAT(h2->calls(), ElementsAre("add a initial"));
  f.Create("b");
  ASSERT_TRUE(Eventually([&] { return h1->size() == 2 && h2->size() == 2; }));
  EXPECT_THAT(h2->calls(), ElementsAre("add a initial", "add b live"));
  // Removed: no further calls.
  ASSERT_OK(c.informer->RemoveEventHandler(c.registrations[1]));
  ASSERT_OK(c.informer->RemoveEventHandler(c.registrations[1]));
  EXPECT_FALSE(c.registrations[1]->IsActive());
  f.Create("c");
  ASSERT_TRUE(Eventually([&] { return h1->size() == 3; }));
  EXPECT_EQ(h2->size(), 2u);
  c.informer->Stop();
  auto late = c.informer->AddEventHandler(std::make_shared<Recorder>());
  EXPECT_EQ(late.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(
      std::string(late.status().message()),
      ::testing::EndsWith("was not added to shared informer because it has stopped already"));
}

// A handler may remove its own registration from inside a call.
TEST(InformerTest, HandlerRemovesItself) {
  ServeFixture f;
  f.Create("a");
  f.Create("b");
  testing::TempDir dir;
  CacheInformer c(f, dir.path());
  auto h = std::make_shared<Recorder>();
  std::shared_ptr<HandlerRegistration> reg;
  std::atomic<bool> removed{false};
  h->on_call = [&](const std::string&) {
    if (!removed.exchange(true)) {
      EXPECT_OK(c.informer->RemoveEventHandler(reg));
    }
  };
  auto r = c.informer->AddEventHandler(h);
  ASSERT_OK(r);
  reg = *r;
  ASSERT_OK(c.informer->Start());
  ASSERT_TRUE(Eventually([&] { return removed && !reg->IsActive(); }));
  f.Create("c");
  auto other = c.Handler();
  ASSERT_TRUE(Eventually([&] { return other->size() == 3; }));
  EXPECT_EQ(h->size(), 1u);
}

TEST(InformerTest, ResyncDeliversUpdatesOfEveryObject) {
  ServeFixture f;
  f.Create("a");
  f.Create("b");
  testing::TempDir dir;
  CacheInformer c(f, dir.path());
  auto r = std::make_shared<Recorder>();
  auto reg = c.informer->AddEventHandler(r, {std::chrono::milliseconds(100), StartMode::kReplay});
  ASSERT_OK(reg);
  ASSERT_OK(c.informer->Start());
  ASSERT_TRUE(Eventually([&] { return r->size() >= 4; }));
  auto calls = r->calls();
  EXPECT_THAT(std::vector<std::string>(calls.begin(), calls.begin() + 2),
              UnorderedElementsAre("add a initial", "add b initial"));
  EXPECT_THAT(std::vector<std::string>(calls.begin() + 2, calls.begin() + 4),
              UnorderedElementsAre("update a v>v", "update b v>v"));
}

// client-go's resync periods: a handler without one takes the informer's
// default; periods under 1 s are raised to 1 s; resyncs come on the check
// period, which a handler added before Start lowers and one added after
// cannot.
TEST(InformerTest, ResyncPeriodsFollowClientGo) {
  ServeFixture f;
  f.Create("a");
  testing::TempDir dir;
  auto clock = std::make_shared<testing::FakeClock>();
  auto resyncs = [](const std::shared_ptr<Recorder>& r) {
    size_t n = 0;
    for (const std::string& call : r->calls()) n += call == "update a v>v";
    return n;
  };
  // The resync loop sleeps on the fake clock between checks.
  auto advance = [&](std::chrono::milliseconds d) {
    size_t before = clock->sleeps().size();
    clock->Advance(d);
    // Either it woke and slept again, or its deadline is still ahead.
    for (int i = 0; i < 50 && clock->sleeps().size() == before; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  };
  {
    InformerOptions o = Fast();
    o.clock = clock;
    o.default_resync_period = std::chrono::seconds(10);
    CacheInformer c(f, dir.Sub("default"), o);
    auto by_default = std::make_shared<Recorder>();
    ASSERT_OK(c.informer->AddEventHandler(by_default, {}));
    ASSERT_OK(c.informer->Start());
    ASSERT_TRUE(c.informer->WaitForSync(std::chrono::seconds(20)));
    auto late = std::make_shared<Recorder>();
    HandlerOptions two_seconds;
    two_seconds.resync_period = std::chrono::seconds(2);
    ASSERT_OK(c.informer->AddEventHandler(late, two_seconds));
    ASSERT_TRUE(Eventually([&] { return by_default->size() == 1 && late->size() == 1; }));
    clock->WaitForSleepers(1);
    advance(std::chrono::seconds(2));
    EXPECT_EQ(resyncs(late), 0u) << "raised to the 10 s check period";
    advance(std::chrono::seconds(8));
    ASSERT_TRUE(Eventually([&] { return resyncs(by_default) == 1 && resyncs(late) == 1; }));
  }
  {
    InformerOptions o = Fast();
    o.clock = clock;
    CacheInformer c(f, dir.Sub("minimum"), o);
    auto fast = std::make_shared<Recorder>();
    HandlerOptions tiny;
    tiny.resync_period = std::chrono::milliseconds(100);
    ASSERT_OK(c.informer->AddEventHandler(fast, tiny));
    ASSERT_OK(c.informer->Start());
    ASSERT_TRUE(Eventually([&] { return fast->size() == 1; }));
    advance(std::chrono::milliseconds(500));
    EXPECT_EQ(resyncs(fast), 0u) << "raised to 1 s";
    advance(std::chrono::milliseconds(500));
    ASSERT_TRUE(Eventually([&] { return resyncs(fast) == 1; }));
  }
}

// Metrics as client-go's informers keep them: per-handler queue depth and
// processing latency, the store's resourceVersion and the last sync.
TEST(InformerTest, MetricsReportHandlersStoreAndLastSync) {
  ServeFixture f;
  for (int i = 0; i < 5; ++i) f.Create("cm-" + std::to_string(i));
  testing::TempDir dir;
  CacheInformer c(f, dir.path());
  auto named = std::make_shared<Recorder>();
  HandlerOptions o;
  o.name = "reconciler";
  ASSERT_OK(c.informer->AddEventHandler(named, o));
  auto unnamed = c.Handler();
  InformerMetrics before = c.informer->Metrics();
  EXPECT_FALSE(before.synced);
  EXPECT_FALSE(before.since_last_sync.has_value());
  ASSERT_OK(c.informer->Start());
  ASSERT_TRUE(c.informer->WaitForSync(std::chrono::seconds(20)));
  f.Create("cm-5");
  ASSERT_TRUE(Eventually([&] { return named->size() == 6 && unnamed->size() == 6; }));
  InformerMetrics m = c.informer->Metrics();
  EXPECT_TRUE(m.synced);
  EXPECT_EQ(m.resource_version, c.indexer->LastSyncResourceVersion());
  ASSERT_TRUE(m.since_last_sync.has_value());
  EXPECT_LT(*m.since_last_sync, std::chrono::seconds(20));
  EXPECT_EQ(m.reflector.lists, 1u);
  ASSERT_EQ(m.handlers.size(), 2u);
  EXPECT_EQ(m.handlers[0].name, "reconciler");
  EXPECT_EQ(m.handlers[1].name, "handler-2");
  for (const HandlerMetrics& h : m.handlers) {
    EXPECT_EQ(h.queued, 0u) << h.name;
    EXPECT_EQ(h.latency.count, 6u) << h.name;
    uint64_t in_buckets = 0;
    for (uint64_t n : h.latency.buckets) in_buckets += n;
    EXPECT_EQ(in_buckets, h.latency.count) << h.name;
    EXPECT_GE(h.latency.sum_seconds, 0) << h.name;
  }
}

TEST(InformerTest, TransformAppliesBeforeStoreAndHandlers) {
  ServeFixture f;
  f.Create("a");
  testing::TempDir dir;
  InformerOptions o = Fast();
  o.transform = DropManagedFields;
  int calls = 0;
  o.transform = [&](ObjectPtr obj) -> StatusOr<ObjectPtr> {
    ++calls;
    auto doc = obj->Document();
    if (!doc.ok()) return doc.status();
    (*doc)["metadata"]["annotations"]["seen"] = "yes";
    return Object::Parse(doc->dump());
  };
  CacheInformer c(f, dir.path(), o);
  auto h = c.Handler();
  ASSERT_OK(c.informer->Start());
  ASSERT_TRUE(c.informer->WaitForSync(std::chrono::seconds(20)));
  auto stored = c.indexer->GetByKey("default/a");
  ASSERT_TRUE(stored.ok() && *stored);
  EXPECT_EQ((*stored)->annotations().at("seen"), "yes");
  EXPECT_EQ(calls, 1);
}

TEST(InformerTest, ListerAndIndexersOverTheInformerStore) {
  ServeFixture f;
  f.Create("a", "1");
  f.Create("b", "1", "ns-1");
  testing::TempDir dir;
  CacheInformer c(f, dir.path());
  ASSERT_OK(c.informer->Start());
  ASSERT_TRUE(c.informer->WaitForSync(std::chrono::seconds(20)));
  Lister lister(c.informer->GetIndexer(), {"", "configmaps"});
  auto sel = LabelSelector::Parse("app=a");
  ASSERT_OK(sel);
  auto in_ns = lister.Namespace("ns-1").List(*sel);
  ASSERT_OK(in_ns);
  ASSERT_EQ(in_ns->size(), 1u);
  EXPECT_EQ((*in_ns)[0]->name(), "b");
  EXPECT_OK(lister.Namespace("default").Get("a"));
  ASSERT_OK(c.informer->AddIndexers(
      {{"by-name", [](const Object& o) -> StatusOr<std::vector<std::string>> {
          return std::vector<std::string>{o.name()};
        }}}));
  auto by = c.indexer->ByIndex("by-name", "b");
  ASSERT_OK(by);
  EXPECT_EQ(by->size(), 1u);
}

}  // namespace
}  // namespace kcache

namespace kcache {
namespace {

// An informer, its lister and a namespace of it name the collection they
// read, so that a controller's writes go where its objects come from
// without spelling the resource by hand.
TEST(InformerRefTest, TheInformerAndItsListersNameTheirCollection) {
  RestConfig config;
  config.server = "http://127.0.0.1:1";  // nothing is requested
  auto client = RestClient::Create(config);
  ASSERT_OK(client);
  auto lw = NewListWatch(*client, builtin::ConfigMaps("prod"), "app=web");
  EXPECT_EQ(lw->Ref(), builtin::ConfigMaps("prod"));
  auto informer = SharedIndexInformer::Create(lw, NewMemoryIndexer());
  EXPECT_EQ(informer->Ref(), builtin::ConfigMaps("prod"));
  const Lister lister = informer->GetLister();
  EXPECT_EQ(lister.Ref(), builtin::ConfigMaps("prod"));
  EXPECT_EQ(lister.Namespace("dev").Ref(), builtin::ConfigMaps("dev"));
  EXPECT_EQ(lister.Namespace("dev").Ref()->CollectionPath(), "/api/v1/namespaces/dev/configmaps");
  // A ListerWatcher that names no collection: neither does its informer.
  auto fake = SharedIndexInformer::Create(std::make_shared<testing::FakeListerWatcher>(),
                                          NewMemoryIndexer());
  EXPECT_FALSE(fake->Ref().has_value());
  EXPECT_FALSE(fake->GetLister().Ref().has_value());
  EXPECT_FALSE(fake->GetLister().Namespace("x").Ref().has_value());
}

TEST(InformerRefTest, BuiltinResourcesAreNamedAtTheirStableVersions) {
  EXPECT_EQ(builtin::Deployments("x").CollectionPath(), "/apis/apps/v1/namespaces/x/deployments");
  EXPECT_EQ(builtin::Pods().CollectionPath(), "/api/v1/pods");
  EXPECT_EQ(builtin::Leases("kube-system").CollectionPath(),
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases");
  EXPECT_EQ(builtin::CronJobs("a").CollectionPath(), "/apis/batch/v1/namespaces/a/cronjobs");
  // Cluster-scoped: a namespace changes nothing.
  EXPECT_EQ(builtin::Nodes().InNamespace("x").CollectionPath(), "/api/v1/nodes");
  EXPECT_FALSE(builtin::Namespaces().namespaced);
  EXPECT_EQ(builtin::Pods().InNamespace("a"), builtin::Pods("a"));
}

// NewKeyHandler hands on the namespace and name of adds, updates, deletes
// and tombstones.
TEST(InformerTest, KeyHandlerGivesNamespaceAndNameOfEveryChange) {
  std::vector<std::string> keys;
  auto h = NewKeyHandler(
      [&](const std::string& ns, const std::string& name) { keys.push_back(ns + "|" + name); });
  h->OnAdd(testing::Pod("a", "ns1"), true);
  h->OnUpdate(testing::Pod("b", "ns1"), testing::Pod("b", "ns2"));
  h->OnDelete(testing::Pod("c", ""));
  h->OnDelete(DeletedFinalStateUnknown{"ns3/d", testing::Pod("d", "ns3")});
  EXPECT_EQ(keys, (std::vector<std::string>{"ns1|a", "ns2|b", "|c", "ns3|d"}));
}

}  // namespace
}  // namespace kcache
