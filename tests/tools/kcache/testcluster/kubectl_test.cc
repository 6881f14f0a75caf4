// kubectl (the machine's, v1.32) against kcache serve: discovery, paginated
// get across namespaces, the custom resource, cluster-scoped types and
// get -w seeing a change.
#include <algorithm>
#include <thread>

#include <gtest/gtest.h>

#include "kcache/rest_client.h"
#include "testing/command.h"
#include "testing/status_matchers.h"
#include "testing/temp_dir.h"
#include "tools/kcache/testcluster/server.h"

namespace kcache::serve {
namespace {

using namespace std::chrono_literals;

class KubectlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(std::system("command -v kubectl >/dev/null"), 0)
        << "kubectl is not on PATH (these tests need kubectl v1.32)";
    ServeOptions o;
    o.listen = "127.0.0.1:0";
    o.cluster.pods = 1200;  // more than kubectl's page of 500
    o.cluster.namespaces = 3;
    o.cluster.nodes = 7;
    o.churn = {0, 0, 0, 0};
    auto s = Server::Start(o);
    ASSERT_OK(s) << s.status();
    server_ = std::move(s).value();
  }

  // Runs kubectl against the server; returns its stdout.
  std::string Kubectl(const std::string& args, int* exit_code = nullptr) {
    std::string cmd = "KUBECONFIG=/nonexistent kubectl --cache-dir " + dir_.path() + " --server " +
                      server_->url() + " " + args + " 2>&1";
    testing::CommandResult r = testing::RunCommand(cmd);
    if (exit_code) *exit_code = r.exit_code;
    return r.output;
  }

  static size_t Lines(const std::string& s) {
    return static_cast<size_t>(std::count(s.begin(), s.end(), '\n'));
  }

  testing::TempDir dir_;
  std::unique_ptr<Server> server_;
};

TEST_F(KubectlTest, GetListsEveryTypeAcrossPages) {
  int rc = -1;
  std::string pods = Kubectl("get pods -A -o name", &rc);
  ASSERT_EQ(rc, 0) << pods;
  EXPECT_EQ(Lines(pods), 1200u);
  EXPECT_EQ(pods.rfind("pod/", 0), 0u) << pods.substr(0, 200);

  std::string table = Kubectl("get pods -n ns-1", &rc);
  ASSERT_EQ(rc, 0) << table;
  EXPECT_EQ(table.rfind("NAME", 0), 0u) << table.substr(0, 200);
  EXPECT_EQ(Lines(table), 1u + server_->state()
                                   .List(server_->state().Find("", "pods"), {.namespace_ = "ns-1"})
                                   ->items.size());

  std::string nodes = Kubectl("get nodes -o name", &rc);
  ASSERT_EQ(rc, 0) << nodes;
  EXPECT_EQ(Lines(nodes), 7u);
  std::string widgets = Kubectl("get wd -n ns-0 -o name", &rc);  // by short name, through discovery
  ASSERT_EQ(rc, 0) << widgets;
  EXPECT_NE(widgets.find("widget.demo.kcache.io/frontend-0\n"), std::string::npos) << widgets;
  std::string selected = Kubectl("get pods -A -l track=canary,app=frontend-0 -o name", &rc);
  ASSERT_EQ(rc, 0) << selected;
  EXPECT_GT(Lines(selected), 0u);
  EXPECT_LT(Lines(selected), 20u);
  std::string one = Kubectl("get ns kube-system -o jsonpath={.status.phase}", &rc);
  ASSERT_EQ(rc, 0) << one;
  EXPECT_EQ(one, "Active");
  std::string missing = Kubectl("get pod nope -n ns-0", &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(missing.find("pods \"nope\" not found"), std::string::npos) << missing;
}

TEST_F(KubectlTest, GetWatchSeesACreatedPod) {
  std::thread writer([&] {
    std::this_thread::sleep_for(2s);
    RestConfig config;
    config.server = server_->url();
    auto c = RestClient::Create(config).value();
    auto r = c->Do(
        "POST", "/api/v1/namespaces/ns-2/pods",
        R"({"metadata":{"name":"watched-pod"},"spec":{"containers":[{"name":"c","image":"x"}]}})");
    EXPECT_OK(r) << r.status();
  });
  std::string out = Kubectl("get pods -n ns-2 -w -o name --request-timeout=5s");
  writer.join();
  EXPECT_NE(out.find("pod/watched-pod"), std::string::npos)
      << out.substr(out.size() > 500 ? out.size() - 500 : 0);
}

}  // namespace
}  // namespace kcache::serve
