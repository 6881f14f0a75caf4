// SPDX-License-Identifier: Apache-2.0

// The Go example controller (src/bindings/go/examples/controller, on the Go
// package over libkcache-c) against the real kube-apiserver: killed with
// SIGKILL in the middle of its work, changed behind its back while down,
// restarted over its cache, it converges, and the apiserver served it no
// full LIST (its own request counts say so).
#include <gtest/gtest.h>
#include <signal.h>

#include <vector>

#include <nlohmann/json.hpp>

#include "integration/cluster.h"
#include "integration/configmaps.h"
#include "integration/logged_process.h"
#include "kcache/rest_client.h"
#include "testing/eventually.h"
#include "testing/status_matchers.h"
#include "testing/temp_dir.h"

namespace kcache {
namespace {

using testing::Cluster;
using testing::Eventually;

const ResourceRef kNamespaces{{"", "v1", "namespaces"}, false, ""};
ResourceRef ConfigMaps(const std::string& ns) { return {{"", "v1", "configmaps"}, true, ns}; }

// The Go controller as a child process, its output in a log.
testing::LoggedProcess GoController(const std::string& cache, const std::string& selector,
                                    const std::string& log, const std::string& delay) {
  return testing::LoggedProcess({testing::BinaryFromEnv("KCACHE_GO_CONTROLLER_BIN"), "--kubeconfig",
                                 Cluster::Get().File("kubeconfig"), "--cache", cache, "--selector",
                                 selector, "--data", "greeting=hello", "--reconcile-delay", delay},
                                log);
}

// LIST requests the apiserver has served for `resource` (its /metrics).
double Lists(const std::string& resource) {
  return testing::ListMetric(*Cluster::Get().Admin(), "apiserver_request_total", resource);
}

TEST(GoControllerIntegrationTest, SigkillMidWorkThenRestartConvergesWithoutList) {
  auto api = Cluster::Get().Admin();
  const std::string run = Cluster::Get().Namespace("goctl");
  const std::string key = "kcache-test/go-controller";
  const std::string selector = key + "=" + run;
  auto create_ns = [&](const std::string& name, bool labelled) {
    nlohmann::json ns = {
        {"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}};
    if (labelled) ns["metadata"]["labels"][key] = run;
    ASSERT_OK(api->Create(kNamespaces, ns.dump()));
  };
  constexpr int kLabelled = 30, kUnlabelled = 2;
  for (int i = 0; i < kLabelled; ++i) create_ns(run + "-" + std::to_string(i), true);
  for (int i = 0; i < kUnlabelled; ++i) create_ns(run + "-off-" + std::to_string(i), false);
  auto config_of = [&](const std::string& ns) { return api->Get(ConfigMaps(ns), "kcache-config"); };

  testing::TempDir dir;
  const std::string cache = dir.Sub("cache");
  {
    // 200 ms per reconcile, 2 workers: 30 namespaces take 3 s, and the kill
    // lands in the middle.
    testing::LoggedProcess first = GoController(cache, selector, dir.Sub("first.log"), "200ms");
    ASSERT_TRUE(Eventually([&] { return first.Count("created ") >= 4; })) << first.Log();
    EXPECT_EQ(first.Stop(SIGKILL), SIGKILL);
    ASSERT_LT(first.Count("created "), kLabelled) << "the kill should come before the work is done";
  }

  // Behind its back: one namespace stops matching, one starts, and a managed
  // ConfigMap is edited by hand.
  std::string unlabelled, edited;
  for (int i = 0; i < kLabelled && (unlabelled.empty() || edited.empty()); ++i) {
    const std::string ns = run + "-" + std::to_string(i);
    if (!config_of(ns).ok()) continue;
    (unlabelled.empty() ? unlabelled : edited) = ns;
  }
  ASSERT_FALSE(edited.empty());
  ASSERT_OK(api->Patch(kNamespaces, unlabelled, PatchType::kMerge,
                       R"({"metadata":{"labels":{")" + key + R"(":null}}})"));
  ASSERT_OK(api->Patch(kNamespaces, run + "-off-0", PatchType::kMerge,
                       R"({"metadata":{"labels":{")" + key + R"(":")" + run + R"("}}})"));
  ASSERT_OK(api->Patch(ConfigMaps(edited), "kcache-config", PatchType::kMerge,
                       R"({"data":{"greeting":"changed by hand"}})"));

  const double ns_lists = Lists("namespaces"), cm_lists = Lists("configmaps");
  testing::LoggedProcess second = GoController(cache, selector, dir.Sub("second.log"), "0s");
  auto converged = [&] {
    for (int i = 0; i < kLabelled; ++i) {
      const std::string ns = run + "-" + std::to_string(i);
      auto cm = config_of(ns);
      if (ns == unlabelled) {
        if (!cm.status().IsNotFound()) return false;
        continue;
      }
      if (!cm.ok() || *(*cm)->FieldValue("data.greeting") != "hello") return false;
      auto owner = api->Get(kNamespaces, ns);
      if (!owner.ok() || (*cm)->meta().owner_references.empty() ||
          (*cm)->meta().owner_references[0].uid != (*owner)->meta().uid) {
        return false;
      }
    }
    return config_of(run + "-off-0").ok() && config_of(run + "-off-1").status().IsNotFound();
  };
  EXPECT_TRUE(Eventually(converged)) << second.Log();
  const std::string log = second.Log();
  EXPECT_NE(log.find("restored " + edited + "/kcache-config"), std::string::npos) << log;
  EXPECT_NE(log.find("deleted " + unlabelled + "/kcache-config"), std::string::npos) << log;
  EXPECT_NE(log.find("created " + run + "-off-0/kcache-config"), std::string::npos) << log;
  // No full LIST: the apiserver served at most each informer's limit=1
  // resume probe.
  EXPECT_LE(Lists("namespaces") - ns_lists, 1);
  EXPECT_LE(Lists("configmaps") - cm_lists, 1);
  EXPECT_EQ(second.Stop(SIGTERM), 0) << second.Log();
}

}  // namespace
}  // namespace kcache
