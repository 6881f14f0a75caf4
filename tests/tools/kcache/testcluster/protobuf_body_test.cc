// SPDX-License-Identifier: Apache-2.0

// Kubernetes' protobuf bodies read as JSON: every field kind of the
// messages kcache serve reads, Go's omitempty, and a clear error for each
// way a body can be wrong.

#include "tools/kcache/testcluster/protobuf_body.h"

#include <gtest/gtest.h>

#include <string>

#include "testing/status_matchers.h"
#include "tools/kcache/testcluster/core.pb.h"
#include "tools/kcache/testcluster/runtime.pb.h"

namespace kcache::serve {
namespace {

namespace core = k8s::io::api::core::v1;
namespace runtime = k8s::io::apimachinery::pkg::runtime;

std::string Envelope(const std::string& api_version, const std::string& kind,
                     const std::string& raw, const std::string& encoding = "") {
  runtime::Unknown u;
  u.mutable_typemeta()->set_apiversion(api_version);
  u.mutable_typemeta()->set_kind(kind);
  u.set_raw(raw);
  u.set_contentencoding(encoding);  // written even when empty, as Go's marshaller does
  return std::string("k8s\0", 4) + u.SerializeAsString();
}

TEST(ProtobufBodyTest, ASecretReadsAsItsJson) {
  core::Secret s;
  auto* meta = s.mutable_metadata();
  meta->set_name("creds");
  meta->set_namespace_("team");
  // What Go writes for fields it has no value for: empty, zero, false.
  meta->set_generatename("");
  meta->set_generation(0);
  meta->mutable_creationtimestamp();  // the zero time: an empty message
  (*meta->mutable_labels())["tier"] = "db";
  (*meta->mutable_labels())["app"] = "web";
  auto* owner = meta->add_ownerreferences();
  owner->set_apiversion("apps/v1");
  owner->set_kind("Deployment");
  owner->set_name("web");
  owner->set_uid("u-1");
  owner->set_controller(true);
  owner->set_blockownerdeletion(false);
  meta->add_finalizers("a/b");
  auto* managed = meta->add_managedfields();
  managed->set_manager("kubectl-create");
  managed->mutable_time()->set_seconds(1700000000);
  managed->mutable_fieldsv1()->set_raw(R"({"f:data":{".":{}}})");
  (*s.mutable_data())["bin"] = std::string("\x00\xff", 2);
  s.set_type("Opaque");
  s.set_immutable(false);

  StatusOr<nlohmann::ordered_json> j =
      ProtobufToJson(Envelope("v1", "Secret", s.SerializeAsString()));
  ASSERT_OK(j) << j.status();
  EXPECT_EQ(j->dump(),
            R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"creds","namespace":"team",)"
            R"("labels":{"app":"web","tier":"db"},"ownerReferences":[{"kind":"Deployment",)"
            R"("name":"web","uid":"u-1","apiVersion":"apps/v1","controller":true}],)"
            R"("finalizers":["a/b"],"managedFields":[{"manager":"kubectl-create",)"
            R"("time":"2023-11-14T22:13:20Z","fieldsV1":{"f:data":{".":{}}}}]},)"
            R"("data":{"bin":"AP8="},"type":"Opaque"})");
}

TEST(ProtobufBodyTest, ConfigMapsAndNamespaces) {
  core::ConfigMap cm;
  cm.mutable_metadata()->set_name("settings");
  (*cm.mutable_data())["b"] = "2";
  (*cm.mutable_data())["a"] = "1";
  (*cm.mutable_binarydata())["blob"] = "hi";
  cm.set_immutable(true);
  StatusOr<nlohmann::ordered_json> j =
      ProtobufToJson(Envelope("v1", "ConfigMap", cm.SerializeAsString()));
  ASSERT_OK(j) << j.status();
  EXPECT_EQ(j->dump(),
            R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings"},)"
            R"("data":{"a":"1","b":"2"},"binaryData":{"blob":"aGk="},"immutable":true})");

  core::Namespace ns;
  ns.mutable_metadata()->set_name("team");
  ns.mutable_spec()->add_finalizers("kubernetes");
  ns.mutable_status();
  j = ProtobufToJson(Envelope("v1", "Namespace", ns.SerializeAsString()));
  ASSERT_OK(j) << j.status();
  EXPECT_EQ(j->dump(), R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team"},)"
                       R"("spec":{"finalizers":["kubernetes"]}})");
}

TEST(ProtobufBodyTest, EachWrongBodyGetsItsOwnError) {
  auto error = [](const std::string& body) {
    StatusOr<nlohmann::ordered_json> j = ProtobufToJson(body);
    EXPECT_FALSE(j.ok()) << body;
    return j.ok() ? std::string() : std::string(j.status().message());
  };
  EXPECT_EQ(error("{\"kind\":\"ConfigMap\"}"),
            "the protobuf body does not start with Kubernetes' 4-byte prefix \"k8s\\0\"");
  EXPECT_EQ(error(std::string("k8s\0\x0a\xff\xff", 7)),
            "the protobuf body is not a runtime.Unknown envelope");
  EXPECT_EQ(error(Envelope("v1", "ConfigMap",
                           std::string("\x0a\x05"
                                       "ab"))),
            "the protobuf body's ConfigMap does not parse");
  EXPECT_EQ(error(Envelope("v1", "ConfigMap", "", "gzip")),
            "the protobuf body's content encoding \"gzip\" is not supported");
  StatusOr<nlohmann::ordered_json> pod = ProtobufToJson(Envelope("v1", "Pod", ""));
  EXPECT_EQ(pod.status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(pod.status().message(),
            "the synthetic cluster reads protobuf bodies of v1 ConfigMap, v1 Namespace, v1 Secret "
            "only, not of v1 Pod: send it as application/json");
}

}  // namespace
}  // namespace kcache::serve
