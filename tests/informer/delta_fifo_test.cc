// SPDX-License-Identifier: Apache-2.0

// DeltaFIFO, after client-go's delta_fifo_test.go (v0.32).
#include "kcache/delta_fifo.h"

#include <gtest/gtest.h>

#include <thread>

#include "kcache/indexer.h"
#include "testing/objects.h"
#include "testing/status_matchers.h"

namespace kcache {
namespace {

using testing::TO;

// "Added:a=1 Deleted:b(tombstone)" for the deltas of one key.
std::string Describe(const Deltas& d) {
  std::string out;
  for (const Delta& x : d) {
    if (!out.empty()) out += " ";
    out += std::string(DeltaTypeName(x.type)) + ":";
    if (auto* t = std::get_if<DeletedFinalStateUnknown>(&x.object)) {
      out += t->key + "(tombstone" + (t->obj ? "=" + t->obj->annotations().at("val") : "") + ")";
    } else {
      const ObjectPtr& o = std::get<ObjectPtr>(x.object);
      out += o->name() + "=" + o->annotations().at("val");
    }
  }
  return out;
}

std::string PopDescribe(DeltaFIFO& f) {
  auto d = f.Pop();
  EXPECT_OK(d) << d.status();
  return d.ok() ? Describe(*d) : "";
}

DeltaFIFOOptions KeyedByName(std::shared_ptr<const Store> known = nullptr) {
  DeltaFIFOOptions o;
  o.key_func = testing::KeyTO;
  o.known_objects = std::move(known);
  return o;
}

std::shared_ptr<Store> Known(const std::vector<ObjectPtr>& objects) {
  MemoryIndexerOptions o;
  o.key_func = testing::KeyTO;
  std::shared_ptr<Indexer> s = NewMemoryIndexer(o);
  for (const auto& x : objects) EXPECT_OK(s->Add(x));
  return s;
}

TEST(DeltaFIFOTest, KeysQueueOnceWithAllTheirDeltasInOrder) {
  DeltaFIFO f(KeyedByName());
  ASSERT_OK(f.Add(TO("a", "1")));
  ASSERT_OK(f.Add(TO("b", "1")));
  ASSERT_OK(f.Update(TO("a", "2")));
  EXPECT_EQ(f.ListKeys(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(PopDescribe(f), "Added:a=1 Updated:a=2");
  EXPECT_EQ(PopDescribe(f), "Added:b=1");
  EXPECT_EQ(f.Len(), 0u);
}

TEST(DeltaFIFOTest, ConsecutiveDeletesCollapseKeepingTheObject) {
  DeltaFIFO f(KeyedByName());
  ASSERT_OK(f.Add(TO("a", "1")));
  ASSERT_OK(f.Delete(TO("a", "1")));
  ASSERT_OK(f.Delete(DeletedFinalStateUnknown{"a", nullptr}));
  EXPECT_EQ(PopDescribe(f), "Added:a=1 Deleted:a=1");
}

// client-go's isDeletionDup: of two deletions the older stays, unless it
// is a tombstone and the newer a real deletion.
TEST(DeltaFIFOTest, ConsecutiveDeletesKeepTheOlderUnlessItIsATombstone) {
  DeltaFIFO f(KeyedByName());
  ASSERT_OK(f.Add(TO("a", "1")));
  ASSERT_OK(f.Delete(TO("a", "2")));
  ASSERT_OK(f.Delete(TO("a", "3")));
  EXPECT_EQ(PopDescribe(f), "Added:a=1 Deleted:a=2");
  ASSERT_OK(f.Add(TO("b", "1")));
  ASSERT_OK(f.Delete(DeletedFinalStateUnknown{"b", TO("b", "1")}));
  ASSERT_OK(f.Delete(TO("b", "4")));
  EXPECT_EQ(PopDescribe(f), "Added:b=1 Deleted:b=4");
}

TEST(DeltaFIFOTest, DeleteOfAnUnknownKeyIsIgnored) {
  DeltaFIFO f(KeyedByName(Known({TO("k", "1")})));
  ASSERT_OK(f.Delete(TO("nope", "1")));
  EXPECT_EQ(f.Len(), 0u);
  ASSERT_OK(f.Delete(TO("k", "1")));
  EXPECT_EQ(PopDescribe(f), "Deleted:k=1");
}

// Deletion detection against known objects: vanished keys get tombstones
// carrying the known object.
TEST(DeltaFIFOTest, ReplaceTombstonesKnownObjectsMissingFromTheList) {
  DeltaFIFO f(KeyedByName(Known({TO("foo", "5"), TO("bar", "6"), TO("baz", "7")})));
  ASSERT_OK(f.Delete(TO("baz", "10")));
  ASSERT_OK(f.Replace({TO("foo", "5")}, "1"));
  EXPECT_EQ(PopDescribe(f), "Deleted:baz=10");
  EXPECT_EQ(PopDescribe(f), "Replaced:foo=5");
  EXPECT_EQ(PopDescribe(f), "Deleted:bar(tombstone=6)");
}

// With known objects, keys that are only queued are tombstoned too, and a
// tombstone for a queued key carries the newest queued object, not the
// known one (client-go checks the queue first, then the known objects).
TEST(DeltaFIFOTest, ReplaceWithKnownObjectsAlsoTombstonesQueuedKeys) {
  DeltaFIFO f(KeyedByName(Known({TO("foo", "5"), TO("bar", "6")})));
  ASSERT_OK(f.Add(TO("q", "1")));
  ASSERT_OK(f.Update(TO("bar", "9")));
  ASSERT_OK(f.Replace({TO("foo", "5")}, "1"));
  EXPECT_EQ(PopDescribe(f), "Added:q=1 Deleted:q(tombstone=1)");
  EXPECT_EQ(PopDescribe(f), "Updated:bar=9 Deleted:bar(tombstone=9)");
  EXPECT_EQ(PopDescribe(f), "Replaced:foo=5");
  EXPECT_EQ(f.Len(), 0u);
}

// Without known objects, the queue's own contents are the reference.
TEST(DeltaFIFOTest, ReplaceDetectsDeletionsInItsOwnQueue) {
  DeltaFIFO f(KeyedByName());
  ASSERT_OK(f.Add(TO("foo", "10")));
  ASSERT_OK(f.Add(TO("bar", "1")));
  ASSERT_OK(f.Replace({TO("foo", "11")}, "1"));
  EXPECT_EQ(PopDescribe(f), "Added:foo=10 Replaced:foo=11");
  EXPECT_EQ(PopDescribe(f), "Added:bar=1 Deleted:bar(tombstone=1)");
}

TEST(DeltaFIFOTest, ReplaceAsSyncWhenReplacedIsOff) {
  DeltaFIFOOptions o = KeyedByName();
  o.emit_delta_type_replaced = false;
  DeltaFIFO f(o);
  ASSERT_OK(f.Replace({TO("a", "1")}, "1"));
  EXPECT_EQ(PopDescribe(f), "Sync:a=1");
}

TEST(DeltaFIFOTest, ResyncSkipsQueuedKeys) {
  DeltaFIFO f(KeyedByName(Known({TO("a", "1"), TO("b", "1")})));
  ASSERT_OK(f.Update(TO("a", "2")));
  ASSERT_OK(f.Resync());
  EXPECT_EQ(PopDescribe(f), "Updated:a=2");
  EXPECT_EQ(PopDescribe(f), "Sync:b=1");
}

TEST(DeltaFIFOTest, HasSyncedAfterTheInitialPopulationIsPopped) {
  DeltaFIFO f(KeyedByName());
  EXPECT_FALSE(f.HasSynced());
  ASSERT_OK(f.Replace({TO("a", "1"), TO("b", "1")}, "1"));
  EXPECT_FALSE(f.HasSynced());
  (void)f.Pop();
  EXPECT_FALSE(f.HasSynced());
  (void)f.Pop();
  EXPECT_TRUE(f.HasSynced());
}

// Transform runs once per object entering the queue: not on tombstones,
// not on Sync objects (they come from the store, transformed already).
TEST(DeltaFIFOTest, TransformAppliedOnce) {
  int calls = 0;
  DeltaFIFOOptions o = KeyedByName(Known({TO("k", "1")}));
  o.transform = [&](ObjectPtr x) -> StatusOr<ObjectPtr> {
    ++calls;
    return x;
  };
  DeltaFIFO f(o);
  ASSERT_OK(f.Add(TO("a", "1")));
  ASSERT_OK(f.Replace({TO("a", "2")}, "1"));  // k vanishes: a tombstone
  ASSERT_OK(f.Resync());                      // a queued; k gone from the list but known
  EXPECT_EQ(calls, 2);
}
// Objects listed by Replace are new to the queue: transformed even when
// queued as Sync (Replaced turned off).
TEST(DeltaFIFOTest, ReplaceTransformsObjectsQueuedAsSync) {
  int calls = 0;
  DeltaFIFOOptions o = KeyedByName();
  o.emit_delta_type_replaced = false;
  o.transform = [&](ObjectPtr x) -> StatusOr<ObjectPtr> {
    ++calls;
    return x;
  };
  DeltaFIFO f(o);
  ASSERT_OK(f.Replace({TO("a", "1"), TO("b", "1")}, "1"));
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(PopDescribe(f), "Sync:a=1");
}

// AddIfNotPresent puts back what Pop returned unless the key was queued
// again meanwhile.
TEST(DeltaFIFOTest, AddIfNotPresentQueuesOnlyAbsentKeys) {
  DeltaFIFO f(KeyedByName());
  ASSERT_OK(f.Add(TO("a", "1")));
  StatusOr<Deltas> popped = f.Pop();
  ASSERT_OK(popped);
  ASSERT_OK(f.AddIfNotPresent(*popped));
  EXPECT_EQ(f.ListKeys(), (std::vector<std::string>{"a"}));
  ASSERT_OK(f.AddIfNotPresent(Deltas{{DeltaType::kAdded, TO("a", "0")}}));
  EXPECT_EQ(PopDescribe(f), "Added:a=1");
  ASSERT_OK(f.Update(TO("b", "2")));
  ASSERT_OK(f.AddIfNotPresent(Deltas{{DeltaType::kAdded, TO("b", "1")}}));
  EXPECT_EQ(PopDescribe(f), "Updated:b=2");
  EXPECT_THAT(f.AddIfNotPresent(Deltas{}), testing::StatusIs(StatusCode::kInvalidArgument));
}

// After Close, what is queued still comes out; then client-go's error.
TEST(DeltaFIFOTest, ClosedQueueDrainsThenSaysSoInClientGosWords) {
  DeltaFIFO f(KeyedByName());
  ASSERT_OK(f.Add(TO("a", "1")));
  f.Close();
  EXPECT_EQ(PopDescribe(f), "Added:a=1");
  EXPECT_THAT(f.Pop().status(), testing::StatusIs(StatusCode::kCancelled,
                                                  "DeltaFIFO: manipulating with closed queue"));
}

TEST(DeltaFIFOTest, KeyOf) {
  DeltaFIFO f(KeyedByName());
  EXPECT_EQ(*f.KeyOf(DeletedObject(TO("A", "x"))), "A");
  EXPECT_EQ(*f.KeyOf(DeletedObject(DeletedFinalStateUnknown{"B", nullptr})), "B");
  EXPECT_EQ(*f.KeyOf(Deltas{{DeltaType::kAdded, TO("C", "x")}}), "C");
  EXPECT_EQ(*f.KeyOf(Deltas{{DeltaType::kDeleted, DeletedFinalStateUnknown{"D", nullptr}}}), "D");
  auto empty = f.KeyOf(Deltas{});
  EXPECT_EQ(empty.status().message(), "0 length Deltas object; can't get key");
}

TEST(DeltaFIFOTest, PopBlocksUntilAnAddOrClose) {
  DeltaFIFO f(KeyedByName());
  std::thread t([&] { EXPECT_EQ(PopDescribe(f), "Added:a=1"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_OK(f.Add(TO("a", "1")));
  t.join();
  std::thread u([&] { EXPECT_EQ(f.Pop().status().code(), StatusCode::kCancelled); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  f.Close();
  u.join();
}

}  // namespace
}  // namespace kcache
