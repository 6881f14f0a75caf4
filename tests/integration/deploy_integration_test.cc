// SPDX-License-Identifier: Apache-2.0

// deploy/ against the real kube-apiserver: the manifests pass the server's
// own validation (kubectl apply --dry-run=server), and `kcache sync` run
// with the ServiceAccount's own token (the test cluster runs no controller
// manager: kubectl create token) syncs every resource the StatefulSet names
// and is forbidden one more: the ClusterRole grants what the sync uses and
// nothing beyond.
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "integration/cluster.h"
#include "testing/command.h"
#include "testing/temp_dir.h"

namespace kcache {
namespace {

using testing::Cluster;
using testing::CommandResult;
using testing::RunCommand;

std::string Deploy() {
  const char* src = std::getenv("KCACHE_SOURCE_DIR");
  EXPECT_NE(src, nullptr) << "KCACHE_SOURCE_DIR is not set";
  return std::string(src ? src : ".") + "/deploy";
}

std::string Kubectl(const std::string& args) {
  return "kubectl --kubeconfig " + Cluster::Get().File("kubeconfig") + " " + args + " 2>&1";
}

// The resources the sync container is given: its arguments after "sync" up
// to the first flag.
std::vector<std::string> SyncedResources() {
  CommandResult r =
      RunCommand(Kubectl("create --dry-run=client -o json -f " + Deploy() + "/statefulset.yaml"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json set = nlohmann::json::parse(r.output, nullptr, false);
  std::vector<std::string> out;
  if (!set.is_object()) return out;
  for (const auto& c : set["spec"]["template"]["spec"]["containers"]) {
    if (c.value("name", "") != "sync") continue;
    const auto& args = c["args"];
    for (size_t i = 1; i < args.size() && args[i].get<std::string>().rfind("-", 0) != 0; ++i) {
      out.push_back(args[i].get<std::string>());
    }
  }
  return out;
}

TEST(DeployIntegrationTest, ManifestsPassTheServersValidation) {
  // The namespace first, for real: a dry run creates nothing for the
  // objects in it to go into.
  CommandResult ns = RunCommand(Kubectl("apply -f " + Deploy() + "/namespace.yaml"));
  ASSERT_EQ(ns.exit_code, 0) << ns.output;
  CommandResult dry = RunCommand(Kubectl("apply --dry-run=server -f " + Deploy()));
  ASSERT_EQ(dry.exit_code, 0) << dry.output;
  for (const char* object :
       {"serviceaccount/kcache", "clusterrole.rbac.authorization.k8s.io/kcache-sync",
        "clusterrolebinding.rbac.authorization.k8s.io/kcache-sync", "statefulset.apps/kcache",
        "service/kcache"}) {
    EXPECT_NE(dry.output.find(object), std::string::npos) << object << "\n" << dry.output;
  }
}

TEST(DeployIntegrationTest, TheServiceAccountSyncsWhatTheManifestNamesAndNothingMore) {
  const std::vector<std::string> resources = SyncedResources();
  ASSERT_GE(resources.size(), 5u);
  for (const char* f : {"namespace.yaml", "rbac.yaml"}) {
    CommandResult applied = RunCommand(Kubectl("apply -f " + Deploy() + "/" + f));
    ASSERT_EQ(applied.exit_code, 0) << applied.output;
  }
  CommandResult token = RunCommand("kubectl --kubeconfig " + Cluster::Get().File("kubeconfig") +
                                   " -n kcache create token kcache --duration 10m");
  ASSERT_EQ(token.exit_code, 0) << token.output;
  std::string bearer = token.output;
  while (!bearer.empty() && (bearer.back() == '\n' || bearer.back() == '\r')) bearer.pop_back();
  ASSERT_FALSE(bearer.empty());

  testing::TempDir dir;
  const std::string kubeconfig = dir.Sub("kubeconfig");
  std::ofstream(kubeconfig) << "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n"
                            << "    server: " << Cluster::Get().server() << "\n"
                            << "    certificate-authority: "
                            << Cluster::Get().File("certs/apiserver.crt") << "\n"
                            << "users:\n- name: kcache\n  user:\n    token: " << bearer << "\n"
                            << "contexts:\n- name: c\n  context: {cluster: c, user: kcache}\n"
                            << "current-context: c\n";
  std::string names;
  for (const std::string& r : resources) names += " " + r;
  // Bounded: a resource the role does not grant is retried (a 403 may end),
  // and would leave the sync waiting.
  CommandResult synced =
      RunCommand("timeout -s INT 120 " + testing::KcacheBin() + " sync" + names + " --kubeconfig " +
                 kubeconfig + " --cache " + dir.Sub("cache") + " --until-synced 2>&1");
  EXPECT_EQ(synced.exit_code, 0) << synced.output;
  for (const std::string& r : resources) {
    EXPECT_NE(synced.output.find(r + ": synced"), std::string::npos) << r << "\n" << synced.output;
  }
  EXPECT_EQ(synced.output.find("forbidden"), std::string::npos) << synced.output;

  // A 403 is retried (a grant may come), so the sync is stopped as an
  // operator would stop it, once it has said why (within a minute).
  const std::string log = dir.Sub("more.log");
  CommandResult more =
      RunCommand(testing::KcacheBin() + " sync secrets --kubeconfig " + kubeconfig + " --cache " +
                 dir.Sub("more") + " --until-synced >" + log + " 2>&1 & p=$!; " +
                 "for i in $(seq 600); do grep -q forbidden " + log +
                 " && break; sleep 0.1; done; " + "kill -INT $p; wait $p; cat " + log);
  EXPECT_NE(more.output.find("secrets is forbidden: User \"system:serviceaccount:kcache:kcache\" "
                             "cannot list resource \"secrets\""),
            std::string::npos)
      << more.output;
  EXPECT_EQ(more.output.find("secrets: synced"), std::string::npos) << more.output;
}

}  // namespace
}  // namespace kcache
