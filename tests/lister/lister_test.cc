// The lister cases LS-01..03 and IX-12 of client-go-cases.md.

#include "kcache/lister.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "testing/objects.h"

namespace kcache {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::Names;
using testing::Pod;

LabelSelector Sel(const char* s) { return *LabelSelector::Parse(s); }

// LS-01 (N scaled down from 100,000 and 1,000,000).
TEST(ListerTest, ListAllWithSelectors) {
  struct {
    int n, m;
    Labels match_labels;
    LabelSelector selector;
    size_t want;
  } cases[] = {
      {10000, 1000, {{"match", "true"}}, LabelSelector::FromSet({{"match", "true"}}), 1000},
      {20000, 0, {}, LabelSelector::Everything(), 20000},
      {20000, 0, {{"nomatch", "true"}}, LabelSelector::FromSet({{"match", "true"}}), 0},
  };
  for (const auto& c : cases) {
    auto store = NewMemoryIndexer({.key_func = testing::KeyTO, .namespace_index = false});
    for (int i = 0; i < c.n; ++i) {
      Labels l = i < c.m ? c.match_labels : Labels{{"nomatch", "true"}};
      ASSERT_TRUE(store->Add(Pod("obj-" + std::to_string(i), "", "", l)).ok());
    }
    size_t count = 0;
    ASSERT_TRUE(ListAll(*store, c.selector, [&](const ObjectPtr&) { return ++count, true; }).ok());
    EXPECT_EQ(count, c.want);
  }
}

// LS-02
TEST(ListerTest, NothingSelector) {
  auto store = NewMemoryIndexer();
  ASSERT_TRUE(store->Add(Pod("a", "ns")).ok());
  size_t count = 0;
  ASSERT_TRUE(
      ListAll(*store, LabelSelector::Nothing(), [&](const ObjectPtr&) { return ++count, true; })
          .ok());
  EXPECT_EQ(count, 0u);
}

// LS-03
TEST(ListerTest, GetAndNotFound) {
  std::shared_ptr<Indexer> store = NewMemoryIndexer();
  ASSERT_TRUE(store->Add(Pod("a", "ns1")).ok());
  ASSERT_TRUE(store->Add(Pod("node-1")).ok());
  Lister pods(store, {"", "pods"});
  EXPECT_EQ((*pods.Namespace("ns1").Get("a"))->name(), "a");
  auto miss = pods.Namespace("ns1").Get("b");
  ASSERT_FALSE(miss.ok());
  EXPECT_TRUE(miss.status().IsNotFound());
  EXPECT_EQ(miss.status().message(), "pods \"b\" not found");
  Lister deployments(store, {"apps", "deployments"});
  EXPECT_EQ(deployments.Namespace("ns1").Get("b").status().message(),
            "deployments.apps \"b\" not found");
  Lister nodes(store, {"", "nodes"});
  EXPECT_EQ((*nodes.Get("node-1"))->name(), "node-1");
  EXPECT_TRUE(nodes.Get("node-2").status().IsNotFound());
}

// IX-12: ListAllByNamespace with and without the namespace index.
TEST(ListerTest, ListAllByNamespace) {
  for (bool with_index : {true, false}) {
    SCOPED_TRACE(with_index ? "indexed" : "scan");
    std::shared_ptr<Indexer> store = NewMemoryIndexer({.namespace_index = with_index});
    ASSERT_TRUE(store->Add(Pod("a", "ns1", "", {{"app", "x"}})).ok());
    ASSERT_TRUE(store->Add(Pod("b", "ns1", "", {{"app", "y"}})).ok());
    ASSERT_TRUE(store->Add(Pod("c", "ns2", "", {{"app", "x"}})).ok());
    Lister pods(store, {"", "pods"});
    EXPECT_THAT(Names(*pods.Namespace("ns1").List(LabelSelector::Everything())),
                ElementsAre("a", "b"));
    EXPECT_THAT(Names(*pods.Namespace("ns1").List(Sel("app=x"))), ElementsAre("a"));
    EXPECT_THAT(Names(*pods.Namespace("").List(Sel("app=x"))), ElementsAre("a", "c"));
    EXPECT_THAT(Names(*pods.List(Sel("app=x"))), ElementsAre("a", "c"));
    EXPECT_THAT(Names(*pods.Namespace("ns1").List(LabelSelector::Nothing())), IsEmpty());
    // A visitor can stop early.
    int seen = 0;
    ASSERT_TRUE(ListAllByNamespace(*store, "ns1", LabelSelector::Everything(),
                                   [&](const ObjectPtr&) { return ++seen < 1; })
                    .ok());
    EXPECT_EQ(seen, 1);
  }
}

}  // namespace
}  // namespace kcache
