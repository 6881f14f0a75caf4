// SPDX-License-Identifier: Apache-2.0

// The REST client against a real kube-apiserver (v1.20 from Debian's
// packages, see tests/cluster/up): pagination, watches with bookmarks and
// 410, errors, writes of every kind, discovery, and every form of connection
// config.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "client/http_error.h"
#include "integration/cluster.h"
#include "kcache/discovery.h"
#include "kcache/object_builder.h"
#include "kcache/owner.h"
#include "kcache/rest_client.h"
#include "testing/command.h"
#include "testing/process_stats.h"
#include "testing/status_matchers.h"
#include "testing/temp_dir.h"
#include "util/base64.h"

namespace kcache {
namespace {

using testing::Cluster;
using testing::SocketCount;

ResourceRef ConfigMaps(const std::string& ns) { return {{"", "v1", "configmaps"}, true, ns}; }
ResourceRef Pods(const std::string& ns) { return {{"", "v1", "pods"}, true, ns}; }

void CreateConfigMap(RestClient& c, const std::string& ns, const std::string& name,
                     const std::string& value = "v") {
  auto st = c.Do("POST", "/api/v1/namespaces/" + ns + "/configmaps",
                 R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name +
                     R"(","labels":{"app":"demo"}},"data":{"k":")" + value + R"("}})");
  ASSERT_OK(st) << st.status();
}

void CreatePod(RestClient& c, const std::string& ns, const std::string& name) {
  auto st =
      c.Do("POST", "/api/v1/namespaces/" + ns + "/pods",
           R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name +
               R"(","labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"x"}]}})");
  ASSERT_OK(st) << st.status();
}

// A kcache command line, stdout and stderr together.
std::string KcacheCommand(const std::string& args) {
  const char* bin = std::getenv("KCACHE_BIN");
  EXPECT_NE(bin, nullptr) << "KCACHE_BIN is not set";
  return std::string(bin ? bin : "kcache") + " " + args + " 2>&1";
}

std::string Names(const ObjectList& list) {
  std::string out;
  for (const auto& o : list.items) out += (out.empty() ? "" : ",") + o->name();
  return out;
}

TEST(RestIntegrationTest, ListPaginatesWithLimitAndContinue) {
  auto c = Cluster::Get().Admin();
  std::string ns = Cluster::Get().Namespace("paging");
  for (int i = 0; i < 25; ++i) CreateConfigMap(*c, ns, "cm-" + std::to_string(100 + i));

  auto page = c->List(ConfigMaps(ns), ListOptions{.limit = 10});
  ASSERT_OK(page) << page.status();
  EXPECT_EQ(page->items.size(), 10u);
  EXPECT_FALSE(page->continue_token.empty());
  EXPECT_EQ(page->remaining_item_count, 15);
  EXPECT_EQ(page->items[0]->kind(), "ConfigMap") << "items get the list's kind";
  EXPECT_EQ(page->items[0]->api_version(), "v1");

  auto all = c->Pager(ConfigMaps(ns), ListPagerOptions{.page_size = 10}).List({});
  ASSERT_OK(all) << all.status();
  EXPECT_TRUE(all->paginated);
  ASSERT_EQ(all->list.items.size(), 25u);
  EXPECT_EQ(all->list.items.front()->name(), "cm-100");
  EXPECT_EQ(all->list.items.back()->name(), "cm-124");
  EXPECT_FALSE(all->list.resource_version.empty());

  auto selected = c->List(ConfigMaps(ns), ListOptions{.label_selector = "app=demo",
                                                      .field_selector = "metadata.name=cm-107"});
  ASSERT_OK(selected) << selected.status();
  EXPECT_EQ(Names(*selected), "cm-107");

  // resourceVersion + resourceVersionMatch=NotOlderThan is accepted.
  auto not_older =
      c->List(ConfigMaps(ns), ListOptions{.resource_version = all->list.resource_version,
                                          .resource_version_match = "NotOlderThan"});
  ASSERT_OK(not_older) << not_older.status();
  EXPECT_EQ(not_older->items.size(), 25u);
}

// An expired continue token is a 410 Expired; the pager then lists once in
// full (client-go's FullListIfExpired).
TEST(RestIntegrationTest, ExpiredContinueToken) {
  auto c = Cluster::Get().Admin();
  std::string ns = Cluster::Get().Namespace("expiring");
  for (int i = 0; i < 6; ++i) CreateConfigMap(*c, ns, "cm-" + std::to_string(i));
  auto first = c->List(ConfigMaps(ns), ListOptions{.limit = 2});
  ASSERT_OK(first) << first.status();
  CreateConfigMap(*c, ns, "cm-late");
  Cluster::Get().CompactEtcd();
  auto next =
      c->List(ConfigMaps(ns), ListOptions{.limit = 2, .continue_token = first->continue_token});
  ASSERT_FALSE(next.ok());
  EXPECT_TRUE(next.status().IsExpired()) << next.status();
  ASSERT_NE(next.status().http_error(), nullptr);
  EXPECT_EQ(next.status().http_error()->http_code, 410);

  int pages = 0;
  ListPager pager(
      [&](const ListOptions& o) {
        if (pages++ == 1) {  // expire the token in the middle
          CreateConfigMap(*c, ns, "cm-later");
          Cluster::Get().CompactEtcd();
        }
        return c->List(ConfigMaps(ns), o);
      },
      ListPagerOptions{.page_size = 2});
  auto all = pager.List({});
  ASSERT_OK(all) << all.status();
  EXPECT_EQ(all->list.items.size(), 8u);
  EXPECT_EQ(pages, 3) << "first page, expired second page, one full list";
}

TEST(RestIntegrationTest, WatchDeliversChangesInOrder) {
  auto c = Cluster::Get().Admin();
  std::string ns = Cluster::Get().Namespace("watching");
  auto list = c->List(Pods(ns), {});
  ASSERT_OK(list) << list.status();
  auto watch = c->Watch(Pods(ns), ListOptions{.resource_version = list->resource_version,
                                              .timeout_seconds = 30,
                                              .allow_watch_bookmarks = true});
  ASSERT_OK(watch) << watch.status();
  CreatePod(*c, ns, "p1");
  ASSERT_OK(c->Do("PATCH", "/api/v1/namespaces/" + ns + "/pods/p1",
                  R"({"metadata":{"labels":{"tier":"x"}}})"));
  ASSERT_OK(c->Do("DELETE", "/api/v1/namespaces/" + ns + "/pods/p1?gracePeriodSeconds=0"));
  // A pod's deletion first sets its deletionTimestamp (MODIFIED), then
  // removes it (DELETED).
  std::vector<std::string> seen;
  std::string last_rv;
  while (seen.empty() || seen.back() != "DELETED p1") {
    auto ev = (*watch)->Next();
    ASSERT_OK(ev) << ev.status();
    ASSERT_TRUE(ev->has_value()) << "the stream ended early";
    if ((*ev)->type == WatchEventType::kBookmark) continue;
    seen.push_back(std::string(WatchEventTypeName((*ev)->type)) + " " + (*ev)->object->name());
    EXPECT_NE((*ev)->object->resource_version(), last_rv);
    last_rv = (*ev)->object->resource_version();
  }
  ASSERT_GE(seen.size(), 3u);
  EXPECT_EQ(seen.front(), "ADDED p1");
  for (size_t i = 1; i + 1 < seen.size(); ++i) EXPECT_EQ(seen[i], "MODIFIED p1");
  (*watch)->Cancel();
}

// The watch cache sends a bookmark shortly before the watch's deadline, if
// it has processed an event newer than the watch's start; the stream then
// ends cleanly.
TEST(RestIntegrationTest, BookmarksAndTimeoutSeconds) {
  auto c = Cluster::Get().Admin();
  std::string ns = Cluster::Get().Namespace("bookmarks");
  CreatePod(*c, ns, "b1");
  auto list = c->List(Pods(ns), {});
  ASSERT_OK(list);
  auto watch = c->Watch(Pods(ns), ListOptions{.resource_version = list->resource_version,
                                              .timeout_seconds = 8,
                                              .allow_watch_bookmarks = true});
  ASSERT_OK(watch) << watch.status();
  CreatePod(*c, ns, "b2");
  int bookmarks = 0;
  for (;;) {
    auto ev = (*watch)->Next();
    ASSERT_OK(ev) << ev.status();
    if (!*ev) break;  // the server's timeout: a clean end
    if ((*ev)->type == WatchEventType::kBookmark) {
      ++bookmarks;
      EXPECT_FALSE((*ev)->object->resource_version().empty());
    }
  }
  EXPECT_GE(bookmarks, 1);
}

TEST(RestIntegrationTest, WatchFromCompactedResourceVersionIsExpired) {
  auto c = Cluster::Get().Admin();
  std::string ns = Cluster::Get().Namespace("gone");
  CreateConfigMap(*c, ns, "a");
  auto list = c->List(ConfigMaps(ns), {});
  ASSERT_OK(list);
  CreateConfigMap(*c, ns, "b");
  CreateConfigMap(*c, ns, "c");
  Cluster::Get().CompactEtcd();
  auto watch = c->Watch(ConfigMaps(ns), ListOptions{.resource_version = list->resource_version,
                                                    .timeout_seconds = 10});
  Status st;
  if (!watch.ok()) {
    st = watch.status();
  } else {
    auto ev = (*watch)->Next();
    ASSERT_FALSE(ev.ok()) << "got an event from a compacted resourceVersion";
    st = ev.status();
  }
  EXPECT_TRUE(st.IsExpired()) << st;
  ASSERT_NE(st.http_error(), nullptr);
  EXPECT_EQ(st.http_error()->http_code, 410);
  EXPECT_EQ(st.http_error()->reason, "Expired");

  auto exact = c->List(ConfigMaps(ns), ListOptions{.resource_version = list->resource_version,
                                                   .resource_version_match = "Exact",
                                                   .limit = 1});
  EXPECT_TRUE(exact.status().IsExpired()) << exact.status();
}

TEST(RestIntegrationTest, CancelFromAnotherThread) {
  auto c = Cluster::Get().Admin();
  std::string ns = Cluster::Get().Namespace("cancel");
  auto watch = c->Watch(Pods(ns), ListOptions{.resource_version = "0", .timeout_seconds = 300});
  ASSERT_OK(watch);
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    (*watch)->Cancel();
  });
  auto ev = (*watch)->Next();
  t.join();
  EXPECT_EQ(ev.status().code(), StatusCode::kCancelled) << ev.status();
}

// Many watches share one HTTP/2 connection.
TEST(RestIntegrationTest, WatchesShareAConnection) {
  auto c = Cluster::Get().Admin();
  std::string ns = Cluster::Get().Namespace("sharing");
  ASSERT_OK(c->List(Pods(ns), {}));  // the connection exists
  int before = SocketCount();
  std::vector<std::unique_ptr<WatchStream>> watches;
  for (int i = 0; i < 20; ++i) {
    auto w = c->Watch(Pods(ns), ListOptions{.resource_version = "0", .timeout_seconds = 60});
    ASSERT_OK(w) << w.status();
    watches.push_back(*std::move(w));
  }
  int after = SocketCount();
  EXPECT_LE(after - before, 1) << "20 watches opened " << after - before << " sockets";
  CreatePod(*c, ns, "shared");
  for (auto& w : watches) {
    auto ev = w->Next();
    ASSERT_TRUE(ev.ok() && *ev) << ev.status();
    EXPECT_EQ((*ev)->object->name(), "shared");
  }
}

// A LIST from the watch cache at a resourceVersion it has not reached: the
// apiserver waits 3 s, then answers 504 with details.causes, which are kept
// and decide that the version is "too large".
TEST(RestIntegrationTest, TooLargeResourceVersionIsRecognisedByItsCause) {
  RestClientOptions o;
  o.max_retries = 0;  // the answer carries Retry-After: 1
  auto c = RestClient::Create(Cluster::Get().AdminConfig(), o);
  ASSERT_OK(c);
  auto list = (*c)->List(ResourceRef{{"", "v1", "secrets"}, true, "default"},
                         {.resource_version = "999999999"});
  ASSERT_FALSE(list.ok());
  const HttpError* h = list.status().http_error();
  ASSERT_NE(h, nullptr) << list.status();
  EXPECT_EQ(h->http_code, 504) << list.status();
  EXPECT_TRUE(h->HasCause("ResourceVersionTooLarge")) << list.status();
  EXPECT_TRUE(rest::IsTooLargeResourceVersion(list.status())) << list.status();
}

// LIST asks for gzip (as client-go does since 0.33): a list over 128 KiB
// comes compressed, and decodes to the same objects as an uncompressed one.
TEST(RestIntegrationTest, LargeListsComeCompressedUnlessDisabled) {
  auto& cl = Cluster::Get();
  auto admin = cl.Admin();
  std::string ns = cl.Namespace("gzip");
  const std::string value(1000, 'x');  // ~1.5 KB per object: ~300 KB in all
  for (int i = 0; i < 200; ++i) CreateConfigMap(*admin, ns, "cm-" + std::to_string(i), value);
  auto received = [&](bool disable, std::vector<std::string>* names) -> uint64_t {
    RestConfig config = cl.AdminConfig();
    config.disable_compression = disable;
    auto c = RestClient::Create(config);
    EXPECT_OK(c);
    auto list = (*c)->List(ConfigMaps(ns), {});
    EXPECT_OK(list) << list.status();
    for (const ObjectPtr& o : list->items) names->push_back(o->name());
    return (*c)->BytesReceived();
  };
  std::vector<std::string> gzip_names, plain_names;
  uint64_t gzip = received(false, &gzip_names);
  uint64_t plain = received(true, &plain_names);
  EXPECT_EQ(gzip_names.size(), 200u);
  EXPECT_EQ(gzip_names, plain_names);
  EXPECT_GT(plain, 128u * 1024);
  // 1,000 repeated bytes per object compress far below half.
  EXPECT_LT(gzip * 2, plain) << "gzip " << gzip << " bytes, plain " << plain << " bytes";
}

// KEP-5958 against kube-apiserver v1.20, which predates it: a client that
// drops managedFields asks for objects without them, the server accepts the
// Accept header and sends them anyway (as many bytes as to a plain client),
// and decoding drops them, in lists, watches and gets.
TEST(RestIntegrationTest, AClientThatDropsManagedFieldsWorksWithAServerThatIgnoresTheAsk) {
  auto& cl = Cluster::Get();
  auto admin = cl.Admin();
  std::string ns = cl.Namespace("managed-fields");
  for (int i = 0; i < 20; ++i) CreateConfigMap(*admin, ns, "cm-" + std::to_string(i));
  RestConfig config = cl.AdminConfig();
  config.disable_compression = true;
  RestClientOptions dropping;
  dropping.parse.drop_managed_fields = true;
  auto plain = RestClient::Create(config);
  auto lean = RestClient::Create(config, dropping);
  ASSERT_OK(plain);
  ASSERT_OK(lean);
  auto full = (*plain)->List(ConfigMaps(ns), {});
  auto dropped = (*lean)->List(ConfigMaps(ns), {});
  ASSERT_OK(full) << full.status();
  ASSERT_OK(dropped) << dropped.status();
  ASSERT_EQ(full->items.size(), 20u);
  EXPECT_EQ(Names(*dropped), Names(*full));
  for (size_t i = 0; i < 20; ++i) {
    EXPECT_NE(full->items[i]->json().find("\"managedFields\""), std::string::npos);
    EXPECT_EQ(dropped->items[i]->json().find("\"managedFields\""), std::string::npos);
  }
  // The same response but for the list's resourceVersion, which other
  // tests' writes may have moved on by a digit.
  EXPECT_GE((*lean)->BytesReceived() + 16, (*plain)->BytesReceived())
      << "v1.20 should not know the drop parameter";

  auto watch = (*lean)->Watch(
      ConfigMaps(ns),
      ListOptions{.resource_version = dropped->resource_version, .timeout_seconds = 30});
  ASSERT_OK(watch) << watch.status();
  CreateConfigMap(*admin, ns, "late");
  auto event = (*watch)->Next();
  ASSERT_OK(event) << event.status();
  ASSERT_TRUE(event->has_value()) << "the stream ended early";
  EXPECT_EQ((*event)->type, WatchEventType::kAdded);
  EXPECT_EQ((*event)->object->name(), "late");
  EXPECT_EQ((*event)->object->json().find("\"managedFields\""), std::string::npos);
  (*watch)->Cancel();

  auto got = (*lean)->Get(ConfigMaps(ns), "late");
  ASSERT_OK(got) << got.status();
  EXPECT_EQ((*got)->json().find("\"managedFields\""), std::string::npos) << (*got)->json();
  auto raw = (*lean)->Get("/api/v1/namespaces/" + ns + "/configmaps/late");
  ASSERT_OK(raw) << raw.status();
  EXPECT_NE(raw->find("\"managedFields\""), std::string::npos) << "sent by v1.20 all the same";
}

TEST(RestIntegrationTest, ServerErrorsAsStatuses) {
  auto& cl = Cluster::Get();
  auto c = cl.Admin();
  auto unknown = c->List(ResourceRef{{"nope.example.com", "v1", "things"}, true, ""}, {});
  EXPECT_TRUE(unknown.status().IsNotFound()) << unknown.status();
  EXPECT_EQ(unknown.status().http_error()->http_code, 404);

  auto missing = c->Get("/api/v1/namespaces/default/configmaps/does-not-exist");
  EXPECT_TRUE(missing.status().IsNotFound());
  EXPECT_NE(missing.status().message().find("configmaps \"does-not-exist\" not found"),
            std::string_view::npos)
      << missing.status();

  auto bad_selector = c->List(ConfigMaps("default"), ListOptions{.label_selector = "a in ("});
  EXPECT_TRUE(bad_selector.status().IsInvalidArgument()) << bad_selector.status();
  EXPECT_EQ(bad_selector.status().http_error()->http_code, 400);

  RestConfig wrong = cl.AdminConfig();
  wrong.bearer_token = "wrong-token";
  auto unauthorized = (*RestClient::Create(wrong))->List(ConfigMaps("default"), {});
  EXPECT_EQ(unauthorized.status().code(), StatusCode::kUnauthenticated) << unauthorized.status();
  EXPECT_EQ(unauthorized.status().message().find("wrong-token"), std::string_view::npos);

  RestConfig nobody = cl.AdminConfig();
  nobody.bearer_token = "nobody-" + cl.token();
  auto forbidden = (*RestClient::Create(nobody))->List(ConfigMaps("default"), {});
  EXPECT_EQ(forbidden.status().code(), StatusCode::kPermissionDenied) << forbidden.status();
  EXPECT_NE(
      forbidden.status().message().find("User \"nobody\" cannot list resource \"configmaps\""),
      std::string_view::npos)
      << forbidden.status();
  auto forbidden_watch = (*RestClient::Create(nobody))->Watch(ConfigMaps("default"), {});
  EXPECT_EQ(forbidden_watch.status().code(), StatusCode::kPermissionDenied);
}

std::string ConfigMapJson(const std::string& name, const std::string& value) {
  return R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name +
         R"("},"data":{"k":")" + value + R"("}})";
}

TEST(RestIntegrationWriteTest, CreateGetUpdateWithConflicts) {
  auto c = Cluster::Get().Admin();
  const ResourceRef cms = ConfigMaps(Cluster::Get().Namespace("writes"));
  auto created = c->Create(cms, ConfigMapJson("a", "1"), {.field_manager = "kcache-test"});
  ASSERT_OK(created);
  EXPECT_EQ((*created)->namespace_(), cms.namespace_);
  EXPECT_FALSE((*created)->meta().uid.empty());
  auto dup = c->Create(cms, ConfigMapJson("a", "1"));
  EXPECT_TRUE(dup.status().IsAlreadyExists()) << dup.status();

  auto got = c->Get(cms, "a");
  ASSERT_OK(got);
  EXPECT_EQ((*got)->resource_version(), (*created)->resource_version());
  EXPECT_EQ((*got)->kind(), "ConfigMap");

  auto doc = nlohmann::json::parse((*got)->json());
  doc["data"]["k"] = "2";
  auto updated = c->Update(cms, doc.dump());
  ASSERT_OK(updated);
  EXPECT_EQ(*(*updated)->FieldValue("data.k"), "2");
  // The same resourceVersion again: the server says 409 Conflict.
  doc["data"]["k"] = "3";
  auto stale = c->Update(cms, doc.dump());
  EXPECT_TRUE(stale.status().IsConflict()) << stale.status();
  ASSERT_NE(stale.status().http_error(), nullptr);
  EXPECT_EQ(stale.status().http_error()->http_code, 409);
  EXPECT_EQ(stale.status().http_error()->reason, "Conflict");
  // Without a resourceVersion the update is unconditional.
  doc["metadata"].erase("resourceVersion");
  auto forced = c->Update(cms, doc.dump());
  ASSERT_OK(forced);
  EXPECT_EQ(*(*forced)->FieldValue("data.k"), "3");

  // A dry run answers without storing.
  doc["data"]["k"] = "dry";
  ASSERT_OK(c->Update(cms, doc.dump(), {.dry_run = true}));
  EXPECT_EQ(*(*c->Get(cms, "a"))->FieldValue("data.k"), "3");
  EXPECT_TRUE(c->Get(cms, "missing").status().IsNotFound());
}

// ObjectBuilder, NewControllerRef and MergePatch as the real server takes
// them: the dependent it creates is controlled by its owner (the server
// keeps the reference), and a patch conditional on an old version fails.
TEST(RestIntegrationWriteTest, BuiltObjectsOwnerReferencesAndMergePatches) {
  auto c = Cluster::Get().Admin();
  const std::string ns = Cluster::Get().Namespace("builder");
  auto owner = c->Get(ResourceRef{{"", "v1", "namespaces"}, false, ""}, ns);
  ASSERT_OK(owner) << owner.status();
  const ResourceRef cms = ConfigMaps(ns);
  auto created = c->Create(cms, ObjectBuilder("v1", "ConfigMap")
                                    .Name("derived")
                                    .Namespace(ns)
                                    .Label("app.kubernetes.io/managed-by", "kcache-test")
                                    .Owner(NewControllerRef(**owner, "v1", "Namespace"))
                                    .Set({"data", "app.conf"}, "a=1")
                                    .Json());
  ASSERT_OK(created) << created.status();
  EXPECT_TRUE(IsControlledBy(**created, **owner));
  EXPECT_EQ(GetControllerOf(**created)->kind, "Namespace");
  EXPECT_TRUE(GetControllerOf(**created)->block_owner_deletion);

  auto patched = c->Patch(cms, "derived", PatchType::kMerge,
                          MergePatch()
                              .SetLabel("tier", "web")
                              .RemoveLabel("app.kubernetes.io/managed-by")
                              .Set({"data", "b"}, "2")
                              .IfResourceVersion((*created)->resource_version())
                              .Json());
  ASSERT_OK(patched) << patched.status();
  EXPECT_EQ((*patched)->labels(), (Labels{{"tier", "web"}}));
  EXPECT_EQ(*(*patched)->FieldValue("data.b"), "2");
  EXPECT_TRUE(IsControlledBy(**patched, **owner));
  auto stale = c->Patch(
      cms, "derived", PatchType::kMerge,
      MergePatch().SetLabel("tier", "db").IfResourceVersion((*created)->resource_version()).Json());
  EXPECT_TRUE(stale.status().IsConflict()) << stale.status();
  // An Update of a copy with a label changed.
  auto relabeled = WithLabels(**patched, {{"tier", "db"}});
  ASSERT_OK(relabeled);
  auto updated = c->Update(cms, std::string((*relabeled)->json()));
  ASSERT_OK(updated) << updated.status();
  EXPECT_EQ((*updated)->labels().at("tier"), "db");
}

TEST(RestIntegrationWriteTest, PatchesOfEveryType) {
  auto c = Cluster::Get().Admin();
  const std::string ns = Cluster::Get().Namespace("patches");
  const ResourceRef cms = ConfigMaps(ns);
  ASSERT_OK(c->Create(cms, ConfigMapJson("a", "1")));

  auto merged = c->Patch(cms, "a", PatchType::kMerge, R"({"data":{"m":"x"}})");
  ASSERT_OK(merged);
  EXPECT_EQ(*(*merged)->FieldValue("data.m"), "x");
  EXPECT_EQ(*(*merged)->FieldValue("data.k"), "1");

  auto json_patched =
      c->Patch(cms, "a", PatchType::kJson, R"([{"op":"replace","path":"/data/k","value":"2"}])");
  ASSERT_OK(json_patched);
  EXPECT_EQ(*(*json_patched)->FieldValue("data.k"), "2");
  auto failed_test =
      c->Patch(cms, "a", PatchType::kJson, R"([{"op":"test","path":"/data/k","value":"no"}])");
  EXPECT_FALSE(failed_test.ok());

  // A patch carrying an old resourceVersion is a precondition that fails.
  auto stale = c->Patch(cms, "a", PatchType::kMerge,
                        R"({"metadata":{"resourceVersion":")" + (*merged)->resource_version() +
                            R"("},"data":{"k":"9"}})");
  EXPECT_TRUE(stale.status().IsConflict()) << stale.status();

  // Strategic merge merges a pod's containers by name, where a merge patch
  // would replace the list.
  const ResourceRef pods = Pods(ns);
  CreatePod(*c, ns, "p");
  auto strategic = c->Patch(pods, "p", PatchType::kStrategicMerge,
                            R"({"spec":{"containers":[{"name":"c","image":"y"}]}})");
  ASSERT_OK(strategic);
  auto containers = nlohmann::json::parse((*strategic)->json())["spec"]["containers"];
  ASSERT_EQ(containers.size(), 1u);
  EXPECT_EQ(containers[0]["image"], "y");
  EXPECT_EQ(containers[0]["name"], "c");
}

TEST(RestIntegrationWriteTest, ServerSideApplyOwnsFieldsAndConflictsUnlessForced) {
  auto c = Cluster::Get().Admin();
  const ResourceRef cms = ConfigMaps(Cluster::Get().Namespace("apply"));
  const std::string want = ConfigMapJson("a", "1");
  auto first = c->Patch(cms, "a", PatchType::kApply, want, {.field_manager = "ctl-a"});
  ASSERT_OK(first);  // apply creates
  EXPECT_EQ(*(*first)->FieldValue("data.k"), "1");
  // Applying the same again changes nothing.
  auto again = c->Patch(cms, "a", PatchType::kApply, want, {.field_manager = "ctl-a"});
  ASSERT_OK(again);
  EXPECT_EQ((*again)->resource_version(), (*first)->resource_version());

  // Another manager setting a field ctl-a owns conflicts...
  const std::string theirs = ConfigMapJson("a", "2");
  auto conflict = c->Patch(cms, "a", PatchType::kApply, theirs, {.field_manager = "ctl-b"});
  EXPECT_TRUE(conflict.status().IsConflict()) << conflict.status();
  ASSERT_NE(conflict.status().http_error(), nullptr);
  EXPECT_TRUE(conflict.status().http_error()->HasCause("FieldManagerConflict"))
      << conflict.status();
  // ...unless it forces, and then it owns the field.
  auto forced =
      c->Patch(cms, "a", PatchType::kApply, theirs, {.field_manager = "ctl-b", .force = true});
  ASSERT_OK(forced);
  EXPECT_EQ(*(*forced)->FieldValue("data.k"), "2");
  const auto doc = nlohmann::json::parse((*forced)->json());
  std::string managers;
  for (const auto& m : doc["metadata"]["managedFields"]) {
    managers += m["manager"].get<std::string>() + ",";
  }
  EXPECT_NE(managers.find("ctl-b"), std::string::npos) << (*forced)->json();
}

TEST(RestIntegrationWriteTest, UpdateStatusChangesOnlyTheStatus) {
  auto c = Cluster::Get().Admin();
  const std::string ns = Cluster::Get().Namespace("status");
  CreatePod(*c, ns, "p");
  auto pod = c->Get(Pods(ns), "p");
  ASSERT_OK(pod);
  auto doc = nlohmann::json::parse((*pod)->json());
  doc["spec"]["containers"][0]["image"] = "ignored";
  doc["status"]["conditions"] = {{{"type", "Ready"}, {"status", "False"}}};
  auto updated = c->UpdateStatus(Pods(ns), doc.dump());
  ASSERT_OK(updated);
  auto after = nlohmann::json::parse((*updated)->json());
  EXPECT_EQ(after["status"]["conditions"][0]["type"], "Ready");
  EXPECT_EQ(after["spec"]["containers"][0]["image"], "x");
  // The status subresource takes patches too.
  auto patched = c->Patch(Pods(ns), "p", PatchType::kMerge, R"({"status":{"message":"hello"}})",
                          {.subresource = "status"});
  ASSERT_OK(patched);
  EXPECT_EQ(*(*patched)->FieldValue("status.message"), "hello");
}

TEST(RestIntegrationWriteTest, DeleteWithPreconditionsAndOptions) {
  auto c = Cluster::Get().Admin();
  const ResourceRef cms = ConfigMaps(Cluster::Get().Namespace("deletes"));
  auto created = c->Create(cms, ConfigMapJson("a", "1"));
  ASSERT_OK(created);
  Status wrong_uid = c->Delete(cms, "a", {.precondition_uid = "not-its-uid"});
  EXPECT_TRUE(wrong_uid.IsConflict()) << wrong_uid;
  Status wrong_rv = c->Delete(cms, "a", {.precondition_resource_version = "1"});
  EXPECT_TRUE(wrong_rv.IsConflict()) << wrong_rv;
  ASSERT_OK(c->Delete(cms, "a", {.dry_run = true}));
  ASSERT_OK(c->Get(cms, "a"));  // a dry run keeps it
  ASSERT_OK(c->Delete(cms, "a",
                      {.grace_period_seconds = 0,
                       .propagation_policy = "Background",
                       .precondition_uid = (*created)->meta().uid,
                       .precondition_resource_version = (*created)->resource_version()}));
  EXPECT_TRUE(c->Get(cms, "a").status().IsNotFound());
  EXPECT_TRUE(c->Delete(cms, "a").IsNotFound());
}

TEST(RestIntegrationTest, DiscoveryResolvesBuiltinAndCustomResources) {
  auto c = Cluster::Get().Admin();
  auto crd = c->Do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", R"({
    "apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
    "metadata":{"name":"widgets.example.com"},
    "spec":{"group":"example.com","scope":"Namespaced",
      "names":{"plural":"widgets","singular":"widget","kind":"Widget","shortNames":["wd"]},
      "versions":[{"name":"v1","served":true,"storage":true,
        "schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}})");
  ASSERT_TRUE(crd.ok() || crd.status().code() == StatusCode::kAlreadyExists) << crd.status();
  std::shared_ptr<const Discovery> d;
  for (int i = 0; i < 100; ++i) {  // the new group is served within a few seconds
    auto fetched = Discovery::Fetch(*c);
    ASSERT_OK(fetched) << fetched.status();
    d = *fetched;
    if (d->Resolve("wd").ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_EQ(d->Resolve("po")->gvr(), (GroupVersionResource{"", "v1", "pods"}));
  EXPECT_EQ(d->Resolve("deploy")->gvr(), (GroupVersionResource{"apps", "v1", "deployments"}));
  EXPECT_EQ(d->Resolve("deployments.apps")->kind, "Deployment");
  // Categories, which kubectl expands "get all" by.
  EXPECT_EQ(d->Resolve("pods")->categories, std::vector<std::string>{"all"});
  EXPECT_EQ(d->Resolve("deploy")->categories, std::vector<std::string>{"all"});
  EXPECT_TRUE(d->Resolve("configmaps")->categories.empty());
  EXPECT_FALSE(d->Resolve("ns")->namespaced);
  EXPECT_FALSE(d->Resolve("nodes")->namespaced);
  auto widget = d->Resolve("wd");
  ASSERT_OK(widget) << widget.status();
  EXPECT_EQ(widget->gvr(), (GroupVersionResource{"example.com", "v1", "widgets"}));
  EXPECT_TRUE(widget->namespaced);

  std::string ns = Cluster::Get().Namespace("widgets");
  auto created =
      c->Do("POST", "/apis/example.com/v1/namespaces/" + ns + "/widgets",
            R"({"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1"},"size":3})");
  ASSERT_OK(created) << created.status();
  auto list = c->List(widget->Ref(ns), {});
  ASSERT_OK(list) << list.status();
  ASSERT_EQ(list->items.size(), 1u);
  EXPECT_EQ(list->items[0]->kind(), "Widget");
  EXPECT_EQ(*list->items[0]->FieldValue("size"), "3");
}

// --- Connection config forms ----------------------------------------------

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

Status ListWith(const RestConfig& config) {
  auto client = RestClient::Create(config);
  if (!client.ok()) return client.status();
  return (*client)->List(ConfigMaps("default"), ListOptions{.limit = 1}).status();
}

TEST(RestIntegrationConfigTest, CertificateAuthorityFileDataAndInsecure) {
  auto& cl = Cluster::Get();
  RestConfig file = cl.AdminConfig();
  ASSERT_FALSE(file.ca_file.empty());
  EXPECT_OK(ListWith(file)) << ListWith(file);

  testing::TempDir dir;
  std::ofstream(dir.Sub("config"))
      << "current-context: t\nclusters:\n- name: c\n  cluster:\n    server: " << cl.server()
      << "\n    certificate-authority-data: " << Base64Encode(ReadAll(file.ca_file))
      << "\nusers:\n- name: u\n  user:\n    token: " << cl.token()
      << "\ncontexts:\n- name: t\n  context: {cluster: c, user: u}\n";
  auto data = LoadKubeconfig({.path = dir.Sub("config")});
  ASSERT_OK(data) << data.status();
  EXPECT_OK(ListWith(*data));

  RestConfig no_ca = file;
  no_ca.ca_file.clear();
  Status untrusted = ListWith(no_ca);
  EXPECT_EQ(untrusted.code(), StatusCode::kFailedPrecondition) << untrusted;
  RestConfig wrong_ca = file;
  wrong_ca.ca_file = cl.File("client-ca.crt");  // a CA, but not the server's
  Status wrong = ListWith(wrong_ca);
  EXPECT_EQ(wrong.code(), StatusCode::kFailedPrecondition) << wrong;
  no_ca.insecure_skip_tls_verify = true;
  EXPECT_OK(ListWith(no_ca));
}

TEST(RestIntegrationConfigTest, TlsServerName) {
  RestConfig config = Cluster::Get().AdminConfig();
  config.tls_server_name =
      "kubernetes.default";  // a name in the serving certificate, not 127.0.0.1
  EXPECT_OK(ListWith(config)) << ListWith(config);
  config.tls_server_name = "not-the-server.example";
  EXPECT_EQ(ListWith(config).code(), StatusCode::kFailedPrecondition);
}

TEST(RestIntegrationConfigTest, ClientCertificates) {
  auto& cl = Cluster::Get();
  RestConfig anonymous = cl.AdminConfig();
  anonymous.bearer_token.clear();
  EXPECT_EQ(ListWith(anonymous).code(), StatusCode::kPermissionDenied)
      << "system:anonymous may not list";
  RestConfig files = anonymous;
  files.client_cert_file = cl.File("admin.crt");
  files.client_key_file = cl.File("admin.key");
  EXPECT_OK(ListWith(files)) << ListWith(files);
  RestConfig data = anonymous;
  data.client_cert_data = ReadAll(cl.File("admin.crt"));
  data.client_key_data = ReadAll(cl.File("admin.key"));
  EXPECT_OK(ListWith(data));
}

TEST(RestIntegrationConfigTest, TokenFileRotation) {
  auto& cl = Cluster::Get();
  testing::TempDir dir;
  std::string file = dir.Sub("token");
  std::ofstream(file) << "expired-token\n";
  RestConfig config = cl.AdminConfig();
  config.bearer_token.clear();
  config.bearer_token_file = file;
  auto client = *RestClient::Create(config);
  EXPECT_EQ(client->List(ConfigMaps("default"), {}).status().code(), StatusCode::kUnauthenticated);
  std::ofstream(file) << "rotated-" << cl.token() << "\n";  // the new token of a rotation
  EXPECT_OK(client->List(ConfigMaps("default"), {}));
}

TEST(RestIntegrationConfigTest, ExecPlugin) {
  auto& cl = Cluster::Get();
  testing::TempDir dir;
  std::string plugin = dir.Sub("get-token");
  std::ofstream(plugin)
      << "#!/bin/sh\n"
      << "case \"$KUBERNETES_EXEC_INFO\" in *ExecCredential*) ;; *) exit 2;; esac\n"
      << "echo '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
      << "\"status\":{\"token\":\"" << cl.token() << "\"}}'\n";
  chmod(plugin.c_str(), 0755);
  std::ofstream(dir.Sub("config"))
      << "current-context: t\nclusters:\n- name: c\n  cluster:\n    server: " << cl.server()
      << "\n    certificate-authority: " << cl.File("certs/apiserver.crt")
      << "\nusers:\n- name: u\n  user:\n    exec:\n      apiVersion: "
         "client.authentication.k8s.io/v1"
      << "\n      command: ./get-token\ncontexts:\n- name: t\n  context: {cluster: c, user: u}\n";
  auto config = LoadKubeconfig({.path = dir.Sub("config")});
  ASSERT_OK(config) << config.status();
  EXPECT_OK(ListWith(*config)) << ListWith(*config);
}

// Credentials never reach kcache's output: a token (inline, from an exec
// plugin, and one the server refuses) and a client key are looked for in everything `kcache sync`
// and `kcache get` print, on success and on the error paths (401, an untrusted server).
TEST(RestIntegrationConfigTest, CredentialsNeverAppearInOutput) {
  auto& cl = Cluster::Get();
  const std::string ns = cl.Namespace("credentials");
  CreateConfigMap(*cl.Admin(), ns, "cm");
  testing::TempDir dir;
  const std::string ca = cl.File("certs/apiserver.crt");
  auto config = [&](const std::string& name, const std::string& ca_file, const std::string& user) {
    std::ofstream(dir.Sub(name)) << "current-context: t\nclusters:\n- name: c\n  cluster:\n    "
                                    "server: "
                                 << cl.server() << "\n    certificate-authority: " << ca_file
                                 << "\nusers:\n- name: u\n  user:\n"
                                 << user
                                 << "contexts:\n- name: t\n  context: {cluster: c, user: u}\n";
    return dir.Sub(name);
  };
  const std::string key = ReadAll(cl.File("admin.key"));
  const std::string cert = ReadAll(cl.File("admin.crt"));
  const std::string refused = "refused-secret-0123456789abcdef";
  std::string plugin = dir.Sub("get-token");
  std::ofstream(plugin) << "#!/bin/sh\necho '{\"apiVersion\":\"client.authentication.k8s.io/v1\","
                        << "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"rotated-"
                        << cl.token() << "\"}}'\n";
  chmod(plugin.c_str(), 0755);
  struct Case {
    std::string name, kubeconfig;
    bool ok;
  };
  const std::vector<Case> cases = {
      {"token", config("token", ca, "    token: " + cl.token() + "\n"), true},
      {"certificate",
       config("certificate", ca,
              "    client-certificate-data: " + Base64Encode(cert) +
                  "\n    client-key-data: " + Base64Encode(key) + "\n"),
       true},
      {"exec",
       config("exec", ca,
              "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: " +
                  plugin + "\n"),
       true},
      {"refused token", config("refused", ca, "    token: " + refused + "\n"), false},
      {"untrusted server",
       config("untrusted", cl.File("client-ca.crt"), "    token: " + cl.token() + "\n"), false},
  };
  std::vector<std::string> secrets = {cl.token(), refused, Base64Encode(key)};
  // Every line of the key's base64 body, so that a partial quote is caught
  // too.
  std::istringstream lines(key);
  for (std::string line; std::getline(lines, line);) {
    if (line.size() >= 16 && line.find("-----") == std::string::npos) secrets.push_back(line);
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string cache = dir.Sub("cache-" + std::to_string(&c - cases.data()));
    std::string out;
    const std::string sync = "sync configmaps -n " + ns + " --until-synced --kubeconfig " +
                             c.kubeconfig + " --cache " + cache;
    for (const std::string& args : {sync, sync + " --log-format=json",
                                    "get configmaps -n " + ns + " -o yaml --cache " + cache}) {
      testing::CommandResult r = testing::RunCommand("timeout 60 " + KcacheCommand(args));
      EXPECT_EQ(r.exit_code == 0, c.ok) << args << "\n" << r.output;
      out += r.output;
    }
    ASSERT_FALSE(out.empty());
    for (const std::string& secret : secrets) {
      EXPECT_EQ(out.find(secret), std::string::npos) << "printed: " << secret << "\n" << out;
    }
  }
}

TEST(RestIntegrationConfigTest, KubeconfigVariableMergesFiles) {
  auto& cl = Cluster::Get();
  testing::TempDir dir;
  std::ofstream(dir.Sub("cluster"))
      << "clusters:\n- name: c\n  cluster:\n    server: " << cl.server()
      << "\n    certificate-authority: " << cl.File("certs/apiserver.crt") << "\n";
  std::ofstream(dir.Sub("user"))
      << "current-context: t\nusers:\n- name: u\n  user:\n    token: " << cl.token()
      << "\ncontexts:\n- name: t\n  context: {cluster: c, user: u, namespace: kube-system}\n";
  setenv("KUBECONFIG", (dir.Sub("cluster") + ":" + dir.Sub("user")).c_str(), 1);
  auto config = LoadClientConfig({});
  unsetenv("KUBECONFIG");
  ASSERT_OK(config) << config.status();
  EXPECT_EQ(config->namespace_, "kube-system");
  EXPECT_OK(ListWith(*config));
}

// Plain HTTP through `kubectl proxy`, which adds the credentials.
TEST(RestIntegrationConfigTest, PlainHttpThroughKubectlProxy) {
  auto& cl = Cluster::Get();
  testing::TempDir dir;
  std::string log = dir.Sub("proxy.log");
  std::string cmd = "kubectl proxy --port=0 --kubeconfig=" + cl.File("kubeconfig") + " >" + log +
                    " 2>&1 & echo $!";
  FILE* p = popen(cmd.c_str(), "r");
  int pid = 0;
  ASSERT_EQ(fscanf(p, "%d", &pid), 1);
  pclose(p);
  std::string port;
  for (int i = 0; i < 100 && port.empty(); ++i) {  // "Starting to serve on 127.0.0.1:PORT"
    std::string text = ReadAll(log);
    if (size_t at = text.find("127.0.0.1:"); at != std::string::npos) {
      port = text.substr(at + 10, text.find_first_not_of("0123456789", at + 10) - at - 10);
    }
    if (port.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_FALSE(port.empty()) << ReadAll(log);
  auto config = LoadClientConfig({.path = "", .server = "http://127.0.0.1:" + port});
  RestConfig plain;
  plain.server = "http://127.0.0.1:" + port;
  auto client = *RestClient::Create(plain);
  auto list = client->List(ConfigMaps("default"), {});
  EXPECT_OK(list) << list.status();
  auto watch = client->Watch(ConfigMaps("default"),
                             ListOptions{.resource_version = "0", .timeout_seconds = 1});
  EXPECT_OK(watch) << watch.status();
  kill(pid, SIGTERM);
}

}  // namespace
}  // namespace kcache
