// SPDX-License-Identifier: Apache-2.0

// Loading kubeconfig files and in-cluster configuration.
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "kcache/rest_config.h"
#include "testing/status_matchers.h"
#include "testing/temp_dir.h"

namespace kcache {
namespace {

void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

class KubeconfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* k = std::getenv("KUBECONFIG")) saved_ = k;
    unsetenv("KUBECONFIG");
  }
  void TearDown() override {
    if (saved_)
      setenv("KUBECONFIG", saved_->c_str(), 1);
    else
      unsetenv("KUBECONFIG");
  }
  testing::TempDir dir_;
  std::optional<std::string> saved_;
};

const char kFull[] = R"(apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: dev-cluster
  cluster:
    server: https://10.0.0.1:6443
    certificate-authority: certs/ca.crt
    tls-server-name: kubernetes
- name: prod-cluster
  cluster:
    server: https://prod:443
    certificate-authority-data: aGVsbG8=
    insecure-skip-tls-verify: true
    disable-compression: true
    proxy-url: http://proxy:3128
users:
- name: dev-user
  user:
    tokenFile: tok
    client-certificate: /abs/cert.pem
    client-key-data: a2V5
- name: exec-user
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: ./bin/plugin
      args: [get-token, --cluster=prod]
      env:
      - name: REGION
        value: eu
      provideClusterInfo: true
      installHint: install it
contexts:
- name: dev
  context: {cluster: dev-cluster, user: dev-user, namespace: team-a}
- name: prod
  context: {cluster: prod-cluster, user: exec-user}
)";

TEST_F(KubeconfigTest, CurrentContextWithRelativePaths) {
  Write(dir_.Sub("config"), kFull);
  auto c = LoadKubeconfig({.path = dir_.Sub("config")});
  ASSERT_OK(c) << c.status();
  EXPECT_EQ(c->server, "https://10.0.0.1:6443");
  EXPECT_EQ(c->ca_file, dir_.Sub("certs/ca.crt"));
  EXPECT_EQ(c->tls_server_name, "kubernetes");
  EXPECT_EQ(c->bearer_token_file, dir_.Sub("tok"));
  EXPECT_EQ(c->client_cert_file, "/abs/cert.pem");
  EXPECT_EQ(c->client_key_data, "key");
  EXPECT_EQ(c->namespace_, "team-a");
  EXPECT_EQ(c->source, "kubeconfig " + dir_.Sub("config") + ", context dev");
}

TEST_F(KubeconfigTest, NamedContextWithExecPlugin) {
  Write(dir_.Sub("config"), kFull);
  auto c =
      LoadKubeconfig({.path = dir_.Sub("config"), .context = "prod", .namespace_ = "override"});
  ASSERT_OK(c) << c.status();
  EXPECT_EQ(c->server, "https://prod:443");
  EXPECT_EQ(c->ca_data, "hello");
  EXPECT_TRUE(c->insecure_skip_tls_verify);
  EXPECT_TRUE(c->disable_compression);
  EXPECT_EQ(c->proxy_url, "http://proxy:3128");
  EXPECT_EQ(c->namespace_, "override");
  ASSERT_TRUE(c->exec.has_value());
  EXPECT_EQ(c->exec->command, dir_.Sub("bin/plugin"));
  EXPECT_EQ(c->exec->args, (std::vector<std::string>{"get-token", "--cluster=prod"}));
  EXPECT_EQ(c->exec->env, (std::vector<std::pair<std::string, std::string>>{{"REGION", "eu"}}));
  EXPECT_TRUE(c->exec->provide_cluster_info);
  EXPECT_EQ(c->exec->install_hint, "install it");
}

// KUBECONFIG merges files: the first file to set a name wins, and the first
// current-context wins.
TEST_F(KubeconfigTest, KubeconfigVariableMergesFiles) {
  Write(dir_.Sub("a"), R"(
clusters:
- name: c
  cluster: {server: https://first}
users:
- name: u
  user: {token: first-token}
)");
  Write(dir_.Sub("b"), R"(
current-context: ctx
clusters:
- name: c
  cluster: {server: https://second}
- name: other
  cluster: {server: https://other}
users:
- name: u
  user: {token: second-token}
contexts:
- name: ctx
  context: {cluster: c, user: u}
)");
  setenv("KUBECONFIG", (dir_.Sub("a") + ":" + dir_.Sub("missing") + ":" + dir_.Sub("b")).c_str(),
         1);
  auto c = LoadKubeconfig({});
  ASSERT_OK(c) << c.status();
  EXPECT_EQ(c->server, "https://first");
  EXPECT_EQ(c->bearer_token, "first-token");
  auto server = LoadKubeconfig({.server = "http://127.0.0.1:8001"});
  EXPECT_EQ(server->server, "http://127.0.0.1:8001");
}

TEST_F(KubeconfigTest, ErrorsNameFileLineAndEntry) {
  Write(dir_.Sub("bad"), "clusters:\n- name: x\n  cluster: [unclosed\n");
  auto bad = LoadKubeconfig({.path = dir_.Sub("bad")});
  ASSERT_TRUE(bad.status().IsInvalidArgument());
  EXPECT_NE(bad.status().message().find("kubeconfig " + dir_.Sub("bad") + ":"),
            std::string_view::npos)
      << bad.status();

  Write(dir_.Sub("b64"),
        kFull + std::string("- name: broken\n  context: {cluster: dev-cluster, user: broken}\n") +
            "users:\n- name: broken\n  user:\n    client-key-data: '!!not-base64-SECRET'\n");
  // A second "users" key is a YAML error; put the bad user in a file of its own.
  Write(dir_.Sub("b64"), R"(current-context: x
clusters: [{name: c, cluster: {server: https://s}}]
users:
- name: u
  user:
    client-key-data: "!!not-base64-SECRET"
contexts: [{name: x, context: {cluster: c, user: u}}]
)");
  auto b64 = LoadKubeconfig({.path = dir_.Sub("b64")});
  ASSERT_TRUE(b64.status().IsInvalidArgument());
  EXPECT_NE(b64.status().message().find(":6:"), std::string_view::npos) << b64.status();
  EXPECT_NE(b64.status().message().find("client-key-data is not valid base64"),
            std::string_view::npos);
  EXPECT_EQ(b64.status().message().find("SECRET"), std::string_view::npos) << "no secret in errors";

  Write(dir_.Sub("config"), kFull);
  auto ctx = LoadKubeconfig({.path = dir_.Sub("config"), .context = "nope"});
  EXPECT_TRUE(ctx.status().IsNotFound());
  EXPECT_NE(ctx.status().message().find("context \"nope\" does not exist"), std::string_view::npos);

  auto missing = LoadKubeconfig({.path = dir_.Sub("absent")});
  EXPECT_TRUE(missing.status().IsNotFound());

  // A directory is not taken for an empty file (which would end in "no
  // current-context is set").
  std::filesystem::create_directory(dir_.Sub("a-dir"));
  auto directory = LoadKubeconfig({.path = dir_.Sub("a-dir")});
  EXPECT_TRUE(directory.status().IsInvalidArgument()) << directory.status();
  EXPECT_EQ(directory.status().message(),
            "kubeconfig " + dir_.Sub("a-dir") + ": is a directory, not a file");

  Write(dir_.Sub("authprovider"), R"(current-context: x
clusters: [{name: c, cluster: {server: https://s}}]
users: [{name: u, user: {auth-provider: {name: gcp}}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
)");
  EXPECT_EQ(LoadKubeconfig({.path = dir_.Sub("authprovider")}).status().code(),
            StatusCode::kUnimplemented);
}

TEST_F(KubeconfigTest, InClusterConfig) {
  std::string sa = dir_.Sub("sa");
  std::filesystem::create_directories(sa);
  Write(sa + "/token", "tkn");
  Write(sa + "/ca.crt", "pem");
  Write(sa + "/namespace", "apps\n");
  auto c = InClusterConfig(
      {.service_account_dir = sa,
       .env = {{"KUBERNETES_SERVICE_HOST", "fd00::1"}, {"KUBERNETES_SERVICE_PORT", "443"}}});
  ASSERT_OK(c) << c.status();
  EXPECT_EQ(c->server, "https://[fd00::1]:443");
  EXPECT_EQ(c->bearer_token_file, sa + "/token");
  EXPECT_TRUE(c->bearer_token.empty()) << "read by the client, so rotation is seen";
  EXPECT_EQ(c->ca_file, sa + "/ca.crt");
  EXPECT_EQ(c->namespace_, "apps");
  auto pod_ns = InClusterConfig({.service_account_dir = sa,
                                 .env = {{"KUBERNETES_SERVICE_HOST", "10.0.0.1"},
                                         {"KUBERNETES_SERVICE_PORT", "443"},
                                         {"POD_NAMESPACE", "from-env"}}});
  EXPECT_EQ(pod_ns->namespace_, "from-env");
  auto outside = InClusterConfig({.service_account_dir = sa, .env = {{"UNRELATED", "1"}}});
  EXPECT_TRUE(outside.status().IsNotFound());
}

TEST_F(KubeconfigTest, ClientConfigWithOnlyAServer) {
  setenv("KUBECONFIG", dir_.Sub("none").c_str(), 1);
  auto c = LoadClientConfig({.server = "http://127.0.0.1:8001"});
  ASSERT_OK(c) << c.status();
  EXPECT_EQ(c->server, "http://127.0.0.1:8001");
  EXPECT_TRUE(c->bearer_token.empty());
}

}  // namespace
}  // namespace kcache
