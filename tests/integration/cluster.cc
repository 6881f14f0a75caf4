// SPDX-License-Identifier: Apache-2.0

#include "integration/cluster.h"
#include "testing/status_matchers.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <unistd.h>

#include <gtest/gtest.h>

namespace kcache::testing {

Cluster& Cluster::Get() {
  static Cluster* cluster = [] {
    auto* c = new Cluster();
    const char* dir = std::getenv("KCACHE_CLUSTER_DIR");
    if (!dir || !*dir) {
      ADD_FAILURE() << "KCACHE_CLUSTER_DIR is not set: run through tests/cluster/with-cluster "
                       "(meson test --suite integration does)";
      std::abort();
    }
    c->dir_ = dir;
    std::ifstream in(c->dir_ + "/env");
    std::string line;
    while (std::getline(in, line)) {
      size_t eq = line.find('=');
      if (eq != std::string::npos) c->env_[line.substr(0, eq)] = line.substr(eq + 1);
    }
    if (!c->env_.count("SERVER")) {
      ADD_FAILURE() << c->dir_ << "/env has no SERVER";
      std::abort();
    }
    return c;
  }();
  return *cluster;
}

RestConfig Cluster::AdminConfig() const {
  auto config = LoadKubeconfig({.path = File("kubeconfig")});
  EXPECT_OK(config) << config.status();
  return *config;
}

std::shared_ptr<RestClient> Cluster::Admin() const {
  auto client = RestClient::Create(AdminConfig());
  EXPECT_OK(client) << client.status();
  return *client;
}

std::string Cluster::Namespace(const std::string& base) const {
  // Unique per process, so that runs against one cluster do not collide.
  std::string name = base + "-" + std::to_string(getpid());
  auto st = Admin()->Do(
      "POST", "/api/v1/namespaces",
      R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":")" + name + R"("}})");
  if (!st.ok()) {
    EXPECT_EQ(st.status().code(), StatusCode::kAlreadyExists) << st.status();
  }
  return name;
}

void Cluster::CompactEtcd() const {
  std::string endpoint = "--endpoints=http://127.0.0.1:" + etcd_port();
  std::string cmd = "rev=$(ETCDCTL_API=3 etcdctl " + endpoint +
                    " endpoint status -w fields | awk -F' : ' '/\"Revision\"/ {print $2}') && "
                    "ETCDCTL_API=3 etcdctl " +
                    endpoint + " compact $rev >/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

}  // namespace kcache::testing
