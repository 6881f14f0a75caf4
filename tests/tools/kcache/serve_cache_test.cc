// SPDX-License-Identifier: Apache-2.0

// `kcache serve --cache`: the read-only API over a cache that a writer in
// this process keeps changing, read through kcache's own REST client and
// informer; and `kcache serve --snapshot` over a file exported from it.

#include "tools/kcache/serve_cache.h"
#include "tools/kcache/token_grants.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "kcache/cache.h"
#include "kcache/informer.h"
#include "kcache/reflector.h"
#include "kcache/rest_client.h"
#include "kcache/snapshot.h"
#include "testing/command.h"
#include "testing/eventually.h"
#include "testing/loopback.h"
#include "testing/process_stats.h"
#include "testing/status_matchers.h"
#include "testing/temp_dir.h"

namespace kcache::tool {
namespace {

using kcache::testing::Eventually;

std::string PodJson(const std::string& ns, const std::string& name, uint64_t rv,
                    const std::string& phase = "Running", const std::string& app = "web") {
  nlohmann::json j = {{"apiVersion", "v1"},
                      {"kind", "Pod"},
                      {"metadata",
                       {{"name", name},
                        {"namespace", ns},
                        {"resourceVersion", std::to_string(rv)},
                        {"creationTimestamp", "2026-01-01T00:00:00Z"},
                        {"labels", {{"app", app}}}}},
                      {"spec", {{"nodeName", "node-1"}}},
                      {"status", {{"phase", phase}}}};
  return j.dump();
}

ObjectPtr Pod(const std::string& ns, const std::string& name, uint64_t rv,
              const std::string& phase = "Running", const std::string& app = "web") {
  return Object::Parse(PodJson(ns, name, rv, phase, app)).value();
}

ResourceInfo PodsInfo() {
  ResourceInfo info;
  info.version = "v1";
  info.resource = "pods";
  info.kind = "Pod";
  info.singular = "pod";
  info.short_names = {"po"};
  return info;
}

ResourceRef Pods(std::string ns = "") { return {{"", "v1", "pods"}, true, std::move(ns)}; }

// A cache with pods a0..a4 in "a" and b0..b4 in "b" (rv 1..10) and one
// secret, written by this process; a server on it; a client of the server.
class ServeCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto cache = Cache::Open(dir_.Sub("cache"));
    ASSERT_OK(cache);
    cache_ = *cache;
    auto pods = cache_->OpenKeyspace("pods");
    ASSERT_OK(pods);
    pods_ = *pods;
    ASSERT_OK(cache_->SetResourceInfo("pods", PodsInfo()));
    Transaction txn;
    for (int i = 0; i < 5; ++i) txn.Add(Pod("a", "a" + std::to_string(i), ++rv_));
    for (int i = 0; i < 5; ++i) txn.Add(Pod("b", "b" + std::to_string(i), ++rv_, "Pending", "db"));
    ASSERT_OK(pods_->Commit(txn, nullptr));
    auto secrets = cache_->OpenKeyspace("secrets");
    ASSERT_OK(secrets);
    ResourceInfo info({.version = "v1", .resource = "secrets", .kind = "Secret"});
    ASSERT_OK(cache_->SetResourceInfo("secrets", info));
    ASSERT_OK((*secrets)->Add(
        Object::Parse(
            R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"a","resourceVersion":"100"},"data":{"k":"dg=="}})")
            .value()));
  }

  // Listens on `listen` (default: a free port).
  void StartServer(CacheServeOptions o = {}, std::string listen = "127.0.0.1:0") {
    o.listen = listen;
    o.refresh_interval = std::chrono::milliseconds(20);
    auto server = CacheServer::Start(dir_.Sub("cache"), "", o);
    ASSERT_OK(server) << server.status();
    server_ = std::move(server).value();
    client_ = NewClient("");
  }

  // Retries no 429 or 504: the tests look at the answers themselves.
  std::shared_ptr<RestClient> NewClient(const std::string& token) {
    RestConfig config;
    config.server = server_->url();
    config.bearer_token = token;
    RestClientOptions options;
    options.max_retries = 0;
    auto client = RestClient::Create(config, options);
    EXPECT_OK(client);
    return *client;
  }

  // An informer over the server, synced; its watch has lasted long enough
  // that its end does not look like a failed one (client-go and kcache
  // relist after a watch that ends within a second with no event).
  std::shared_ptr<SharedIndexInformer> SyncedInformer(const std::shared_ptr<Indexer>& store) {
    InformerOptions options;
    options.reflector.backoff_initial = std::chrono::milliseconds(50);
    options.reflector.backoff_max = std::chrono::milliseconds(200);
    auto informer = SharedIndexInformer::Create(NewListWatch(client_, Pods()), store, options);
    EXPECT_OK(informer->Start());
    EXPECT_TRUE(informer->WaitForSync(std::chrono::seconds(30)));
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    return informer;
  }

  // Stops the server, lets `while_down` write, and starts it again on the
  // same address.
  void RestartServer(const std::function<void()>& while_down) {
    const std::string url = server_->url();
    server_->Stop();
    while_down();
    StartServer({}, url.substr(std::string_view("http://").size()));
  }

  // Commits `txn`, whose objects carry resourceVersions from ++rv_ (as
  // watch events do: one each, increasing), and waits until the server
  // lists at the last.
  void Write(Transaction txn) {
    txn.resource_version = std::to_string(rv_);
    ASSERT_OK(pods_->Commit(txn, nullptr));
    ASSERT_TRUE(Eventually([&] {
      auto list = client_->List(Pods(), {.limit = 1});
      return list.ok() && list->resource_version == std::to_string(rv_);
    }));
  }

  static std::vector<std::string> Names(const ObjectList& list) {
    std::vector<std::string> names;
    for (const ObjectPtr& o : list.items) names.push_back(o->name());
    return names;
  }

  kcache::testing::TempDir dir_;
  std::shared_ptr<Cache> cache_;
  std::shared_ptr<Indexer> pods_;
  uint64_t rv_ = 0;
  std::unique_ptr<CacheServer> server_;
  std::shared_ptr<RestClient> client_;
};

TEST_F(ServeCacheTest, DiscoveryListsWhatTheCacheHoldsReadOnlyAndWithoutSecrets) {
  StartServer();
  auto resources = client_->Get("/api/v1");
  ASSERT_OK(resources);
  auto j = nlohmann::json::parse(*resources);
  ASSERT_EQ(j["resources"].size(), 1u) << j.dump();
  EXPECT_EQ(j["resources"][0]["name"], "pods");
  EXPECT_EQ(j["resources"][0]["shortNames"], nlohmann::json::array({"po"}));
  EXPECT_EQ(j["resources"][0]["verbs"], nlohmann::json::array({"get", "list", "watch"}));
  EXPECT_EQ(client_->Get("/api/v1/secrets").status().code(), StatusCode::kNotFound);
  ASSERT_EQ(server_->skipped().size(), 1u);
  EXPECT_NE(server_->skipped()[0].find("--serve-secrets"), std::string::npos);
}

TEST_F(ServeCacheTest, SecretsAreServedWhenAsked) {
  StartServer({.serve_secrets = true});
  auto secret = client_->Get(ResourceRef{{"", "v1", "secrets"}, true, "a"}, "s");
  ASSERT_OK(secret);
  EXPECT_EQ((*secret)->name(), "s");
}

TEST_F(ServeCacheTest, GetAndListWithSelectors) {
  StartServer();
  auto a1 = client_->Get(Pods("a"), "a1");
  ASSERT_OK(a1);
  EXPECT_EQ((*a1)->json(), PodJson("a", "a1", 2));  // served as stored, byte for byte
  EXPECT_EQ(client_->Get(Pods("a"), "b1").status().code(), StatusCode::kNotFound);

  auto all = client_->List(Pods(), {});
  ASSERT_OK(all);
  EXPECT_EQ(all->resource_version, "10");
  EXPECT_EQ(all->items.size(), 10u);
  auto in_b = client_->List(Pods("b"), {});
  ASSERT_OK(in_b);
  EXPECT_EQ(Names(*in_b), (std::vector<std::string>{"b0", "b1", "b2", "b3", "b4"}));
  auto web = client_->List(Pods(), {.label_selector = "app=web"});
  ASSERT_OK(web);
  EXPECT_EQ(Names(*web), (std::vector<std::string>{"a0", "a1", "a2", "a3", "a4"}));
  auto pending =
      client_->List(Pods(), {.field_selector = "status.phase=Pending,metadata.name!=b2"});
  ASSERT_OK(pending);
  EXPECT_EQ(Names(*pending), (std::vector<std::string>{"b0", "b1", "b3", "b4"}));
  // The apiserver's answer for a field pods do not select on.
  auto bad = client_->List(Pods(), {.field_selector = "spec.hostname=x"});
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument) << bad.status();
  EXPECT_NE(bad.status().message().find("field label not supported: spec.hostname"),
            std::string::npos)
      << bad.status();
}

// KEP-5958: a client that asks for objects without managedFields gets them
// so from a served cache, in gets, lists and watches; others get the stored
// bytes.
TEST_F(ServeCacheTest, ManagedFieldsAreLeftOutWhenTheClientAsks) {
  Transaction txn;
  txn.Add(Object::Parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"m","namespace":"a",)"
                        R"("resourceVersion":")" +
                        std::to_string(++rv_) +
                        R"(","managedFields":[{"manager":"kubectl","operation":"Update"}]},)"
                        R"("spec":{},"status":{"phase":"Running"}})")
              .value());
  txn.resource_version = std::to_string(rv_);
  ASSERT_OK(pods_->Commit(txn, nullptr));
  StartServer();
  RestConfig config;
  config.server = server_->url();
  RestClientOptions dropping;
  dropping.parse.drop_managed_fields = true;
  auto lean = RestClient::Create(config, dropping);
  ASSERT_OK(lean);
  for (const std::string path : {"/api/v1/namespaces/a/pods/m", "/api/v1/namespaces/a/pods",
                                 "/api/v1/namespaces/a/pods?watch=1&timeoutSeconds=1"}) {
    auto full = client_->Get(path);
    auto dropped = (*lean)->Get(path);
    ASSERT_OK(full) << path << ": " << full.status();
    ASSERT_OK(dropped) << path << ": " << dropped.status();
    EXPECT_NE(full->find(R"("managedFields")"), std::string::npos) << path;
    EXPECT_EQ(dropped->find(R"("managedFields")"), std::string::npos) << path << ": " << *dropped;
    EXPECT_NE(dropped->find(R"("name":"m")"), std::string::npos) << path << ": " << *dropped;
  }
}

TEST_F(ServeCacheTest, WritesAreMethodNotAllowed) {
  StartServer();
  auto created = client_->Do("POST", "/api/v1/namespaces/a/pods", PodJson("a", "new", 0));
  ASSERT_FALSE(created.ok());
  EXPECT_NE(created.status().message().find("does not allow this method"), std::string::npos)
      << created.status();
  EXPECT_FALSE(client_->Delete(Pods("a"), "a1").ok());
  EXPECT_OK(client_->Get(Pods("a"), "a1"));
}

// Pages of one list describe one resourceVersion, also when the cache has
// changed between them (the journal's changes since are undone), as the
// apiserver's pages read one etcd revision.
TEST_F(ServeCacheTest, PagesOfAListStayAtItsResourceVersion) {
  StartServer();
  auto first = client_->List(Pods(), {.limit = 4});
  ASSERT_OK(first);
  EXPECT_EQ(Names(*first), (std::vector<std::string>{"a0", "a1", "a2", "a3"}));
  ASSERT_FALSE(first->continue_token.empty());
  Transaction txn;
  txn.Update(Pod("a", "a4", ++rv_, "Failed"));
  txn.Delete(Pod("b", "b0", ++rv_));
  txn.Add(Pod("a", "a5", ++rv_));
  txn.Add(Pod("b", "b9", ++rv_));
  Write(std::move(txn));

  std::vector<std::string> names;
  std::map<std::string, std::string> phases;
  std::string token = first->continue_token;
  while (!token.empty()) {
    auto page = client_->List(Pods(), {.limit = 4, .continue_token = token});
    ASSERT_OK(page);
    EXPECT_EQ(page->resource_version, "10");
    for (const ObjectPtr& o : page->items) {
      names.push_back(o->name());
      phases[o->name()] = *o->FieldValue("status.phase");
    }
    token = page->continue_token;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"a4", "b0", "b1", "b2", "b3", "b4"}));
  EXPECT_EQ(phases["a4"], "Running");

  // The same list, at the old resourceVersion and at the new one.
  auto exact = client_->List(Pods(), {.resource_version = "10", .resource_version_match = "Exact"});
  ASSERT_OK(exact);
  EXPECT_EQ(exact->items.size(), 10u);
  auto now = client_->List(Pods(), {});
  ASSERT_OK(now);
  EXPECT_EQ(now->resource_version, "14");
  EXPECT_EQ(Names(*now), (std::vector<std::string>{"a0", "a1", "a2", "a3", "a4", "a5", "b1", "b2",
                                                   "b3", "b4", "b9"}));
  // Before the journal's window: 410, as for a compacted revision.
  auto old = client_->List(Pods(), {.resource_version = "3", .resource_version_match = "Exact"});
  EXPECT_EQ(old.status().code(), StatusCode::kExpired) << old.status();
  // Ahead of the cache: 504 after the apiserver's 3 s wait.
  auto ahead = client_->Get("/api/v1/pods?resourceVersion=99&resourceVersionMatch=NotOlderThan");
  EXPECT_FALSE(ahead.ok());
  EXPECT_NE(ahead.status().message().find("Too large resource version: 99, current: 14"),
            std::string::npos)
      << ahead.status();
}

TEST_F(ServeCacheTest, WatchFollowsTheWriterWithSelectorsAndBookmarks) {
  StartServer({.bookmark_interval = std::chrono::milliseconds(200)});
  auto watch = client_->Watch(Pods(), {.label_selector = "app=web",
                                       .resource_version = "10",
                                       .timeout_seconds = 30,
                                       .allow_watch_bookmarks = true});
  ASSERT_OK(watch);
  Transaction txn;
  txn.Update(Pod("a", "a1", ++rv_, "Failed"));            // MODIFIED
  txn.Add(Pod("a", "a9", ++rv_));                         // ADDED
  txn.Update(Pod("a", "a2", ++rv_, "Running", "other"));  // leaves the selection: DELETED
  txn.Update(Pod("b", "b1", ++rv_, "Running", "web"));    // enters it: ADDED
  txn.Delete(Pod("a", "a3", ++rv_));                      // DELETED
  txn.Update(Pod("b", "b2", ++rv_, "Failed", "db"));      // outside the selection: nothing
  Write(std::move(txn));
  std::vector<std::string> seen;
  bool bookmark = false;
  while (seen.size() < 5 || !bookmark) {
    auto e = (*watch)->Next();
    ASSERT_OK(e);
    ASSERT_TRUE(e->has_value());
    const WatchEvent& ev = **e;
    if (ev.type == WatchEventType::kBookmark) {
      // One sent before the server saw the write (a loaded machine can
      // take the 200 ms interval to get there) stands where the watch
      // began; the first after the events stands past them all.
      if (seen.size() < 5) {
        EXPECT_EQ(ev.object->resource_version(), "10");
      } else {
        EXPECT_EQ(ev.object->resource_version(), "16");
        bookmark = true;
      }
      continue;
    }
    std::string type = ev.type == WatchEventType::kAdded      ? "ADDED"
                       : ev.type == WatchEventType::kModified ? "MODIFIED"
                                                              : "DELETED";
    seen.push_back(type + " " + ev.object->name() + " " + ev.object->resource_version());
  }
  // a2 leaves the selection: its last matching state, at the change's
  // resourceVersion, as the apiserver sends it.
  EXPECT_EQ(seen, (std::vector<std::string>{"MODIFIED a1 11", "ADDED a9 12", "DELETED a2 13",
                                            "ADDED b1 14", "DELETED a3 15"}));
  (*watch)->Cancel();
}

TEST_F(ServeCacheTest, WatchWithInitialEventsEndsThemWithABookmark) {
  StartServer();
  auto watch = client_->Watch(Pods("b"), {.resource_version_match = "NotOlderThan",
                                          .timeout_seconds = 5,
                                          .allow_watch_bookmarks = true,
                                          .send_initial_events = true});
  ASSERT_OK(watch);
  std::vector<std::string> added;
  for (;;) {
    auto e = (*watch)->Next();
    ASSERT_OK(e);
    ASSERT_TRUE(e->has_value());
    if ((*e)->type == WatchEventType::kBookmark) {
      EXPECT_EQ((*e)->object->annotations().at("k8s.io/initial-events-end"), "true");
      EXPECT_EQ((*e)->object->resource_version(), "10");
      break;
    }
    added.push_back((*e)->object->name());
  }
  EXPECT_EQ(added, (std::vector<std::string>{"b0", "b1", "b2", "b3", "b4"}));
}

// A watcher from before the journal's window, or from before a relist,
// gets 410 Expired and must list again.
TEST_F(ServeCacheTest, WatchFromBeforeTheWindowOrARelistIsExpired) {
  StartServer();
  auto old = client_->Watch(Pods(), {.resource_version = "3", .timeout_seconds = 5});
  ASSERT_OK(old);
  auto e = (*old)->Next();
  EXPECT_EQ(e.status().code(), StatusCode::kExpired) << e.status();

  auto watch = client_->Watch(Pods(), {.resource_version = "10", .timeout_seconds = 30});
  ASSERT_OK(watch);
  // A relist in progress: lists get 429 until it finishes.
  auto session = pods_->BeginReplace(nullptr);
  ASSERT_OK(session);
  ASSERT_OK((*session)->Put(Pod("a", "a0", ++rv_)));
  ASSERT_TRUE(Eventually([&] {
    auto list = client_->List(Pods(), {});
    return list.status().code() == StatusCode::kResourceExhausted;
  }));
  auto during = client_->Watch(Pods(), {.resource_version = "10", .timeout_seconds = 5});
  EXPECT_EQ(during.status().code(), StatusCode::kResourceExhausted) << during.status();
  ASSERT_OK((*session)->Finish("20"));
  auto next = (*watch)->Next();
  EXPECT_EQ(next.status().code(), StatusCode::kExpired) << next.status();
  auto list = client_->List(Pods(), {});
  ASSERT_OK(list);
  EXPECT_EQ(list->resource_version, "20");
  EXPECT_EQ(Names(*list), std::vector<std::string>{"a0"});
}

// `kcache serve --snapshot`: the same API over a snapshot file, read in
// place. The file is the cache as of its export however the cache changes
// after; its journal window is empty, so a watch from the snapshot's
// resourceVersion hears only bookmarks and one from before it gets 410.
TEST_F(ServeCacheTest, ServesASnapshotFileInPlace) {
  const std::string file = dir_.Sub("cache.kcs");
  ASSERT_OK(ExportSnapshot(*cache_, file).status());
  Transaction later;  // after the export: not in the file
  later.Update(Pod("a", "a1", ++rv_, "Failed"));
  later.resource_version = std::to_string(rv_);
  ASSERT_OK(pods_->Commit(later, nullptr));

  CacheServeOptions o;
  o.listen = "127.0.0.1:0";
  o.bookmark_interval = std::chrono::milliseconds(200);
  auto server = CacheServer::Start("", file, o);
  ASSERT_OK(server) << server.status();
  server_ = std::move(server).value();
  client_ = NewClient("");

  auto resources = client_->Get("/api/v1");
  ASSERT_OK(resources);
  auto j = nlohmann::json::parse(*resources);
  ASSERT_EQ(j["resources"].size(), 1u) << j.dump();  // no secrets unless asked
  EXPECT_EQ(j["resources"][0]["name"], "pods");

  auto a1 = client_->Get(Pods("a"), "a1");
  ASSERT_OK(a1);
  EXPECT_EQ((*a1)->json(), PodJson("a", "a1", 2));
  auto all = client_->List(Pods(), {});
  ASSERT_OK(all);
  EXPECT_EQ(all->resource_version, "10");
  EXPECT_EQ(all->items.size(), 10u);
  auto db = client_->List(Pods(), {.label_selector = "app=db"});
  ASSERT_OK(db);
  EXPECT_EQ(Names(*db), (std::vector<std::string>{"b0", "b1", "b2", "b3", "b4"}));
  std::vector<std::string> paged;
  for (std::string token = "first"; !token.empty();) {
    auto page =
        client_->List(Pods(), {.limit = 3, .continue_token = token == "first" ? "" : token});
    ASSERT_OK(page);
    EXPECT_EQ(page->resource_version, "10");
    for (const ObjectPtr& p : page->items) paged.push_back(p->name());
    token = page->continue_token;
  }
  EXPECT_EQ(paged.size(), 10u);
  EXPECT_OK(client_->List(Pods(), {.resource_version = "10", .resource_version_match = "Exact"}));
  auto before = client_->List(Pods(), {.resource_version = "5", .resource_version_match = "Exact"});
  EXPECT_EQ(before.status().code(), StatusCode::kExpired) << before.status();
  EXPECT_FALSE(client_->Do("POST", "/api/v1/namespaces/a/pods", PodJson("a", "new", 0)).ok());

  auto quiet = client_->Watch(
      Pods(), {.resource_version = "10", .timeout_seconds = 1, .allow_watch_bookmarks = true});
  ASSERT_OK(quiet);
  int bookmarks = 0;
  for (;;) {
    auto e = (*quiet)->Next();
    ASSERT_OK(e);
    if (!e->has_value()) break;  // the timeout
    EXPECT_EQ((*e)->type, WatchEventType::kBookmark);
    EXPECT_EQ((*e)->object->resource_version(), "10");
    ++bookmarks;
  }
  EXPECT_GE(bookmarks, 1);
  auto old = client_->Watch(Pods(), {.resource_version = "5", .timeout_seconds = 5});
  ASSERT_OK(old);
  EXPECT_EQ((*old)->Next().status().code(), StatusCode::kExpired);

  // An informer syncs from it with one list.
  auto store = NewMemoryIndexer();
  auto informer = SyncedInformer(store);
  auto keys = store->ListKeys();
  ASSERT_OK(keys);
  EXPECT_EQ(keys->size(), 10u);
  auto stored = store->GetByKey("a/a1");
  ASSERT_OK(stored);
  ASSERT_TRUE(*stored);
  EXPECT_EQ(*(*stored)->FieldValue("status.phase"), "Running");
  informer->Stop();

  auto missing = CacheServer::Start("", dir_.Sub("none.kcs"), o);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound) << missing.status();
  auto both = CacheServer::Start(dir_.Sub("cache"), file, o);
  EXPECT_EQ(both.status().code(), StatusCode::kInvalidArgument) << both.status();
}

// Every request but a probe needs a token of the file.
TEST_F(ServeCacheTest, BearerTokensAreRequiredWhenConfigured) {
  const std::string tokens = dir_.Sub("tokens");
  std::ofstream(tokens) << "# readers\nsecret-one\nsecret-two\n";
  StartServer({.token_file = tokens});
  EXPECT_EQ(client_->List(Pods(), {}).status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(NewClient("secret-on")->List(Pods(), {}).status().code(), StatusCode::kUnauthenticated);
  EXPECT_OK(NewClient("secret-two")->List(Pods(), {}));
  // A kubelet's probes need none.
  for (const char* probe : {"/healthz", "/livez", "/readyz"}) {
    StatusOr<std::string> answer = client_->Get(probe);
    ASSERT_OK(answer) << probe;
    EXPECT_EQ(*answer, "ok") << probe;
  }
}

// Each token reads what its line grants: a bare token every resource but
// Secrets; resources= and namespaces= narrow it. A request outside the grant
// gets kube-apiserver's 403 (as its RBAC words it), and discovery lists only
// what the token may read.
TEST_F(ServeCacheTest, EachTokenReadsOnlyWhatItsLineGrants) {
  const std::string tokens = dir_.Sub("tokens");
  std::ofstream(tokens) << "# readers\n"
                           "plain\n"
                           "all resources=*,secrets name=backup\n"
                           "team-a   resources=pods namespaces=a\n";
  StartServer({.serve_secrets = true, .token_file = tokens});
  const ResourceRef secrets{{"", "v1", "secrets"}, true, ""};
  auto plain = NewClient("plain"), all = NewClient("all"), team = NewClient("team-a");

  EXPECT_OK(plain->List(Pods(), {}));
  auto denied = plain->List(secrets, {});
  EXPECT_EQ(denied.status().code(), StatusCode::kPermissionDenied) << denied.status();
  EXPECT_NE(denied.status().message().find(
                "secrets is forbidden: User \"token-2\" cannot list resource \"secrets\" in API "
                "group \"\" at the cluster scope"),
            std::string::npos)
      << denied.status();
  auto listed = all->List(secrets, {});
  ASSERT_OK(listed) << listed.status();
  EXPECT_EQ(listed->items.size(), 1u);

  auto mine = team->List(Pods("a"), {});
  ASSERT_OK(mine) << mine.status();
  EXPECT_EQ(mine->items.size(), 5u);
  for (auto [what, got] :
       {std::pair{"list in b", team->List(Pods("b"), {}).status()},
        std::pair{"list everywhere", team->List(Pods(), {}).status()},
        std::pair{"secrets in a",
                  team->List(ResourceRef{{"", "v1", "secrets"}, true, "a"}, {}).status()}}) {
    EXPECT_EQ(got.code(), StatusCode::kPermissionDenied) << what << ": " << got;
  }
  auto write = team->Do("DELETE", "/api/v1/namespaces/b/pods/b0");
  EXPECT_EQ(write.status().code(), StatusCode::kPermissionDenied) << write.status();
  EXPECT_NE(write.status().message().find("cannot delete resource"), std::string::npos)
      << write.status();
  auto get = team->Get(Pods("b"), "b0");
  EXPECT_EQ(get.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(
      get.status().message().find("pods \"b0\" is forbidden: User \"token-4\" cannot get "
                                  "resource \"pods\" in API group \"\" in the namespace \"b\""),
      std::string::npos)
      << get.status();
  EXPECT_OK(team->Get(Pods("a"), "a0"));
  auto watch = team->Watch(Pods("b"), {.timeout_seconds = 1});
  EXPECT_EQ(watch.status().code(), StatusCode::kPermissionDenied) << watch.status();
  EXPECT_NE(watch.status().message().find("cannot watch resource"), std::string::npos)
      << watch.status();
  auto watched = team->Watch(Pods("a"), {.timeout_seconds = 1});
  ASSERT_OK(watched);
  auto first = (*watched)->Next();
  ASSERT_OK(first);
  ASSERT_TRUE(first->has_value());

  // Discovery: what each token may read, and no more.
  auto names = [](const StatusOr<std::string>& body) {
    std::vector<std::string> out;
    EXPECT_OK(body) << body.status();
    if (!body.ok()) return out;
    const nlohmann::json list = nlohmann::json::parse(*body);
    for (const auto& r : list["resources"]) out.push_back(r["name"].get<std::string>());
    return out;
  };
  EXPECT_THAT(names(plain->Get("/api/v1")), ::testing::ElementsAre("pods"));
  EXPECT_THAT(names(all->Get("/api/v1")), ::testing::ElementsAre("pods", "secrets"));
  EXPECT_THAT(names(team->Get("/api/v1")), ::testing::ElementsAre("pods"));
  EXPECT_EQ(NewClient("nobody")->Get("/api/v1").status().code(), StatusCode::kUnauthenticated);
}

// Watches one client holds open at once are capped: one more gets 429
// TooManyRequests with Retry-After, while another token's watches go on; a
// watch that ends frees its place.
TEST_F(ServeCacheTest, WatchesBeyondAClientsCapAreAnswered429) {
  const std::string tokens = dir_.Sub("tokens");
  std::ofstream(tokens) << "one\ntwo\n";
  CacheServeOptions o;
  o.token_file = tokens;
  o.max_watches_per_client = 2;
  StartServer(o);
  auto one = NewClient("one"), two = NewClient("two");
  auto first = one->Watch(Pods(), {.timeout_seconds = 60});
  ASSERT_OK(first);
  auto second = one->Watch(Pods(), {.timeout_seconds = 60});
  ASSERT_OK(second);
  auto third = one->Watch(Pods(), {.timeout_seconds = 60});
  EXPECT_EQ(third.status().code(), StatusCode::kResourceExhausted) << third.status();
  EXPECT_NE(
      third.status().message().find("too many watches open from user \"token-1\" (at most 2)"),
      std::string::npos)
      << third.status();
  EXPECT_OK(two->Watch(Pods(), {.timeout_seconds = 60}));
  first->reset();  // the client leaves; the server's watch ends
  EXPECT_TRUE(Eventually([&] { return one->Watch(Pods(), {.timeout_seconds = 60}).ok(); }));
}

// Invariant 7 (width costs memory, not threads): each connection is a
// fiber. 2,000 watches and 500 half-sent requests are open at once, the
// process holds a fixed number of threads, a LIST is answered beside them,
// and one change reaches every watcher.
TEST_F(ServeCacheTest, TwoThousandWatchersHoldNoThreadEach) {
  constexpr size_t kWatchers = 2000, kHalfSent = 500;
  rlimit fds{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &fds), 0);
  fds.rlim_cur = std::max<rlim_t>(fds.rlim_cur, std::min<rlim_t>(fds.rlim_max, 16384));
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &fds), 0);
  ASSERT_GE(fds.rlim_cur, 2 * (kWatchers + kHalfSent) + 256) << "too few file descriptors";
  CacheServeOptions o;
  o.http.max_connections = kWatchers + kHalfSent + 16;
  o.max_watches_per_client = kWatchers;
  StartServer(o);
  const std::string url = server_->url();
  const int port = std::stoi(url.substr(url.rfind(':') + 1));
  auto connect_to = [&] {
    const int fd = kcache::testing::ConnectLoopback(port);
    EXPECT_GE(fd, 0) << std::strerror(errno);
    return fd;
  };
  auto send_all = [](int fd, const std::string& text) {
    ASSERT_EQ(send(fd, text.data(), text.size(), MSG_NOSIGNAL), static_cast<ssize_t>(text.size()));
  };
  const std::string watch =
      "GET /api/v1/namespaces/a/pods?watch=1&resourceVersion=" + std::to_string(rv_) +
      "&timeoutSeconds=120 HTTP/1.1\r\nHost: x\r\n\r\n";
  std::vector<int> watchers, half_sent;
  for (size_t i = 0; i < kWatchers; ++i) {
    watchers.push_back(connect_to());
    send_all(watchers.back(), watch);
  }
  for (size_t i = 0; i < kHalfSent; ++i) {
    half_sent.push_back(connect_to());
    send_all(half_sent.back(), "GET /api/v1/pods HTTP/1.1\r\nHo");
  }
  // Reads every watcher until each one's bytes hold `text`; how many do.
  std::vector<std::string> got(kWatchers);
  auto read_until = [&](std::string_view text) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    std::vector<pollfd> waiting;
    for (;;) {
      waiting.clear();
      for (size_t i = 0; i < kWatchers; ++i) {
        if (got[i].find(text) == std::string::npos) waiting.push_back({watchers[i], POLLIN, 0});
      }
      if (waiting.empty() || std::chrono::steady_clock::now() > give_up) {
        return kWatchers - waiting.size();
      }
      if (poll(waiting.data(), waiting.size(), 1000) <= 0) continue;
      for (const pollfd& p : waiting) {
        if (!p.revents) continue;
        char buf[8192];
        const ssize_t n = recv(p.fd, buf, sizeof buf, MSG_DONTWAIT);
        const size_t i = static_cast<size_t>(std::find(watchers.begin(), watchers.end(), p.fd) -
                                             watchers.begin());
        if (n > 0) got[i].append(buf, static_cast<size_t>(n));
      }
    }
  };
  EXPECT_EQ(read_until("\r\n\r\n"), kWatchers) << "watches without a response head";
  EXPECT_NE(got[0].find("HTTP/1.1 200 OK"), std::string::npos) << got[0];
  // The process's threads: the writer's RocksDB, the server's refresher, the
  // fibers' carriers, the poller, the timer, this test's client; none per
  // connection.
  const int threads = kcache::testing::ThreadCount();
  EXPECT_LE(threads, 32) << "threads with " << kWatchers << " watches open";
  auto list = client_->List(Pods(), {});
  ASSERT_OK(list) << list.status();
  EXPECT_EQ(list->items.size(), 10u);
  Transaction txn;
  txn.Add(Pod("a", "arrived", ++rv_));
  txn.resource_version = std::to_string(rv_);
  ASSERT_OK(pods_->Commit(txn, nullptr));
  EXPECT_EQ(read_until(R"("name":"arrived")"), kWatchers) << "watchers that missed the change";
  for (int fd : watchers) close(fd);
  for (int fd : half_sent) close(fd);
}

// Beyond loopback only with TLS and tokens: a client that trusts the
// certificate and carries a token reads; one without a token does not.
TEST_F(ServeCacheTest, ServesTlsWithTokensBeyondLoopback) {
  const std::string cert = dir_.Sub("server.crt"), key = dir_.Sub("server.key");
  testing::CommandResult made = testing::MakeServingCertificate(cert, key);
  ASSERT_EQ(made.exit_code, 0) << made.output;
  const std::string tokens = dir_.Sub("tokens");
  std::ofstream(tokens) << "reader-token\n";
  CacheServeOptions o;
  o.tls_cert_file = cert;
  o.tls_key_file = key;
  o.token_file = tokens;
  o.listen = "0.0.0.0:0";  // every address: allowed with TLS and tokens
  auto server = CacheServer::Start(dir_.Sub("cache"), "", o);
  ASSERT_OK(server) << server.status();
  const std::string url = (*server)->url();
  ASSERT_EQ(url.rfind("https://", 0), 0u) << url;
  RestConfig config;
  config.server = "https://127.0.0.1:" + url.substr(url.rfind(':') + 1);
  config.ca_file = cert;
  config.bearer_token = "reader-token";
  auto client = RestClient::Create(config);
  ASSERT_OK(client);
  auto list = (*client)->List(Pods(), {});
  ASSERT_OK(list) << list.status();
  EXPECT_EQ(list->items.size(), 10u);
  auto watch = (*client)->Watch(Pods("a"), {.timeout_seconds = 1});
  ASSERT_OK(watch);
  auto first = (*watch)->Next();
  ASSERT_OK(first);
  ASSERT_TRUE(first->has_value());
  EXPECT_EQ((**first).object->name(), "a0");
  // A client that does not trust the certificate: requests started
  // together each fail (one dials, the others wait for it and then meet the
  // same refusal), none hangs.
  {
    RestConfig untrusting = config;
    untrusting.ca_file = "";
    auto refused = RestClient::Create(untrusting);
    ASSERT_OK(refused);
    auto each = (*refused)->GetEach({"/api", "/apis", "/api/v1", "/version"});
    ASSERT_EQ(each.size(), 4u);
    for (const auto& r : each) EXPECT_FALSE(r.ok());
  }
  config.bearer_token = "";
  auto anonymous = RestClient::Create(config);
  ASSERT_OK(anonymous);
  EXPECT_EQ((*anonymous)->List(Pods(), {}).status().code(), StatusCode::kUnauthenticated);
  // TLS files that do not match, or half of them, are refused.
  o.tls_key_file = tokens;
  EXPECT_EQ(CacheServer::Start(dir_.Sub("cache"), "", o).status().code(),
            StatusCode::kInvalidArgument);
  o.tls_key_file = "";
  EXPECT_EQ(CacheServer::Start(dir_.Sub("cache"), "", o).status().code(),
            StatusCode::kInvalidArgument);
}

// A unix socket: only its owner may connect (mode 0600), and it is gone
// when the server stops.
TEST_F(ServeCacheTest, ServesOnAUnixSocket) {
  const std::string path = dir_.Sub("kcache.sock");
  CacheServeOptions o;
  o.listen = "unix:" + path;
  auto server = CacheServer::Start(dir_.Sub("cache"), "", o);
  ASSERT_OK(server) << server.status();
  EXPECT_EQ((*server)->url(), "unix:" + path);
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const std::string request =
      "GET /api/v1/namespaces/a/pods/a1 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
  ASSERT_EQ(write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
  std::string response;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;)
    response.append(buf, static_cast<size_t>(n));
  close(fd);
  EXPECT_EQ(response.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << response;
  EXPECT_NE(response.find(PodJson("a", "a1", 2)), std::string::npos) << response;
  (*server)->Stop();
  server->reset();
  EXPECT_NE(stat(path.c_str(), &st), 0);
}

TEST_F(ServeCacheTest, RefusesNonLoopbackAddressesAndEmptyTokenFiles) {
  auto open = CacheServer::Start(dir_.Sub("cache"), "", {.listen = "0.0.0.0:0"});
  EXPECT_EQ(open.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(open.status().message().find("loopback"), std::string::npos) << open.status();
  std::ofstream(dir_.Sub("empty")) << "\n# none\n";
  auto empty = CacheServer::Start(dir_.Sub("cache"), "",
                                  {.listen = "127.0.0.1:0", .token_file = dir_.Sub("empty")});
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument) << empty.status();
  auto missing = CacheServer::Start(dir_.Sub("none"), "", {.listen = "127.0.0.1:0"});
  EXPECT_FALSE(missing.ok());
}

// kcache's own informer lists and watches through the server and follows
// what the writer commits.
TEST_F(ServeCacheTest, AnInformerSyncsAndFollowsTheWriter) {
  StartServer();
  auto store = NewMemoryIndexer();
  InformerOptions options;
  options.reflector.backoff_initial = std::chrono::milliseconds(50);
  auto informer = SharedIndexInformer::Create(NewListWatch(client_, Pods()), store, options);
  ASSERT_OK(informer->Start());
  ASSERT_TRUE(informer->WaitForSync(std::chrono::seconds(30)));
  EXPECT_EQ(*store->Size(), 10u);
  Transaction txn;
  txn.Update(Pod("a", "a1", ++rv_, "Failed"));
  txn.Delete(Pod("b", "b4", ++rv_));
  txn.Add(Pod("c", "c1", ++rv_));
  Write(std::move(txn));
  EXPECT_TRUE(Eventually([&] {
    auto a1 = store->GetByKey("a/a1");
    return *store->Size() == 10u && a1.ok() && *a1 &&
           (*a1)->FieldValue("status.phase").value_or("") == "Failed" &&
           store->GetByKey("c/c1").value() != nullptr;
  }));
  informer->Stop();
}

// The server restarts on the same address while the writer goes on: the
// informer's watch resumes from its resourceVersion, without a new list.
TEST_F(ServeCacheTest, AWatcherResumesAfterTheServerRestarts) {
  StartServer();
  auto store = NewMemoryIndexer();
  auto informer = SyncedInformer(store);
  // A watch that ends within a second having received nothing is relisted
  // (client-go's very short watch): the restart comes after that second.
  ASSERT_TRUE(Eventually([&] { return informer->stats().watches >= 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  RestartServer([&] {
    Transaction txn;
    txn.Add(Pod("c", "while-down", ++rv_));
    txn.resource_version = std::to_string(rv_);
    ASSERT_OK(pods_->Commit(txn, nullptr));
  });
  EXPECT_TRUE(Eventually([&] { return store->GetByKey("c/while-down").value() != nullptr; }));
  EXPECT_EQ(informer->stats().lists, 1u);
  informer->Stop();
}

// A watcher that was away while more changes came than the journal keeps
// gets 410 when it comes back, and relists from the server.
TEST_F(ServeCacheTest, AWatcherTooFarBehindTheJournalGets410AndRelists) {
  // The writer reopens the cache with a journal of 5 changes.
  pods_.reset();
  cache_.reset();
  CacheOptions small;
  small.journal.max_events = 5;
  auto cache = Cache::Open(dir_.Sub("cache"), small);
  ASSERT_OK(cache);
  cache_ = *cache;
  auto pods = cache_->OpenKeyspace("pods");
  ASSERT_OK(pods);
  pods_ = *pods;
  StartServer();
  auto store = NewMemoryIndexer();
  auto informer = SyncedInformer(store);
  RestartServer([&] {
    for (int i = 0; i < 20; ++i) {
      Transaction txn;
      txn.Add(Pod("c", "c" + std::to_string(i), ++rv_));
      txn.resource_version = std::to_string(rv_);
      ASSERT_OK(pods_->Commit(txn, nullptr));
    }
  });
  // The store holds the relist's objects a moment before the reflector
  // counts the list: wait for both.
  EXPECT_TRUE(Eventually([&] { return *store->Size() == 30u && informer->stats().lists >= 2; }))
      << *store->Size() << " objects, " << informer->stats().lists << " lists";
  EXPECT_EQ(informer->stats().lists, 2u);
  EXPECT_EQ(store->LastSyncResourceVersion(), std::to_string(rv_));
  informer->Stop();
}

}  // namespace
}  // namespace kcache::tool
