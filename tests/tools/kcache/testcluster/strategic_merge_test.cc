// SPDX-License-Identifier: Apache-2.0

// Strategic merge patches as kube-apiserver applies them to the built-in
// types: the cases are those of apimachinery's strategicpatch semantics that
// kubectl's patches use.
#include "tools/kcache/testcluster/strategic_merge.h"

#include <gtest/gtest.h>

#include "testing/status_matchers.h"

namespace kcache::serve {
namespace {

using ojson = nlohmann::ordered_json;
using testing::StatusIs;

ojson Merge(const char* target, const char* patch) {
  StatusOr<ojson> out = StrategicMerge(ojson::parse(target), ojson::parse(patch));
  EXPECT_OK(out);
  return out.ok() ? *out : ojson();
}

TEST(StrategicMergeTest, MapsMergeAndNullDeletes) {
  EXPECT_EQ(Merge(R"({"data":{"a":"1","b":"2"},"x":1})", R"({"data":{"a":"9","b":null,"c":"3"}})"),
            ojson::parse(R"({"data":{"a":"9","c":"3"},"x":1})"));
}

TEST(StrategicMergeTest, ListsWithAMergeKeyMergeByIt) {
  const char* pod =
      R"({"spec":{"containers":[{"name":"app","image":"a:1","ports":[{"containerPort":80}]},
                                {"name":"side","image":"s:1"}]}})";
  EXPECT_EQ(Merge(pod, R"({"spec":{"containers":[{"name":"side","image":"s:2"}]}})"),
            ojson::parse(R"({"spec":{"containers":[{"name":"app","image":"a:1",
                            "ports":[{"containerPort":80}]},{"name":"side","image":"s:2"}]}})"));
  // A new element is appended; $patch: delete removes one.
  EXPECT_EQ(Merge(pod, R"({"spec":{"containers":[{"name":"app","$patch":"delete"},
                                                  {"name":"new","image":"n"}]}})"),
            ojson::parse(R"({"spec":{"containers":[{"name":"side","image":"s:1"},
                                                    {"name":"new","image":"n"}]}})"));
  // An element without the merge key is refused, as the apiserver does.
  EXPECT_THAT(
      StrategicMerge(ojson::parse(pod), ojson::parse(R"({"spec":{"containers":[{"image":"x"}]}})"))
          .status(),
      StatusIs(StatusCode::kInvalidArgument, ::testing::HasSubstr("merge key: name")));
}

TEST(StrategicMergeTest, OtherListsAreReplacedAndFinalizersMergeAsASet) {
  EXPECT_EQ(Merge(R"({"spec":{"args":["a","b"]}})", R"({"spec":{"args":["c"]}})"),
            ojson::parse(R"({"spec":{"args":["c"]}})"));
  EXPECT_EQ(
      Merge(R"({"metadata":{"finalizers":["a","b"]}})", R"({"metadata":{"finalizers":["b","c"]}})"),
      ojson::parse(R"({"metadata":{"finalizers":["a","b","c"]}})"));
  EXPECT_EQ(Merge(R"({"metadata":{"finalizers":["a","b"]}})",
                  R"({"metadata":{"$deleteFromPrimitiveList/finalizers":["a"]}})"),
            ojson::parse(R"({"metadata":{"finalizers":["b"]}})"));
}

TEST(StrategicMergeTest, DirectivesAsKubectlSendsThem) {
  // kubectl apply orders merged lists with $setElementOrder.
  EXPECT_EQ(Merge(R"({"spec":{"containers":[{"name":"a","image":"1"},{"name":"b","image":"1"}]}})",
                  R"({"spec":{"$setElementOrder/containers":[{"name":"b"},{"name":"a"}],
                      "containers":[{"name":"a","image":"2"}]}})"),
            ojson::parse(R"({"spec":{"containers":[{"name":"b","image":"1"},
                                                    {"name":"a","image":"2"}]}})"));
  EXPECT_EQ(Merge(R"({"spec":{"a":1,"b":2}})", R"({"spec":{"$patch":"replace","c":3}})"),
            ojson::parse(R"({"spec":{"c":3}})"));
  EXPECT_EQ(Merge(R"({"spec":{"a":1},"x":1})", R"({"spec":{"$patch":"delete"}})"),
            ojson::parse(R"({"x":1})"));
  EXPECT_EQ(Merge(R"({"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":1}}})",
                  R"({"strategy":{"$retainKeys":["type"],"type":"Recreate"}})"),
            ojson::parse(R"({"strategy":{"type":"Recreate"}})"));
  EXPECT_EQ(Merge(R"({"spec":{"containers":[{"name":"a"}]}})",
                  R"({"spec":{"containers":[{"$patch":"replace"},{"name":"z"}]}})"),
            ojson::parse(R"({"spec":{"containers":[{"name":"z"}]}})"));
  EXPECT_THAT(StrategicMerge(ojson::parse("{}"), ojson::parse(R"({"$patch":"twist"})")).status(),
              StatusIs(StatusCode::kInvalidArgument, ::testing::HasSubstr("unknown patch type")));
  EXPECT_THAT(StrategicMerge(ojson::parse("{}"), ojson::parse("[]")).status(),
              StatusIs(StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace kcache::serve
