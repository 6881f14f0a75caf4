// SPDX-License-Identifier: Apache-2.0

// One scenario, two servers: the real kube-apiserver and kcache serve. The
// scenario creates, updates and deletes configmaps, watches from a list's
// resourceVersion, resumes a watch from a later one, filters a watch by
// label, pages through a list, provokes errors, and watches and continues
// from resourceVersions made expired by a compaction. A second one runs
// kubectl's imperative creates, which send protobuf. What the client
// observes is written down as lines (objects without uid, timestamps,
// resourceVersions and managedFields) and the two transcripts must agree.
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <iostream>
#include <map>
#include <regex>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "integration/cluster.h"
#include "kcache/rest_client.h"
#include "testing/command.h"
#include "testing/status_matchers.h"
#include "testing/temp_dir.h"
#include "tools/kcache/testcluster/server.h"

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

// The list and watch semantics table of docs/serve.md, row by row, on pods
// (served by the watch cache on kube-apiserver): each row is one request,
// and what it returns is written as a line that names resourceVersions by
// their role (N, N2, N3: the pods' creations; now: the current state), so
// that the two servers' lines compare equal. A row with `v120` set is a
// known difference between kube-apiserver v1.20 and newer servers (1.27+),
// which kcache serve follows: v1.20's answer and a part of serve's
// (`newer`) are asserted.
struct Row {
  std::string name;
  std::string query;  // after "?"; {N}, {FUTURE} and {TOKEN} are replaced
  bool watch = false;
  bool message = true;  // compare the Status message too
  std::string v120;     // v1.20's answer, where serve answers as newer servers
  std::string newer;    // a part of serve's answer then
};

constexpr const char* kWatchMatchForbidden =
    "422 Invalid \"ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: "
    "Forbidden: resourceVersionMatch is forbidden for watch\" cause FieldValueForbidden";

std::vector<Row> TableRows() {
  return {
      {"list, no resourceVersion", ""},
      {"list, no resourceVersion, limit", "limit=1"},
      {"list at 0", "resourceVersion=0"},
      {"list at 0, limit (ignored)", "resourceVersion=0&limit=1"},
      {"list at 0, NotOlderThan", "resourceVersion=0&resourceVersionMatch=NotOlderThan"},
      {"list at 0, Exact", "resourceVersion=0&resourceVersionMatch=Exact"},
      {"list at N", "resourceVersion={N}"},
      {"list at N, limit (Exact)", "resourceVersion={N}&limit=1"},
      {"list at N, NotOlderThan", "resourceVersion={N}&resourceVersionMatch=NotOlderThan"},
      {"list at N, NotOlderThan, limit",
       "resourceVersion={N}&resourceVersionMatch=NotOlderThan&limit=1"},
      {"list at N, Exact", "resourceVersion={N}&resourceVersionMatch=Exact"},
      {"list at N, Exact, limit", "resourceVersion={N}&resourceVersionMatch=Exact&limit=1"},
      {"list, Exact without resourceVersion", "resourceVersionMatch=Exact"},
      {"list, NotOlderThan without resourceVersion", "resourceVersionMatch=NotOlderThan"},
      {"list, unknown match", "resourceVersion={N}&resourceVersionMatch=Bogus"},
      {"list at a future resourceVersion", "resourceVersion={FUTURE}"},
      {"list at a future resourceVersion, limit (Exact)", "resourceVersion={FUTURE}&limit=1"},
      {"list at a future resourceVersion, NotOlderThan, limit",
       "resourceVersion={FUTURE}&resourceVersionMatch=NotOlderThan&limit=1"},
      {"list at a future resourceVersion, Exact",
       "resourceVersion={FUTURE}&resourceVersionMatch=Exact"},
      {"list, sendInitialEvents", "sendInitialEvents=true", false, true, "200 at now, 3 items",
       "422 Invalid \"ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: "
       "Forbidden: sendInitialEvents is forbidden for list\" cause FieldValueForbidden"},
      {"list, continue", "limit=1&continue={TOKEN}"},
      {"list, continue at 0", "limit=1&continue={TOKEN}&resourceVersion=0"},
      {"list, continue at N", "limit=1&continue={TOKEN}&resourceVersion={N}"},
      {"list, continue, NotOlderThan",
       "limit=1&continue={TOKEN}&resourceVersionMatch=NotOlderThan"},
      {"list, continue, Exact at N",
       "limit=1&continue={TOKEN}&resourceVersion={N}&resourceVersionMatch=Exact"},
      {"list, bad continue token", "limit=1&continue=bogus", false, false},
      {"watch, no resourceVersion", "timeoutSeconds=1", true},
      {"watch at 0", "resourceVersion=0&timeoutSeconds=1", true},
      {"watch at N", "resourceVersion={N}&timeoutSeconds=1", true},
      {"watch at a future resourceVersion", "resourceVersion={FUTURE}&timeoutSeconds=1", true, true,
       "200", "200 ERROR:504"},
      {"watch at N, NotOlderThan",
       "resourceVersion={N}&resourceVersionMatch=NotOlderThan&timeoutSeconds=1", true, true,
       kWatchMatchForbidden, "unless sendInitialEvents is provided"},
      {"watch, sendInitialEvents at N",
       "sendInitialEvents=true&resourceVersion={N}&resourceVersionMatch=NotOlderThan&"
       "allowWatchBookmarks=true&timeoutSeconds=1",
       true, true, kWatchMatchForbidden, "200 ADDED:p1@N ADDED:p2@N2 ADDED:p3@N3 BOOKMARK:"},
  };
}

// What one row returns on one server.
std::string Answer(RestClient& c, const std::string& path, const Row& row,
                   const std::map<std::string, std::string>& roles, uint64_t now) {
  // An object's resourceVersion is named by the creation it is; a list's
  // is "now" when it is not older than the row's start.
  auto role = [&](const std::string& rv, bool list) {
    uint64_t v = 0;
    const bool number =
        !rv.empty() && std::from_chars(rv.data(), rv.data() + rv.size(), v).ec == std::errc();
    if (list && number && v >= now) return std::string("now");
    if (auto it = roles.find(rv); it != roles.end()) return it->second;
    return number && v >= now ? std::string("now") : "<" + rv + ">";
  };
  // The status, with the server's message alone (the client adds the
  // request before it and the HTTP status after it).
  auto error = [&](const Status& st) {
    const HttpError* h = st.http_error();
    if (!h) return "error without HTTP status: " + st.ToString();
    std::string out = std::to_string(h->http_code) + " " + h->reason;
    if (row.message) {
      std::string m(st.message());
      if (size_t colon = m.find(": "); m.starts_with("GET ") && colon != std::string::npos)
        m = m.substr(colon + 2);
      if (size_t http = m.rfind(" (HTTP "); http != std::string::npos) m = m.substr(0, http);
      // resourceVersions in messages ("Too large resource version: R, current: C")
      // are the servers' own numbers.
      m = std::regex_replace(m, std::regex("[0-9]{3,}"), "#");
      out += " \"" + m + "\"";
    }
    for (const auto& cause : h->causes) out += " cause " + cause.type;
    return out;
  };
  if (row.watch) {
    auto body = c.Get(path + "?watch=1&" + row.query);
    if (!body.ok()) return error(body.status());
    // Initial events come in no set order (kube-apiserver's watch cache
    // walks a map): each answer lists its events sorted.
    std::vector<std::string> events;
    size_t at = 0;
    while (at < body->size()) {
      size_t end = body->find('\n', at);
      if (end == std::string::npos) end = body->size();
      nlohmann::json e = nlohmann::json::parse(body->substr(at, end - at), nullptr, false);
      at = end + 1;
      if (!e.is_object()) continue;
      const nlohmann::json& o = e["object"];
      events.push_back(e.value("type", "") + ":" +
                       (e["type"] == "ERROR"
                            ? std::to_string(o.value("code", 0))
                            : o["metadata"].value("name", "") + "@" +
                                  role(o["metadata"].value("resourceVersion", ""), false)));
    }
    std::sort(events.begin(), events.end());
    std::string out = "200";
    for (const std::string& e : events) out += " " + e;
    return out;
  }
  auto body = c.Get(path + "?" + row.query);
  if (!body.ok()) return error(body.status());
  nlohmann::json j = nlohmann::json::parse(*body, nullptr, false);
  if (!j.is_object()) return "not json";
  const nlohmann::json& m = j["metadata"];
  std::string out = "200 at " + role(m.value("resourceVersion", ""), true) + ", " +
                    std::to_string(j["items"].size()) + " items";
  if (m.contains("continue")) out += ", continue";
  if (m.contains("remainingItemCount")) out += ", " + m["remainingItemCount"].dump() + " remaining";
  return out;
}

std::vector<std::string> RunTable(Target& t) {
  RestClient& c = *t.client;
  const std::string path = "/api/v1/namespaces/" + t.ns + "/pods";
  std::string n;
  std::map<std::string, std::string> roles;  // the pods' creations: N, N2, N3
  for (int i = 1; i <= 3; ++i) {
    auto r = c.Do("POST", path,
                  R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p)" + std::to_string(i) +
                      R"("},"spec":{"containers":[{"name":"c","image":"x"}]}})");
    if (!r.ok()) return {"create: " + r.status().ToString()};
    std::string rv = nlohmann::json::parse(*r)["metadata"]["resourceVersion"].get<std::string>();
    if (i == 1) n = rv;
    roles[rv] = i == 1 ? "N" : "N" + std::to_string(i);
  }
  std::vector<std::string> out;
  for (const Row& row : TableRows()) {
    auto now_list = c.List({{"", "v1", "pods"}, true, t.ns}, {.limit = 1});
    if (!now_list.ok()) return {"list: " + now_list.status().ToString()};
    const uint64_t now = std::stoull(now_list->resource_version);
    std::string q = row.query;
    auto replace = [&](const std::string& from, const std::string& to) {
      for (size_t at = q.find(from); at != std::string::npos; at = q.find(from))
        q.replace(at, from.size(), to);
    };
    replace("{N}", n);
    replace("{FUTURE}", std::to_string(now + 100000));
    replace("{TOKEN}", now_list->continue_token);
    Row r = row;
    r.query = q;
    out.push_back(row.name + ": " + Answer(c, path, r, roles, now));
  }
  return out;
}

// kcache serve with an empty, quiet synthetic cluster and namespace `ns`,
// and the target that drives it.
struct Ours {
  explicit Ours(const std::string& ns) {
    serve::ServeOptions o;
    o.listen = "127.0.0.1:0";
    o.cluster.pods = 0;
    o.churn = {0, 0, 0, 0};
    auto started = serve::Server::Start(o);
    EXPECT_OK(started) << started.status();
    server = std::move(started).value();
    RestConfig config;
    config.server = server->url();
    RestClientOptions options;
    options.max_retries = 0;
    target = {RestClient::Create(config, options).value(), [this] { server->state().Compact(); },
              ns};
    auto created =
        target.client->Do("POST", "/api/v1/namespaces", R"({"metadata":{"name":")" + ns + R"("}})");
    EXPECT_OK(created) << created.status();
  }
  std::unique_ptr<serve::Server> server;
  Target target;
};

TEST(ServeDifferentialTest, ListAndWatchSemanticsTableRowByRow) {
  testing::Cluster& cluster = testing::Cluster::Get();
  Target real{cluster.Admin(), [&] { cluster.CompactEtcd(); }, cluster.Namespace("table")};
  Ours ours(real.ns);
  ASSERT_NE(ours.server, nullptr);
  std::vector<std::string> want = RunTable(real);
  std::vector<std::string> got = RunTable(ours.target);
  const std::vector<Row> rows = TableRows();
  ASSERT_EQ(want.size(), rows.size()) << ::testing::PrintToString(want);
  ASSERT_EQ(got.size(), rows.size()) << ::testing::PrintToString(got);
  for (size_t i = 0; i < rows.size(); ++i) {
    std::cout << "  " << want[i] << "\n";  // the table, for the log
    if (!rows[i].v120.empty()) {
      EXPECT_EQ(want[i], rows[i].name + ": " + rows[i].v120) << "kube-apiserver v1.20";
      EXPECT_THAT(got[i], ::testing::HasSubstr(rows[i].newer)) << "kcache serve";
      continue;
    }
    EXPECT_EQ(want[i], got[i]) << "row " << i;
  }
}

TEST(ServeDifferentialTest, RealApiserverAndKcacheServeAgree) {
  testing::Cluster& cluster = testing::Cluster::Get();
  Target real{cluster.Admin(), [&] { cluster.CompactEtcd(); }, cluster.Namespace("differential")};
  Ours ours_server(real.ns);
  ASSERT_NE(ours_server.server, nullptr);
  Target& ours = ours_server.target;

  std::vector<std::string> want = RunScenario(real);
  std::vector<std::string> got = RunScenario(ours);
  ASSERT_GT(want.size(), 20u);
  for (const std::string& line : want) std::cout << "  " << line << "\n";  // for the log
  for (size_t i = 0; i < std::max(want.size(), got.size()); ++i) {
    EXPECT_EQ(i < want.size() ? want[i] : "<nothing>", i < got.size() ? got[i] : "<nothing>")
        << "line " << i;
  }
}

// kubectl 1.32's imperative creates (`kubectl` is its command line with
// the server's flags), which send built-in kinds as protobuf: what kubectl
// prints, then the objects as the server stored them.
std::vector<std::string> RunImperativeCreates(const std::string& kubectl, Target& t) {
  const std::string ns = " -n " + t.ns;
  const std::vector<std::string> commands = {
      "create configmap settings" + ns + " --from-literal=a=b --from-literal=c=d",
      "create secret generic creds" + ns + " --from-literal=user=admin --from-literal=pass=s3cr=t",
      "create secret docker-registry pull" + ns +
          " --docker-server=r.example --docker-username=u --docker-password=p",
      "create namespace " + t.ns + "-made",
      "create configmap settings" + ns + " --from-literal=a=again",
  };
  std::vector<std::string> out;
  for (const std::string& c : commands) {
    testing::CommandResult r = testing::RunCommand(kubectl + " " + c + " 2>&1");
    out.push_back(c.substr(0, c.find(" -n ")) + ": exit " + std::to_string(r.exit_code) + ": " +
                  r.output);
  }
  for (const std::string& path :
       {"/api/v1/namespaces/" + t.ns + "/configmaps/settings",
        "/api/v1/namespaces/" + t.ns + "/secrets/creds",
        "/api/v1/namespaces/" + t.ns + "/secrets/pull", "/api/v1/namespaces/" + t.ns + "-made"}) {
    StatusOr<std::string> body = t.client->Get(path);
    out.push_back(path.substr(path.rfind('/') + 1) + ": " +
                  (body.ok() ? Normalize(*body) : Error(body.status(), true)));
  }
  return out;
}

TEST(ServeDifferentialTest, KubectlsImperativeCreatesStoreTheSameObjects) {
  testing::Cluster& cluster = testing::Cluster::Get();
  Target real{cluster.Admin(), [&] { cluster.CompactEtcd(); }, cluster.Namespace("imperative")};
  Ours ours_server(real.ns);
  ASSERT_NE(ours_server.server, nullptr);
  testing::TempDir dir;  // kubectl's discovery cache, one per server
  const std::string kubectl = "kubectl --cache-dir " + dir.Sub("cache-");
  std::vector<std::string> want = RunImperativeCreates(
      "KUBECONFIG=" + cluster.File("kubeconfig") + " " + kubectl + "real", real);
  std::vector<std::string> got = RunImperativeCreates(
      "KUBECONFIG=/nonexistent " + kubectl + "ours --server " + ours_server.server->url(),
      ours_server.target);
  ASSERT_EQ(want.size(), 9u);
  EXPECT_NE(want[0].find("exit 0: configmap/settings created"), std::string::npos) << want[0];
  for (size_t i = 0; i < want.size(); ++i) {
    std::cout << "  " << want[i] << "\n";  // for the log
    EXPECT_EQ(want[i], i < got.size() ? got[i] : "<nothing>") << "line " << i;
  }
}

}  // namespace
}  // namespace kcache
