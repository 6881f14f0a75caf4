// SPDX-License-Identifier: Apache-2.0

// kcache serve seen through the project's REST client: lists, pagination,
// watches (selectors, bookmarks, streaming lists, 410), writes, Status
// errors, every fault flag, many watches and a clean stop.
#include "tools/kcache/testcluster/api.h"

#include <sys/socket.h>

#include <atomic>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kcache/rest_client.h"
#include "testing/serve_fixture.h"
#include "testing/status_matchers.h"
#include "tools/kcache/apiserver/api_serve.h"
#include "tools/kcache/testcluster/server.h"

namespace kcache::serve {
namespace {

using namespace std::chrono_literals;

ResourceRef Pods(const std::string& ns = "") { return {{"", "v1", "pods"}, true, ns}; }
ResourceRef ConfigMaps(const std::string& ns) { return {{"", "v1", "configmaps"}, true, ns}; }
ResourceRef Nodes() { return {{"", "v1", "nodes"}, false, ""}; }
ResourceRef Widgets(const std::string& ns = "") {
  return {{"demo.kcache.io", "v1", "widgets"}, true, ns};
}

ServeOptions Quiet(int pods = 200) { return testing::QuietCluster(pods); }

struct Fixture {
  explicit Fixture(ServeOptions o, RestClientOptions client_options = {}) {
    auto s = Server::Start(o);
    EXPECT_OK(s) << s.status();
    server = std::move(s).value();
    RestConfig config;
    config.server = server->url();
    auto c = RestClient::Create(config, client_options);
    EXPECT_OK(c) << c.status();
    client = std::move(c).value();
  }
  void CreateConfigMap(const std::string& ns, const std::string& name,
                       const std::string& labels = R"({"app":"a"})",
                       const std::string& value = "v") {
    auto r = client->Do("POST", "/api/v1/namespaces/" + ns + "/configmaps",
                        R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name +
                            R"(","labels":)" + labels + R"(},"data":{"k":")" + value + R"("}})");
    ASSERT_OK(r) << r.status();
  }
  std::unique_ptr<Server> server;
  std::shared_ptr<RestClient> client;
};

// Events until the stream ends or `n` were read.
std::vector<WatchEvent> Read(WatchStream& s, size_t n) {
  std::vector<WatchEvent> out;
  while (out.size() < n) {
    auto e = s.Next();
    if (!e.ok() || !e->has_value()) break;
    out.push_back(std::move(**e));
  }
  return out;
}

std::string Types(const std::vector<WatchEvent>& events) {
  std::string out;
  for (const auto& e : events) {
    out += (out.empty() ? "" : " ") + std::string(WatchEventTypeName(e.type)) + ":" +
           (e.object ? e.object->name() : "");
  }
  return out;
}

TEST(ServeApiTest, ServesTheSyntheticClusterWithConsistentPages) {
  Fixture f(Quiet(1000));
  auto all = f.client->List(Pods(), {});
  ASSERT_OK(all) << all.status();
  EXPECT_EQ(all->items.size(), 1000u);
  auto nodes = f.client->List(Nodes(), {});
  ASSERT_OK(nodes) << nodes.status();
  EXPECT_EQ(nodes->items.size(), 10u);
  auto widgets = f.client->List(Widgets("ns-1"), {});
  ASSERT_OK(widgets) << widgets.status();
  // One Widget per Deployment of 20 pods; Deployment i lives in ns-<i % 4>.
  EXPECT_EQ(widgets->items.size(), 13u);
  EXPECT_EQ(widgets->items[0]->kind(), "Widget");

  // Pages of 300 at the first page's resourceVersion, while pods change.
  auto first = f.client->List(Pods(), {.limit = 300});
  ASSERT_OK(first) << first.status();
  EXPECT_EQ(first->remaining_item_count, 700);
  ASSERT_OK(f.client->Do("DELETE", "/api/v1/namespaces/" + all->items[999]->namespace_() +
                                       "/pods/" + all->items[999]->name()));
  std::vector<std::string> names;
  for (const auto& o : first->items) names.push_back(o->name());
  std::string token = first->continue_token;
  int64_t left = 700;  // remainingItemCount of each page, from the first page's state
  while (!token.empty()) {
    auto page = f.client->List(Pods(), {.limit = 300, .continue_token = token});
    ASSERT_OK(page) << page.status();
    EXPECT_EQ(page->resource_version, first->resource_version);
    left -= static_cast<int64_t>(page->items.size());
    if (!page->continue_token.empty()) {
      EXPECT_EQ(page->remaining_item_count, left);
    }
    for (const auto& o : page->items) names.push_back(o->name());
    token = page->continue_token;
  }
  ASSERT_EQ(names.size(), 1000u) << "the deletion after the first page is not seen";
  for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(names[i], all->items[i]->name());

  // resourceVersion=0 is served whole, as from the watch cache.
  auto any = f.client->List(Pods(), {.resource_version = "0", .limit = 10});
  ASSERT_OK(any) << any.status();
  EXPECT_EQ(any->items.size(), 999u);
  EXPECT_TRUE(any->continue_token.empty());
}

TEST(ServeApiTest, SelectorsFilterListsAndWatchesTurnTransitionsIntoAddsAndDeletes) {
  Fixture f(Quiet());
  auto canary = f.client->List(Pods(), {.label_selector = "track=canary"});
  ASSERT_OK(canary) << canary.status();
  auto all = f.client->List(Pods(), {});
  ASSERT_OK(all);
  size_t expect = 0;
  for (const auto& o : all->items) expect += o->labels().at("track") == "canary";
  EXPECT_EQ(canary->items.size(), expect);
  auto on_node =
      f.client->List(Pods(), {.field_selector = "spec.nodeName=node-3,metadata.namespace=ns-1"});
  ASSERT_OK(on_node) << on_node.status();
  size_t on_node_expect = 0;
  for (const auto& o : all->items) {
    on_node_expect += o->namespace_() == "ns-1" && *o->FieldValue("spec.nodeName") == "node-3";
  }
  EXPECT_GT(on_node_expect, 0u);
  EXPECT_EQ(on_node->items.size(), on_node_expect);
  for (const auto& o : on_node->items) EXPECT_EQ(o->namespace_(), "ns-1");
  auto by_name =
      f.client->List(Pods(), {.field_selector = "metadata.name=" + all->items[7]->name()});
  ASSERT_OK(by_name) << by_name.status();
  ASSERT_EQ(by_name->items.size(), 1u);
  EXPECT_EQ(by_name->items[0]->name(), all->items[7]->name());

  f.CreateConfigMap("ns-0", "x", R"({"app":"a"})");
  auto w = f.client->Watch(ConfigMaps("ns-0"),
                           {.label_selector = "app=b", .resource_version = all->resource_version});
  ASSERT_OK(w) << w.status();
  auto put = [&](const std::string& app, const std::string& value) {
    auto cur = f.client->Get("/api/v1/namespaces/ns-0/configmaps/x");
    ASSERT_OK(cur);
    auto j = nlohmann::json::parse(*cur);
    j["metadata"]["labels"]["app"] = app;
    j["data"]["k"] = value;
    ASSERT_OK(f.client->Do("PUT", "/api/v1/namespaces/ns-0/configmaps/x", j.dump()));
  };
  put("b", "1");  // starts matching: ADDED
  put("b", "2");  // MODIFIED
  put("c", "3");  // stops matching: DELETED, with this change's resourceVersion
  auto events = Read(**w, 3);
  EXPECT_EQ(Types(events), "ADDED:x MODIFIED:x DELETED:x");
  ASSERT_EQ(events.size(), 3u);
  auto now = f.client->Get("/api/v1/namespaces/ns-0/configmaps/x");
  ASSERT_OK(now);
  EXPECT_EQ(events[2].object->resource_version(),
            nlohmann::json::parse(*now)["metadata"]["resourceVersion"]);
  EXPECT_EQ(events[2].object->labels().at("app"), "b") << "the last state that matched";
}

// As kube-apiserver: a watch of one namespace's objects carries no event of
// another namespace (the list and watch front end filters both the same).
TEST(ServeApiTest, ANamespacesWatchSeesOnlyItsNamespace) {
  Fixture f(Quiet());
  auto list = f.client->List(ConfigMaps("ns-1"), {});
  ASSERT_OK(list) << list.status();
  auto w = f.client->Watch(ConfigMaps("ns-1"), {.resource_version = list->resource_version});
  ASSERT_OK(w) << w.status();
  f.CreateConfigMap("ns-0", "elsewhere");
  f.CreateConfigMap("ns-1", "here");
  f.CreateConfigMap("ns-2", "elsewhere-too");
  f.CreateConfigMap("ns-1", "here-too");
  auto events = Read(**w, 2);
  EXPECT_EQ(Types(events), "ADDED:here ADDED:here-too");
  for (const WatchEvent& e : events) EXPECT_EQ(e.object->namespace_(), "ns-1");
}

// KEP-5958: a client that drops managedFields asks the server to leave them
// out, and kcache serve does, in lists, watches and gets: the client receives
// fewer bytes for the same objects.
TEST(ServeApiTest, AClientThatDropsManagedFieldsIsSentObjectsWithoutThem) {
  Fixture f(Quiet(300));
  RestConfig config;
  config.server = f.server->url();
  config.disable_compression = true;  // bytes received are the JSON's
  RestClientOptions dropping;
  dropping.parse.drop_managed_fields = true;
  auto plain = RestClient::Create(config);
  auto lean = RestClient::Create(config, dropping);
  ASSERT_OK(plain);
  ASSERT_OK(lean);

  auto full = (*plain)->List(Pods(), {});
  auto dropped = (*lean)->List(Pods(), {});
  ASSERT_OK(full) << full.status();
  ASSERT_OK(dropped) << dropped.status();
  ASSERT_EQ(full->items.size(), 300u);
  ASSERT_EQ(dropped->items.size(), 300u);
  for (size_t i = 0; i < 300; ++i) {
    EXPECT_EQ(full->items[i]->name(), dropped->items[i]->name());
    EXPECT_NE(full->items[i]->json().find("\"managedFields\""), std::string::npos);
    EXPECT_EQ(dropped->items[i]->json().find("\"managedFields\""), std::string::npos);
  }
  const uint64_t full_list = (*plain)->BytesReceived(), lean_list = (*lean)->BytesReceived();
  // The synthetic pods' managedFields are about a third of their JSON.
  EXPECT_LT(lean_list * 4, full_list * 3) << lean_list << " against " << full_list << " bytes";

  // A watch's initial events, and a get, the same way. Each stream is read
  // to its end (a second's timeout), so that both clients received all of it.
  auto read_watch = [&](RestClient& c) {
    auto w = c.Watch(Pods("ns-0"), {.timeout_seconds = 1});
    EXPECT_OK(w) << w.status();
    return w.ok() ? Read(**w, 1000) : std::vector<WatchEvent>();
  };
  auto full_events = read_watch(**plain);
  auto lean_events = read_watch(**lean);
  ASSERT_GT(full_events.size(), 10u);
  ASSERT_EQ(lean_events.size(), full_events.size());
  const uint64_t full_watch = (*plain)->BytesReceived() - full_list;
  const uint64_t lean_watch = (*lean)->BytesReceived() - lean_list;
  EXPECT_LT(lean_watch * 4, full_watch * 3) << lean_watch << " against " << full_watch << " bytes";
  const std::string path = "/api/v1/namespaces/" + std::string(full->items[0]->namespace_()) +
                           "/pods/" + std::string(full->items[0]->name());
  auto got_full = (*plain)->Get(path);
  auto got_lean = (*lean)->Get(path);
  ASSERT_OK(got_full);
  ASSERT_OK(got_lean);
  EXPECT_NE(got_full->find("\"managedFields\""), std::string::npos);
  EXPECT_EQ(got_lean->find("\"managedFields\""), std::string::npos) << *got_lean;
  EXPECT_EQ(nlohmann::json::parse(*got_lean)["metadata"]["uid"],
            nlohmann::json::parse(*got_full)["metadata"]["uid"]);
}

TEST(ServeApiTest, TheFirstJsonMediaRangeDecidesWhetherManagedFieldsAreDropped) {
  EXPECT_TRUE(AcceptDropsManagedFields("application/json;drop=metadata.managedFields"));
  EXPECT_TRUE(AcceptDropsManagedFields(" application/json ; drop=metadata.managedFields "));
  EXPECT_TRUE(
      AcceptDropsManagedFields("application/json;drop=metadata.managedFields, application/json"));
  EXPECT_TRUE(AcceptDropsManagedFields(
      "application/json;drop=metadata.annotations+metadata.managedFields"));
  EXPECT_TRUE(AcceptDropsManagedFields("*/*;drop=metadata.managedFields"));
  // A range kcache serve cannot answer is passed over.
  EXPECT_TRUE(AcceptDropsManagedFields(
      "application/vnd.kubernetes.protobuf, application/json;drop=metadata.managedFields"));
  EXPECT_FALSE(AcceptDropsManagedFields(""));
  EXPECT_FALSE(AcceptDropsManagedFields("application/json"));
  EXPECT_FALSE(AcceptDropsManagedFields("application/json;drop=metadata.annotations"));
  EXPECT_FALSE(AcceptDropsManagedFields("application/json;drop=metadata.managedFieldsX"));
  EXPECT_FALSE(
      AcceptDropsManagedFields("application/json, application/json;drop=metadata.managedFields"));
}

TEST(ServeApiTest, WritesFollowTheApiserversRules) {
  Fixture f(Quiet(0));
  f.CreateConfigMap("default", "a");
  auto dup = f.client->Do("POST", "/api/v1/namespaces/default/configmaps",
                          R"({"metadata":{"name":"a"},"data":{}})");
  EXPECT_EQ(dup.status().code(), StatusCode::kAlreadyExists) << dup.status();
  ASSERT_NE(dup.status().http_error(), nullptr);
  EXPECT_EQ(dup.status().http_error()->http_code, 409);
  EXPECT_NE(dup.status().message().find("configmaps \"a\" already exists"), std::string::npos)
      << dup.status();

  auto missing_ns =
      f.client->Do("POST", "/api/v1/namespaces/nope/configmaps", R"({"metadata":{"name":"a"}})");
  EXPECT_TRUE(missing_ns.status().IsNotFound()) << missing_ns.status();

  auto got = f.client->Get("/api/v1/namespaces/default/configmaps/a");
  ASSERT_OK(got);
  auto obj = nlohmann::json::parse(*got);
  EXPECT_FALSE(obj["metadata"]["uid"].get<std::string>().empty());
  EXPECT_FALSE(obj["metadata"]["creationTimestamp"].get<std::string>().empty());
  std::string rv = obj["metadata"]["resourceVersion"];

  // An update that changes nothing keeps the resourceVersion.
  auto same = f.client->Do("PUT", "/api/v1/namespaces/default/configmaps/a", *got);
  ASSERT_OK(same) << same.status();
  EXPECT_EQ(nlohmann::json::parse(*same)["metadata"]["resourceVersion"], rv);
  obj["data"]["k"] = "changed";
  auto changed = f.client->Do("PUT", "/api/v1/namespaces/default/configmaps/a", obj.dump());
  ASSERT_OK(changed) << changed.status();
  EXPECT_NE(nlohmann::json::parse(*changed)["metadata"]["resourceVersion"], rv);
  // The old resourceVersion now conflicts.
  auto stale = f.client->Do("PUT", "/api/v1/namespaces/default/configmaps/a", obj.dump());
  ASSERT_NE(stale.status().http_error(), nullptr) << stale.status();
  EXPECT_EQ(stale.status().http_error()->http_code, 409);
  EXPECT_EQ(stale.status().http_error()->reason, "Conflict");

  auto renamed = f.client->Do("PUT", "/api/v1/namespaces/default/configmaps/b", *changed);
  ASSERT_NE(renamed.status().http_error(), nullptr);
  EXPECT_EQ(renamed.status().http_error()->http_code, 400);
  auto bad_json = f.client->Do("POST", "/api/v1/namespaces/default/configmaps", "{not json");
  ASSERT_NE(bad_json.status().http_error(), nullptr);
  EXPECT_EQ(bad_json.status().http_error()->http_code, 400);
  auto no_name = f.client->Do("POST", "/api/v1/namespaces/default/configmaps", "{}");
  ASSERT_NE(no_name.status().http_error(), nullptr);
  EXPECT_EQ(no_name.status().http_error()->http_code, 422);

  ASSERT_OK(f.client->Do("DELETE", "/api/v1/namespaces/default/configmaps/a"));
  auto gone = f.client->Get("/api/v1/namespaces/default/configmaps/a");
  EXPECT_TRUE(gone.status().IsNotFound());
  EXPECT_NE(gone.status().message().find("configmaps \"a\" not found"), std::string::npos)
      << gone.status();
}

TEST(ServeApiTest, BadRequestsGetStatusErrors) {
  RestClientOptions no_retries;
  no_retries.max_retries = 0;  // the 504 carries Retry-After
  Fixture f(Quiet(10), no_retries);
  struct Case {
    std::string path;
    int code;
    std::string reason;
  } cases[] = {
      {"/api/v1/pods?labelSelector=a%20in", 400, "BadRequest"},
      {"/api/v1/pods?fieldSelector=spec.foo%3Dx", 400, "BadRequest"},
      {"/api/v1/pods?resourceVersionMatch=Exact", 422, "Invalid"},
      {"/api/v1/pods?resourceVersion=1&resourceVersionMatch=Sometimes", 422, "Invalid"},
      {"/api/v1/pods?watch=true&resourceVersionMatch=NotOlderThan", 422, "Invalid"},
      {"/api/v1/pods?watch=true&sendInitialEvents=true", 422, "Invalid"},
      {"/api/v1/pods?continue=garbage", 400, "BadRequest"},
      {"/api/v1/pods?resourceVersion=999999999", 504, "Timeout"},
      {"/api/v1/namespaces/ns-0/pods/nope", 404, "NotFound"},
  };
  for (const Case& c : cases) {
    auto r = f.client->Get(c.path);
    ASSERT_FALSE(r.ok()) << c.path;
    ASSERT_NE(r.status().http_error(), nullptr) << c.path << ": " << r.status();
    EXPECT_EQ(r.status().http_error()->http_code, c.code) << c.path << ": " << r.status();
    EXPECT_EQ(r.status().http_error()->reason, c.reason) << c.path << ": " << r.status();
  }
  auto unknown = f.client->Get("/api/v1/gizmos");
  EXPECT_TRUE(unknown.status().IsNotFound()) << unknown.status();
  EXPECT_NE(std::string(unknown.status().message()).find("404 page not found"), std::string::npos)
      << unknown.status();
  auto patch = f.client->Do("PATCH", "/api/v1/namespaces/ns-0/pods/x", "{}");
  EXPECT_TRUE(patch.status().IsNotFound()) << patch.status();
  // Server-side apply needs a field manager (422, as kube-apiserver); a
  // custom resource takes no strategic merge patch (415).
  auto unmanaged = f.client->Do("PATCH", "/api/v1/namespaces/ns-0/configmaps/x", "{}",
                                "application/apply-patch+yaml");
  ASSERT_NE(unmanaged.status().http_error(), nullptr) << unmanaged.status();
  EXPECT_EQ(unmanaged.status().http_error()->http_code, 422) << unmanaged.status();
  EXPECT_NE(std::string(unmanaged.status().message()).find("fieldManager: Required value"),
            std::string::npos)
      << unmanaged.status();
  auto strategic = f.client->Do("PATCH", "/apis/demo.kcache.io/v1/namespaces/ns-0/widgets/x", "{}",
                                "application/strategic-merge-patch+json");
  ASSERT_NE(strategic.status().http_error(), nullptr) << strategic.status();
  EXPECT_EQ(strategic.status().http_error()->http_code, 415) << strategic.status();
  // A dry run is refused, not carried out.
  auto dry = f.client->Do("POST", "/api/v1/namespaces/ns-0/configmaps?dryRun=All",
                          R"({"metadata":{"name":"dry"}})");
  ASSERT_NE(dry.status().http_error(), nullptr) << dry.status();
  EXPECT_EQ(dry.status().http_error()->http_code, 400) << dry.status();
  EXPECT_TRUE(f.client->Get("/api/v1/namespaces/ns-0/configmaps/dry").status().IsNotFound());
  // Deleting a collection is not served.
  auto delete_all = f.client->Do("DELETE", "/api/v1/namespaces/ns-0/pods");
  ASSERT_NE(delete_all.status().http_error(), nullptr) << delete_all.status();
  EXPECT_EQ(delete_all.status().http_error()->http_code, 405);
  auto other_subresource = f.client->Get("/api/v1/namespaces/ns-0/pods/x/log");
  EXPECT_TRUE(other_subresource.status().IsNotFound()) << other_subresource.status();
}

TEST(ServeApiTest, WatchesResumeExpireAndSendBookmarks) {
  ServeOptions o = Quiet(0);
  o.history = 3;
  o.api.bookmark_interval = 100ms;
  Fixture f(o);
  auto list = f.client->List(ConfigMaps("default"), {});
  ASSERT_OK(list);
  auto w = f.client->Watch(ConfigMaps("default"), {.resource_version = list->resource_version,
                                                   .allow_watch_bookmarks = true});
  ASSERT_OK(w) << w.status();
  f.CreateConfigMap("default", "a");
  std::vector<WatchEvent> events;
  while (events.size() < 2) {
    auto e = (*w)->Next();
    ASSERT_TRUE(e.ok() && e->has_value()) << e.status();
    events.push_back(std::move(**e));
  }
  EXPECT_EQ(events[0].type, WatchEventType::kAdded);
  EXPECT_EQ(events[1].type, WatchEventType::kBookmark) << "a quiet watch gets bookmarks";
  EXPECT_GE(std::stoull(events[1].object->resource_version()),
            std::stoull(events[0].object->resource_version()));

  // Beyond the history: 410 inside the stream.
  for (int i = 0; i < 4; ++i) f.CreateConfigMap("default", "b" + std::to_string(i));
  auto old = f.client->Watch(ConfigMaps("default"), {.resource_version = list->resource_version});
  ASSERT_OK(old) << old.status();
  auto e = (*old)->Next();
  EXPECT_TRUE(e.status().IsExpired()) << e.status();
  EXPECT_NE(std::string(e.status().message()).find("too old resource version"), std::string::npos);

  // A continue token from before a compaction is expired, with a token to go on.
  auto page = f.client->List(ConfigMaps("default"), {.limit = 2});
  ASSERT_OK(page);
  f.CreateConfigMap("default", "later");
  f.server->state().Compact();
  auto next =
      f.client->List(ConfigMaps("default"), {.limit = 2, .continue_token = page->continue_token});
  EXPECT_TRUE(next.status().IsExpired()) << next.status();
  ASSERT_NE(next.status().http_error(), nullptr);
  EXPECT_FALSE(next.status().http_error()->continue_token.empty());
}

// The row that made relists loop against kube-apiserver: a resourceVersion
// past the watch window but inside the list window (etcd's, until a
// compaction) gets 410 on a watch, its state itself from a paginated LIST
// (Exact) and the current state from a LIST NotOlderThan or an unpaginated
// one. After a compaction the paginated LIST gets 410 too.
TEST(ServeApiTest, AResourceVersionPastTheWatchWindowIsStillListedExactly) {
  ServeOptions o = Quiet(0);
  o.history = 3;
  o.list_history = 100;
  Fixture f(o);
  f.CreateConfigMap("default", "a");
  auto first = f.client->List(ConfigMaps("default"), {});
  ASSERT_OK(first);
  const std::string n = first->resource_version;
  for (int i = 0; i < 5; ++i) f.CreateConfigMap("default", "b" + std::to_string(i));
  auto w = f.client->Watch(ConfigMaps("default"), {.resource_version = n});
  ASSERT_OK(w) << w.status();
  EXPECT_TRUE((*w)->Next().status().IsExpired());
  auto exact = f.client->List(ConfigMaps("default"), {.resource_version = n, .limit = 500});
  ASSERT_OK(exact) << exact.status();
  EXPECT_EQ(exact->resource_version, n);
  EXPECT_EQ(exact->items.size(), 1u);
  for (ListOptions newer :
       {ListOptions{.resource_version = n, .resource_version_match = "NotOlderThan", .limit = 500},
        ListOptions{.resource_version = n}}) {
    auto now = f.client->List(ConfigMaps("default"), newer);
    ASSERT_OK(now) << now.status();
    EXPECT_GT(std::stoull(now->resource_version), std::stoull(n));
    EXPECT_EQ(now->items.size(), 6u);
  }
  f.server->state().Compact();
  auto gone = f.client->List(ConfigMaps("default"), {.resource_version = n, .limit = 500});
  EXPECT_TRUE(gone.status().IsExpired()) << gone.status();
}

TEST(ServeApiTest, StreamingListEndsItsInitialEventsWithAnAnnotatedBookmark) {
  Fixture f(Quiet(100));
  auto w = f.client->Watch(Pods("ns-2"), {.resource_version_match = "NotOlderThan",
                                          .allow_watch_bookmarks = true,
                                          .send_initial_events = true});
  ASSERT_OK(w) << w.status();
  size_t added = 0;
  for (;;) {
    auto e = (*w)->Next();
    ASSERT_TRUE(e.ok() && e->has_value()) << e.status();
    if ((*e)->IsInitialEventsEnd()) break;
    ASSERT_EQ((*e)->type, WatchEventType::kAdded);
    ++added;
  }
  auto list = f.client->List(Pods("ns-2"), {});
  ASSERT_OK(list);
  EXPECT_EQ(added, list->items.size());
}

TEST(ServeApiTest, FaultFlagsDoWhatTheySay) {
  ServeOptions o = Quiet(300);
  auto set = [](const char* spec) { return RequestSet::Parse("x", spec).value(); };
  // Requests, numbered in order: 1 throttled then retried as 2; 3 expired;
  // 4 internal error; 5 cut list; 6 malformed list; 7 cut watch, 8 a
  // create; 9 malformed watch, 10 a create.
  o.api.faults.throttle = set("1");
  o.api.faults.expire = set("3");
  o.api.faults.internal_error = set("4");
  o.api.faults.cut = set("5,7");
  o.api.faults.malformed = set("6,9");
  RestClientOptions co;
  co.request_timeout = 2s;
  Fixture f(o, co);
  auto throttled = f.client->List(Pods("ns-0"), {});
  EXPECT_OK(throttled) << "a 429 with Retry-After is retried: " << throttled.status();
  auto expired = f.client->List(Pods("ns-0"), {});
  EXPECT_TRUE(expired.status().IsExpired()) << expired.status();
  auto internal = f.client->List(Pods("ns-0"), {});
  ASSERT_NE(internal.status().http_error(), nullptr) << internal.status();
  EXPECT_EQ(internal.status().http_error()->http_code, 500);
  auto cut = f.client->List(Pods(), {});
  EXPECT_FALSE(cut.ok());
  auto malformed = f.client->List(Pods(), {});
  EXPECT_FALSE(malformed.ok());
  EXPECT_NE(std::string(malformed.status().message()).find("byte"), std::string::npos)
      << malformed.status();

  auto rv = f.server->state().current_rv();
  for (int i = 0; i < 2; ++i) {
    auto w = f.client->Watch(ConfigMaps("default"), {.resource_version = std::to_string(rv)});
    ASSERT_OK(w) << w.status();
    f.CreateConfigMap("default", "c" + std::to_string(i));
    auto e = (*w)->Next();
    EXPECT_FALSE(e.ok()) << "watch " << i;
    if (i == 0) {
      EXPECT_NE(std::string(e.status().message()).find("inside an event"), std::string::npos)
          << e.status();
    } else {
      EXPECT_TRUE(e.status().IsInvalidArgument()) << e.status();
    }
    rv = f.server->state().current_rv();
  }
  std::string metrics = f.server->api().Metrics();
  for (auto [kind, n] : {std::pair{"throttle", 1},
                         {"expire", 1},
                         {"internal-error", 1},
                         {"cut", 2},
                         {"malformed", 2}}) {
    EXPECT_NE(metrics.find("fault=\"" + std::string(kind) + "\"} " + std::to_string(n)),
              std::string::npos)
        << kind << "\n"
        << metrics;
  }
}

TEST(ServeApiTest, StalledAndSlowResponses) {
  ServeOptions o = Quiet(50);
  o.api.faults.stall = RequestSet::Parse("x", "1").value();
  RestClientOptions co;
  co.request_timeout = 1s;
  co.max_retries = 0;
  Fixture f(o, co);
  auto t0 = std::chrono::steady_clock::now();
  auto stalled = f.client->List(Pods(), {});
  EXPECT_FALSE(stalled.ok());
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 900ms) << stalled.status();

  ServeOptions slow = Quiet(20);
  slow.api.faults.slow_bytes_per_second = 100 << 10;  // 20 pods of 6.5 KB: over a second
  Fixture g(slow);
  t0 = std::chrono::steady_clock::now();
  auto list = g.client->List(Pods(), {});
  ASSERT_OK(list) << list.status();
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 1s);

  // The rate is the one asked for however the response is cut into pieces:
  // 100 pods (about 650 KB) at 1 MiB/s take well under 2.5 s. (A pause of a
  // tenth of a second per piece made it 10 s and more, whatever the rate.)
  ServeOptions faster = Quiet(100);
  faster.api.faults.slow_bytes_per_second = 1 << 20;
  Fixture h(faster);
  t0 = std::chrono::steady_clock::now();
  auto many = h.client->List(Pods(), {});
  ASSERT_OK(many) << many.status();
  auto took = std::chrono::steady_clock::now() - t0;
  size_t bytes = 0;
  for (const ObjectPtr& p : many->items) bytes += p->byte_size();
  const auto due = std::chrono::milliseconds(bytes * 1000 / (1 << 20));
  EXPECT_LT(took, 3 * due + 500ms) << bytes << " bytes";
}

TEST(ServeApiTest, ManyWatchesAndACleanStop) {
  ServeOptions o = Quiet(100);
  o.churn = {5, 50, 5, 5};
  Fixture f(o);
  constexpr int kWatches = 100;
  std::vector<std::unique_ptr<WatchStream>> streams;
  for (int i = 0; i < kWatches; ++i) {
    auto w = f.client->Watch(Pods(), {.resource_version = "0", .allow_watch_bookmarks = true});
    ASSERT_OK(w) << w.status();
    streams.push_back(std::move(w).value());
  }
  std::atomic<int> ended{0}, saw_changes{0};
  std::vector<std::thread> readers;
  for (auto& s : streams) {
    readers.emplace_back([&, s = s.get()] {
      size_t n = 0;
      for (;;) {
        auto e = s->Next();
        if (!e.ok() || !e->has_value()) break;
        if (++n == 101) ++saw_changes;  // past the 100 initial ADDED events
      }
      ++ended;
    });
  }
  while (saw_changes < kWatches) std::this_thread::sleep_for(10ms);
  EXPECT_NE(f.server->api().Metrics().find("kcache_serve_watches 100"), std::string::npos);
  f.server->Stop();
  for (auto& t : readers) t.join();
  EXPECT_EQ(ended, kWatches) << "every watch ends when the server stops";
}

}  // namespace
}  // namespace kcache::serve
