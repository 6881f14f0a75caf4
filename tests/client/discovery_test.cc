// SPDX-License-Identifier: Apache-2.0

// Resolving kubectl's resource names.
#include <gtest/gtest.h>

#include "kcache/discovery.h"
#include "testing/status_matchers.h"

namespace kcache {
namespace {

std::shared_ptr<const Discovery> Sample() {
  return Discovery::FromResources({
      {"", "v1", "pods", "Pod", "pod", true, {"po"}, {"list", "watch"}},
      {"", "v1", "nodes", "Node", "node", false, {"no"}, {"list", "watch"}},
      {"apps", "v1", "deployments", "Deployment", "deployment", true, {"deploy"}, {"list"}},
      {"metrics.k8s.io", "v1beta1", "pods", "PodMetrics", "", true, {}, {"list"}},
      {"example.com", "v1", "widgets", "Widget", "widget", true, {"wd"}, {"list", "watch"}},
  });
}

TEST(DiscoveryTest, ResolvesAsKubectlDoes) {
  auto d = Sample();
  for (const char* name : {"pods", "pod", "po", "Pod", "PODS"}) {
    auto r = d->Resolve(name);
    ASSERT_OK(r) << name;
    EXPECT_EQ(r->gvr(), (GroupVersionResource{"", "v1", "pods"}))
        << name << ": the core group wins";
  }
  EXPECT_EQ(d->Resolve("pods.metrics.k8s.io")->group, "metrics.k8s.io");
  EXPECT_EQ(d->Resolve("deploy")->gvr(), (GroupVersionResource{"apps", "v1", "deployments"}));
  EXPECT_EQ(d->Resolve("deployments.apps")->kind, "Deployment");
  EXPECT_EQ(d->Resolve("deployments.v1beta2.apps")->version, "v1beta2");
  EXPECT_EQ(d->Resolve("wd")->group, "example.com");
  EXPECT_FALSE(d->Resolve("nodes")->namespaced);
  EXPECT_FALSE(d->Resolve("no")->Ref("ignored").namespaced);
  EXPECT_EQ(d->Resolve("no")->Ref("ignored").CollectionPath(), "/api/v1/nodes");
  EXPECT_TRUE(d->Resolve("deploy")->Supports("list"));
  EXPECT_FALSE(d->Resolve("deploy")->Supports("watch"));
  auto missing = d->Resolve("gadgets");
  EXPECT_TRUE(missing.status().IsNotFound());
  EXPECT_EQ(missing.status().message(), "the server doesn't have a resource type \"gadgets\"");
}

}  // namespace
}  // namespace kcache
