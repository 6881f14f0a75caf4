// SPDX-License-Identifier: Apache-2.0

// RestClient's writes: the requests they send (against a scripted server)
// and what they do (against kcache serve). The same calls run against the
// real kube-apiserver in tests/integration/rest_integration_test.cc.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "kcache/rest_client.h"
#include "testing/fake_http_server.h"
#include "testing/serve_fixture.h"
#include "testing/status_matchers.h"

namespace kcache {
namespace {

using testing::FakeHttpServer;
using testing::FakeRequest;
using testing::FakeResponse;
using testing::ServeFixture;

const char kConfigMap[] =
    R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"default","resourceVersion":"7"},"data":{"k":"v"}})";

std::shared_ptr<RestClient> ClientFor(const std::string& url) {
  RestConfig config;
  config.server = url;
  auto c = RestClient::Create(config);
  EXPECT_OK(c);
  return *c;
}

// Answers every request with kConfigMap.
FakeHttpServer EchoServer() {
  return FakeHttpServer([](const FakeRequest&) { return FakeResponse{.chunks = {kConfigMap}}; });
}

TEST(RestClientWriteTest, EachPatchTypeSendsItsContentType) {
  auto server = EchoServer();
  auto client = ClientFor(server.url());
  const ResourceRef cms = ServeFixture::ConfigMaps("default");
  const std::pair<PatchType, std::string> types[] = {
      {PatchType::kJson, "application/json-patch+json"},
      {PatchType::kMerge, "application/merge-patch+json"},
      {PatchType::kStrategicMerge, "application/strategic-merge-patch+json"},
      {PatchType::kApply, "application/apply-patch+yaml"},
  };
  for (const auto& [type, content_type] : types) {
    auto got = client->Patch(cms, "a", type, "{}", {.field_manager = "m"});
    ASSERT_OK(got);
    EXPECT_EQ((*got)->name(), "a");
    FakeRequest r = server.requests().back();
    EXPECT_EQ(r.method, "PATCH");
    EXPECT_EQ(r.Header("Content-Type"), content_type);
    EXPECT_EQ(r.target, "/api/v1/namespaces/default/configmaps/a?fieldManager=m");
  }
  ASSERT_OK(client->Patch(
      cms, "a", PatchType::kApply, "{}",
      {.field_manager = "my ctl", .force = true, .dry_run = true, .subresource = "status"}));
  EXPECT_EQ(server.requests().back().target,
            "/api/v1/namespaces/default/configmaps/a/status"
            "?fieldManager=my%20ctl&force=true&dryRun=All");
}

TEST(RestClientWriteTest, ApplyWithoutAFieldManagerIsRefusedBeforeSending) {
  auto server = EchoServer();
  auto client = ClientFor(server.url());
  auto got = client->Patch(ServeFixture::ConfigMaps("default"), "a", PatchType::kApply, "{}");
  EXPECT_THAT(got.status(), testing::StatusIs(StatusCode::kInvalidArgument,
                                              ::testing::HasSubstr("needs a field manager")));
  EXPECT_TRUE(server.requests().empty());
}

TEST(RestClientWriteTest, CreateAndUpdateTakeTheNamespaceFromTheObject) {
  auto server = EchoServer();
  auto client = ClientFor(server.url());
  const ResourceRef all = ServeFixture::ConfigMaps();
  ASSERT_OK(client->Create(all, kConfigMap, {.field_manager = "ctl", .dry_run = true}));
  EXPECT_EQ(server.requests().back().method, "POST");
  EXPECT_EQ(server.requests().back().target,
            "/api/v1/namespaces/default/configmaps?fieldManager=ctl&dryRun=All");
  EXPECT_EQ(server.requests().back().body, kConfigMap);
  EXPECT_EQ(server.requests().back().Header("Content-Type"), "application/json");
  ASSERT_OK(client->Update(all, kConfigMap));
  EXPECT_EQ(server.requests().back().method, "PUT");
  EXPECT_EQ(server.requests().back().target, "/api/v1/namespaces/default/configmaps/a");
  ASSERT_OK(client->UpdateStatus(all, kConfigMap));
  EXPECT_EQ(server.requests().back().target, "/api/v1/namespaces/default/configmaps/a/status");
  ASSERT_OK(client->Get(ServeFixture::ConfigMaps("default"), "a"));
  EXPECT_EQ(server.requests().back().method, "GET");
  EXPECT_EQ(server.requests().back().target, "/api/v1/namespaces/default/configmaps/a");
}

TEST(RestClientWriteTest, BadNamesAndBodiesAreRefusedBeforeSending) {
  auto server = EchoServer();
  auto client = ClientFor(server.url());
  const ResourceRef in_default = ServeFixture::ConfigMaps("default");
  EXPECT_TRUE(client->Get(in_default, "").status().IsInvalidArgument());
  EXPECT_TRUE(client->Get(in_default, "a/b").status().IsInvalidArgument());
  EXPECT_TRUE(client->Get(in_default, "..").status().IsInvalidArgument());
  // A namespaced object without a namespace anywhere.
  EXPECT_TRUE(client->Get(ServeFixture::ConfigMaps(), "a").status().IsInvalidArgument());
  EXPECT_TRUE(client->Create(ServeFixture::ConfigMaps(), R"({"metadata":{"name":"a"}})")
                  .status()
                  .IsInvalidArgument());
  auto bad = client->Update(in_default, "{not json");
  EXPECT_TRUE(bad.status().IsInvalidArgument()) << bad.status();
  EXPECT_NE(bad.status().message().find("update: the object"), std::string::npos) << bad.status();
  EXPECT_TRUE(server.requests().empty());
}

TEST(RestClientWriteTest, DeleteSendsItsOptionsAsDeleteOptions) {
  FakeHttpServer server([](const FakeRequest&) {
    return FakeResponse{.chunks = {R"({"kind":"Status","apiVersion":"v1","status":"Success"})"}};
  });
  auto client = ClientFor(server.url());
  ASSERT_OK(client->Delete(ServeFixture::ConfigMaps("default"), "a",
                           {.grace_period_seconds = 0,
                            .propagation_policy = "Foreground",
                            .precondition_uid = "u-1",
                            .precondition_resource_version = "42",
                            .dry_run = true}));
  FakeRequest r = server.requests().back();
  EXPECT_EQ(r.method, "DELETE");
  EXPECT_EQ(r.target, "/api/v1/namespaces/default/configmaps/a");
  EXPECT_EQ(nlohmann::json::parse(r.body), nlohmann::json::parse(R"({
    "kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":0,
    "propagationPolicy":"Foreground",
    "preconditions":{"uid":"u-1","resourceVersion":"42"},"dryRun":["All"]})"));
}

// Against kcache serve: the semantics a controller relies on.
TEST(RestClientWriteTest, WritesAgainstServeFollowTheApiserversRules) {
  ServeFixture f(testing::QuietCluster(0));
  const ResourceRef cms = ServeFixture::ConfigMaps("default");
  auto created = f.client->Create(cms, ServeFixture::ConfigMapJson("a", "1"));
  ASSERT_OK(created);
  EXPECT_EQ((*created)->namespace_(), "default");
  auto dup = f.client->Create(cms, ServeFixture::ConfigMapJson("a", "1"));
  EXPECT_TRUE(dup.status().IsAlreadyExists()) << dup.status();

  // Update with the current resourceVersion succeeds; with the old one it
  // conflicts.
  auto doc = nlohmann::json::parse((*created)->json());
  doc["data"]["k"] = "2";
  auto updated = f.client->Update(cms, doc.dump());
  ASSERT_OK(updated);
  EXPECT_NE((*updated)->resource_version(), (*created)->resource_version());
  auto stale = f.client->Update(cms, doc.dump());
  EXPECT_TRUE(stale.status().IsConflict()) << stale.status();
  // Without a resourceVersion, an update overwrites.
  doc["metadata"].erase("resourceVersion");
  doc["data"]["k"] = "3";
  ASSERT_OK(f.client->Update(cms, doc.dump()));

  // Merge patch, JSON patch, and a patch with a stale resourceVersion.
  auto merged = f.client->Patch(cms, "a", PatchType::kMerge, R"({"data":{"m":"x"}})");
  ASSERT_OK(merged);
  EXPECT_EQ(*(*merged)->FieldValue("data.m"), "x");
  EXPECT_EQ(*(*merged)->FieldValue("data.k"), "3");
  auto patched = f.client->Patch(cms, "a", PatchType::kJson,
                                 R"([{"op":"replace","path":"/data/k","value":"4"}])");
  ASSERT_OK(patched);
  EXPECT_EQ(*(*patched)->FieldValue("data.k"), "4");
  auto failed_test = f.client->Patch(cms, "a", PatchType::kJson,
                                     R"([{"op":"test","path":"/data/k","value":"no"}])");
  EXPECT_EQ(failed_test.status().code(), StatusCode::kInvalidArgument) << failed_test.status();
  auto stale_patch =
      f.client->Patch(cms, "a", PatchType::kMerge,
                      R"({"metadata":{"resourceVersion":")" + (*created)->resource_version() +
                          R"("},"data":{"k":"5"}})");
  EXPECT_TRUE(stale_patch.status().IsConflict()) << stale_patch.status();
  // Strategic merge patches and server-side apply (built-in types); a
  // custom resource takes no strategic merge patch (415: Unimplemented).
  auto strategic = f.client->Patch(cms, "a", PatchType::kStrategicMerge, R"({"data":{"s":"y"}})");
  ASSERT_OK(strategic);
  EXPECT_EQ(*(*strategic)->FieldValue("data.s"), "y");
  EXPECT_EQ(*(*strategic)->FieldValue("data.k"), "4");
  auto applied = f.client->Patch(
      cms, "applied", PatchType::kApply,
      R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"applied"},"data":{"x":"1"}})",
      {.field_manager = "test"});
  ASSERT_OK(applied);
  EXPECT_EQ(*(*applied)->FieldValue("data.x"), "1");
  const ResourceRef widgets{{"demo.kcache.io", "v1", "widgets"}, true, "default"};
  auto custom = f.client->Patch(widgets, "w", PatchType::kStrategicMerge, "{}");
  EXPECT_EQ(custom.status().code(), StatusCode::kUnimplemented) << custom.status();

  // Delete: a stale precondition conflicts, then the object goes.
  auto got = f.client->Get(cms, "a");
  ASSERT_OK(got);
  EXPECT_TRUE(f.client->Delete(cms, "a", {.precondition_uid = "not-its-uid"}).IsConflict());
  ASSERT_OK(f.client->Delete(cms, "a", {.precondition_uid = (*got)->meta().uid}));
  EXPECT_TRUE(f.client->Get(cms, "a").status().IsNotFound());
  EXPECT_TRUE(f.client->Delete(cms, "a").IsNotFound());
}

TEST(RestClientWriteTest, StatusWritesOnServeChangeOnlyTheStatus) {
  ServeFixture f(testing::QuietCluster(0));
  const ResourceRef cms = ServeFixture::ConfigMaps("default");
  auto created = f.client->Create(cms, ServeFixture::ConfigMapJson("a", "1"));
  ASSERT_OK(created);
  auto doc = nlohmann::json::parse((*created)->json());
  doc["data"]["k"] = "ignored";
  doc["status"] = {{"phase", "Ready"}};
  auto updated = f.client->UpdateStatus(cms, doc.dump());
  ASSERT_OK(updated);
  EXPECT_EQ(*(*updated)->FieldValue("status.phase"), "Ready");
  EXPECT_EQ(*(*updated)->FieldValue("data.k"), "1");
  auto patched = f.client->Patch(cms, "a", PatchType::kMerge,
                                 R"({"data":{"k":"ignored"},"status":{"phase":"Done"}})",
                                 {.subresource = "status"});
  ASSERT_OK(patched);
  EXPECT_EQ(*(*patched)->FieldValue("status.phase"), "Done");
  EXPECT_EQ(*(*patched)->FieldValue("data.k"), "1");
}

}  // namespace
}  // namespace kcache
