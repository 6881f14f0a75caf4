// SPDX-License-Identifier: Apache-2.0

#include "kcache/object.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "testing/status_matchers.h"
#include "tools/kcache/testcluster/pods.h"

namespace kcache {
namespace {

std::string RealisticPod() { return serve::synth::PodJson({}, 42, 1234); }

TEST(ObjectTest, ExtractsMetadataOfARealisticPod) {
  std::string json = RealisticPod();
  EXPECT_GT(json.size(), 5500u);
  EXPECT_LT(json.size(), 8000u);
  StatusOr<ObjectPtr> obj = Object::Parse(json);
  ASSERT_OK(obj) << obj.status();
  const Object& o = **obj;
  // Compare every extracted field against a full DOM parse.
  nlohmann::json doc = nlohmann::json::parse(json);
  const auto& m = doc["metadata"];
  EXPECT_EQ(o.kind(), "Pod");
  EXPECT_EQ(o.api_version(), "v1");
  EXPECT_TRUE(o.has_metadata());
  EXPECT_EQ(o.name(), m["name"]);
  EXPECT_EQ(o.namespace_(), m["namespace"]);
  EXPECT_EQ(o.meta().uid, m["uid"]);
  EXPECT_EQ(o.resource_version(), "1234");
  EXPECT_EQ(o.meta().generate_name, m["generateName"]);
  EXPECT_EQ(o.meta().creation_timestamp, m["creationTimestamp"]);
  EXPECT_EQ(o.labels(), m["labels"].get<Labels>());
  EXPECT_EQ(o.annotations(), m["annotations"].get<Labels>());
  ASSERT_EQ(o.meta().owner_references.size(), 1u);
  const OwnerReference& ref = o.meta().owner_references[0];
  EXPECT_EQ(ref.kind, "ReplicaSet");
  EXPECT_EQ(ref.api_version, "apps/v1");
  EXPECT_EQ(ref.name, m["ownerReferences"][0]["name"]);
  EXPECT_EQ(ref.uid, m["ownerReferences"][0]["uid"]);
  EXPECT_TRUE(ref.controller);
  EXPECT_TRUE(ref.block_owner_deletion);
  EXPECT_EQ(o.json(), json);
  EXPECT_EQ(*o.Document(), doc);
}

TEST(ObjectTest, OptionalFieldsAndEscapes) {
  auto obj = Object::Parse(
      R"({"metadata":{"name":"a\"b","generation":7,"deletionTimestamp":"2026-01-01T00:00:00Z",)"
      R"("labels":{"k":"v\u00e9"},"annotations":null,"ownerReferences":null}})");
  ASSERT_OK(obj) << obj.status();
  EXPECT_EQ((*obj)->name(), "a\"b");
  EXPECT_EQ((*obj)->meta().generation, 7);
  EXPECT_EQ((*obj)->meta().deletion_timestamp, "2026-01-01T00:00:00Z");
  EXPECT_EQ((*obj)->labels().at("k"), "v\xc3\xa9");
  EXPECT_TRUE((*obj)->annotations().empty());
  EXPECT_EQ((*obj)->kind(), "");
  EXPECT_EQ((*obj)->namespace_(), "");
}

TEST(ObjectTest, MalformedJsonNamesTheOffset) {
  // Truncated in the middle of a string.
  auto truncated = Object::Parse(R"({"metadata":{"name":"ab)");
  ASSERT_FALSE(truncated.ok());
  EXPECT_TRUE(truncated.status().IsInvalidArgument());
  EXPECT_EQ(truncated.status().message().substr(0, 25), "malformed JSON at byte 23")
      << truncated.status();

  // A bad literal deep inside spec, which a metadata-only scan would skip;
  // byte 40 is the "}" where "tru" stops being "true".
  std::string bad = R"({"metadata":{"name":"a"},"spec":{"x":tru}})";
  auto deep = Object::Parse(bad);
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.status().message().find("malformed JSON at byte 40"), std::string::npos)
      << deep.status();

  auto trailing = Object::Parse(R"({"metadata":{}} x)");
  ASSERT_FALSE(trailing.ok());
  EXPECT_NE(trailing.status().message().find("at byte 16"), std::string::npos) << trailing.status();

  EXPECT_FALSE(Object::Parse("").ok());
  EXPECT_FALSE(Object::Parse("{\"a\":\"\xff\"}").ok());  // invalid UTF-8
}

TEST(ObjectTest, NonObjectsAndMissingMetadata) {
  auto number = Object::Parse("100");
  ASSERT_FALSE(number.ok());
  EXPECT_EQ(number.status().message(), "not a JSON object");

  auto bare = Object::Parse(R"({"kind":"Status"})");
  ASSERT_OK(bare);
  EXPECT_FALSE((*bare)->has_metadata());
}

TEST(ObjectTest, WrongTypesInMetadataAreNamed) {
  auto labels = Object::Parse(R"({"metadata":{"name":"a","labels":{"app":3}}})");
  ASSERT_FALSE(labels.ok());
  EXPECT_EQ(labels.status().message(), "metadata.labels.app: expected a string");
  auto name = Object::Parse(R"({"metadata":{"name":["a"]}})");
  ASSERT_FALSE(name.ok());
  EXPECT_EQ(name.status().message(), "metadata.name: expected a string");
  auto meta = Object::Parse(R"({"metadata":3})");
  ASSERT_FALSE(meta.ok());
  EXPECT_EQ(meta.status().message(), "metadata: expected an object");
}

TEST(ObjectTest, DropManagedFieldsKeepsEverythingElse) {
  std::string json = RealisticPod();
  auto obj = Object::Parse(json, {.drop_managed_fields = true});
  ASSERT_OK(obj) << obj.status();
  nlohmann::json want = nlohmann::json::parse(json);
  want["metadata"].erase("managedFields");
  EXPECT_EQ(*(*obj)->Document(), want);
  EXPECT_LT((*obj)->byte_size(), json.size() * 2 / 3);
  EXPECT_EQ((*obj)->name(), want["metadata"]["name"]);
}

TEST(ObjectTest, DropManagedFieldsAtEveryPosition) {
  const char* cases[] = {
      R"({"metadata":{"managedFields":[{"a":1}],"name":"x"}})",
      R"({"metadata":{"name":"x", "managedFields" : [ {"a":[1]} ] }})",
      R"({"metadata":{"managedFields":[]}})",
      R"({"metadata":{"name":"x","managedFields":[],"uid":"u"}})",
  };
  for (const char* c : cases) {
    auto obj = Object::Parse(c, {.drop_managed_fields = true});
    ASSERT_OK(obj) << c << ": " << obj.status();
    nlohmann::json want = nlohmann::json::parse(c);
    want["metadata"].erase("managedFields");
    EXPECT_EQ(*(*obj)->Document(), want) << c;
  }
}

TEST(ObjectTest, DropManagedFieldsTransform) {
  auto with = Object::Parse(RealisticPod());
  ASSERT_OK(with);
  auto dropped = DropManagedFields(*with);
  ASSERT_OK(dropped);
  EXPECT_EQ((*dropped)->json().find("managedFields"), std::string_view::npos);
  // An object without managedFields is returned as is.
  auto again = DropManagedFields(*dropped);
  ASSERT_OK(again);
  EXPECT_EQ(again->get(), dropped->get());
}

TEST(ObjectTest, FieldValue) {
  auto obj = Object::Parse(RealisticPod());
  ASSERT_OK(obj);
  EXPECT_EQ(*(*obj)->FieldValue("status.phase"), "Running");
  EXPECT_EQ(*(*obj)->FieldValue("spec.nodeName"), (*(*obj)->Document())["spec"]["nodeName"]);
  EXPECT_EQ(*(*obj)->FieldValue("spec.terminationGracePeriodSeconds"), "30");
  EXPECT_EQ(*(*obj)->FieldValue("spec.enableServiceLinks"), "true");
  EXPECT_TRUE((*obj)->FieldValue("spec.nope").status().IsNotFound());
  EXPECT_TRUE((*obj)->FieldValue("status.conditions.x").status().IsNotFound());
  EXPECT_TRUE((*obj)->FieldValue("spec").status().IsInvalidArgument());
  EXPECT_TRUE((*obj)->FieldValue("status.conditions").status().IsInvalidArgument());
}

// Everything the two parses extract, as one comparable value.
std::string Extracted(const Object& o) {
  nlohmann::json j;
  const ObjectMeta& m = o.meta();
  j["kind"] = o.kind();
  j["apiVersion"] = o.api_version();
  j["has_metadata"] = o.has_metadata();
  j["strings"] = {m.name,
                  m.namespace_,
                  m.generate_name,
                  m.uid,
                  m.resource_version,
                  m.creation_timestamp,
                  m.deletion_timestamp};
  j["generation"] = m.generation;
  j["labels"] = m.labels;
  j["annotations"] = m.annotations;
  for (const OwnerReference& r : m.owner_references) {
    j["refs"].push_back(
        {r.api_version, r.kind, r.name, r.uid, r.controller, r.block_owner_deletion});
  }
  j["json"] = o.json();
  return j.dump();
}

TEST(ObjectTest, ParseTrustedExtractsWhatParseExtracts) {
  std::vector<std::string> docs = {
      RealisticPod(),
      serve::synth::PodJson({.seed = 7}, 3, 99),
      R"({"metadata":{"name":"a\"b","generation":7,"deletionTimestamp":"2026-01-01T00:00:00Z",)"
      R"("labels":{"k\u00e9":"v\u00e9","e":""},"annotations":null,"ownerReferences":null}})",
      R"({"metadata":{"name":null,"generation":null,"ownerReferences":[{"name":"o",)"
      R"("controller":false,"blockOwnerDeletion":"yes"}]},"kind":"K"})",
      R"({"kind":"Status"})",
      R"({"metadata":null,"apiVersion":"v1"})",
      R"({"spec":{"a":[1,2,{"b":null}]},"metadata":{"managedFields":[{}],"name":"late"}})",
  };
  for (const std::string& d : docs) {
    StatusOr<ObjectPtr> full = Object::Parse(d);
    StatusOr<ObjectPtr> trusted = Object::ParseTrusted(d);
    ASSERT_OK(full) << d;
    ASSERT_OK(trusted) << d;
    EXPECT_EQ(Extracted(**trusted), Extracted(**full)) << d;
  }
}

TEST(ObjectTest, ParseTrustedErrorsAreParses) {
  for (std::string bad : {std::string(R"({"metadata":{"name":"ab)"), std::string("100"),
                          std::string(R"({"metadata":{"name":"a","labels":{"app":3}}})"),
                          std::string(R"({"metadata":3})"), std::string("")}) {
    StatusOr<ObjectPtr> full = Object::Parse(bad);
    StatusOr<ObjectPtr> trusted = Object::ParseTrusted(bad);
    ASSERT_FALSE(full.ok()) << bad;
    ASSERT_FALSE(trusted.ok()) << bad;
    EXPECT_EQ(trusted.status().ToString(), full.status().ToString()) << bad;
  }
  // What it skips it does not check: a bad literal inside spec.
  std::string deep = R"({"metadata":{"name":"a"},"spec":{"x":tru}})";
  EXPECT_FALSE(Object::Parse(deep).ok());
  StatusOr<ObjectPtr> skipped = Object::ParseTrusted(deep);
  ASSERT_OK(skipped) << skipped.status();
  EXPECT_EQ((*skipped)->name(), "a");
  // Nor anything after kind, apiVersion and metadata once all three are
  // read: a repeated metadata (which the API server never writes) is not
  // seen, where Parse reads both.
  std::string twice = R"({"kind":"Pod","apiVersion":"v1","metadata":{"name":"b"},)"
                      R"("metadata":{"name":"c"}})";
  StatusOr<ObjectPtr> first = Object::ParseTrusted(twice);
  ASSERT_OK(first) << first.status();
  EXPECT_EQ((*first)->name(), "b");
  EXPECT_EQ((*Object::Parse(twice))->name(), "c");
  // A cut tail is still refused: the structure of the whole is checked.
  std::string cut = R"({"kind":"Pod","apiVersion":"v1","metadata":{"name":"b"},"spec":{"x":[1,)";
  EXPECT_FALSE(Object::ParseTrusted(cut).ok());
}

TEST(ObjectTest, SyntheticPodsAreDeterministic) {
  EXPECT_EQ(serve::synth::PodJson({}, 5, 9), serve::synth::PodJson({}, 5, 9));
  EXPECT_NE(serve::synth::PodJson({}, 5, 9), serve::synth::PodJson({}, 6, 9));
  EXPECT_NE(serve::synth::PodJson({.seed = 2}, 5, 9), serve::synth::PodJson({}, 5, 9));
}

// The defaults fill an absent kind or apiVersion; one that is there, even
// empty, is kept, so that the stored bytes say what the object reports
// (object_fuzz found a second "kind" key written beside an empty one).
TEST(ObjectTest, DefaultsFillOnlyAbsentKindAndApiVersion) {
  ParseOptions o;
  o.default_kind = "Pod";
  o.default_api_version = "v1";
  auto absent = Object::Parse(R"({"metadata":{"name":"a"}})", o);
  ASSERT_OK(absent);
  EXPECT_EQ((*absent)->kind(), "Pod");
  EXPECT_EQ((*absent)->api_version(), "v1");
  auto again = Object::Parse(std::string((*absent)->json()));
  ASSERT_OK(again);
  EXPECT_EQ((*again)->kind(), "Pod");
  EXPECT_EQ((*again)->api_version(), "v1");

  auto empty = Object::Parse(R"({"kind":"","apiVersion":"","metadata":{"name":"a"}})", o);
  ASSERT_OK(empty);
  EXPECT_EQ((*empty)->kind(), "");
  EXPECT_EQ((*empty)->api_version(), "");
  EXPECT_EQ((*empty)->json(), R"({"kind":"","apiVersion":"","metadata":{"name":"a"}})");
}

}  // namespace
}  // namespace kcache
