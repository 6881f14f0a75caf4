// SPDX-License-Identifier: Apache-2.0

// Key ranges of the storage format (docs/storage-format.md).

#include "persist/encoding.h"

#include <gtest/gtest.h>

#include <string>

#include "testing/status_matchers.h"

namespace kcache::storage {
namespace {

bool In(const KeyRange& r, const std::string& key) { return key >= r.start && key < r.limit; }

TEST(EncodingTest, NamespaceRangeHoldsExactlyThatNamespacesKeys) {
  KeyRange r = NamespaceRange("pods", "ns");
  EXPECT_TRUE(In(r, ObjectKey("pods", "ns/a")));
  EXPECT_TRUE(In(r, ObjectKey("pods", "ns/zzz")));
  EXPECT_FALSE(In(r, ObjectKey("pods", "ns-b/a")));  // '-' sorts before '/'
  EXPECT_FALSE(In(r, ObjectKey("pods", "ns0/a")));
  EXPECT_FALSE(In(r, ObjectKey("pods", "nsa/a")));
  EXPECT_FALSE(In(r, ObjectKey("pods", "ns")));  // a cluster-scoped name
  EXPECT_FALSE(In(r, ObjectKey("podsx", "ns/a")));
}

TEST(EncodingTest, PrefixRangesStopAtTheirKeyspaceAndIndexValue) {
  KeyRange ks = KeyspaceRange("pods");
  EXPECT_TRUE(In(ks, ObjectKey("pods", "a/b")));
  EXPECT_FALSE(In(ks, ObjectKey("pods.apps", "a/b")));
  EXPECT_EQ(ks.limit, std::string("pods\1"));

  KeyRange value = PrefixRange(IndexValuePrefix("pods", "node", "n1"));
  EXPECT_TRUE(In(value, IndexKey("pods", "node", "n1", "ns/a")));
  EXPECT_FALSE(In(value, IndexKey("pods", "node", "n10", "ns/a")));
  EXPECT_FALSE(In(value, IndexKey("pods", "nodes", "n1", "ns/a")));

  KeyRange index = PrefixRange(IndexPrefix("pods", "node"));
  EXPECT_TRUE(In(index, IndexKey("pods", "node", "n10", "ns/a")));
  EXPECT_FALSE(In(index, IndexKey("pods", "nodes", "n1", "ns/a")));
}

// Found by storage_records_fuzz: a meta record with a field of the wrong
// type threw out of the decoder (std::terminate: the process aborted)
// instead of being reported as corrupt.
TEST(EncodingTest, MetaRecordsWithFieldsOfTheWrongTypeAreCorrupt) {
  for (const char* json : {R"({"namespaced":"yes"})", R"({"kind":7})",
                           R"({"printerColumns":[{"priority":"high"}]})"}) {
    auto r = DecodeResourceInfo(json);
    ASSERT_FALSE(r.ok()) << json;
    EXPECT_TRUE(r.status().IsCorruption()) << r.status();
  }
  auto c = DecodeClusterInfo(R"({"server":["x"]})");
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(c.status().IsCorruption()) << c.status();
  EXPECT_OK(DecodeResourceInfo(R"({"kind":"Pod","namespaced":true})"));
}

}  // namespace
}  // namespace kcache::storage
