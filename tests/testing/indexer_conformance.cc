// SPDX-License-Identifier: Apache-2.0

#include "testing/indexer_conformance.h"

#include <gmock/gmock.h>

#include <algorithm>
#include <set>

#include "testing/objects.h"
#include "testing/status_matchers.h"

namespace kcache::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

std::set<std::string> Vals(const std::vector<ObjectPtr>& objs) {
  std::set<std::string> out;
  for (const auto& o : objs) out.insert(o->annotations().at("val"));
  return out;
}

// A bare object whose index value is its whole "val" annotation, split on
// commas (client-go's tests store plain strings).
ObjectPtr Str(const std::string& key, const std::string& val) { return TO(key, val); }

StatusOr<std::vector<std::string>> SplitVal(const Object& obj) {
  std::vector<std::string> out;
  const std::string& v = obj.annotations().at("val");
  size_t start = 0;
  while (true) {
    size_t comma = v.find(',', start);
    out.push_back(v.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}
TEST_P(IndexerConformanceTest, BasicStoreSemantics) {
  auto store = Make({.key_func = KeyTO});
  ASSERT_OK(store->Add(TO("foo", "bar")));
  auto got = store->Get(*TO("foo", ""));
  ASSERT_TRUE(got.ok() && *got);
  EXPECT_EQ((*got)->annotations().at("val"), "bar");

  ASSERT_OK(store->Update(TO("foo", "baz")));
  EXPECT_EQ((*store->Get(*TO("foo", "")))->annotations().at("val"), "baz");

  ASSERT_OK(store->Delete(TO("foo", "")));
  EXPECT_EQ(*store->Get(*TO("foo", "")), nullptr);

  ASSERT_OK(store->Add(TO("a", "b")));
  ASSERT_OK(store->Add(TO("c", "d")));
  ASSERT_OK(store->Add(TO("e", "e")));
  auto list = store->List();
  ASSERT_OK(list);
  EXPECT_EQ(list->size(), 3u);
  EXPECT_EQ(Vals(*list), (std::set<std::string>{"b", "d", "e"}));

  ASSERT_OK(store->Replace({TO("foo", "foo"), TO("bar", "bar")}, "0"));
  list = store->List();
  EXPECT_EQ(list->size(), 2u);
  EXPECT_EQ(Vals(*list), (std::set<std::string>{"foo", "bar"}));
}
TEST_P(IndexerConformanceTest, Misses) {
  auto store = Make();
  auto got = store->GetByKey("nope");
  ASSERT_OK(got);
  EXPECT_EQ(*got, nullptr);
  EXPECT_OK(store->Delete(Pod("never", "ns")));
  EXPECT_OK(store->DeleteKey("ns/never"));
  EXPECT_EQ(*store->Size(), 0u);
}

// the resume resourceVersion is the last one written, never compared.
TEST_P(IndexerConformanceTest, LastSyncResourceVersion) {
  auto store = Make();
  EXPECT_EQ(store->LastSyncResourceVersion(), "");
  ASSERT_OK(store->Add(Pod("key1", "", "10")));
  EXPECT_EQ(store->LastSyncResourceVersion(), "10");
  ASSERT_OK(store->Add(Pod("key3", "", "10")));
  ASSERT_OK(store->Add(Pod("key4", "", "20")));
  EXPECT_EQ(store->LastSyncResourceVersion(), "20");
  ASSERT_OK(store->Delete(Pod("key4", "", "30")));
  EXPECT_EQ(store->LastSyncResourceVersion(), "30");
  ASSERT_OK(store->Add(Pod("key5")));  // no resourceVersion
  EXPECT_EQ(store->LastSyncResourceVersion(), "30");
  ASSERT_OK(store->Add(Pod("key6", "", "40")));
  ASSERT_OK(store->DeleteKey("key6"));
  EXPECT_EQ(store->LastSyncResourceVersion(), "40");

  Transaction txn;
  txn.Update(Pod("key1", "", "40"));
  txn.Update(Pod("key3", "", "30"));
  txn.Update(Pod("key5", "", "50"));
  ASSERT_OK(store->Commit(txn, nullptr));
  EXPECT_EQ(store->LastSyncResourceVersion(), "50");

  Transaction later;
  later.Update(Pod("key1", "", "70"));
  later.Update(Pod("key3", "", "60"));
  ASSERT_OK(store->Commit(later, nullptr));
  EXPECT_EQ(store->LastSyncResourceVersion(), "60");  // last, not greatest

  ASSERT_OK(store->Replace({Pod("key3", "", "40"), Pod("key2", "", "30")}, "50"));
  EXPECT_EQ(store->LastSyncResourceVersion(), "50");
  ASSERT_OK(store->Add(Pod("x", "", "10")));
  ASSERT_OK(store->Delete(Pod("x", "", "20")));
  EXPECT_EQ(store->LastSyncResourceVersion(), "20");
}

// The resume point given to Commit wins over the objects' versions, and
// commits together with them (invariant 1's shape: one call, one write).
TEST_P(IndexerConformanceTest, CommitWithExplicitResumePoint) {
  auto store = Make();
  Transaction txn;
  txn.Add(Pod("a", "ns", "5"));
  txn.Add(Pod("b", "ns", "6"));
  txn.resource_version = "bookmark-9";
  TransactionResult result;
  ASSERT_OK(store->Commit(txn, &result));
  EXPECT_THAT(result.successful_indices, ElementsAre(0, 1));
  EXPECT_EQ(store->LastSyncResourceVersion(), "bookmark-9");
  EXPECT_EQ(*store->Size(), 2u);

  Transaction del;
  del.DeleteKey("ns/a");
  del.Delete(Pod("b", "ns"));
  del.resource_version = "10";
  ASSERT_OK(store->Commit(del, nullptr));
  EXPECT_EQ(*store->Size(), 0u);
  EXPECT_THAT(*store->ListIndexFuncValues(kNamespaceIndex), IsEmpty());
  EXPECT_EQ(store->LastSyncResourceVersion(), "10");
}
TEST_P(IndexerConformanceTest, TransactionPartialFailure) {
  auto store = Make({.key_func = [](const Object& o) -> StatusOr<std::string> {
    if (o.name() == "3" || o.name() == "4") return Status::InvalidArgument("test error");
    return o.name();
  }});
  auto run = [&](std::vector<std::string> names, TransactionResult* result) {
    Transaction txn;
    for (const auto& n : names) txn.Add(Pod(n));
    return store->Commit(txn, result);
  };
  TransactionResult r1;
  EXPECT_OK(run({"1", "2"}, &r1));
  EXPECT_THAT(r1.successful_indices, ElementsAre(0, 1));
  TransactionResult r2;
  Status s2 = run({"3", "4"}, &r2);
  EXPECT_FALSE(s2.ok());
  EXPECT_NE(s2.message().find("op 0"), std::string_view::npos) << s2;
  EXPECT_NE(s2.message().find("test error"), std::string_view::npos) << s2;
  EXPECT_THAT(r2.successful_indices, IsEmpty());
  TransactionResult r3;
  EXPECT_FALSE(run({"1", "3", "2", "4"}, &r3).ok());
  EXPECT_THAT(r3.successful_indices, ElementsAre(0, 2));
}
TEST_P(IndexerConformanceTest, IndexByObject) {
  auto store = Make({.key_func = KeyTO, .indexers = {{"by_val", ByVal}}});
  for (auto [id, val] : {std::pair{"a", "b"}, {"c", "b"}, {"e", "f"}, {"g", "h"}}) {
    ASSERT_OK(store->Add(TO(id, val)));
  }
  EXPECT_THAT(Names(*store->Index("by_val", *TO("", "b"))), UnorderedElementsAre("a", "c"));
  EXPECT_THAT(Names(*store->Index("by_val", *TO("", "f"))), ElementsAre("e"));
  EXPECT_THAT(Names(*store->Index("by_val", *TO("", "h"))), ElementsAre("g"));
}

StatusOr<std::vector<std::string>> LabelFoo(const Object& o) {
  auto it = o.labels().find("foo");
  if (it == o.labels().end()) return std::vector<std::string>{};
  return std::vector<std::string>{it->second};
}

StatusOr<std::vector<std::string>> ByUser(const Object& o) {
  auto it = o.annotations().find("users");
  if (it == o.annotations().end()) return std::vector<std::string>{};
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t comma = it->second.find(',', start);
    out.push_back(it->second.substr(start, comma == std::string::npos ? comma : comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}
TEST_P(IndexerConformanceTest, ListIndexFuncValues) {
  auto store = Make({.indexers = {{"testmodes", LabelFoo}}});
  ASSERT_OK(store->Add(Pod("one", "", "", {{"foo", "bar"}})));
  ASSERT_OK(store->Add(Pod("two", "", "", {{"foo", "bar"}})));
  ASSERT_OK(store->Add(Pod("tre", "", "", {{"foo", "biz"}})));
  EXPECT_THAT(*store->ListIndexFuncValues("testmodes"), UnorderedElementsAre("bar", "biz"));
}
TEST_P(IndexerConformanceTest, MultiValuedIndex) {
  auto store = Make({.indexers = {{"byUser", ByUser}}});
  ASSERT_OK(store->Add(Pod("one", "", "", {}, {{"users", "ernie,bert"}})));
  ASSERT_OK(store->Add(Pod("two", "", "", {}, {{"users", "bert,oscar"}})));
  ASSERT_OK(store->Add(Pod("tre", "", "", {}, {{"users", "ernie,elmo"}})));
  auto by = [&](const char* v) { return Names(*store->ByIndex("byUser", v)); };
  EXPECT_THAT(by("ernie"), UnorderedElementsAre("one", "tre"));
  EXPECT_THAT(by("bert"), UnorderedElementsAre("one", "two"));
  EXPECT_THAT(by("elmo"), ElementsAre("tre"));
  EXPECT_THAT(by("oscar"), ElementsAre("two"));
  EXPECT_THAT(by("elmo1"), IsEmpty());

  ASSERT_OK(store->Delete(Pod("tre")));
  EXPECT_THAT(by("ernie"), ElementsAre("one"));
  EXPECT_THAT(by("elmo"), IsEmpty());

  ASSERT_OK(store->Update(Pod("two", "", "", {}, {{"users", "oscar"}})));
  EXPECT_THAT(by("bert"), ElementsAre("one"));
}

StatusOr<std::vector<std::string>> WholeVal(const Object& o) {
  return std::vector<std::string>{o.annotations().at("val")};
}
TEST_P(IndexerConformanceTest, EmptyBucketsAreRemoved) {
  auto store = Make({.key_func = KeyTO, .indexers = {{"testIndexer", WholeVal}}});
  ASSERT_OK(store->Add(Str("testKey", "testKey")));
  EXPECT_EQ(store->IndexKeys("testIndexer", "testKey")->size(), 1u);
  ASSERT_OK(store->Delete(Str("testKey", "testKey")));
  EXPECT_THAT(*store->IndexKeys("testIndexer", "testKey"), IsEmpty());
  EXPECT_THAT(*store->ListIndexFuncValues("testIndexer"), IsEmpty());
}
TEST_P(IndexerConformanceTest, NonEmptyBucketSurvivesPartialDelete) {
  auto constant = [](const Object&) -> StatusOr<std::vector<std::string>> {
    return std::vector<std::string>{"testIndex"};
  };
  auto store = Make({.key_func = KeyTO, .indexers = {{"testIndexer", constant}}});
  ASSERT_OK(store->Add(Str("retain", "x")));
  ASSERT_OK(store->Add(Str("delete", "x")));
  EXPECT_EQ(store->IndexKeys("testIndexer", "testIndex")->size(), 2u);
  ASSERT_OK(store->Delete(Str("delete", "x")));
  EXPECT_THAT(*store->IndexKeys("testIndexer", "testIndex"), ElementsAre("retain"));
}

// exact buckets as indexed values change; IndexKeys sorted.
TEST_P(IndexerConformanceTest, IndexMaintenanceWithMultipleValues) {
  auto store = Make({.key_func = KeyTO, .indexers = {{"testIndexer", SplitVal}}});
  using V = std::vector<std::string>;
  auto keys = [&](const char* v) { return *store->IndexKeys("testIndexer", v); };
  auto expect = [&](V foo, V bar, V baz, const char* step) {
    EXPECT_EQ(keys("foo"), foo) << step;
    EXPECT_EQ(keys("bar"), bar) << step;
    EXPECT_EQ(keys("baz"), baz) << step;
  };
  ASSERT_OK(store->Add(Str("key1", "foo")));
  ASSERT_OK(store->Add(Str("key2", "bar")));
  expect({"key1"}, {"key2"}, {}, "add");
  ASSERT_OK(store->Update(Str("key2", "foo,bar")));
  expect({"key1", "key2"}, {"key2"}, {}, "update key2");
  ASSERT_OK(store->Update(Str("key1", "foo,bar")));
  expect({"key1", "key2"}, {"key1", "key2"}, {}, "update key1");
  ASSERT_OK(store->Add(Str("key3", "foo,bar,baz")));
  expect({"key1", "key2", "key3"}, {"key1", "key2", "key3"}, {"key3"}, "add key3");
  EXPECT_EQ(keys("foo"), (V{"key1", "key2", "key3"}));  // sorted
  ASSERT_OK(store->Update(Str("key1", "foo")));
  expect({"key1", "key2", "key3"}, {"key2", "key3"}, {"key3"}, "update key1 again");
  ASSERT_OK(store->Update(Str("key2", "bar")));
  expect({"key1", "key3"}, {"key2", "key3"}, {"key3"}, "update key2 again");
  ASSERT_OK(store->Delete(Str("key1", "foo")));
  expect({"key3"}, {"key2", "key3"}, {"key3"}, "delete key1");
  ASSERT_OK(store->Delete(Str("key3", "foo,bar,baz")));
  expect({}, {"key2"}, {}, "delete key3");
}
TEST_P(IndexerConformanceTest, UnknownIndex) {
  auto store = Make();
  const char* want = "Index with name nope does not exist";
  EXPECT_EQ(store->Index("nope", *Pod("x")).status().message(), want);
  EXPECT_EQ(store->ByIndex("nope", "v").status().message(), want);
  EXPECT_EQ(store->IndexKeys("nope", "v").status().message(), want);
  EXPECT_TRUE(store->ByIndex("nope", "v").status().IsNotFound());
  auto values = store->ListIndexFuncValues("nope");
  ASSERT_OK(values);
  EXPECT_THAT(*values, IsEmpty());
  auto it = store->NewIndexIterator("nope", "v");
  EXPECT_FALSE(it->Valid());
  EXPECT_EQ(it->status().message(), want);
}

StatusOr<std::vector<std::string>> LabelKeys(const Object& o) {
  std::vector<std::string> out;
  for (const auto& [k, v] : o.labels()) out.push_back(k);
  return out;
}

// AddIndexers on a store with data builds the index now.
TEST_P(IndexerConformanceTest, AddIndexersAfterData) {
  auto store = Make();
  ASSERT_OK(store->Add(Pod("pod1", "", "", {{"a", "a-val"}, {"b", "b-val1"}})));
  ASSERT_OK(store->Add(Pod("pod2", "", "", {{"b", "b-val2"}})));
  ASSERT_OK(store->AddIndexers({{"labels", LabelKeys}}));
  EXPECT_THAT(Names(*store->ByIndex("labels", "a")), ElementsAre("pod1"));
  ASSERT_OK(store->Add(Pod("pod3", "", "", {{"a", "a-val2"}})));
  EXPECT_THAT(Names(*store->ByIndex("labels", "a")), ElementsAre("pod1", "pod3"));
  ASSERT_OK(store->AddIndexers({{"labels-again", LabelKeys}}));
  EXPECT_THAT(Names(*store->ByIndex("labels-again", "a")), ElementsAre("pod1", "pod3"));
  EXPECT_THAT(*store->ListIndexFuncValues("labels"), ElementsAre("a", "b"));
  EXPECT_THAT(*store->ListIndexFuncValues("labels-again"), ElementsAre("a", "b"));
  EXPECT_EQ(store->GetIndexers().count("labels-again"), 1u);
}
TEST_P(IndexerConformanceTest, AddIndexersConflict) {
  auto store = Make({.key_func = KeyTO, .indexers = {{"by_val", ByVal}}});
  ASSERT_OK(store->Add(TO("a", "x")));
  Status st = store->AddIndexers({{"by_val", WholeVal}, {"other", WholeVal}});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message().substr(0, 17), "indexer conflict:");
  EXPECT_NE(st.message().find("by_val"), std::string_view::npos);
  EXPECT_EQ(store->GetIndexers().count("other"), 0u);  // nothing added
  EXPECT_THAT(Names(*store->ByIndex("by_val", "x")), ElementsAre("a"));
}
TEST_P(IndexerConformanceTest, ReplaceRebuildsIndices) {
  auto store = Make({.key_func = KeyTO, .indexers = {{"by_val", ByVal}}});
  ASSERT_OK(store->Add(TO("a", "x")));
  ASSERT_OK(store->Replace({TO("b", "y")}, ""));
  EXPECT_THAT(*store->ByIndex("by_val", "x"), IsEmpty());
  EXPECT_THAT(Names(*store->ByIndex("by_val", "y")), ElementsAre("b"));
  EXPECT_THAT(*store->ListIndexFuncValues("by_val"), ElementsAre("y"));
}

// the built-in namespace index.
TEST_P(IndexerConformanceTest, NamespaceIndex) {
  auto store = Make();
  ASSERT_OK(store->Add(Pod("a", "ns1")));
  ASSERT_OK(store->Add(Pod("b", "ns1")));
  ASSERT_OK(store->Add(Pod("c", "ns2")));
  EXPECT_THAT(*store->IndexKeys(kNamespaceIndex, "ns1"), ElementsAre("ns1/a", "ns1/b"));
  EXPECT_THAT(*store->ListIndexFuncValues(kNamespaceIndex), ElementsAre("ns1", "ns2"));
  auto without = Make({.namespace_index = false});
  EXPECT_EQ(without->GetIndexers().count(kNamespaceIndex), 0u);
}

// Replace reports exactly what changed; unchanged objects (the same
// resourceVersion and bytes) are neither rewritten nor reported (invariant
// 3's diff). The same resourceVersion with other bytes is another
// cluster's object (resourceVersions are unique only within a history):
// it is replaced.
TEST_P(IndexerConformanceTest, ReplaceReportsChanges) {
  auto store = Make();
  ObjectPtr a1 = Pod("a", "ns", "1"), b1 = Pod("b", "ns", "2"), c1 = Pod("c", "ns", "3");
  ObjectPtr e1 = Pod("e", "ns", "4");
  ASSERT_OK(store->Replace({a1, b1, c1, e1}, "4"));
  ObjectPtr a_same = Pod("a", "ns", "1");
  ObjectPtr e_other = Pod("e", "ns", "4", {{"cluster", "another"}});
  ObjectPtr b2 = Pod("b", "ns", "7"), d1 = Pod("d", "ns", "8");
  auto result = store->Replace({a_same, b2, d1, e_other}, "9");
  ASSERT_OK(result) << result.status();
  EXPECT_EQ(result->unchanged, 1u);
  std::map<std::string, StoreChange> by_key;
  for (const auto& c : result->changes) by_key.emplace(c.key, c);
  ASSERT_EQ(by_key.size(), 4u);
  EXPECT_EQ(by_key.at("ns/e").type, StoreChange::Type::kUpdated);
  EXPECT_EQ(by_key.at("ns/e").new_object->labels().size(), 1u);
  EXPECT_EQ(by_key.at("ns/b").type, StoreChange::Type::kUpdated);
  EXPECT_EQ(by_key.at("ns/b").old_object->resource_version(), "2");
  EXPECT_EQ(by_key.at("ns/b").new_object->resource_version(), "7");
  EXPECT_EQ(by_key.at("ns/c").type, StoreChange::Type::kDeleted);
  EXPECT_EQ(by_key.at("ns/c").old_object->resource_version(), "3");
  EXPECT_EQ(by_key.at("ns/d").type, StoreChange::Type::kAdded);
  EXPECT_EQ(store->LastSyncResourceVersion(), "9");
  EXPECT_EQ((*store->GetByKey("ns/e"))->labels().size(), 1u);
  EXPECT_THAT(*store->ListKeys(), ElementsAre("ns/a", "ns/b", "ns/d", "ns/e"));
}

// An index function error fails the write and leaves the store unchanged.
TEST_P(IndexerConformanceTest, IndexFunctionErrorChangesNothing) {
  auto picky = [](const Object& o) -> StatusOr<std::vector<std::string>> {
    if (o.labels().count("bad")) return Status::InvalidArgument("bad label");
    return std::vector<std::string>{"v"};
  };
  auto store = Make({.indexers = {{"picky", picky}}});
  ASSERT_OK(store->Add(Pod("a", "ns", "1")));
  Status st = store->Update(Pod("a", "ns", "2", {{"bad", "x"}}));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(
      st.message().find("unable to calculate an index entry for key \"ns/a\" on index \"picky\""),
      std::string_view::npos)
      << st;
  EXPECT_EQ((*store->GetByKey("ns/a"))->resource_version(), "1");
  EXPECT_EQ(store->LastSyncResourceVersion(), "1");
  EXPECT_FALSE(store->Replace({Pod("b", "ns", "3", {{"bad", "x"}})}, "3").ok());
  EXPECT_THAT(*store->ListKeys(), ElementsAre("ns/a"));
  EXPECT_EQ(store->LastSyncResourceVersion(), "1");
}

// A batch touching many existing keys in no particular order (and one key
// twice) leaves exact indexes and count.
TEST_P(IndexerConformanceTest, CommitOfManyKeysInAnyOrder) {
  auto store = Make({.indexers = {{"testmodes", LabelFoo}}});
  Transaction first;
  for (int i = 0; i < 50; ++i) first.Add(Pod("p" + std::to_string(i), "ns", "1", {{"foo", "old"}}));
  ASSERT_OK(store->Commit(first, nullptr));
  Transaction second;
  for (int i = 49; i >= 0; i -= 3) {
    second.Update(Pod("p" + std::to_string((i * 7) % 50), "ns", "2", {{"foo", "new"}}));
  }
  second.DeleteKey("ns/p1");
  second.Add(Pod("p1", "ns", "3", {{"foo", "again"}}));
  second.Add(Pod("q", "ns", "3", {{"foo", "new"}}));
  ASSERT_OK(store->Commit(second, nullptr));
  size_t fresh = store->IndexKeys("testmodes", "new")->size();
  size_t stale = store->IndexKeys("testmodes", "old")->size();
  // 17 updated (p1 among them, then deleted and added again), plus q.
  EXPECT_EQ(fresh, 17u - 1u + 1u);
  EXPECT_EQ(stale, 50u - 17u);
  EXPECT_THAT(*store->IndexKeys("testmodes", "again"), ElementsAre("ns/p1"));
  EXPECT_EQ(*store->Size(), 51u);
  for (const std::string& v : *store->ListIndexFuncValues("testmodes")) {
    for (const ObjectPtr& o : *store->ByIndex("testmodes", v)) EXPECT_EQ(o->labels().at("foo"), v);
  }
}

TEST_P(IndexerConformanceTest, IteratorsWalkInKeyOrder) {
  auto store = Make();
  for (const char* n : {"c", "a", "b"}) ASSERT_OK(store->Add(Pod(n, "ns1")));
  ASSERT_OK(store->Add(Pod("z", "ns2")));
  std::vector<std::string> keys;
  auto it = store->NewIterator();
  for (; it->Valid(); it->Next()) keys.push_back(it->key());
  EXPECT_OK(it->status());
  EXPECT_THAT(keys, ElementsAre("ns1/a", "ns1/b", "ns1/c", "ns2/z"));

  auto ns = store->NewIndexIterator(kNamespaceIndex, "ns1");
  keys.clear();
  for (; ns->Valid(); ns->Next()) keys.push_back(ns->object()->name());
  EXPECT_THAT(keys, ElementsAre("a", "b", "c"));
  EXPECT_FALSE(store->NewIndexIterator(kNamespaceIndex, "none")->Valid());
}

TEST_P(IndexerConformanceTest, IteratorFromAKeyStartsThere) {
  auto store = Make();
  for (const char* n : {"c", "a", "b"}) ASSERT_OK(store->Add(Pod(n, "ns1")));
  ASSERT_OK(store->Add(Pod("z", "ns2")));
  auto walk = [&](std::string_view start) {
    std::vector<std::string> keys;
    auto it = store->NewIteratorFrom(start);
    for (; it->Valid(); it->Next()) keys.push_back(it->key());
    EXPECT_OK(it->status());
    return keys;
  };
  EXPECT_THAT(walk(""), ElementsAre("ns1/a", "ns1/b", "ns1/c", "ns2/z"));
  EXPECT_THAT(walk("ns1/b"), ElementsAre("ns1/b", "ns1/c", "ns2/z"));
  // A key that is not stored: the walk starts at the next one (a page
  // boundary whose object was deleted meanwhile).
  EXPECT_THAT(walk(std::string("ns1/b\0", 6)), ElementsAre("ns1/c", "ns2/z"));
  EXPECT_THAT(walk("ns2/"), ElementsAre("ns2/z"));
  EXPECT_THAT(walk("ns3"), ElementsAre());
}

}  // namespace
}  // namespace kcache::testing
