// SPDX-License-Identifier: Apache-2.0

#include "kcache/key.h"

#include <gtest/gtest.h>

#include "kcache/indexer.h"
#include "testing/objects.h"
#include "testing/status_matchers.h"

namespace kcache {
namespace {

using testing::MakeObject;
using testing::Pod;
TEST(KeyTest, NamespacedObject) {
  EXPECT_EQ(*MetaNamespaceKeyFunc(*Pod("testname", "testnamespace")), "testnamespace/testname");
}
TEST(KeyTest, ClusterScopedObject) { EXPECT_EQ(*MetaNamespaceKeyFunc(*Pod("node-a")), "node-a"); }

// an object without metadata has no key, and a store says so.
TEST(KeyTest, ObjectWithoutMetadata) {
  ObjectPtr bare = MakeObject(R"({"kind":"Status","code":100})");
  StatusOr<std::string> key = MetaNamespaceKeyFunc(*bare);
  ASSERT_FALSE(key.ok());
  EXPECT_EQ(key.status().message(), "object has no meta");

  auto store = NewMemoryIndexer();
  Status st = store->Add(bare);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message().substr(0, 30), "couldn't create key for object");
  EXPECT_NE(st.message().find("object has no meta"), std::string_view::npos);
  EXPECT_EQ(*store->Size(), 0u);
}

// the key error keeps the cause's code and message.
TEST(KeyTest, KeyErrorKeepsTheCause) {
  auto store = NewMemoryIndexer({.key_func = [](const Object&) -> StatusOr<std::string> {
    return Status::Unavailable("error");
  }});
  Status st = store->Add(Pod("a"));
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_EQ(st.message(), "couldn't create key for object Pod a: error");
}
TEST(KeyTest, DeletionHandlingKeyFunc) {
  ObjectPtr cm = Pod("testname", "testnamespace");
  EXPECT_EQ(
      *DeletionHandlingMetaNamespaceKeyFunc(DeletedFinalStateUnknown{"testnamespace/testname", cm}),
      "testnamespace/testname");
  EXPECT_EQ(
      *DeletionHandlingMetaNamespaceKeyFunc(DeletedFinalStateUnknown{"whatever/key", nullptr}),
      "whatever/key");
  EXPECT_EQ(*DeletionHandlingMetaNamespaceKeyFunc(cm), "testnamespace/testname");
}
TEST(KeyTest, DeletionHandlingObjectToName) {
  ObjectPtr cm = Pod("testname", "testnamespace");
  DeletedObject deleted = DeletedFinalStateUnknown{*MetaNamespaceKeyFunc(*cm), cm};
  ObjectName want{"testnamespace", "testname"};
  EXPECT_EQ(*DeletionHandlingObjectToName(deleted), want);
  EXPECT_EQ(*ObjectToName(*cm), want);
}
TEST(KeyTest, SplitMetaNamespaceKey) {
  EXPECT_EQ(*SplitMetaNamespaceKey("name"), (ObjectName{"", "name"}));
  EXPECT_EQ(*SplitMetaNamespaceKey("ns/name"), (ObjectName{"ns", "name"}));
  EXPECT_EQ(*SplitMetaNamespaceKey("/abc"), (ObjectName{"", "abc"}));
  EXPECT_EQ(SplitMetaNamespaceKey("/abc")->String(), "abc");
  EXPECT_EQ(*SplitMetaNamespaceKey("abc/"), (ObjectName{"abc", ""}));
  EXPECT_EQ(SplitMetaNamespaceKey("abc/")->String(), "abc/");
  auto bad = SplitMetaNamespaceKey("a/b/c");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "unexpected key format: \"a/b/c\"");
  EXPECT_FALSE(SplitMetaNamespaceKey("//").ok());
}

// round trip over random keys made of "abcdefghi/".
TEST(KeyTest, SplitRoundTripsRandomKeys) {
  uint64_t state = 12345;
  auto next = [&] { return state = state * 6364136223846793005ULL + 1442695040888963407ULL; };
  for (int i = 0; i < 2000; ++i) {
    std::string s;
    int len = static_cast<int>(next() >> 60);
    for (int j = 0; j < len; ++j) s += "abcdefghi/"[(next() >> 33) % 10];
    size_t slashes = std::count(s.begin(), s.end(), '/');
    auto name = SplitMetaNamespaceKey(s);
    if (slashes >= 2) {
      EXPECT_FALSE(name.ok()) << s;
      continue;
    }
    ASSERT_OK(name) << s;
    std::string back = name->String();
    if (!s.empty() && s[0] == '/') back = "/" + back;
    EXPECT_EQ(back, s);
  }
}

}  // namespace
}  // namespace kcache
