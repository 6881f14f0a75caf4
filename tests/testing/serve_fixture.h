// SPDX-License-Identifier: Apache-2.0

// An in-process `kcache serve` with a small quiet cluster and a client for
// it, plus helpers that change configmaps and read the server's counters.
#ifndef KCACHE_TESTS_TESTING_SERVE_FIXTURE_H_
#define KCACHE_TESTS_TESTING_SERVE_FIXTURE_H_

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "kcache/rest_client.h"
#include "testing/eventually.h"
#include "testing/status_matchers.h"
#include "tools/kcache/testcluster/server.h"

namespace kcache::testing {

// A cluster of `pods` pods and no churn, on a free loopback port.
inline serve::ServeOptions QuietCluster(int pods = 200) {
  serve::ServeOptions o;
  o.listen = "127.0.0.1:0";
  o.cluster.pods = pods;
  o.cluster.namespaces = 4;
  o.cluster.nodes = 10;
  o.churn = {0, 0, 0, 0};
  return o;
}

struct ServeFixture {
  explicit ServeFixture(serve::ServeOptions o = QuietCluster()) {
    auto s = serve::Server::Start(o);
    EXPECT_OK(s) << s.status();
    server = std::move(s).value();
    RestConfig config;
    config.server = server->url();
    auto c = RestClient::Create(config);
    EXPECT_OK(c) << c.status();
    client = std::move(c).value();
  }

  static ResourceRef ConfigMaps(std::string ns = "") {
    return {{"", "v1", "configmaps"}, true, std::move(ns)};
  }
  static ResourceRef Pods() { return {{"", "v1", "pods"}, true, ""}; }

  static std::string ConfigMapJson(const std::string& name, const std::string& value,
                                   const std::string& labels = R"({"app":"a"})") {
    return R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name +
           R"(","labels":)" + labels + R"(},"data":{"k":")" + value + R"("}})";
  }
  void Create(const std::string& name, const std::string& value = "v",
              const std::string& ns = "default") {
    auto r =
        client->Do("POST", "/api/v1/namespaces/" + ns + "/configmaps", ConfigMapJson(name, value));
    ASSERT_OK(r) << r.status();
  }
  void Update(const std::string& name, const std::string& value,
              const std::string& ns = "default") {
    auto r = client->Do("PUT", "/api/v1/namespaces/" + ns + "/configmaps/" + name,
                        ConfigMapJson(name, value));
    ASSERT_OK(r) << r.status();
  }
  void Delete(const std::string& name, const std::string& ns = "default") {
    auto r = client->Do("DELETE", "/api/v1/namespaces/" + ns + "/configmaps/" + name);
    ASSERT_OK(r) << r.status();
  }

  // The value of the metric line starting with `prefix` (e.g.
  // `kcache_serve_requests_total{verb="list",resource="configmaps"}`); 0 if absent.
  int64_t Metric(const std::string& prefix) {
    std::string m = server->api().Metrics();
    size_t at = m.find("\n" + prefix + " ");
    if (at == std::string::npos) return 0;
    return std::stoll(m.substr(at + prefix.size() + 2));
  }
  int64_t Lists(const std::string& resource) {
    return Metric(R"(kcache_serve_requests_total{verb="list",resource=")" + resource + R"("})");
  }
  int64_t ListedItems(const std::string& resource) {
    return Metric(R"(kcache_serve_list_items_total{resource=")" + resource + R"("})");
  }

  std::unique_ptr<serve::Server> server;
  std::shared_ptr<RestClient> client;
};

}  // namespace kcache::testing

#endif  // KCACHE_TESTS_TESTING_SERVE_FIXTURE_H_
