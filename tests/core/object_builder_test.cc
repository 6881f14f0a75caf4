// SPDX-License-Identifier: Apache-2.0

// Owner references (owner.h), the JSON of new objects and merge patches, and
// copies with labels or annotations changed (object_builder.h).

#include "kcache/object_builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kcache/owner.h"
#include "testing/objects.h"
#include "testing/status_matchers.h"

namespace kcache::testing {
namespace {

ObjectPtr Deployment() {
  return MakeObject(
      R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"prod","uid":"d-1"}})");
}

TEST(OwnerTest, NewControllerRefNamesTheOwnerAsController) {
  OwnerReference ref = NewControllerRef(*Deployment());
  EXPECT_EQ(ref, (OwnerReference{"apps/v1", "Deployment", "web", "d-1", true, true}));
  // A list item carries no apiVersion or kind: the caller names them.
  ObjectPtr item = MakeObject(R"({"metadata":{"name":"web","uid":"d-2"}})");
  ref = NewControllerRef(*item, "apps/v1", "Deployment");
  EXPECT_EQ(ref.kind, "Deployment");
  EXPECT_EQ(ref.uid, "d-2");
}

TEST(OwnerTest, ControllerLookupsReadTheParsedMetadata) {
  ObjectPtr rs = MakeObject(R"({"metadata":{"name":"web-1","ownerReferences":[
      {"apiVersion":"v1","kind":"ConfigMap","name":"c","uid":"c-1"},
      {"apiVersion":"apps/v1","kind":"Deployment","name":"web","uid":"d-1","controller":true}]}})");
  const OwnerReference* controller = GetControllerOf(*rs);
  ASSERT_NE(controller, nullptr);
  EXPECT_EQ(controller->name, "web");
  EXPECT_TRUE(IsControlledBy(*rs, *Deployment()));
  ObjectPtr other = MakeObject(R"({"metadata":{"name":"web","uid":"d-9"}})");
  EXPECT_FALSE(IsControlledBy(*rs, *other));
  EXPECT_EQ(OwnersOfKind(*rs, "ConfigMap").size(), 1u);
  EXPECT_TRUE(OwnersOfKind(*rs, "Pod").empty());
  ObjectPtr orphan = MakeObject(R"({"metadata":{"name":"x"}})");
  EXPECT_EQ(GetControllerOf(*orphan), nullptr);
  EXPECT_FALSE(IsControlledBy(*orphan, *other));
}

TEST(ObjectBuilderTest, BuildsTheJsonOfANewObject) {
  auto built = ObjectBuilder("v1", "ConfigMap")
                   .Name("settings")
                   .Namespace("prod")
                   .Label("app.kubernetes.io/managed-by", "ctl")
                   .Annotation("note", "x")
                   .Owner(NewControllerRef(*Deployment()))
                   .Set({"data", "app.conf"}, "a=1")
                   .Set("data.plain", "b")
                   .Build();
  ASSERT_OK(built) << built.status();
  const ObjectPtr& cm = *built;
  EXPECT_EQ(cm->kind(), "ConfigMap");
  EXPECT_EQ(cm->name(), "settings");
  EXPECT_EQ(cm->namespace_(), "prod");
  EXPECT_EQ(cm->labels().at("app.kubernetes.io/managed-by"), "ctl");
  EXPECT_EQ(cm->annotations().at("note"), "x");
  EXPECT_TRUE(IsControlledBy(*cm, *Deployment()));
  EXPECT_EQ(*cm->FieldValue("data.plain"), "b");
  auto doc = cm->Document();
  ASSERT_OK(doc);
  EXPECT_EQ((*doc)["data"]["app.conf"], "a=1");
  EXPECT_EQ((*doc)["metadata"]["ownerReferences"][0]["blockOwnerDeletion"], true);
  // A Set that breaks the object is told at Build.
  EXPECT_FALSE(ObjectBuilder("v1", "ConfigMap").Set("metadata", "x").Build().ok());
}

TEST(MergePatchTest, SetsRemovesAndIsConditional) {
  MergePatch patch;
  EXPECT_TRUE(patch.empty());
  EXPECT_EQ(patch.Json(), "{}");
  patch.SetLabel("tier", "web")
      .RemoveLabel("old")
      .SetAnnotation("a/b", "c")
      .RemoveAnnotation("gone")
      .Set("spec.replicas", 3)
      .Remove({"spec", "paused"})
      .IfResourceVersion("42");
  EXPECT_EQ(nlohmann::json::parse(patch.Json()),
            nlohmann::json::parse(R"({"metadata":{"labels":{"tier":"web","old":null},
              "annotations":{"a/b":"c","gone":null},"resourceVersion":"42"},
              "spec":{"replicas":3,"paused":null}})"));
}

TEST(WithLabelsTest, CopiesWithLabelsOrAnnotationsChangedLeaveTheOriginal) {
  ObjectPtr pod = MakeObject(
      R"({"kind":"Pod","metadata":{"name":"p","labels":{"a":"1","b":"2"},"annotations":{"x":"y"}},"spec":{"n":1}})");
  auto relabeled = WithLabels(*pod, {{"a", "9"}, {"c", "3"}}, {"b"});
  ASSERT_OK(relabeled) << relabeled.status();
  EXPECT_EQ((*relabeled)->labels(), (Labels{{"a", "9"}, {"c", "3"}}));
  EXPECT_EQ(*(*relabeled)->FieldValue("spec.n"), "1");
  EXPECT_EQ(pod->labels(), (Labels{{"a", "1"}, {"b", "2"}}));  // immutable
  auto unannotated = WithAnnotations(*pod, {}, {"x"});
  ASSERT_OK(unannotated);
  EXPECT_TRUE((*unannotated)->annotations().empty());
  EXPECT_EQ((*unannotated)->json().find("annotations"), std::string_view::npos);
  ObjectPtr bare = MakeObject(R"({"kind":"X"})");
  EXPECT_TRUE(WithLabels(*bare, {{"a", "b"}}).status().IsInvalidArgument());
}

}  // namespace
}  // namespace kcache::testing
