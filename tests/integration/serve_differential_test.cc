// One scenario, two servers: the real kube-apiserver and kcache serve. The
// scenario creates, updates and deletes configmaps, watches from a list's
// resourceVersion, resumes a watch from a later one, filters a watch by
// label, pages through a list, provokes errors, and watches and continues
// from resourceVersions made expired by a compaction. What the client
// observes is written down as lines (objects without uid, timestamps,
// resourceVersions and managedFields) and the two transcripts must agree.
#include <unistd.h>

#include <iostream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "integration/cluster.h"
#include "kcache/rest_client.h"
#include "serve/server.h"
#include "testing/status_matchers.h"

namespace kcache {
namespace {

struct Target {
  std::shared_ptr<RestClient> client;
  std::function<void()> compact;
  std::string ns;
};

ResourceRef ConfigMaps(const std::string& ns) { return {{"", "v1", "configmaps"}, true, ns}; }

std::string Normalize(std::string_view json) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  if (!j.is_object()) return "<not json: " + std::string(json) + ">";
  if (j.contains("metadata")) {
    for (const char* k :
         {"uid", "resourceVersion", "creationTimestamp", "managedFields", "selfLink"}) {
      j["metadata"].erase(k);
    }
  }
  if (j.contains("details")) j["details"].erase("uid");
  return j.dump();  // keys sorted
}

std::string Error(const Status& st, bool with_message) {
  if (st.ok()) return "ok";
  const HttpError* h = st.http_error();
  if (!h) return "error without HTTP status: " + st.ToString();
  std::string out = std::to_string(h->http_code) + " " + h->reason;
  if (with_message) out += " \"" + std::string(st.message()) + "\"";
  if (!h->continue_token.empty()) out += " with a continue token";
  return out;
}

// The scenario, as a transcript of what the client saw.
std::vector<std::string> RunScenario(Target& t) {
  std::vector<std::string> log;
  RestClient& c = *t.client;
  const std::string base = "/api/v1/namespaces/" + t.ns + "/configmaps";
  auto create = [&](const std::string& name, const std::string& app,
                    const std::string& value) -> std::string {
    auto r = c.Do("POST", base,
                  R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name +
                      R"(","labels":{"app":")" + app + R"("}},"data":{"k":")" + value + R"("}})");
    log.push_back("create " + name + ": " + (r.ok() ? Normalize(*r) : Error(r.status(), true)));
    return r.ok() ? nlohmann::json::parse(*r)["metadata"]["resourceVersion"].get<std::string>()
                  : "";
  };
  auto update = [&](const std::string& name, const std::function<void(nlohmann::json&)>& change) {
    auto cur = c.Get(base + "/" + name);
    if (!cur.ok()) return log.push_back("get " + name + ": " + Error(cur.status(), true));
    nlohmann::json j = nlohmann::json::parse(*cur);
    change(j);
    auto r = c.Do("PUT", base + "/" + name, j.dump());
    log.push_back("update " + name + ": " + (r.ok() ? Normalize(*r) : Error(r.status(), true)));
  };
  auto read = [&](const std::string& what, WatchStream& w, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      auto e = w.Next();
      if (!e.ok()) return log.push_back(what + ": " + Error(e.status(), false));
      if (!e->has_value()) return log.push_back(what + ": ended");
      log.push_back(what + ": " + std::string(WatchEventTypeName((*e)->type)) + " " +
                    Normalize((*e)->object->json()));
    }
  };

  auto list0 = c.List(ConfigMaps(t.ns), {});
  if (!list0.ok()) return {"list: " + list0.status().ToString()};
  log.push_back("list: " + std::to_string(list0->items.size()) + " items");
  const std::string rv0 = list0->resource_version;
  auto w = c.Watch(ConfigMaps(t.ns), {.resource_version = rv0});
  if (!w.ok()) return {"watch: " + w.status().ToString()};

  create("a", "x", "1");
  const std::string rv_b = create("b", "x", "1");
  create("c", "y", "1");
  create("a", "x", "again");  // AlreadyExists
  update("a", [](nlohmann::json& j) { j["data"]["k"] = "2"; });
  update("b", [](nlohmann::json& j) { j["metadata"]["labels"]["app"] = "y"; });
  update("a", [](nlohmann::json& j) { j["data"]["k"] = "2"; });  // no change: no event
  auto del = c.Do("DELETE", base + "/c");
  log.push_back("delete c: " + (del.ok() ? Normalize(*del) : Error(del.status(), true)));
  auto stale =
      c.Do("PUT", base + "/a",
           R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","resourceVersion":")" +
               rv_b + R"("},"data":{"k":"stale"}})");
  log.push_back("stale update: " + Error(stale.status(), true));
  auto missing = c.Get(base + "/nope");
  log.push_back("get nope: " + Error(missing.status(), true));

  read("watch from the list", **w, 6);

  auto resumed = c.Watch(ConfigMaps(t.ns), {.resource_version = rv_b});
  if (!resumed.ok()) return {"resumed watch: " + resumed.status().ToString()};
  read("watch from b's creation", **resumed, 4);

  auto selected = c.Watch(ConfigMaps(t.ns), {.label_selector = "app=y", .resource_version = rv0});
  if (!selected.ok()) return {"selected watch: " + selected.status().ToString()};
  read("watch app=y", **selected, 3);

  std::string token;
  for (int page = 1; page <= 3; ++page) {
    auto p = c.List(ConfigMaps(t.ns), {.limit = 1, .continue_token = token});
    if (!p.ok()) {
      log.push_back("page " + std::to_string(page) + ": " + Error(p.status(), true));
      break;
    }
    log.push_back(
        "page " + std::to_string(page) + ": " + (p->items.empty() ? "" : p->items[0]->name()) +
        (p->continue_token.empty() ? ", last" : ", more") +
        (p->remaining_item_count ? ", " + std::to_string(*p->remaining_item_count) + " remaining"
                                 : ""));
    token = p->continue_token;
    if (token.empty()) break;
  }

  for (const char* q : {"?labelSelector=app%20in", "?fieldSelector=data.k%3D1",
                        "?resourceVersionMatch=Exact", "?limit=1&resourceVersion=1&continue=x"}) {
    auto r = c.Get(base + q);
    log.push_back(std::string("list ") + q + ": " + Error(r.status(), false));
  }
  auto field = c.Get(base + "?fieldSelector=data.k%3D1");
  log.push_back("unsupported field: " + Error(field.status(), true));

  // A page, a change, a compaction: the page's token and the first list's
  // resourceVersion are now too old.
  auto first = c.List(ConfigMaps(t.ns), {.limit = 1});
  create("d", "x", "1");
  t.compact();
  auto after = c.List(ConfigMaps(t.ns),
                      {.limit = 1, .continue_token = first.ok() ? first->continue_token : ""});
  log.push_back("continue after compaction: " + Error(after.status(), false));
  auto old = c.Watch(ConfigMaps(t.ns), {.resource_version = rv0});
  if (!old.ok()) {
    log.push_back("watch from before compaction, at open: " + Error(old.status(), false));
  } else {
    read("watch from before compaction, in the stream", **old, 1);
  }
  return log;
}

TEST(ServeDifferentialTest, RealApiserverAndKcacheServeAgree) {
  testing::Cluster& cluster = testing::Cluster::Get();
  Target real{cluster.Admin(), [&] { cluster.CompactEtcd(); }, cluster.Namespace("differential")};

  serve::ServeOptions o;
  o.listen = "127.0.0.1:0";
  o.cluster.pods = 0;
  o.churn = {0, 0, 0, 0};
  auto server = serve::Server::Start(o);
  ASSERT_OK(server) << server.status();
  RestConfig config;
  config.server = (*server)->url();
  RestClientOptions options;
  options.max_retries = 0;
  Target ours{RestClient::Create(config, options).value(), [&] { (*server)->state().Compact(); },
              real.ns};
  auto ns = ours.client->Do("POST", "/api/v1/namespaces",
                            R"({"metadata":{"name":")" + real.ns + R"("}})");
  ASSERT_OK(ns) << ns.status();

  std::vector<std::string> want = RunScenario(real);
  std::vector<std::string> got = RunScenario(ours);
  ASSERT_GT(want.size(), 20u);
  for (const std::string& line : want) std::cout << "  " << line << "\n";  // for the log
  for (size_t i = 0; i < std::max(want.size(), got.size()); ++i) {
    EXPECT_EQ(i < want.size() ? want[i] : "<nothing>", i < got.size() ? got[i] : "<nothing>")
        << "line " << i;
  }
}

}  // namespace
}  // namespace kcache
