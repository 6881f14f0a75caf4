// SPDX-License-Identifier: Apache-2.0

// The sample controller (docs/examples/controller.cc) against the real
// kube-apiserver: killed with SIGKILL in the middle of its work, changed
// behind its back while down, restarted, it converges with no full LIST;
// its writes are Events, and of two replicas only the leader reconciles,
// handing over at once when it stops.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>
#include <thread>

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

// The controller as a child process, stdout and stderr to a log.
class ControllerProcess : public testing::LoggedProcess {
 public:
  ControllerProcess(const std::string& cache, const std::string& selector, const std::string& log,
                    const std::string& delay_ms, const std::string& lease_ns)
      // A 3 s lease: a restart after a SIGKILL waits it out.
      : LoggedProcess({testing::BinaryFromEnv("KCACHE_CONTROLLER_BIN"), "--kubeconfig",
                       Cluster::Get().File("kubeconfig"), "--cache", cache, "--selector", selector,
                       "--data", "greeting=hello", "--workers", "2", "--reconcile-delay-ms",
                       delay_ms, "--lease-namespace", lease_ns, "--lease-duration-ms", "3000"},
                      log) {}
};

// LIST requests the apiserver has served for `resource` (its /metrics).
double Lists(const std::string& resource) {
  return testing::ListMetric(*Cluster::Get().Admin(), "apiserver_request_total", resource);
}

TEST(ControllerIntegrationTest, SigkillMidWorkThenRestartConvergesWithoutList) {
  auto api = Cluster::Get().Admin();
  const std::string run = Cluster::Get().Namespace("ctl");
  const std::string key = "kcache-test/controller";
  const std::string selector = key + "=" + run;
  auto create_ns = [&](const std::string& name, bool labelled) {
    nlohmann::json ns = {
        {"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}};
    if (labelled) ns["metadata"]["labels"][key] = run;
    ASSERT_OK(api->Create(kNamespaces, ns.dump()));
  };
  constexpr int kLabelled = 30, kUnlabelled = 3;
  for (int i = 0; i < kLabelled; ++i) create_ns(run + "-" + std::to_string(i), true);
  for (int i = 0; i < kUnlabelled; ++i) create_ns(run + "-off-" + std::to_string(i), false);
  auto config_of = [&](const std::string& ns) { return api->Get(ConfigMaps(ns), "kcache-config"); };

  testing::TempDir dir;
  const std::string cache = dir.Sub("cache");
  int created_before_kill = 0;
  {
    // Slow reconciles (200 ms, 2 workers): 30 namespaces take 3 s, and the
    // kill lands in the middle.
    ControllerProcess first(cache, selector, dir.Sub("first.log"), "200", run);
    ASSERT_TRUE(Eventually([&] { return first.Count("created ") >= 6; })) << first.Log();
    EXPECT_EQ(first.Stop(SIGKILL), SIGKILL);
    created_before_kill = first.Count("created ");
  }
  ASSERT_LT(created_before_kill, kLabelled) << "the kill should come before the work is done";

  // Behind its back: one namespace stops matching, two start, and a managed
  // ConfigMap is edited by hand.
  std::string unlabelled, edited;
  for (int i = 0; i < kLabelled && (unlabelled.empty() || edited.empty()); ++i) {
    std::string ns = run + "-" + std::to_string(i);
    if (!config_of(ns).ok()) continue;
    (unlabelled.empty() ? unlabelled : edited) = ns;
  }
  ASSERT_FALSE(edited.empty());
  ASSERT_OK(api->Patch(kNamespaces, unlabelled, PatchType::kMerge,
                       R"({"metadata":{"labels":{")" + key + R"(":null}}})"));
  for (int i = 0; i < 2; ++i) {
    ASSERT_OK(api->Patch(kNamespaces, run + "-off-" + std::to_string(i), PatchType::kMerge,
                         R"({"metadata":{"labels":{")" + key + R"(":")" + run + R"("}}})"));
  }
  ASSERT_OK(api->Patch(ConfigMaps(edited), "kcache-config", PatchType::kMerge,
                       R"({"data":{"greeting":"changed by hand"}})"));

  const double ns_lists = Lists("namespaces"), cm_lists = Lists("configmaps");
  ControllerProcess second(cache, selector, dir.Sub("second.log"), "0", run);
  ASSERT_TRUE(Eventually([&] { return second.Count("running ") == 1; })) << second.Log();
  // Both informers resumed from the cache.
  EXPECT_THAT(second.Log(), ::testing::HasSubstr("synced namespaces: 0 lists"));
  EXPECT_THAT(second.Log(), ::testing::HasSubstr("synced configmaps: 0 lists"));

  auto converged = [&] {
    for (int i = 0; i < kLabelled; ++i) {
      std::string ns = run + "-" + std::to_string(i);
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
    for (int i = 0; i < kUnlabelled; ++i) {
      auto cm = config_of(run + "-off-" + std::to_string(i));
      if (i < 2 ? !cm.ok() : !cm.status().IsNotFound()) return false;
    }
    return true;
  };
  EXPECT_TRUE(Eventually(converged)) << second.Log();
  EXPECT_THAT(second.Log(), ::testing::HasSubstr("restored " + edited + "/kcache-config"));
  EXPECT_THAT(second.Log(), ::testing::HasSubstr("deleted " + unlabelled + "/kcache-config"));
  // No full LIST: the apiserver saw at most each informer's limit=1 probe.
  EXPECT_LE(Lists("namespaces") - ns_lists, 1);
  EXPECT_LE(Lists("configmaps") - cm_lists, 1);

  // Each write is an Event: on its namespace (cluster-scoped: the Event is
  // in "default"), or on the ConfigMap it deleted.
  std::set<std::string> reasons;
  for (const std::string& ns : {std::string("default"), unlabelled}) {
    auto events = api->List({{"", "v1", "events"}, true, ns}, {});
    ASSERT_OK(events);
    for (const ObjectPtr& e : events->items) {
      const std::string about = *e->FieldValue("involvedObject.name");
      if (about == edited || (ns == unlabelled && about == "kcache-config"))
        reasons.insert(*e->FieldValue("reason"));
    }
  }
  EXPECT_EQ(reasons, (std::set<std::string>{"ConfigCreated", "ConfigDeleted", "ConfigRestored"}));

  // Leader election: a replica (its own cache) syncs and waits while the
  // second leads; the second stops on SIGTERM and gives the lease up, and
  // the replica leads at once, without waiting out the 3 s lease.
  ControllerProcess replica(dir.Sub("replica-cache"), selector, dir.Sub("replica.log"), "0", run);
  ASSERT_TRUE(Eventually([&] { return replica.Count("leader is ") >= 1; })) << replica.Log();
  EXPECT_EQ(replica.Count("leading as "), 0) << replica.Log();
  EXPECT_EQ(replica.Count("first reconcile"), 0) << "only the leader reconciles";
  int status = second.Stop(SIGTERM);
  const auto stopped = std::chrono::steady_clock::now();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << "\n" << second.Log();
  EXPECT_THAT(second.Log(), ::testing::HasSubstr("stopping on SIGTERM"));
  ASSERT_TRUE(Eventually([&] { return replica.Count("leading as ") == 1; })) << replica.Log();
  EXPECT_LT(std::chrono::steady_clock::now() - stopped, std::chrono::milliseconds(2500))
      << "released, not waited out";
  ASSERT_TRUE(Eventually([&] { return replica.Count("first reconcile") == 1; })) << replica.Log();
  EXPECT_TRUE(converged()) << replica.Log();
  EXPECT_EQ(replica.Count("created "), 0) << "nothing left to do: " << replica.Log();
}

}  // namespace
}  // namespace kcache
