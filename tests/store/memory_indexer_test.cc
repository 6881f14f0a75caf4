#include "kcache/indexer.h"
#include "store/indexer_conformance.h"

namespace kcache::testing {
namespace {

INSTANTIATE_TEST_SUITE_P(Memory, IndexerConformanceTest,
                         ::testing::Values(IndexerFactory([](const IndexerSpec& spec) {
                           return NewMemoryIndexer({.key_func = spec.key_func,
                                                    .indexers = spec.indexers,
                                                    .namespace_index = spec.namespace_index});
                         })));

}  // namespace
}  // namespace kcache::testing
