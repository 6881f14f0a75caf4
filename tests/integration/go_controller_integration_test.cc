// The Go example controller (src/bindings/go/examples/controller, on the Go
// package over libkcache-c) against the real kube-apiserver: killed with
// SIGKILL in the middle of its work, changed behind its back while down,
// restarted over its cache, it converges, and the apiserver served it no
// full LIST (its own request counts say so).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "integration/cluster.h"
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
class GoController {
 public:
  GoController(const std::string& cache, const std::string& selector, const std::string& log,
               const std::string& delay)
      : log_(log) {
    const char* bin = std::getenv("KCACHE_GO_CONTROLLER_BIN");
    if (bin == nullptr) {
      ADD_FAILURE() << "KCACHE_GO_CONTROLLER_BIN is not set";
      return;
    }
    const std::string kubeconfig = Cluster::Get().File("kubeconfig");
    pid_ = fork();
    if (pid_ == 0) {
      int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, 1);
      dup2(fd, 2);
      execl(bin, bin, "--kubeconfig", kubeconfig.c_str(), "--cache", cache.c_str(), "--selector",
            selector.c_str(), "--data", "greeting=hello", "--reconcile-delay", delay.c_str(),
            static_cast<char*>(nullptr));
      _exit(127);
    }
  }
  ~GoController() {
    if (pid_ > 0) Stop(SIGKILL);
  }
  std::string Log() const {
    std::ifstream in(log_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  int Count(const std::string& what) const {
    const std::string log = Log();
    int n = 0;
    for (size_t at = log.find(what); at != std::string::npos; at = log.find(what, at + 1)) ++n;
    return n;
  }
  int Stop(int sig) {
    kill(pid_, sig);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }

 private:
  std::string log_;
  pid_t pid_ = -1;
};

// LIST requests the apiserver has served for `resource` (its /metrics).
double Lists(const std::string& resource) {
  auto body = Cluster::Get().Admin()->Get("/metrics");
  EXPECT_OK(body);
  double total = 0;
  std::istringstream in(body.ok() ? *body : "");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("apiserver_request_total{", 0) != 0) continue;
    if (line.find(R"(verb="LIST")") == std::string::npos) continue;
    if (line.find(R"(resource=")" + resource + "\"") == std::string::npos) continue;
    total += std::stod(line.substr(line.rfind(' ') + 1));
  }
  return total;
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
  constexpr int kLabelled = 20, kUnlabelled = 2;
  for (int i = 0; i < kLabelled; ++i) create_ns(run + "-" + std::to_string(i), true);
  for (int i = 0; i < kUnlabelled; ++i) create_ns(run + "-off-" + std::to_string(i), false);
  auto config_of = [&](const std::string& ns) { return api->Get(ConfigMaps(ns), "kcache-config"); };

  testing::TempDir dir;
  const std::string cache = dir.Sub("cache");
  {
    // 200 ms per reconcile, 2 workers: 20 namespaces take 2 s, and the kill
    // lands in the middle.
    GoController first(cache, selector, dir.Sub("first.log"), "200ms");
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
  GoController second(cache, selector, dir.Sub("second.log"), "0s");
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
