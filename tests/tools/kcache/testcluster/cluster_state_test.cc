// SPDX-License-Identifier: Apache-2.0

// ClusterState: lists at past resourceVersions, the bounded history and
// its floor, and what a watcher is handed.
#include "tools/kcache/testcluster/cluster_state.h"

#include <gtest/gtest.h>

#include "testing/status_matchers.h"
#include "tools/kcache/apiserver/resource_types.h"

namespace kcache::serve {
namespace {

using namespace std::chrono_literals;

std::string ConfigMap(const std::string& name, const std::string& value, uint64_t rv,
                      const std::string& app = "a") {
  return R"({"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":")" + name +
         R"(","namespace":"ns","resourceVersion":")" + std::to_string(rv) +
         R"(","labels":{"app":")" + app + R"("}},"data":{"k":")" + value + R"("}})";
}

class ClusterStateTest : public ::testing::Test {
 protected:
  ClusterStateTest() : state_(BuiltinResourceTypes(), 4), cm_(state_.Find("", "configmaps")) {}

  uint64_t Put(const std::string& name, const std::string& value, const std::string& app = "a") {
    auto r =
        state_.Apply(cm_, "ns/" + name, [&](const StoredPtr&, uint64_t rv) -> StatusOr<Change> {
          return Change{Change::kWrite, ConfigMap(name, value, rv, app)};
        });
    EXPECT_OK(r) << r.status();
    return r.ok() ? (*r)->rv : 0;
  }
  uint64_t Remove(const std::string& name) {
    auto r =
        state_.Apply(cm_, "ns/" + name, [&](const StoredPtr&, uint64_t rv) -> StatusOr<Change> {
          return Change{Change::kDelete, ConfigMap(name, "gone", rv)};
        });
    EXPECT_OK(r) << r.status();
    return r.ok() ? (*r)->rv : 0;
  }
  std::string Values(uint64_t at) {
    auto list = state_.List(cm_, {.at_rv = at});
    EXPECT_OK(list) << list.status();
    std::string out;
    if (!list.ok()) return out;
    for (const StoredPtr& o : list->items)
      out += o->object->name() + "=" + std::to_string(o->rv) + " ";
    return out;
  }

  ClusterState state_;
  int cm_;
};

TEST_F(ClusterStateTest, ListsAtAnyResourceVersionInsideTheHistory) {
  uint64_t a1 = Put("a", "1");
  uint64_t b1 = Put("b", "1");
  uint64_t a2 = Put("a", "2");
  uint64_t gone = Remove("b");
  EXPECT_EQ(Values(a1), "a=" + std::to_string(a1) + " ");
  EXPECT_EQ(Values(b1), "a=" + std::to_string(a1) + " b=" + std::to_string(b1) + " ");
  EXPECT_EQ(Values(a2), "a=" + std::to_string(a2) + " b=" + std::to_string(b1) + " ");
  EXPECT_EQ(Values(gone), "a=" + std::to_string(a2) + " ");
  EXPECT_EQ(Values(0), Values(gone));
  EXPECT_EQ(state_.size(cm_), 1u);
}

TEST_F(ClusterStateTest, HistoryBeyondItsCapacityExpiresOlderVersions) {
  uint64_t first = Put("a", "1");
  for (int i = 2; i <= 6; ++i) Put("a", std::to_string(i));
  // Capacity 4: the events after the floor are the last four.
  EXPECT_GT(state_.floor(cm_), first);
  auto old = state_.List(cm_, {.at_rv = first});
  EXPECT_TRUE(old.status().IsExpired()) << old.status();
  auto expired = state_.Wait(cm_, first, 10, std::chrono::steady_clock::now());
  EXPECT_TRUE(expired.expired);
  // From the floor on, every event is there.
  auto batch = state_.Wait(cm_, state_.floor(cm_), 10, std::chrono::steady_clock::now());
  ASSERT_FALSE(batch.expired);
  EXPECT_EQ(batch.events.size(), 4u);
  EXPECT_EQ(batch.position, state_.current_rv());
}

// Two windows, as kube-apiserver has: a resourceVersion that has left the
// watch window (the watch cache) but not the list window (etcd before a
// compaction) is listed exactly while a watch from it is expired. This is
// what made a relist at the expired resourceVersion loop against a real
// server (invariant 3).
TEST(ClusterStateWindowsTest, AnExactListOutlivesTheWatchWindow) {
  ClusterState state(BuiltinResourceTypes(), 2, 6);
  const int cm = state.Find("", "configmaps");
  auto put = [&](const std::string& name, const std::string& value) {
    auto r = state.Apply(cm, "ns/" + name, [&](const StoredPtr&, uint64_t rv) -> StatusOr<Change> {
      return Change{Change::kWrite, ConfigMap(name, value, rv)};
    });
    EXPECT_OK(r) << r.status();
    return r.ok() ? (*r)->rv : 0;
  };
  const uint64_t first = put("a", "1");
  for (int i = 2; i <= 4; ++i) put("a", std::to_string(i));
  EXPECT_GT(state.floor(cm), first);
  EXPECT_LE(state.list_floor(cm), first);
  EXPECT_TRUE(state.Wait(cm, first, 10, std::chrono::steady_clock::now()).expired);
  auto exact = state.List(cm, {.at_rv = first});
  ASSERT_OK(exact) << exact.status();
  ASSERT_EQ(exact->items.size(), 1u);
  EXPECT_EQ(exact->items[0]->rv, first);
  for (int i = 5; i <= 8; ++i) put("a", std::to_string(i));
  EXPECT_GT(state.list_floor(cm), first);
  EXPECT_TRUE(state.List(cm, {.at_rv = first}).status().IsExpired());
  EXPECT_LE(state.list_floor(cm), state.floor(cm));
}

TEST_F(ClusterStateTest, WaitHandsOutEventsInOrderWithThePreviousState) {
  uint64_t start = state_.current_rv();
  Put("a", "1");
  Put("a", "2", "b");
  Remove("a");
  auto batch = state_.Wait(cm_, start, 2, std::chrono::steady_clock::now() + 1s);
  ASSERT_EQ(batch.events.size(), 2u);
  EXPECT_EQ(batch.events[0].type, EventType::kAdded);
  EXPECT_EQ(batch.events[1].type, EventType::kModified);
  ASSERT_NE(batch.events[1].prev, nullptr);
  EXPECT_EQ(batch.events[1].prev->object->labels().at("app"), "a");
  EXPECT_EQ(batch.position, batch.events[1].rv)
      << "more events wait: the position is the last one handed out";
  auto rest = state_.Wait(cm_, batch.position, 10, std::chrono::steady_clock::now() + 1s);
  ASSERT_EQ(rest.events.size(), 1u);
  EXPECT_EQ(rest.events[0].type, EventType::kDeleted);
  EXPECT_EQ(rest.events[0].object->object->resource_version(), std::to_string(rest.events[0].rv))
      << "a deletion carries the deletion's resourceVersion";
}

TEST_F(ClusterStateTest, AQuietTypeWaitsUntilTheDeadlineAndAdvancesItsPosition) {
  Put("a", "1");
  int pods = state_.Find("", "pods");
  uint64_t rv = state_.current_rv();
  auto t0 = std::chrono::steady_clock::now();
  auto batch = state_.Wait(pods, 1, 10, t0 + 50ms);
  EXPECT_TRUE(batch.events.empty());
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 50ms);
  EXPECT_EQ(batch.position, rv) << "no pod changed up to the current resourceVersion";
}

TEST_F(ClusterStateTest, CompactExpiresEverythingBeforeNow) {
  uint64_t a = Put("a", "1");
  Put("b", "1");
  state_.Compact();
  EXPECT_TRUE(state_.List(cm_, {.at_rv = a}).status().IsExpired());
  EXPECT_EQ(Values(state_.current_rv()), Values(0));
  EXPECT_TRUE(state_.Wait(cm_, a, 10, std::chrono::steady_clock::now()).expired);
}

TEST_F(ClusterStateTest, PaginationSeesOneResourceVersionWhileWritesGoOn) {
  for (const char* n : {"a", "b", "c", "d"}) Put(n, "1");
  auto page = state_.List(cm_, {.limit = 2, .count_remaining = true});
  ASSERT_OK(page);
  EXPECT_EQ(page->next_key, "ns/c");
  EXPECT_EQ(page->remaining, 2);
  Remove("c");
  Put("e", "1");
  auto next = state_.List(cm_, {.at_rv = page->rv, .start_key = page->next_key});
  ASSERT_OK(next) << next.status();
  std::string names;
  for (const auto& o : next->items) names += o->object->name();
  EXPECT_EQ(names, "cd") << "the list at the first page's resourceVersion";
}

// The first page's remainingItemCount, counted from the live objects, is
// what counting the rest one by one gives: deleted and recreated objects
// included, and at a past resourceVersion.
TEST_F(ClusterStateTest, RemainingCountsTheLiveObjectsAfterThePage) {
  for (const char* n : {"a", "b", "c", "d", "e"}) Put(n, "1");
  const uint64_t before = state_.current_rv();
  Remove("b");
  Remove("c");
  Put("c", "2");
  auto first = state_.List(cm_, {.limit = 1, .count_remaining = true});
  ASSERT_OK(first);
  EXPECT_EQ(first->next_key, "ns/c");
  EXPECT_EQ(first->remaining, 3) << "c, d and e";
  auto two = state_.List(cm_, {.limit = 2, .count_remaining = true});
  ASSERT_OK(two);
  EXPECT_EQ(two->remaining, 2) << "d and e";
  auto past = state_.List(cm_, {.at_rv = before, .limit = 1, .count_remaining = true});
  ASSERT_OK(past) << past.status();
  EXPECT_EQ(past->remaining, 4) << "b, c, d and e as they were";
  auto later = state_.List(cm_, {.start_key = "ns/d", .limit = 1, .count_remaining = true});
  ASSERT_OK(later);
  EXPECT_EQ(later->remaining, 1) << "e";
}

TEST_F(ClusterStateTest, ShutdownWakesWaiters) {
  std::thread t([&] {
    std::this_thread::sleep_for(20ms);
    state_.Shutdown();
  });
  auto batch = state_.Wait(cm_, state_.current_rv(), 10, std::chrono::steady_clock::now() + 10s);
  t.join();
  EXPECT_TRUE(batch.stopped);
}

}  // namespace
}  // namespace kcache::serve
