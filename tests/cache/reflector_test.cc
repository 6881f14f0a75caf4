// Reflector pieces with an injected clock: backoff, resourceVersion order.
#include "kcache/reflector.h"

#include <gtest/gtest.h>

#include <thread>

#include "cache/backoff.h"
#include "cache/resource_version.h"
#include "kcache/indexer.h"
#include "testing/fake_clock.h"
#include "testing/fake_lister_watcher.h"
#include "testing/objects.h"
#include "testing/status_matchers.h"

namespace kcache {
namespace {

using std::chrono::milliseconds;

// client-go: 800 ms doubling to 30 s, jitter 1.0, reset after 2 min.
TEST(BackoffTest, DoublesWithJitterUpToTheCapAndResets) {
  auto clock = std::make_shared<testing::FakeClock>();
  informer::Backoff b(clock, {}, 42);
  milliseconds base(800);
  for (int i = 0; i < 8; ++i) {
    auto d = b.Next();
    EXPECT_GE(d, base) << i;
    EXPECT_LT(d, 2 * base) << i;
    base = std::min(base * 2, milliseconds(30000));
    clock->Advance(std::chrono::seconds(1));
  }
  EXPECT_EQ(base, milliseconds(30000));
  // Healthy for more than 2 minutes: back to the first step.
  clock->Advance(std::chrono::minutes(3));
  auto d = b.Next();
  EXPECT_GE(d, milliseconds(800));
  EXPECT_LT(d, milliseconds(1600));
}

// Invariant 5: resourceVersions are compared as integers only where both are
// decimal; otherwise there is no answer and callers fall back.
TEST(ResourceVersionTest, ComparesDecimalsOfAnyLength) {
  EXPECT_EQ(CompareResourceVersions("10", "9"), 1);
  EXPECT_EQ(CompareResourceVersions("9", "10"), -1);
  EXPECT_EQ(CompareResourceVersions("123", "123"), 0);
  EXPECT_EQ(CompareResourceVersions("0010", "10"), 0);
  EXPECT_EQ(CompareResourceVersions("99999999999999999999999", "100000000000000000000000"), -1);
  EXPECT_EQ(CompareResourceVersions("abc", "10"), std::nullopt);
  EXPECT_EQ(CompareResourceVersions("", "10"), std::nullopt);
  EXPECT_EQ(CompareResourceVersions("-1", "10"), std::nullopt);
}

TEST(FakeClockTest, SleepWakesOnAdvanceOrStop) {
  testing::FakeClock clock;
  std::stop_source stop;
  std::thread t([&] { EXPECT_TRUE(clock.SleepFor(std::chrono::seconds(5), stop.get_token())); });
  clock.WaitForSleepers(1);
  clock.Advance(std::chrono::seconds(5));
  t.join();
  std::thread u([&] { EXPECT_FALSE(clock.SleepFor(std::chrono::seconds(5), stop.get_token())); });
  clock.WaitForSleepers(1);
  stop.request_stop();
  u.join();
}

ObjectList ListOf(std::vector<ObjectPtr> items, std::string rv) {
  ObjectList l;
  l.items = std::move(items);
  l.resource_version = std::move(rv);
  return l;
}

WatchEvent Event(WatchEventType type, ObjectPtr o) { return WatchEvent{type, std::move(o)}; }

WatchEvent Bookmark(const std::string& rv) {
  return Event(
      WatchEventType::kBookmark,
      testing::MakeObject(R"({"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":")" +
                          rv + R"("}})"));
}

struct Rig {
  Rig() {
    options.clock = clock;
    options.streaming_list = false;
    options.seed = 1;
  }
  void Start() {
    reflector = Reflector::Create(lw, NewStoreSink(store), options);
    thread = std::jthread([this](std::stop_token stop) { reflector->Run(stop); });
  }
  ~Rig() {
    thread.request_stop();
    if (thread.joinable()) thread.join();
  }
  std::shared_ptr<testing::FakeClock> clock = std::make_shared<testing::FakeClock>();
  std::shared_ptr<testing::FakeListerWatcher> lw = std::make_shared<testing::FakeListerWatcher>();
  std::shared_ptr<Indexer> store = NewMemoryIndexer();
  ReflectorOptions options;
  std::unique_ptr<Reflector> reflector;
  std::jthread thread;
};

std::vector<std::string> Versions(const std::vector<ListOptions>& calls) {
  std::vector<std::string> out;
  for (const auto& c : calls) out.push_back(c.resource_version);
  return out;
}

// A failed list waits one backoff step on the injected clock, no more.
TEST(ReflectorTest, FailedListBacksOffOnTheClock) {
  Rig r;
  r.lw->QueueList(Status::Unavailable("connection refused"));
  r.Start();
  r.clock->WaitForSleepers(1);
  ASSERT_EQ(r.lw->list_calls().size(), 1u);
  auto slept = r.clock->sleeps().back();
  EXPECT_GE(slept, milliseconds(800));
  EXPECT_LT(slept, milliseconds(1600));
  std::this_thread::sleep_for(milliseconds(20));
  EXPECT_EQ(r.lw->list_calls().size(), 1u);  // nothing happens until the clock moves

  r.lw->QueueList(ListOf({testing::Pod("a", "ns", "5"), testing::Pod("b", "ns", "6")}, "10"));
  auto watch = r.lw->QueueWatch();
  r.clock->Advance(std::chrono::seconds(2));
  r.lw->WaitForCalls(2, 1);
  EXPECT_TRUE(r.reflector->HasSynced());
  EXPECT_EQ(*r.store->Size(), 2u);
  EXPECT_EQ(r.store->LastSyncResourceVersion(), "10");
  ListOptions w = r.lw->watch_calls()[0];
  EXPECT_EQ(w.resource_version, "10");
  EXPECT_TRUE(w.allow_watch_bookmarks);
  ASSERT_TRUE(w.timeout_seconds.has_value());
  EXPECT_GE(*w.timeout_seconds, 300);
  EXPECT_LE(*w.timeout_seconds, 600);
  EXPECT_EQ(r.lw->list_calls()[1].limit, 500);
}

// client-go's ladder: a clean close watches again from the last
// resourceVersion (bookmarks included) with no LIST; 429 backs off and
// watches again; 410 relists at the last resourceVersion, then at "" once
// that is expired too.
TEST(ReflectorTest, ResourceVersionLadder) {
  Rig r;
  r.lw->QueueList(ListOf({testing::Pod("a", "ns", "5")}, "10"));
  auto w1 = r.lw->QueueWatch();
  r.lw->QueueWatchError(Status(StatusCode::kResourceExhausted, "Too many requests"));
  auto w2 = r.lw->QueueWatch();
  r.Start();
  r.lw->WaitForCalls(1, 1);
  w1->Push(Event(WatchEventType::kModified, testing::Pod("a", "ns", "11")));
  w1->Push(Bookmark("12"));
  w1->End();
  // The 429 on the second watch: a backoff on the clock, then the third.
  r.clock->WaitForSleepers(1);
  r.clock->Advance(std::chrono::seconds(2));
  r.lw->WaitForCalls(1, 3);
  EXPECT_EQ(r.store->LastSyncResourceVersion(), "12");
  EXPECT_EQ(r.lw->list_calls().size(), 1u);

  r.lw->QueueList(Status::Expired("The resourceVersion for the provided list is too old."));
  r.lw->QueueList(ListOf({testing::Pod("b", "ns", "15")}, "20"));
  auto w3 = r.lw->QueueWatch();
  w2->Fail(Status::Expired("too old resource version: 12 (14)"));
  r.clock->WaitForSleepers(1);
  r.clock->Advance(std::chrono::seconds(2));
  r.lw->WaitForCalls(3, 4);
  EXPECT_EQ(Versions(r.lw->list_calls()), (std::vector<std::string>{"", "12", ""}));
  EXPECT_EQ(Versions(r.lw->watch_calls()), (std::vector<std::string>{"10", "12", "12", "20"}));
  EXPECT_EQ(*r.store->Size(), 1u);
  EXPECT_NE(*r.store->GetByKey("ns/b"), nullptr);
  EXPECT_EQ(r.store->LastSyncResourceVersion(), "20");
}

// A resume point on disk: no LIST but a limit=1 probe; the watch starts
// from the resume point.
TEST(ReflectorTest, ResumeProbesThenWatches) {
  Rig r;
  Transaction txn;
  txn.Add(testing::Pod("a", "ns", "5"));
  txn.resource_version = "30";
  ASSERT_OK(r.store->Commit(txn, nullptr));
  r.lw->QueueList(ListOf({testing::Pod("a", "ns", "5")}, "30"));
  auto w = r.lw->QueueWatch();
  r.Start();
  r.lw->WaitForCalls(1, 1);
  ASSERT_EQ(r.lw->list_calls().size(), 1u);
  EXPECT_EQ(r.lw->list_calls()[0].limit, 1);
  EXPECT_EQ(r.lw->watch_calls()[0].resource_version, "30");
  EXPECT_TRUE(r.reflector->HasSynced());  // the probe's version is the resume point
  EXPECT_EQ(r.reflector->stats().probes, 1u);
  EXPECT_EQ(r.reflector->stats().lists, 0u);
}

}  // namespace
}  // namespace kcache
