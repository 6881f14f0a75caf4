// SPDX-License-Identifier: Apache-2.0

// Reflector pieces with an injected clock: resourceVersion order, and the fake clock.
#include "kcache/reflector.h"

#include <gtest/gtest.h>

#include <thread>

#include "informer/backoff.h"
#include "kcache/cache.h"
#include "kcache/indexer.h"
#include "testing/eventually.h"
#include "testing/fake_clock.h"
#include "testing/fake_lister_watcher.h"
#include "testing/objects.h"
#include "testing/status_matchers.h"
#include "testing/temp_dir.h"

namespace kcache {
namespace {

using std::chrono::milliseconds;

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

// The bookmark that ends a streaming list's initial events.
WatchEvent InitialEventsEnd(const std::string& rv) {
  return Event(
      WatchEventType::kBookmark,
      testing::MakeObject(R"({"kind":"Pod","apiVersion":"v1","metadata":{)"
                          R"("resourceVersion":")" +
                          rv + R"(","annotations":{"k8s.io/initial-events-end":"true"}}})"));
}

struct Rig {
  Rig() {
    options.clock = clock;
    options.streaming_list = false;
    options.seed = 1;
    options.on_event = [this](const ReflectorEvent& e) {
      std::lock_guard l(mu);
      events.push_back(e);
    };
  }
  // Waits until the clock has been slept on `n` times in all.
  void WaitForSleeps(size_t n) {
    while (clock->sleeps().size() < n) std::this_thread::sleep_for(milliseconds(1));
  }
  std::vector<ReflectorEvent> Events(ReflectorEvent::Type type) {
    std::lock_guard l(mu);
    std::vector<ReflectorEvent> out;
    for (const auto& e : events) {
      if (e.type == type) out.push_back(e);
    }
    return out;
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
  std::mutex mu;
  std::vector<ReflectorEvent> events;  // guarded by mu
};

Status InternalError(const std::string& msg) {
  return Status(StatusCode::kInternal, msg)
      .WithHttpError(HttpError{.http_code = 500, .reason = "InternalError"});
}

// One field of each call: Versions(calls), Matches(calls).
std::vector<std::string> Each(const std::vector<ListOptions>& calls,
                              std::string ListOptions::*field) {
  std::vector<std::string> out;
  for (const auto& c : calls) out.push_back(c.*field);
  return out;
}
std::vector<std::string> Versions(const std::vector<ListOptions>& calls) {
  return Each(calls, &ListOptions::resource_version);
}
std::vector<std::string> Matches(const std::vector<ListOptions>& calls) {
  return Each(calls, &ListOptions::resource_version_match);
}

// Ends `w` with `last` and a 410 at its resourceVersion, and lets the
// backoff before the relist pass on the clock.
void ExpireAfter(Rig& r, testing::FakeWatchStream& w, WatchEvent last) {
  const std::string rv = last.object->resource_version();
  w.Push(std::move(last));
  w.Fail(Status::Expired("too old resource version: " + rv + " (" + rv + "0)"));
  r.clock->WaitForSleepers(1);
  r.clock->Advance(std::chrono::seconds(2));
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

// Invariant 3: the relist after a watch's 410 asks for the state at or
// after the expired resourceVersion (NotOlderThan), never the state at it:
// a real server answers a paginated LIST at a resourceVersion with no match
// Exact, the expired state itself, from etcd. A list from "" sends no match
// (the server refuses one without a resourceVersion).
TEST(ReflectorTest, RelistAfterAnExpiredWatchAsksForNotOlderThan) {
  Rig r;
  r.lw->QueueList(ListOf({testing::Pod("a", "ns", "5")}, "10"));
  auto w1 = r.lw->QueueWatch();
  r.lw->QueueList(ListOf({testing::Pod("b", "ns", "15")}, "20"));
  auto w2 = r.lw->QueueWatch();
  r.Start();
  r.lw->WaitForCalls(1, 1);
  ExpireAfter(r, *w1, Event(WatchEventType::kModified, testing::Pod("a", "ns", "12")));
  r.lw->WaitForCalls(2, 2);
  EXPECT_EQ(Versions(r.lw->list_calls()), (std::vector<std::string>{"", "12"}));
  EXPECT_EQ(Matches(r.lw->list_calls()), (std::vector<std::string>{"", "NotOlderThan"}));
  EXPECT_EQ(r.lw->list_calls()[1].limit, 500);
  EXPECT_EQ(r.lw->watch_calls()[1].resource_version, "20");
  EXPECT_EQ(r.store->LastSyncResourceVersion(), "20");
  EXPECT_EQ(r.reflector->stats().lists, 2u);
}

// Invariant 3, for a server that ignores resourceVersionMatch (before
// 1.19) and answers the relist Exact: a first page not newer than the
// expired resourceVersion is not applied (the store does not go back in
// time) and the list is made again from "" at once.
TEST(ReflectorTest, AStaleRelistIsNotAppliedAndListsFromEmpty) {
  Rig r;
  r.lw->QueueList(ListOf({testing::Pod("a", "ns", "5")}, "10"));
  auto w1 = r.lw->QueueWatch();
  r.lw->QueueList(ListOf({testing::Pod("a", "ns", "5")}, "12"));  // the state at 12
  r.lw->QueueList(ListOf({testing::Pod("b", "ns", "30")}, "40"));
  auto w2 = r.lw->QueueWatch();
  r.Start();
  r.lw->WaitForCalls(1, 1);
  ExpireAfter(r, *w1, Event(WatchEventType::kModified, testing::Pod("a", "ns", "12")));
  r.lw->WaitForCalls(3, 2);
  EXPECT_EQ(Versions(r.lw->list_calls()), (std::vector<std::string>{"", "12", ""}));
  EXPECT_EQ(Versions(r.lw->watch_calls()), (std::vector<std::string>{"10", "40"}));
  EXPECT_EQ(*r.store->GetByKey("ns/a"), nullptr);
  EXPECT_NE(*r.store->GetByKey("ns/b"), nullptr);
  EXPECT_EQ(r.reflector->stats().lists, 2u) << "the stale answer is not a list applied";
}

// Invariant 3 where resourceVersions cannot be compared: a watch that
// expires at the resourceVersion the last list gave (nothing applied since)
// shows that list was stale; the next is from "", never the same one again.
TEST(ReflectorTest, AWatchExpiringAtTheListsVersionRelistsFromEmpty) {
  Rig r;
  r.options.ordered_resource_versions = false;
  r.lw->QueueList(ListOf({testing::Pod("a", "ns", "5")}, "10"));
  auto w1 = r.lw->QueueWatch();
  r.lw->QueueList(ListOf({testing::Pod("a", "ns", "5")}, "12"));  // stale: the state at 12
  auto w2 = r.lw->QueueWatch();
  r.lw->QueueList(ListOf({testing::Pod("b", "ns", "30")}, "40"));
  auto w3 = r.lw->QueueWatch();
  r.Start();
  r.lw->WaitForCalls(1, 1);
  ExpireAfter(r, *w1, Bookmark("12"));
  r.lw->WaitForCalls(2, 2);
  w2->Fail(Status::Expired("too old resource version: 12 (14)"));
  r.WaitForSleeps(2);
  r.clock->Advance(std::chrono::seconds(4));
  r.lw->WaitForCalls(3, 3);
  EXPECT_EQ(Versions(r.lw->list_calls()), (std::vector<std::string>{"", "12", ""}));
  EXPECT_EQ(Versions(r.lw->watch_calls()), (std::vector<std::string>{"10", "12", "40"}));
  EXPECT_EQ(r.store->LastSyncResourceVersion(), "40");
  auto relists = r.Events(ReflectorEvent::Type::kRelist);
  ASSERT_EQ(relists.size(), 2u);
  EXPECT_NE(relists[1].message.find("from the server's current state"), std::string::npos)
      << relists[1].message;
}

// Relists that never reach a working watch back off as client-go does:
// 0.8 s doubling (with jitter up to as much again), each said once.
TEST(ReflectorTest, RelistsThatNeverReachAWatchBackOff) {
  Rig r;
  r.lw->QueueList(ListOf({}, "10"));
  r.lw->QueueWatchError(Status::Expired("too old resource version: 10 (11)"));
  for (int i = 0; i < 4; ++i) {
    r.lw->QueueList(ListOf({}, std::to_string(20 + i)));
    r.lw->QueueWatchError(Status::Expired("too old resource version"));
  }
  r.Start();
  for (size_t i = 1; i <= 4; ++i) {
    r.WaitForSleeps(i);
    r.clock->Advance(std::chrono::seconds(60));
  }
  r.WaitForSleeps(5);
  std::vector<Clock::Duration> sleeps = r.clock->sleeps();
  ASSERT_GE(sleeps.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    const auto base = milliseconds(800) * (1 << i);
    EXPECT_GE(sleeps[i], base) << i;
    EXPECT_LT(sleeps[i], 2 * base) << i;
  }
  EXPECT_EQ(r.Events(ReflectorEvent::Type::kRelist).size(), 5u);
  EXPECT_EQ(r.lw->list_calls().size(), 5u);
}

// A watch event without a resourceVersion (the API allows it) is applied,
// and the resume point stays where the last one that had one put it.
TEST(ReflectorTest, AWatchEventWithoutResourceVersionIsApplied) {
  Rig r;
  r.lw->QueueList(ListOf({}, "10"));
  auto w1 = r.lw->QueueWatch();
  r.Start();
  r.lw->WaitForCalls(1, 1);
  w1->Push(Event(WatchEventType::kAdded, testing::Pod("a", "ns", "11")));
  w1->Push(Event(WatchEventType::kAdded, testing::Pod("b", "ns", "")));
  ASSERT_TRUE(testing::Eventually([&] { return *r.store->Size() == 2u; }));
  EXPECT_EQ(r.store->LastSyncResourceVersion(), "11");
  w1->Push(Event(WatchEventType::kAdded, testing::Pod("c", "ns", "")));
  ASSERT_TRUE(testing::Eventually([&] { return *r.store->Size() == 3u; }));
  EXPECT_EQ(r.store->LastSyncResourceVersion(), "11");
  EXPECT_EQ(r.reflector->LastSyncResourceVersion(), "11");
}

// A server that cannot be reached is said once, with its error, and its
// return once more; the retries between (client-go's backoff on the clock)
// are silent.
TEST(ReflectorTest, AnUnreachableServerIsSaidOnceAndSoIsItsReturn) {
  Rig r;
  r.lw->QueueList(ListOf({testing::Pod("a", "ns", "5")}, "10"));
  auto w1 = r.lw->QueueWatch();
  for (int i = 0; i < 3; ++i) r.lw->QueueWatchError(Status::Unavailable("connection refused"));
  auto w2 = r.lw->QueueWatch();
  r.Start();
  r.lw->WaitForCalls(1, 1);
  r.clock->Advance(std::chrono::seconds(5));  // a watch that ran, then the server went away
  EXPECT_EQ(r.reflector->stats().failing_since, Clock::TimePoint{});
  const Clock::TimePoint outage = r.clock->Now();
  w1->Fail(Status::Unavailable("connection reset by peer"));
  for (size_t sleeps = 1; sleeps <= 3; ++sleeps) {
    r.WaitForSleeps(sleeps);
    r.clock->WaitForSleepers(1);
    // The outage's start, not its last failure's (/readyz's threshold).
    EXPECT_EQ(r.reflector->stats().failing_since, outage) << sleeps;
    r.clock->Advance(std::chrono::seconds(31));
  }
  r.lw->WaitForCalls(1, 5);
  ASSERT_TRUE(
      testing::Eventually([&] { return !r.Events(ReflectorEvent::Type::kResumed).empty(); }));
  EXPECT_TRUE(testing::Eventually(
      [&] { return r.reflector->stats().failing_since == Clock::TimePoint{}; }));
  auto errors = r.Events(ReflectorEvent::Type::kError);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].message,
            "fakes: cannot open the watch (connection refused): retrying with backoff until the "
            "server answers");
  auto back = r.Events(ReflectorEvent::Type::kResumed);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].message, "fakes: the server answers again: watching from resourceVersion 10");
  EXPECT_EQ(r.lw->list_calls().size(), 1u) << "no relist";
  w2->End();
}

// The answers of ReflectorOptions::server_identity, in order; the last one
// stays.
class Identities {
 public:
  explicit Identities(std::vector<StatusOr<std::string>> answers) : answers_(std::move(answers)) {}
  std::function<StatusOr<std::string>()> Hook() {
    return [this]() -> StatusOr<std::string> {
      std::lock_guard l(mu_);
      ++asked_;
      StatusOr<std::string> a = answers_.front();
      if (answers_.size() > 1) answers_.erase(answers_.begin());
      return a;
    };
  }
  int asked() {
    std::lock_guard l(mu_);
    return asked_;
  }

 private:
  std::mutex mu_;
  std::vector<StatusOr<std::string>> answers_;  // guarded by mu_
  int asked_ = 0;                               // guarded by mu_
};

// Another cluster at the same address after an outage (a server rebuilt
// with another history, whose resourceVersions may well pass the store's):
// its identity differs, so the store is listed again from "" and keeps
// none of the old cluster's objects.
TEST(ReflectorTest, AnotherServerAfterAnOutageIsListedFromEmpty) {
  Rig r;
  Identities ids(
      {std::string("uid-1"), Status::Unavailable("connection refused"), std::string("uid-2")});
  r.options.server_identity = ids.Hook();
  r.lw->QueueList(ListOf({testing::Pod("a", "ns", "5"), testing::Pod("b", "ns", "6")}, "10"));
  auto w1 = r.lw->QueueWatch();
  r.lw->QueueList(ListOf({testing::Pod("c", "ns", "40")}, "50"));
  auto w2 = r.lw->QueueWatch();
  r.Start();
  r.lw->WaitForCalls(1, 1);
  EXPECT_EQ(r.reflector->stats().server_identity, "uid-1");
  r.clock->Advance(std::chrono::seconds(5));
  w1->Fail(Status::Unavailable("connection reset by peer"));
  r.WaitForSleeps(1);  // after the refused check; the relist follows the answer at once
  r.clock->WaitForSleepers(1);
  r.clock->Advance(std::chrono::seconds(31));
  r.lw->WaitForCalls(2, 2);
  EXPECT_EQ(Versions(r.lw->list_calls()), (std::vector<std::string>{"", ""}));
  EXPECT_EQ(r.lw->watch_calls().size(), 2u) << "no watch of the new server before its list";
  EXPECT_EQ(r.lw->watch_calls()[1].resource_version, "50");
  auto keys = r.store->ListKeys();
  ASSERT_OK(keys);
  EXPECT_EQ(*keys, (std::vector<std::string>{"ns/c"}));
  EXPECT_EQ(r.reflector->stats().server_identity, "uid-2");
  auto relists = r.Events(ReflectorEvent::Type::kRelist);
  ASSERT_EQ(relists.size(), 1u);
  EXPECT_EQ(relists[0].message,
            "fakes: the server is not the one the store followed (its identity is uid-2, was "
            "uid-1): relisting from the server's current state");
  EXPECT_EQ(ids.asked(), 3);
  w2->End();
}

// The same server after an outage (its identity unchanged, or unknown: an
// HTTP error such as 403) is watched again from the last resourceVersion.
TEST(ReflectorTest, TheSameServerAfterAnOutageIsWatchedAgain) {
  for (bool forbidden : {false, true}) {
    Rig r;
    Identities ids(
        {std::string("uid-1"),
         forbidden
             ? StatusOr<std::string>(
                   Status::PermissionDenied("forbidden").WithHttpError(HttpError{.http_code = 403}))
             : StatusOr<std::string>(std::string("uid-1"))});
    r.options.server_identity = ids.Hook();
    r.lw->QueueList(ListOf({testing::Pod("a", "ns", "5")}, "10"));
    auto w1 = r.lw->QueueWatch();
    auto w2 = r.lw->QueueWatch();
    r.Start();
    r.lw->WaitForCalls(1, 1);
    r.clock->Advance(std::chrono::seconds(5));
    w1->Fail(Status::Unavailable("connection reset by peer"));
    r.lw->WaitForCalls(1, 2);
    EXPECT_EQ(r.lw->watch_calls()[1].resource_version, "10") << forbidden;
    EXPECT_EQ(r.lw->list_calls().size(), 1u) << forbidden;
    EXPECT_EQ(ids.asked(), 2) << forbidden;
    EXPECT_EQ(r.reflector->stats().server_identity, "uid-1") << forbidden;
    w2->End();
  }
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

// A shared probe (InformerFactory's) answering with another collection's
// resourceVersion: equal to the resume point, the reflector is caught up
// with no request of its own (invariant 3, one probe per server); behind
// it, the reflector probes its own collection, and only its own answer may
// say the history was reset (a type kept in another etcd numbers apart).
TEST(ReflectorTest, ASharedProbeMaySayCaughtUpNeverReset) {
  for (const std::string shared : {"30", "20"}) {
    Rig r;
    Transaction txn;
    txn.Add(testing::Pod("a", "ns", "5"));
    txn.resource_version = "30";
    ASSERT_OK(r.store->Commit(txn, nullptr));
    int asked = 0;
    Clock::TimePoint since{};
    r.options.shared_probe = [&](const std::function<StatusOr<std::string>()>&,
                                 Clock::TimePoint started) -> StatusOr<ProbeAnswer> {
      ++asked;
      since = started;
      return ProbeAnswer{shared, false};
    };
    // Its own collection is at 35: not reset, behind the resume point by
    // nothing but another numbering.
    r.lw->QueueList(ListOf({testing::Pod("a", "ns", "5")}, "35"));
    auto w = r.lw->QueueWatch();
    const Clock::TimePoint start = r.clock->Now();
    r.Start();
    r.lw->WaitForCalls(shared == "30" ? 0 : 1, 1);
    EXPECT_EQ(asked, 1) << shared;
    EXPECT_EQ(since, start) << shared;
    EXPECT_EQ(r.lw->watch_calls()[0].resource_version, "30") << shared;
    EXPECT_TRUE(r.Events(ReflectorEvent::Type::kRelist).empty()) << shared;
    if (shared == "30") {
      EXPECT_TRUE(r.reflector->HasSynced());
      EXPECT_EQ(r.reflector->stats().probes, 0u);
      EXPECT_TRUE(r.lw->list_calls().empty());
    } else {
      // Its own probe said 35: behind it, waiting for the watch.
      EXPECT_EQ(r.reflector->stats().probes, 1u);
      ASSERT_EQ(r.lw->list_calls().size(), 1u);
      EXPECT_EQ(r.lw->list_calls()[0].limit, 1);
    }
    EXPECT_EQ(r.reflector->stats().lists, 0u) << shared;
    w->End();
  }
}

// A server that refuses streaming lists (before 1.27) is asked once for the
// reflectors that share a StreamingSupport (a factory's), not once per type;
// one that opens one lets the others stream without waiting.
TEST(ReflectorTest, AStreamingListRefusedOnceIsNotAskedAgainByOthers) {
  auto support = StreamingSupport::Create();
  Rig first, second;
  for (Rig* r : {&first, &second}) {
    r->options.streaming_list = true;
    r->options.streaming_support = support;
  }
  first.lw->QueueWatchError(
      Status::InvalidArgument("sendInitialEvents is forbidden")
          .WithHttpError(HttpError{.http_code = 400, .reason = "BadRequest"}));
  for (Rig* r : {&first, &second}) {
    r->lw->QueueList(ListOf({testing::Pod("a", "ns", "5")}, "10"));
    r->lw->QueueWatch();
  }
  first.Start();
  first.lw->WaitForCalls(1, 2);
  ASSERT_TRUE(first.lw->watch_calls()[0].send_initial_events.value_or(false));
  EXPECT_FALSE(first.lw->watch_calls()[1].send_initial_events.value_or(false));
  second.Start();
  second.lw->WaitForCalls(1, 1);
  EXPECT_FALSE(second.lw->watch_calls()[0].send_initial_events.value_or(false))
      << "the refusal was learned once";
  EXPECT_EQ(support->Decide({}), StreamingSupport::Decision::kList);

  // Opened once: every other streams at once.
  auto opened = StreamingSupport::Create();
  EXPECT_EQ(opened->Decide({}), StreamingSupport::Decision::kTryAndReport);
  opened->Report(StreamingSupport::Outcome::kOpened);
  EXPECT_EQ(opened->Decide({}), StreamingSupport::Decision::kStream);
  // No answer (a connection refused): the next one tries.
  auto unknown = StreamingSupport::Create();
  EXPECT_EQ(unknown->Decide({}), StreamingSupport::Decision::kTryAndReport);
  unknown->Report(StreamingSupport::Outcome::kUnknown);
  EXPECT_EQ(unknown->Decide({}), StreamingSupport::Decision::kTryAndReport);
}

// A 500 InternalError on the watch with no retry window (the default):
// client-go relists, so an object deleted behind the watch's back goes.
TEST(ReflectorTest, InternalErrorRelistsByDefault) {
  Rig r;
  r.lw->QueueList(ListOf({testing::Pod("a", "ns", "5"), testing::Pod("b", "ns", "6")}, "10"));
  auto w1 = r.lw->QueueWatch();
  r.lw->QueueList(ListOf({testing::Pod("b", "ns", "6")}, "12"));
  auto w2 = r.lw->QueueWatch();
  r.Start();
  r.lw->WaitForCalls(1, 1);
  w1->Fail(InternalError("StorageReadError: corrupt object ns/a"));
  r.clock->WaitForSleepers(1);
  r.clock->Advance(std::chrono::seconds(2));
  r.lw->WaitForCalls(2, 2);
  EXPECT_EQ(Versions(r.lw->list_calls()), (std::vector<std::string>{"", "10"}));
  EXPECT_EQ(*r.store->Size(), 1u);
  EXPECT_EQ(*r.store->GetByKey("ns/a"), nullptr);
}

// With a retry window, a run of 500s is answered by watching again while
// the run is younger than the window; a quiet minute starts a new run
// (client-go's RetryWithDeadline).
TEST(ReflectorTest, InternalErrorRetryWindowStartsOverAfterAQuietMinute) {
  Rig r;
  r.options.max_internal_error_retry = std::chrono::seconds(30);
  r.lw->QueueList(ListOf({testing::Pod("a", "ns", "5")}, "10"));
  std::vector<std::shared_ptr<testing::FakeWatchStream>> w;
  for (int i = 0; i < 5; ++i) w.push_back(r.lw->QueueWatch());
  r.lw->QueueList(ListOf({testing::Pod("a", "ns", "5")}, "10"));
  r.Start();
  r.lw->WaitForCalls(1, 1);
  w[0]->Fail(InternalError("e1"));  // t=0: a run starts, retry
  r.lw->WaitForCalls(1, 2);
  r.clock->Advance(std::chrono::seconds(20));
  w[1]->Fail(InternalError("e2"));  // t=20: within 30 s of the run's start
  r.lw->WaitForCalls(1, 3);
  r.clock->Advance(std::chrono::seconds(70));
  w[2]->Fail(InternalError("e3"));  // t=90: 70 s quiet, a new run, retry
  r.lw->WaitForCalls(1, 4);
  EXPECT_EQ(r.lw->list_calls().size(), 1u);
  r.clock->Advance(std::chrono::seconds(40));
  w[3]->Fail(InternalError("e4"));  // t=130: 40 s into the run: relist
  r.clock->WaitForSleepers(1);
  r.clock->Advance(std::chrono::seconds(2));
  r.lw->WaitForCalls(2, 5);
  EXPECT_EQ(Versions(r.lw->list_calls()), (std::vector<std::string>{"", "10"}));
}

// client-go skips (and reports) a watch event whose object is not of the
// expected kind instead of storing it.
TEST(ReflectorTest, WatchEventOfAnotherKindIsSkipped) {
  Rig r;
  r.options.expected_api_version = "v1";
  r.options.expected_kind = "Pod";
  r.lw->QueueList(ListOf({}, "10"));
  auto w = r.lw->QueueWatch();
  r.Start();
  r.lw->WaitForCalls(1, 1);
  w->Push(Event(WatchEventType::kAdded,
                testing::MakeObject(R"({"kind":"Service","apiVersion":"v1","metadata":)"
                                    R"({"name":"s","namespace":"ns","resourceVersion":"11"}})")));
  w->Push(Event(WatchEventType::kAdded, testing::Pod("p", "ns", "12")));
  while (r.store->LastSyncResourceVersion() != "12") std::this_thread::sleep_for(milliseconds(1));
  EXPECT_EQ(*r.store->Size(), 1u);
  EXPECT_EQ(*r.store->GetByKey("ns/s"), nullptr);
  EXPECT_EQ(r.reflector->stats().skipped, 1u);
  auto skipped = r.Events(ReflectorEvent::Type::kSkipped);
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].message.find("Kind=Service"), std::string::npos) << skipped[0].message;
}

// Without the ordering promise (an aggregated API), a resume point past the
// probe's version proves nothing: the reflector waits for a quiet watch.
TEST(ReflectorTest, UnorderedResourceVersionsSyncByTheQuietRuleOnly) {
  Rig r;
  r.options.ordered_resource_versions = false;
  r.options.sync_quiet_period = std::chrono::seconds(5);
  Transaction txn;
  txn.Add(testing::Pod("a", "ns", "5"));
  txn.resource_version = "30";
  ASSERT_OK(r.store->Commit(txn, nullptr));
  r.lw->QueueList(ListOf({}, "20"));
  auto w = r.lw->QueueWatch();
  r.Start();
  r.lw->WaitForCalls(1, 1);
  EXPECT_FALSE(r.reflector->HasSynced());
  r.WaitForSleeps(1);  // the quiet-period timer
  // On a slow machine the watch may open after the timer started, which
  // starts the quiet period over: move the clock until the rule fires.
  const auto start = r.clock->Now();
  while (!r.reflector->HasSynced()) {
    r.clock->Advance(std::chrono::seconds(1));
    std::this_thread::sleep_for(milliseconds(1));
  }
  EXPECT_GE(r.clock->Now() - start, std::chrono::seconds(5)) << "synced before a quiet period";
  EXPECT_EQ(r.lw->list_calls().size(), 1u);
}

// A server whose current resourceVersion is behind the resume point has
// another history (etcd restored from a backup, or another cluster at the
// same address): the reflector relists from "" at once, so that the store
// keeps nothing the server no longer has (invariant 5: synced means the
// server's state), and is not synced before that list.
TEST(ReflectorTest, ServerBehindTheResumePointRelistsFromEmpty) {
  Rig r;
  Transaction txn;
  txn.Add(testing::Pod("gone", "ns", "25"));
  txn.resource_version = "30";
  ASSERT_OK(r.store->Commit(txn, nullptr));
  r.lw->QueueList(ListOf({}, "20"));                                 // the probe
  r.lw->QueueList(ListOf({testing::Pod("new", "ns", "19")}, "20"));  // the relist
  auto w = r.lw->QueueWatch();
  r.Start();
  r.lw->WaitForCalls(2, 1);
  EXPECT_EQ(r.lw->list_calls()[0].limit, 1);
  EXPECT_EQ(r.lw->list_calls()[1].resource_version, "");
  EXPECT_EQ(r.lw->watch_calls()[0].resource_version, "20");
  EXPECT_TRUE(r.reflector->HasSynced());
  EXPECT_EQ(*r.store->GetByKey("ns/gone"), nullptr);
  EXPECT_NE(*r.store->GetByKey("ns/new"), nullptr);
  EXPECT_EQ(r.store->LastSyncResourceVersion(), "20");
  auto relists = r.Events(ReflectorEvent::Type::kRelist);
  ASSERT_EQ(relists.size(), 1u);
  EXPECT_NE(relists[0].message.find("behind the cache's 30"), std::string::npos)
      << relists[0].message;
}

// sink_identity: a store listed under another server identity (another
// cluster at the address) is listed from "" at once, with no probe; the
// same identity resumes.
TEST(ReflectorTest, AStoreOfAnotherClusterIsListedFromEmpty) {
  for (const char* identity : {"cluster-b", "cluster-a"}) {
    SCOPED_TRACE(identity);
    Rig r;
    r.options.sink_identity = "cluster-a";
    r.options.server_identity = [identity]() -> StatusOr<std::string> {
      return std::string(identity);
    };
    Transaction txn;
    txn.Add(testing::Pod("old", "ns", "25"));
    txn.resource_version = "30";
    ASSERT_OK(r.store->Commit(txn, nullptr));
    const bool other = std::string(identity) == "cluster-b";
    if (other) {
      r.lw->QueueList(ListOf({testing::Pod("new", "ns", "40")}, "45"));
    } else {
      r.lw->QueueList(ListOf({}, "30"));  // the probe
    }
    auto w = r.lw->QueueWatch();
    r.Start();
    r.lw->WaitForCalls(1, 1);
    EXPECT_EQ(r.reflector->stats().probes, other ? 0u : 1u);
    EXPECT_EQ(r.lw->list_calls()[0].resource_version, "");
    EXPECT_EQ(r.lw->watch_calls()[0].resource_version, other ? "45" : "30");
    EXPECT_EQ(*r.store->GetByKey("ns/old") == nullptr, other);
    EXPECT_EQ(r.reflector->stats().server_identity, identity);
  }
}

// resume = false: a store known to hold another history is listed from ""
// at once, with no probe and no watch from its resume point.
TEST(ReflectorTest, WithoutResumeTheFirstListIsFromEmpty) {
  Rig r;
  r.options.resume = false;
  Transaction txn;
  txn.Add(testing::Pod("old", "ns", "25"));
  txn.resource_version = "30";
  ASSERT_OK(r.store->Commit(txn, nullptr));
  r.lw->QueueList(ListOf({testing::Pod("new", "ns", "40")}, "45"));
  auto w = r.lw->QueueWatch();
  r.Start();
  r.lw->WaitForCalls(1, 1);
  EXPECT_EQ(r.lw->list_calls()[0].resource_version, "");
  EXPECT_EQ(r.lw->list_calls()[0].limit, 500);
  EXPECT_EQ(r.lw->watch_calls()[0].resource_version, "45");
  EXPECT_EQ(*r.store->GetByKey("ns/old"), nullptr);
  EXPECT_EQ(r.reflector->stats().probes, 0u);
}

// A resumed watch that expires (410) hands over to a relist; the quiet rule
// must not call the reflector synced, at the expired resourceVersion, while
// that list runs, however long it takes (invariant 5).
TEST(ReflectorTest, NotSyncedByTheQuietRuleWhileARelistRuns) {
  Rig r;
  r.options.streaming_list = true;
  r.options.sync_quiet_period = std::chrono::seconds(1);
  Transaction txn;
  txn.Add(testing::Pod("a", "ns", "5"));
  txn.resource_version = "30";
  ASSERT_OK(r.store->Commit(txn, nullptr));
  r.lw->QueueList(ListOf({}, "50"));  // the probe: 30 is behind
  auto resumed = r.lw->QueueWatch();
  auto streaming = r.lw->QueueWatch();  // the relist, streamed
  r.Start();
  r.lw->WaitForCalls(1, 1);
  resumed->Fail(Status::Expired("too old resource version: 30 (40)"));
  // Past the backoff before the relist.
  while (r.lw->watch_calls().size() < 2) {
    r.clock->Advance(milliseconds(200));
    std::this_thread::sleep_for(milliseconds(1));
  }
  EXPECT_TRUE(r.lw->watch_calls()[1].send_initial_events);
  streaming->Push(Event(WatchEventType::kAdded, testing::Pod("b", "ns", "45")));
  // The list's stream is open and quiet, well past the quiet period.
  for (int i = 0; i < 10; ++i) {
    r.clock->Advance(std::chrono::seconds(1));
    std::this_thread::sleep_for(milliseconds(2));
  }
  EXPECT_FALSE(r.reflector->HasSynced());
  streaming->Push(InitialEventsEnd("50"));
  ASSERT_TRUE(testing::Eventually([&] { return r.reflector->HasSynced(); }));
  EXPECT_EQ(r.store->LastSyncResourceVersion(), "50");
  EXPECT_EQ(*r.store->GetByKey("ns/a"), nullptr);
  auto synced = r.Events(ReflectorEvent::Type::kSynced);
  ASSERT_EQ(synced.size(), 1u);
  EXPECT_NE(synced[0].message.find("resourceVersion 50"), std::string::npos) << synced[0].message;
}

// A watch that stalls until the client's deadline is watched again from the
// last resourceVersion, without a relist, and the stall is reported.
TEST(ReflectorTest, StalledWatchPastItsDeadlineIsWatchedAgain) {
  Rig r;
  r.lw->QueueList(ListOf({}, "10"));
  auto w1 = r.lw->QueueWatch();
  auto w2 = r.lw->QueueWatch();
  r.Start();
  r.lw->WaitForCalls(1, 1);
  w1->Push(Bookmark("12"));
  w1->Fail(Status(StatusCode::kDeadlineExceeded, "Operation timed out after 330000 ms"));
  r.lw->WaitForCalls(1, 2);
  EXPECT_EQ(r.lw->watch_calls()[1].resource_version, "12");
  EXPECT_EQ(r.lw->list_calls().size(), 1u);
  auto errors = r.Events(ReflectorEvent::Type::kError);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].message.find("stalled"), std::string::npos) << errors[0].message;
  EXPECT_EQ(r.reflector->stats().stalled_watches, 1u);
}

// A quiet resource's watch stalls at each idle timeout (kube-apiserver
// sends no bookmark until an event passes the watch's start): every stall
// is counted and watched again, but said once until a watch receives
// something; a stall after that is said again.
TEST(ReflectorTest, StallsOfAQuietWatchAreSaidOnceUntilItReceivesSomething) {
  Rig r;
  r.lw->QueueList(ListOf({}, "10"));
  std::vector<std::shared_ptr<testing::FakeWatchStream>> w;
  for (int i = 0; i < 5; ++i) w.push_back(r.lw->QueueWatch());
  r.Start();
  const Status stalled(StatusCode::kDeadlineExceeded, "nothing received for 180 s");
  r.lw->WaitForCalls(1, 1);
  w[0]->Fail(stalled);
  r.lw->WaitForCalls(1, 2);
  w[1]->Fail(stalled);
  r.lw->WaitForCalls(1, 3);
  w[2]->Push(Bookmark("12"));
  w[2]->Fail(stalled);
  r.lw->WaitForCalls(1, 4);
  EXPECT_EQ(r.lw->watch_calls()[3].resource_version, "12");
  EXPECT_EQ(r.lw->list_calls().size(), 1u);
  EXPECT_EQ(r.reflector->stats().stalled_watches, 3u);
  EXPECT_EQ(r.Events(ReflectorEvent::Type::kError).size(), 2u);
}

// "Too large resource version" in each of the three forms servers have
// used: client-go relists at "" for all of them.
TEST(ReflectorTest, TooLargeResourceVersionInEveryFormRelistsFromEmpty) {
  struct Form {
    const char* name;
    Status status;
  };
  auto timeout = [](std::string msg, std::vector<StatusCause> causes) {
    return Status(StatusCode::kDeadlineExceeded, msg)
        .WithHttpError(
            HttpError{.http_code = 504, .reason = "Timeout", .causes = std::move(causes)});
  };
  std::vector<Form> forms = {
      {"cause type",
       Status(StatusCode::kDeadlineExceeded, "resourceVersion not reached")
           .WithHttpError(HttpError{.http_code = 504,
                                    .reason = "Timeout",
                                    .causes = {{"ResourceVersionTooLarge", "", ""}}})},
      {"cause message", timeout("wait timed out", {{"", "Too large resource version", ""}})},
      {"message", timeout("Timeout: Too large resource version: 40, current: 30", {})},
  };
  for (const Form& f : forms) {
    SCOPED_TRACE(f.name);
    Rig r;
    r.lw->QueueList(ListOf({testing::Pod("a", "ns", "5")}, "40"));
    auto w1 = r.lw->QueueWatch();
    r.lw->QueueList(f.status);
    r.lw->QueueList(ListOf({testing::Pod("b", "ns", "25")}, "30"));
    auto w2 = r.lw->QueueWatch();
    r.Start();
    r.lw->WaitForCalls(1, 1);
    ExpireAfter(r, *w1, Bookmark("41"));
    r.lw->WaitForCalls(3, 2);
    EXPECT_EQ(Versions(r.lw->list_calls()), (std::vector<std::string>{"", "41", ""}));
    EXPECT_NE(*r.store->GetByKey("ns/b"), nullptr);
    EXPECT_EQ(r.store->LastSyncResourceVersion(), "30");
  }
}

// A Timeout that says nothing about resourceVersions is not "too large":
// no relist from "" (which would drop the resume point for nothing).
TEST(ReflectorTest, PlainTimeoutIsNotTooLargeResourceVersion) {
  Rig r;
  r.lw->QueueList(ListOf({testing::Pod("a", "ns", "5")}, "40"));
  auto w1 = r.lw->QueueWatch();
  r.lw->QueueList(Status(StatusCode::kDeadlineExceeded, "request timed out")
                      .WithHttpError(HttpError{.http_code = 504, .reason = "Timeout"}));
  r.Start();
  r.lw->WaitForCalls(1, 1);
  ExpireAfter(r, *w1, Bookmark("41"));
  r.lw->WaitForCalls(2, 1);
  r.WaitForSleeps(2);  // the failed list's backoff
  EXPECT_EQ(Versions(r.lw->list_calls()), (std::vector<std::string>{"", "41"}));
}

// 410 on a continuation page: client-go's pager lists once more, whole, at
// the requested resourceVersion; what the first pages delivered is dropped
// (an object deleted meanwhile does not stay).
TEST(ReflectorTest, ExpiredContinueTokenFallsBackToOneFullList) {
  Rig r;
  r.options.page_size = 1;
  ObjectList page1 = ListOf({testing::Pod("a", "ns", "5")}, "10");
  page1.continue_token = "c1";
  r.lw->QueueList(page1);
  r.lw->QueueList(Status::Expired("The provided continue parameter is too old"));
  r.lw->QueueList(ListOf({testing::Pod("b", "ns", "15")}, "20"));
  auto w = r.lw->QueueWatch();
  r.Start();
  r.lw->WaitForCalls(3, 1);
  auto calls = r.lw->list_calls();
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[1].continue_token, "c1");
  EXPECT_EQ(calls[2].continue_token, "");
  EXPECT_EQ(calls[2].limit, 0);
  EXPECT_EQ(calls[2].resource_version, "");
  EXPECT_EQ(*r.store->Size(), 1u);
  EXPECT_EQ(*r.store->GetByKey("ns/a"), nullptr);
  EXPECT_EQ(r.store->LastSyncResourceVersion(), "20");
  EXPECT_EQ(r.lw->watch_calls()[0].resource_version, "20");
}

// A page of a paginated LIST, with its continue token.
ObjectList Page(std::vector<ObjectPtr> items, std::string rv, std::string next) {
  ObjectList l = ListOf(std::move(items), std::move(rv));
  l.continue_token = std::move(next);
  return l;
}

// A rig whose store is a cache's keyspace, which keeps a relist's progress.
struct CacheRig : Rig {
  // In a directory of its own, or `path`.
  explicit CacheRig(const std::string& path = "") {
    cache = *Cache::Open(path.empty() ? dir.path() : path);
    store = *cache->OpenKeyspace("pods");
    options.page_size = 1;
  }
  ~CacheRig() {  // before the cache goes
    thread.request_stop();
    if (thread.joinable()) thread.join();
  }
  testing::TempDir dir;
  std::shared_ptr<Cache> cache;
};

// Queues a LIST of two pages (pods a and b, at resourceVersion 10) cut on
// its third, which the reflector follows with a backoff.
void QueueTwoPagesThenACut(testing::FakeListerWatcher& lw) {
  lw.QueueList(Page({testing::Pod("a", "ns", "5")}, "10", "c1"));
  lw.QueueList(Page({testing::Pod("b", "ns", "6")}, "10", "c2"));
  lw.QueueList(Status::Unavailable("connection reset by peer"));
}

// Waits for the backoff after the cut, and lets it pass on the clock.
void PassTheBackoff(Rig& r) {
  r.clock->WaitForSleepers(1);
  r.clock->Advance(std::chrono::seconds(2));
}

std::vector<std::string> Keys(const Indexer& store) {
  auto keys = store.ListKeys();
  EXPECT_OK(keys);
  return keys.ok() ? *keys : std::vector<std::string>{};
}

// Invariant 3 with the progress kept: a paginated LIST cut short (the
// connection lost on its third page) has committed each page with its
// continue token; the next list goes on from the last page committed,
// without a resourceVersion (the token carries the list's), and writes
// only the pages it had not.
TEST(ReflectorTest, AListCutShortContinuesFromItsLastCommittedPage) {
  CacheRig r;
  QueueTwoPagesThenACut(*r.lw);
  r.lw->QueueList(Page({testing::Pod("c", "ns", "7")}, "10", ""));
  auto w = r.lw->QueueWatch();
  r.Start();
  r.lw->WaitForCalls(3, 0);
  EXPECT_EQ(r.store->LastSyncResourceVersion(), "") << "invariant 3: no resume point yet";
  PassTheBackoff(r);
  r.lw->WaitForCalls(4, 1);
  auto calls = r.lw->list_calls();
  ASSERT_EQ(calls.size(), 4u);
  EXPECT_EQ(calls[2].continue_token, "c2");
  EXPECT_EQ(calls[3].continue_token, "c2");
  EXPECT_EQ(calls[3].resource_version, "");
  EXPECT_EQ(calls[3].resource_version_match, "");
  EXPECT_EQ(calls[3].limit, 1);
  EXPECT_EQ(Keys(*r.store), (std::vector<std::string>{"ns/a", "ns/b", "ns/c"}));
  EXPECT_EQ(r.store->LastSyncResourceVersion(), "10");
  EXPECT_EQ(r.lw->watch_calls()[0].resource_version, "10");
  ReflectorStats stats = r.reflector->stats();
  EXPECT_EQ(stats.lists, 1u);
  EXPECT_EQ(stats.continued_lists, 1u);
  EXPECT_EQ(stats.listed_objects, 1u) << "only the page the continued list received";
  auto relists = r.Events(ReflectorEvent::Type::kRelist);
  ASSERT_EQ(relists.size(), 1u);
  EXPECT_EQ(relists[0].message,
            "fakes: continuing the LIST cut short at resourceVersion 10 after 2 objects");
  auto listed = r.Events(ReflectorEvent::Type::kListed);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].message,
            "fakes: LIST (continued after 2 objects) of 1 objects at resourceVersion 10 applied "
            "(1 written, 0 unchanged)");
  auto cut = r.store->GetCutShortRelist();
  ASSERT_OK(cut);
  EXPECT_FALSE(cut->has_value());
  w->End();
}

// A continue token the server no longer honours (410: etcd compacted past
// the list's resourceVersion while the process was down) or cannot read
// (400: another server's): the list starts over from the first page, and
// what the cut-short one wrote is compared, not rewritten; what is gone
// since is deleted.
TEST(ReflectorTest, AContinueTokenTheServerRefusesListsFromTheStart) {
  for (Status refusal : {Status::Expired("The provided continue parameter is too old"),
                         Status(StatusCode::kInvalidArgument, "continue key is not valid")
                             .WithHttpError(HttpError{.http_code = 400, .reason = "BadRequest"})}) {
    SCOPED_TRACE(refusal.ToString());
    CacheRig r;
    QueueTwoPagesThenACut(*r.lw);
    r.lw->QueueList(refusal);
    r.lw->QueueList(Page({testing::Pod("a", "ns", "5")}, "30", "d1"));
    r.lw->QueueList(Page({testing::Pod("c", "ns", "25")}, "30", ""));
    auto w = r.lw->QueueWatch();
    r.Start();
    r.lw->WaitForCalls(3, 0);
    PassTheBackoff(r);
    r.lw->WaitForCalls(6, 1);
    auto calls = r.lw->list_calls();
    ASSERT_EQ(calls.size(), 6u);
    EXPECT_EQ(calls[3].continue_token, "c2");
    EXPECT_EQ(calls[4].continue_token, "");
    EXPECT_EQ(calls[4].resource_version, "");
    EXPECT_EQ(calls[4].limit, 1) << "paginated again: its pages keep their progress";
    EXPECT_EQ(calls[5].continue_token, "d1");
    EXPECT_EQ(Keys(*r.store), (std::vector<std::string>{"ns/a", "ns/c"}));
    EXPECT_EQ(r.store->LastSyncResourceVersion(), "30");
    EXPECT_EQ(r.reflector->stats().continued_lists, 0u);
    auto listed = r.Events(ReflectorEvent::Type::kListed);
    ASSERT_EQ(listed.size(), 1u);
    EXPECT_EQ(listed[0].message,
              "fakes: LIST of 2 objects at resourceVersion 30 applied (1 written, 1 unchanged)");
    auto relists = r.Events(ReflectorEvent::Type::kRelist);
    ASSERT_EQ(relists.size(), 2u);
    EXPECT_EQ(relists[1].message, "fakes: the server would not continue the LIST cut short (" +
                                      std::string(refusal.message()) + "): listing from the start");
    w->End();
  }
}

// A streaming list keeps no continue token: one cut short is followed by a
// paginated LIST (whose pages keep their progress), not by another
// streaming list that a crash loop would cut short again and again. Later
// relists stream again.
TEST(ReflectorTest, AStreamingListCutShortIsFollowedByAPaginatedOne) {
  CacheRig r;
  r.options.streaming_list = true;
  r.options.page_size = 500;
  auto stream = r.lw->QueueWatch();
  stream->Push(Event(WatchEventType::kAdded, testing::Pod("a", "ns", "5")));
  stream->Fail(Status::Unavailable("connection reset by peer"));
  r.lw->QueueList(ListOf({testing::Pod("a", "ns", "5"), testing::Pod("b", "ns", "6")}, "10"));
  auto w = r.lw->QueueWatch();
  r.Start();
  PassTheBackoff(r);
  r.lw->WaitForCalls(1, 2);
  EXPECT_TRUE(r.lw->watch_calls()[0].send_initial_events);
  EXPECT_EQ(r.lw->list_calls()[0].limit, 500);
  EXPECT_FALSE(r.lw->watch_calls()[1].send_initial_events);
  EXPECT_EQ(r.lw->watch_calls()[1].resource_version, "10");
  EXPECT_EQ(Keys(*r.store), (std::vector<std::string>{"ns/a", "ns/b"}));
  auto relists = r.Events(ReflectorEvent::Type::kRelist);
  ASSERT_EQ(relists.size(), 1u);
  EXPECT_EQ(relists[0].message,
            "fakes: the last list was cut short and cannot be continued (no page of it was "
            "committed): listing again page by page, keeping what it wrote where it is unchanged");
  auto again = r.lw->QueueWatch();
  w->Fail(Status::Expired("too old resource version: 10 (11)"));
  PassTheBackoff(r);
  r.lw->WaitForCalls(1, 3);
  EXPECT_TRUE(r.lw->watch_calls()[2].send_initial_events);
  again->End();
}

// A list cut short after two pages, in the cache at `dir`, by a reflector
// whose server has the identity `identity` ("": none asked).
void CutAfterTwoPages(const std::string& dir, const std::string& identity) {
  CacheRig r(dir);
  if (!identity.empty()) {
    r.options.server_identity = [identity] { return StatusOr<std::string>(identity); };
  }
  QueueTwoPagesThenACut(*r.lw);
  r.Start();
  r.lw->WaitForCalls(3, 0);
  r.clock->WaitForSleepers(1);
}

// A continue token is another server's when the identity differs; a store
// is not built on without resume (it is known to hold another history);
// a damaged progress record is no token. In each case the list starts over
// rather than mix two lists' pages.
TEST(ReflectorTest, AListCutShortIsNotContinuedOnAnotherServerWithoutResumeOrWhenDamaged) {
  enum Case { kOtherServer, kNoResume, kDamaged };
  for (Case c : {kOtherServer, kNoResume, kDamaged}) {
    SCOPED_TRACE(c);
    testing::TempDir dir;
    if (c == kDamaged) {
      auto cache = Cache::Open(dir.path());
      ASSERT_OK(cache);
      auto store = (*cache)->OpenKeyspace("pods");
      ASSERT_OK(store);
      auto session = (*store)->BeginReplace(nullptr);
      ASSERT_OK(session);
      ASSERT_OK((*session)->Put(testing::Pod("a", "ns", "5")));
      ASSERT_OK((*session)->Checkpoint(R"({"continue":7,"objects":"x","list":"fakes"})"));
      session->reset();
    } else {
      ASSERT_NO_FATAL_FAILURE(CutAfterTwoPages(dir.path(), c == kOtherServer ? "uid-1" : ""));
    }
    CacheRig r(dir.path());
    if (c == kOtherServer) {
      r.options.server_identity = [] { return StatusOr<std::string>(std::string("uid-2")); };
    }
    if (c == kNoResume) r.options.resume = false;
    r.lw->QueueList(Page({testing::Pod("b", "ns", "50")}, "60", ""));
    auto w = r.lw->QueueWatch();
    r.Start();
    r.lw->WaitForCalls(1, 1);
    EXPECT_EQ(r.lw->list_calls()[0].continue_token, "");
    EXPECT_EQ(Keys(*r.store), (std::vector<std::string>{"ns/b"}));
    auto relists = r.Events(ReflectorEvent::Type::kRelist);
    ASSERT_EQ(relists.size(), 1u);
    const char* why[] = {
        "it listed the server whose identity is uid-1, not uid-2",
        "the reflector was asked not to build on what the sink holds",
        "its progress record has no continue token, or is not one this version wrote"};
    EXPECT_EQ(relists[0].message,
              std::string("fakes: the last list was cut short and cannot be continued (") + why[c] +
                  "): listing again page by page, keeping what it wrote where it is unchanged");
    w->End();
  }
}

// A streaming list that fails (here a 500) is followed at once by a LIST,
// and the next relist tries the streaming list again.
TEST(ReflectorTest, FailedStreamingListFallsBackToList) {
  Rig r;
  r.options.streaming_list = true;
  r.lw->QueueWatchError(InternalError("etcd unavailable"));
  r.lw->QueueList(ListOf({testing::Pod("a", "ns", "5")}, "10"));
  auto w = r.lw->QueueWatch();
  r.Start();
  r.lw->WaitForCalls(1, 2);
  EXPECT_TRUE(r.clock->sleeps().empty());  // no backoff before the LIST
  EXPECT_TRUE(r.lw->watch_calls()[0].send_initial_events);
  EXPECT_FALSE(r.lw->watch_calls()[1].send_initial_events);
  EXPECT_EQ(r.lw->list_calls()[0].limit, 500);
  EXPECT_TRUE(r.reflector->HasSynced());
  auto again = r.lw->QueueWatch();
  w->Fail(Status::Expired("too old resource version: 10 (11)"));
  r.clock->WaitForSleepers(1);
  r.clock->Advance(std::chrono::seconds(2));
  r.lw->WaitForCalls(1, 3);
  EXPECT_TRUE(r.lw->watch_calls()[2].send_initial_events);
}

// A streamed list's items are counted as they arrive, before the list is
// applied (kcache sync's progress line reads these), then move to the
// totals.
TEST(ReflectorTest, StreamedListItemsAreCountedAsTheyArrive) {
  Rig r;
  r.options.streaming_list = true;
  auto w = r.lw->QueueWatch();
  r.Start();
  r.lw->WaitForCalls(0, 1);
  w->Push(Event(WatchEventType::kAdded, testing::Pod("a", "ns", "5")));
  w->Push(Event(WatchEventType::kAdded, testing::Pod("b", "ns", "6")));
  ASSERT_TRUE(testing::Eventually([&] { return r.reflector->stats().listing_objects >= 2; }));
  ReflectorStats during = r.reflector->stats();
  EXPECT_EQ(during.listing_objects, 2u);
  EXPECT_GT(during.listing_bytes, 0u);
  EXPECT_EQ(during.listed_objects, 0u);
  EXPECT_FALSE(r.reflector->HasSynced());
  w->Push(InitialEventsEnd("10"));
  ASSERT_TRUE(testing::Eventually([&] { return r.reflector->HasSynced(); }));
  ReflectorStats after = r.reflector->stats();
  EXPECT_EQ(after.listed_objects, 2u);
  EXPECT_EQ(after.bytes, during.listing_bytes);
  EXPECT_EQ(after.listing_objects, 0u);
  EXPECT_EQ(after.listing_bytes, 0u);
}

// Watch timeouts are never under client-go's 5 minutes, whatever is asked.
TEST(ReflectorTest, WatchTimeoutIsAtLeastFiveMinutes) {
  Rig r;
  r.options.min_watch_timeout = std::chrono::seconds(1);
  r.lw->QueueList(ListOf({}, "10"));
  auto w = r.lw->QueueWatch();
  r.Start();
  r.lw->WaitForCalls(1, 1);
  auto t = r.lw->watch_calls()[0].timeout_seconds;
  ASSERT_TRUE(t.has_value());
  EXPECT_GE(*t, 300);
  EXPECT_LT(*t, 600);
}

// watch_error_handler hears what client-go's WatchErrorHandler hears: the
// error of a Watch call refused when it opens (410 included, with the
// server's message) and of a LIST that failed; not a LIST 410 or "too large
// resource version" retried at once from "", nor an error event or a very
// short watch inside an open watch, which are logged. The relists that
// follow each are client-go's ladder, as without a handler (invariant 3).
TEST(ReflectorTest, TheWatchErrorHandlerHearsWhatClientGoReports) {
  Rig r;
  std::mutex handled_mu;
  std::vector<Status> handled;  // guarded by handled_mu
  r.options.watch_error_handler = [&](const Status& st) {
    std::lock_guard l(handled_mu);
    handled.push_back(st);
  };
  auto heard = [&] {
    std::lock_guard l(handled_mu);
    return handled;
  };
  r.lw->QueueList(ListOf({}, "10"));
  r.lw->QueueWatchError(Status::Expired("too old resource version: 2 (4)"));
  r.lw->QueueList(ListOf({testing::Pod("a", "ns", "15")}, "20"));
  auto w2 = r.lw->QueueWatch();
  r.Start();
  // 1. The watch refused with 410 when it opens: heard once, then, after
  // backoff, the relist from "" (the list at 10 was the stale one).
  r.WaitForSleeps(1);
  ASSERT_EQ(heard().size(), 1u);
  EXPECT_TRUE(heard()[0].IsExpired()) << heard()[0];
  EXPECT_EQ(heard()[0].message(), "too old resource version: 2 (4)");
  EXPECT_TRUE(r.Events(ReflectorEvent::Type::kError).empty()) << "said as the relist";
  EXPECT_EQ(r.Events(ReflectorEvent::Type::kRelist).size(), 1u);
  r.clock->Advance(std::chrono::seconds(60));
  r.lw->WaitForCalls(2, 2);
  EXPECT_EQ(Versions(r.lw->list_calls()), (std::vector<std::string>{"", ""}));
  EXPECT_EQ(Versions(r.lw->watch_calls()), (std::vector<std::string>{"10", "20"}));

  // 2. A 410 ERROR event in the open watch; its relist at the last
  // resourceVersion (NotOlderThan) gets 410 and is retried at once from "":
  // neither is heard.
  r.lw->QueueList(Status::Expired("The resourceVersion for the provided list is too old."));
  r.lw->QueueList(ListOf({}, "30"));
  auto w3 = r.lw->QueueWatch();
  w2->Push(Bookmark("22"));
  w2->Fail(Status::Expired("too old resource version: 22 (25)"));
  r.WaitForSleeps(2);
  r.clock->Advance(std::chrono::seconds(60));
  r.lw->WaitForCalls(4, 3);
  EXPECT_EQ(Versions(r.lw->list_calls()), (std::vector<std::string>{"", "", "22", ""}));
  EXPECT_EQ(Matches(r.lw->list_calls()), (std::vector<std::string>{"", "", "NotOlderThan", ""}));
  EXPECT_EQ(Versions(r.lw->watch_calls()), (std::vector<std::string>{"10", "20", "30"}));
  EXPECT_EQ(heard().size(), 1u);

  // 3. A 500 ERROR event ends the watch unheard; the relist after it is
  // refused (403) and heard; the next one is made at the same
  // resourceVersion after backoff.
  r.lw->QueueList(Status::PermissionDenied("configmaps is forbidden")
                      .WithHttpError(HttpError{.http_code = 403, .reason = "Forbidden"}));
  r.lw->QueueList(ListOf({}, "40"));
  auto w4 = r.lw->QueueWatch();
  w3->Push(Bookmark("33"));
  w3->Fail(InternalError("etcdserver: request timed out"));
  r.WaitForSleeps(3);
  EXPECT_EQ(heard().size(), 1u);
  r.clock->Advance(std::chrono::seconds(60));
  r.WaitForSleeps(4);
  ASSERT_EQ(heard().size(), 2u);
  EXPECT_EQ(heard()[1].message(), "configmaps is forbidden");
  r.clock->Advance(std::chrono::seconds(60));
  r.lw->WaitForCalls(6, 4);
  EXPECT_EQ(Versions(r.lw->list_calls()), (std::vector<std::string>{"", "", "22", "", "33", "33"}));
  EXPECT_EQ(Versions(r.lw->watch_calls()), (std::vector<std::string>{"10", "20", "30", "40"}));

  // 4. A very short watch: logged in client-go's words, unheard.
  r.lw->QueueList(ListOf({}, "40"));
  auto w5 = r.lw->QueueWatch();
  w4->End();
  r.WaitForSleeps(5);
  EXPECT_EQ(heard().size(), 2u);
  r.clock->Advance(std::chrono::seconds(60));
  r.lw->WaitForCalls(7, 5);
  EXPECT_EQ(r.store->LastSyncResourceVersion(), "40");
  auto errors = r.Events(ReflectorEvent::Type::kError);
  ASSERT_FALSE(errors.empty());
  EXPECT_EQ(errors.back().message,
            "very short watch: fakes: Unexpected watch close - watch lasted less than a second "
            "and no items received");
}

// A watch that closes at once with nothing is an error in client-go's
// words, and is followed by a relist.
TEST(ReflectorTest, VeryShortWatchUsesClientGoWording) {
  Rig r;
  r.lw->QueueList(ListOf({}, "10"));
  auto w = r.lw->QueueWatch();
  r.lw->QueueList(ListOf({}, "10"));
  auto w2 = r.lw->QueueWatch();
  r.Start();
  r.lw->WaitForCalls(1, 1);
  w->End();
  r.clock->WaitForSleepers(1);
  auto errors = r.Events(ReflectorEvent::Type::kError);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].message,
            "very short watch: fakes: Unexpected watch close - watch lasted less than a second "
            "and no items received");
  r.clock->Advance(std::chrono::seconds(2));
  r.lw->WaitForCalls(2, 2);
}

// A stream that breaks at once with nothing (a server that cuts every
// watch) is watched again after backoff, never in a tight loop, and
// without a relist: a broken connection is no reason to list.
TEST(ReflectorTest, AWatchThatBreaksAtOnceIsWatchedAgainAfterBackoff) {
  Rig r;
  r.lw->QueueList(ListOf({}, "10"));
  auto w = r.lw->QueueWatch();
  auto w2 = r.lw->QueueWatch();
  r.Start();
  r.lw->WaitForCalls(1, 1);
  w->Fail(Status::Unavailable("transfer closed with outstanding read data remaining"));
  r.clock->WaitForSleepers(1);
  EXPECT_EQ(r.lw->watch_calls().size(), 1u);
  auto errors = r.Events(ReflectorEvent::Type::kError);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].message,
            "fakes: the watch from resourceVersion 10 broke at once (transfer closed with "
            "outstanding read data remaining): watching again after backoff");
  r.clock->Advance(std::chrono::seconds(2));
  r.lw->WaitForCalls(1, 2);
  EXPECT_EQ(r.lw->watch_calls()[1].resource_version, "10");
  EXPECT_EQ(r.lw->list_calls().size(), 1u);
  w2->End();
}

// The reflector's resync calls the sink's Resync every period while
// watching, if should_resync agrees.
TEST(ReflectorTest, ResyncCallsTheSinkWhileWatching) {
  class CountingSink final : public ReflectorSink {
   public:
    explicit CountingSink(std::shared_ptr<Store> s) : inner(NewStoreSink(std::move(s))) {}
    Status Apply(std::vector<WatchEvent> e, std::string rv) override {
      return inner->Apply(std::move(e), std::move(rv));
    }
    StatusOr<std::unique_ptr<ReplaceSession>> BeginReplace() override {
      return inner->BeginReplace();
    }
    std::string ResumeResourceVersion() const override { return inner->ResumeResourceVersion(); }
    Status Resync() override {
      ++resyncs;
      return Status::OK();
    }
    std::shared_ptr<ReflectorSink> inner;
    std::atomic<int> resyncs{0};
  };
  Rig r;
  r.options.resync_period = std::chrono::seconds(10);
  std::atomic<bool> allow{false};
  std::atomic<int> asked{0};
  r.options.should_resync = [&] {
    ++asked;
    return allow.load();
  };
  auto sink = std::make_shared<CountingSink>(r.store);
  r.lw->QueueList(ListOf({}, "10"));
  auto w = r.lw->QueueWatch();
  r.reflector = Reflector::Create(r.lw, sink, r.options);
  r.thread = std::jthread([&r](std::stop_token stop) { r.reflector->Run(stop); });
  r.lw->WaitForCalls(1, 1);
  // Period by period until the watch is open and should_resync is asked
  // (it says no); the resync thread sleeps once per period.
  size_t sleeps = 1;
  r.WaitForSleeps(sleeps);
  for (int i = 0; asked == 0 && i < 1000; ++i) {
    r.clock->Advance(std::chrono::seconds(10));
    r.WaitForSleeps(++sleeps);
  }
  ASSERT_GT(asked, 0);
  EXPECT_EQ(sink->resyncs, 0);
  allow = true;
  r.clock->Advance(std::chrono::seconds(10));
  r.WaitForSleeps(++sleeps);
  EXPECT_EQ(sink->resyncs, 1);
}

}  // namespace
}  // namespace kcache
