// SPDX-License-Identifier: Apache-2.0

// client-go's lister behaviour: listing by selector with and without indexes.

#include "kcache/lister.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "testing/counting_indexer.h"
#include "testing/objects.h"
#include "testing/status_matchers.h"

namespace kcache {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::Names;
using testing::Pod;

LabelSelector Sel(const char* s) { return *LabelSelector::Parse(s); }

// Listing a large store (N scaled down from 100,000 and 1,000,000).
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
      ASSERT_OK(store->Add(Pod("obj-" + std::to_string(i), "", "", l)));
    }
    size_t count = 0;
    ASSERT_OK(ListAll(*store, c.selector, [&](const ObjectPtr&) { return ++count, true; }));
    EXPECT_EQ(count, c.want);
  }
}
TEST(ListerTest, NothingSelector) {
  auto store = NewMemoryIndexer();
  ASSERT_OK(store->Add(Pod("a", "ns")));
  size_t count = 0;
  ASSERT_OK(
      ListAll(*store, LabelSelector::Nothing(), [&](const ObjectPtr&) { return ++count, true; }));
  EXPECT_EQ(count, 0u);
}
TEST(ListerTest, GetAndNotFound) {
  std::shared_ptr<Indexer> store = NewMemoryIndexer();
  ASSERT_OK(store->Add(Pod("a", "ns1")));
  ASSERT_OK(store->Add(Pod("node-1")));
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

// ListAllByNamespace with and without the namespace and label indexes
// gives the same answers.
TEST(ListerTest, ListAllByNamespace) {
  for (int mode = 0; mode < 3; ++mode) {
    SCOPED_TRACE(mode == 0 ? "scan" : mode == 1 ? "namespace index" : "label index");
    std::shared_ptr<Indexer> store =
        NewMemoryIndexer({.namespace_index = mode >= 1, .label_index = mode == 2});
    ASSERT_OK(store->Add(Pod("a", "ns1", "", {{"app", "x"}})));
    ASSERT_OK(store->Add(Pod("b", "ns1", "", {{"app", "y"}})));
    ASSERT_OK(store->Add(Pod("c", "ns2", "", {{"app", "x"}})));
    Lister pods(store, {"", "pods"});
    EXPECT_THAT(Names(*pods.Namespace("ns1").List(LabelSelector::Everything())),
                ElementsAre("a", "b"));
    EXPECT_THAT(Names(*pods.Namespace("ns1").List(Sel("app=x"))), ElementsAre("a"));
    EXPECT_THAT(Names(*pods.Namespace("").List(Sel("app=x"))), ElementsAre("a", "c"));
    EXPECT_THAT(Names(*pods.List(Sel("app=x"))), ElementsAre("a", "c"));
    EXPECT_THAT(Names(*pods.Namespace("ns1").List(LabelSelector::Nothing())), IsEmpty());
    EXPECT_THAT(Names(*pods.List(Sel("app in (y,x)"))), ElementsAre("a", "b", "c"));
    EXPECT_THAT(Names(*pods.List(Sel("app in (y,x),app!=y"))), ElementsAre("a", "c"));
    EXPECT_THAT(Names(*pods.Namespace("ns2").List(Sel("app=y"))), IsEmpty());
    // A visitor can stop early.
    int seen = 0;
    ASSERT_OK(ListAllByNamespace(*store, "ns1", LabelSelector::Everything(),
                                 [&](const ObjectPtr&) { return ++seen < 1; }));
    EXPECT_EQ(seen, 1);
  }
}

// With the label index, a selector with =, == or in requirements reads only
// the objects that satisfy all of them (and are in the namespace); other
// selectors scan.
TEST(ListerTest, LabelIndexTouchesOnlyMatches) {
  auto inner = NewMemoryIndexer({.label_index = true});
  for (int i = 0; i < 1000; ++i) {
    std::string app = i % 100 == 0 ? "rare" : i % 100 == 1 ? "odd" : "common";
    ASSERT_OK(inner->Add(Pod("p" + std::to_string(i), "ns" + std::to_string(i % 2), "",
                             {{"app", app}, {"tier", i % 4 == 0 ? "web" : "db"}})));
  }
  auto store = std::make_shared<testing::CountingIndexer>(std::move(inner));
  Lister pods(store, {"", "pods"});
  EXPECT_EQ(pods.List(Sel("app=rare"))->size(), 10u);
  EXPECT_EQ(pods.List(Sel("app in (rare,odd)"))->size(), 20u);
  EXPECT_EQ(pods.Namespace("ns1").List(Sel("app=odd,app!=x"))->size(), 10u);
  EXPECT_EQ(pods.Namespace("ns0").List(Sel("app=odd"))->size(), 0u);     // odd ones are in ns1
  EXPECT_EQ(pods.List(Sel("tier=web,app in (rare,odd)"))->size(), 10u);  // rare: i%100==0
  EXPECT_EQ(store->fetched(), 10u + 20u + 10u + 0u + 10u);
  EXPECT_EQ(store->scanned(), 0u);
  EXPECT_EQ(pods.List(Sel("app!=common"))->size(), 20u);  // no equality: a scan
  EXPECT_EQ(store->scanned(), 1000u);
}

}  // namespace
}  // namespace kcache
