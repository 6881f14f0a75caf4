// SPDX-License-Identifier: Apache-2.0

#include "kcache/indexer.h"
#include "testing/indexer_conformance.h"
#include "testing/objects.h"
#include "testing/status_matchers.h"

namespace kcache::testing {
namespace {

INSTANTIATE_TEST_SUITE_P(Memory, IndexerConformanceTest,
                         ::testing::Values(IndexerFactory([](const IndexerSpec& spec) {
                           return NewMemoryIndexer({.key_func = spec.key_func,
                                                    .indexers = spec.indexers,
                                                    .namespace_index = spec.namespace_index});
                         })));

// The in-memory iterator is live: a key deleted before the walk reaches it is
// not seen, and one added ahead of it is.
TEST(MemoryIndexerTest, IteratorSeesChangesAhead) {
  auto store = NewMemoryIndexer();
  for (const char* n : {"a", "b", "c"}) ASSERT_OK(store->Add(Pod(n, "ns1")));
  ASSERT_OK(store->Add(Pod("z", "ns2")));
  auto walk = store->NewIterator();
  ASSERT_TRUE(walk->Valid());
  EXPECT_EQ(walk->key(), "ns1/a");
  ASSERT_OK(store->DeleteKey("ns1/b"));
  ASSERT_OK(store->Add(Pod("y", "ns2")));
  std::vector<std::string> keys;
  for (; walk->Valid(); walk->Next()) keys.push_back(walk->key());
  EXPECT_EQ(keys, (std::vector<std::string>{"ns1/a", "ns1/c", "ns2/y", "ns2/z"}));
}

}  // namespace
}  // namespace kcache::testing
