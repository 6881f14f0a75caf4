// SPDX-License-Identifier: Apache-2.0

// kubectl (the machine's, v1.32) against kcache serve: discovery, paginated
// get across namespaces, the custom resource, cluster-scoped types, get -w
// seeing a change, the server's tables, and every write kubectl makes
// (create, apply client- and server-side, replace, label, annotate, patch
// of each type, edit, delete; the imperative creates, which send protobuf)
// as against a small real cluster.
#include <algorithm>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <sstream>
#include <vector>

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

  // Writes `text` to a file of the test's directory; returns its path.
  std::string File(const std::string& name, const std::string& text) {
    std::ofstream(dir_.Sub(name)) << text;
    return dir_.Sub(name);
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

// kubectl asks for the server's tables: the synthetic cluster answers with
// kube-apiserver's columns (kubectl's printers, as kcache serve --cache).
TEST_F(KubectlTest, GetPrintsTheServersTables) {
  int rc = -1;
  auto first_line = [](const std::string& s) { return s.substr(0, s.find('\n')); };
  auto words = [](const std::string& line) {
    std::vector<std::string> out;
    std::istringstream in(line);
    for (std::string w; in >> w;) out.push_back(w);
    return out;
  };
  using V = std::vector<std::string>;
  std::string pods = Kubectl("get pods -n ns-0", &rc);
  ASSERT_EQ(rc, 0) << pods;
  EXPECT_EQ(words(first_line(pods)), (V{"NAME", "READY", "STATUS", "RESTARTS", "AGE"})) << pods;
  std::string row = pods.substr(pods.find('\n') + 1);
  EXPECT_EQ(words(first_line(row)).size(), 5u) << row.substr(0, 200);
  std::string wide = Kubectl("get pods -n ns-0 -o wide", &rc);
  EXPECT_EQ(words(first_line(wide)), (V{"NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE",
                                        "NOMINATED", "NODE", "READINESS", "GATES"}))
      << wide.substr(0, 300);
  EXPECT_EQ(words(first_line(Kubectl("get nodes"))),
            (V{"NAME", "STATUS", "ROLES", "AGE", "VERSION"}));
  EXPECT_EQ(words(first_line(Kubectl("get ns"))), (V{"NAME", "STATUS", "AGE"}));
  EXPECT_EQ(words(first_line(Kubectl("get wd -A"))), (V{"NAMESPACE", "NAME", "AGE"}));
  std::string ns = Kubectl("get ns kube-system --no-headers", &rc);
  ASSERT_EQ(rc, 0) << ns;
  EXPECT_EQ(words(ns).at(1), "Active") << ns;
}

TEST_F(KubectlTest, CreateApplyReplacePatchEditAndDeleteAsOnARealCluster) {
  int rc = -1;
  auto run = [&](const std::string& args) {
    std::string out = Kubectl(args, &rc);
    EXPECT_EQ(rc, 0) << "kubectl " << args << "\n" << out;
    return out;
  };
  auto data = [&](const std::string& name) {
    return run("get cm " + name + " -n default -o jsonpath={.data}");
  };
  const std::string cm = File("cm.yaml", R"(apiVersion: v1
kind: ConfigMap
metadata:
  name: demo
  namespace: default
data:
  a: "1"
)");
  // kubectl validates on the server: it found fieldValidation in OpenAPI v3.
  EXPECT_EQ(run("create -f " + cm), "configmap/demo created\n");
  EXPECT_EQ(data("demo"), R"({"a":"1"})");
  std::string table = run("get cm demo -n default");
  EXPECT_EQ(table.substr(0, table.find('\n')).find("NAME   DATA   AGE"), 0u) << table;

  // Client-side apply: a strategic merge patch of the last applied state.
  const std::string applied = File("applied.yaml", R"(apiVersion: v1
kind: ConfigMap
metadata:
  name: demo
  namespace: default
data:
  a: "2"
  b: "3"
)");
  std::string out = run("apply -f " + applied);
  EXPECT_NE(out.find("configmap/demo configured"), std::string::npos) << out;
  EXPECT_EQ(data("demo"), R"({"a":"2","b":"3"})");
  const std::string pod = File("pod.yaml", R"(apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: ns-0
spec:
  containers:
  - name: app
    image: nginx:1
    ports:
    - containerPort: 80
  - name: sidecar
    image: busybox:1
)");
  EXPECT_EQ(run("apply -f " + pod), "pod/web created\n");
  std::ifstream in(pod);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  text.replace(text.find("nginx:1"), 7, "nginx:2");
  File("pod.yaml", text);
  EXPECT_EQ(run("apply -f " + pod), "pod/web configured\n");
  EXPECT_EQ(run("get pod web -n ns-0 -o jsonpath={.spec.containers[*].image}"),
            "nginx:2 busybox:1");

  // Server-side apply: creates, then merges.
  EXPECT_EQ(run("apply --server-side -f " + File("ssa.yaml", R"(apiVersion: v1
kind: ConfigMap
metadata:
  name: ssa
  namespace: default
data:
  k: v
)")),
            "configmap/ssa serverside-applied\n");
  EXPECT_EQ(data("ssa"), R"({"k":"v"})");
  EXPECT_EQ(run("apply --server-side -f " + File("ssa2.yaml", R"(apiVersion: v1
kind: ConfigMap
metadata:
  name: ssa
  namespace: default
  labels:
    team: a
data:
  k: w
)")),
            "configmap/ssa serverside-applied\n");
  EXPECT_EQ(data("ssa"), R"({"k":"w"})");
  EXPECT_EQ(run("get cm ssa -n default -o jsonpath={.metadata.labels.team}"), "a");

  // Replace, label, annotate, and patches of each type.
  EXPECT_EQ(run("replace -f " + cm), "configmap/demo replaced\n");
  EXPECT_EQ(data("demo"), R"({"a":"1"})");
  EXPECT_EQ(run("label cm demo -n default tier=web"), "configmap/demo labeled\n");
  EXPECT_EQ(run("annotate cm demo -n default note=hi"), "configmap/demo annotated\n");
  EXPECT_EQ(run("get cm demo -n default -o "
                "jsonpath={.metadata.labels.tier}/{.metadata.annotations.note}"),
            "web/hi");
  EXPECT_EQ(run(R"(patch cm demo -n default -p '{"data":{"s":"strategic"}}')"),
            "configmap/demo patched\n");
  EXPECT_EQ(run(R"(patch cm demo -n default --type=merge -p '{"data":{"m":"merge","s":null}}')"),
            "configmap/demo patched\n");
  EXPECT_EQ(run(R"(patch cm demo -n default --type=json -p '[{"op":"remove","path":"/data/m"}]')"),
            "configmap/demo patched\n");
  EXPECT_EQ(data("demo"), R"({"a":"1"})");
  // A strategic merge patch merges containers by name.
  EXPECT_EQ(
      run(R"(patch pod web -n ns-0 -p '{"spec":{"containers":[{"name":"sidecar","image":"busybox:2"}]}}')"),
      "pod/web patched\n");
  EXPECT_EQ(run("get pod web -n ns-0 -o jsonpath={.spec.containers[*].image}"),
            "nginx:2 busybox:2");
  EXPECT_EQ(run("get pod web -n ns-0 -o jsonpath={.spec.containers[0].ports[0].containerPort}"),
            "80");
  // A custom resource takes no strategic merge patch, as on kube-apiserver.
  out = Kubectl(R"(patch wd frontend-0 -n ns-0 -p '{"spec":{"size":3}}')", &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("the body of the request was in an unknown format - accepted media types "
                     "include: application/json-patch+json, application/merge-patch+json, "
                     "application/apply-patch+yaml"),
            std::string::npos)
      << out;
  EXPECT_EQ(run(R"(patch wd frontend-0 -n ns-0 --type=merge -p '{"spec":{"size":3}}')"),
            "widget.demo.kcache.io/frontend-0 patched\n");

  // Edit, with a script for an editor.
  const std::string editor =
      File("editor.sh", "#!/bin/sh\nsed -i 's/^  a: .*/  a: edited/' \"$1\"\n");
  chmod(editor.c_str(), 0755);
  testing::CommandResult r = testing::RunCommand(
      "KUBECONFIG=/nonexistent EDITOR=" + editor + " kubectl --cache-dir " + dir_.path() +
      " --server " + server_->url() + " edit cm demo -n default 2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "configmap/demo edited\n");
  EXPECT_EQ(data("demo"), R"({"a":"edited"})");

  // Server-side dry runs are refused rather than carried out.
  out = Kubectl("create -f " + File("dry.yaml", R"(apiVersion: v1
kind: ConfigMap
metadata:
  name: dry
  namespace: default
)") + " --dry-run=server",
                &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("dryRun is not supported"), std::string::npos) << out;
  EXPECT_NE(Kubectl("get cm dry -n default", &rc).find("not found"), std::string::npos);

  EXPECT_EQ(run("delete cm demo -n default"), "configmap \"demo\" deleted\n");
  out = Kubectl("get cm demo -n default", &rc);
  EXPECT_NE(rc, 0);
  EXPECT_EQ(out, "Error from server (NotFound): configmaps \"demo\" not found\n");
  EXPECT_EQ(run("delete -f " + pod), "pod \"web\" deleted\n");
}

TEST_F(KubectlTest, ImperativeCreatesSendProtobufAndWorkAsOnARealCluster) {
  int rc = 0;
  // kubectl's typed clients send built-in kinds in Kubernetes' protobuf.
  std::string out =
      Kubectl("create configmap settings --from-literal=a=b --from-literal=c=d -v=8", &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("Content-Type: application/vnd.kubernetes.protobuf"), std::string::npos)
      << out;
  EXPECT_NE(out.find("configmap/settings created"), std::string::npos) << out;
  EXPECT_EQ(Kubectl("get cm settings -o jsonpath={.data}", &rc), R"({"a":"b","c":"d"})");

  EXPECT_EQ(Kubectl("create namespace team", &rc), "namespace/team created\n");
  EXPECT_EQ(Kubectl("get ns team -o jsonpath={.status.phase}/{.spec.finalizers[0]}"),
            "Active/kubernetes");

  // A Secret's values travel as bytes; stored and read back as base64.
  out = Kubectl(
      "create secret generic creds -n team --from-literal=user=admin "
      "--from-literal=pass=s3cr=t",
      &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(out, "secret/creds created\n");
  EXPECT_EQ(Kubectl("get secret creds -n team -o jsonpath={.type}:{.data.user}:{.data.pass}"),
            "Opaque:YWRtaW4=:czNjcj10");
  out = Kubectl("get secrets -n team", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("creds   Opaque   2"), std::string::npos) << out;
  // Another kind of Secret, and labels set on the create.
  ASSERT_EQ(Kubectl("create secret docker-registry pull -n team --docker-server=r.example "
                    "--docker-username=u --docker-password=p",
                    &rc),
            "secret/pull created\n");
  EXPECT_EQ(Kubectl("get secret pull -n team -o jsonpath={.type}"),
            "kubernetes.io/dockerconfigjson");
  // What exists already is refused, as the apiserver refuses it.
  out = Kubectl("create namespace team", &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("AlreadyExists"), std::string::npos) << out;
}

}  // namespace
}  // namespace kcache::serve
