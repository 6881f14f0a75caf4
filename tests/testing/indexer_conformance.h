// SPDX-License-Identifier: Apache-2.0

// A conformance suite for Indexer implementations: client-go's store and
// indexer cases (ST-*, IX-*) plus kcache's own contracts (Commit, Replace
// diffs, iterators). Instantiate it with a factory:
//
//   INSTANTIATE_TEST_SUITE_P(Memory, IndexerConformanceTest,
//                            ::testing::Values(IndexerFactory(...)));

#ifndef KCACHE_TESTS_TESTING_INDEXER_CONFORMANCE_H_
#define KCACHE_TESTS_TESTING_INDEXER_CONFORMANCE_H_

#include <gtest/gtest.h>

#include <functional>
#include <memory>

#include "kcache/indexer.h"

namespace kcache::testing {

struct IndexerSpec {
  KeyFunc key_func = MetaNamespaceKeyFunc;
  Indexers indexers;
  bool namespace_index = true;
};

using IndexerFactory = std::function<std::shared_ptr<Indexer>(const IndexerSpec&)>;

class IndexerConformanceTest : public ::testing::TestWithParam<IndexerFactory> {
 protected:
  std::shared_ptr<Indexer> Make(IndexerSpec spec = {}) { return GetParam()(spec); }
};

}  // namespace kcache::testing

#endif  // KCACHE_TESTS_TESTING_INDEXER_CONFORMANCE_H_
