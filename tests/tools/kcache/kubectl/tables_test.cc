// SPDX-License-Identifier: Apache-2.0

// The cells of kcache get's tables, as the API server's printers make them.
#include "tools/kcache/kubectl/tables.h"

#include <gtest/gtest.h>

#include "testing/status_matchers.h"
#include "util/rfc3339.h"

namespace kcache::tool {
namespace {

using namespace std::chrono_literals;

TEST(HumanDurationTest, KubernetesSteps) {
  EXPECT_EQ(HumanDuration(-1s), "0s");
  EXPECT_EQ(HumanDuration(-3s), "<invalid>");
  EXPECT_EQ(HumanDuration(119s), "119s");
  EXPECT_EQ(HumanDuration(200s), "3m20s");
  EXPECT_EQ(HumanDuration(240s), "4m");
  EXPECT_EQ(HumanDuration(179min), "179m");
  EXPECT_EQ(HumanDuration(5h + 30min), "5h30m");
  EXPECT_EQ(HumanDuration(30h), "30h");
  EXPECT_EQ(HumanDuration(24h * 3 + 4h), "3d4h");
  EXPECT_EQ(HumanDuration(24h * 30), "30d");
  EXPECT_EQ(HumanDuration(24h * 365 * 3 + 24h * 10), "3y10d");
  EXPECT_EQ(HumanDuration(24h * 365 * 9), "9y");
}

std::vector<std::string> Cells(const ResourceInfo& info, const char* json, bool* ok = nullptr) {
  auto spec = TableSpec::For(info);
  EXPECT_OK(spec);
  auto now = *util::ParseRfc3339("2026-01-01T01:00:00Z");
  auto cells = spec->Cells(nlohmann::json::parse(json), now);
  EXPECT_OK(cells);
  if (ok) *ok = cells.ok();
  std::vector<std::string> out;
  for (const auto& c : *cells) out.push_back(c.is_string() ? c.get<std::string>() : c.dump());
  return out;
}

ResourceInfo Info(const char* group, const char* kind) {
  ResourceInfo r;
  r.group = group;
  r.kind = kind;
  return r;
}

TEST(TableSpecTest, PodStatusFollowsContainersAndInitContainers) {
  auto crash =
      Cells(Info("", "Pod"), R"({"metadata":{"name":"p","creationTimestamp":"2026-01-01T00:00:00Z"},
    "spec":{"containers":[{},{}]},"status":{"phase":"Running","podIPs":[{"ip":"10.0.0.1"}],
    "containerStatuses":[{"ready":true,"restartCount":1,"state":{"running":{}}},
                         {"ready":false,"restartCount":4,"state":{"waiting":{"reason":"CrashLoopBackOff"}}}]}})");
  EXPECT_EQ(crash, (std::vector<std::string>{"p", "1/2", "CrashLoopBackOff", "5", "60m", "10.0.0.1",
                                             "<none>", "<none>", "<none>"}));
  auto init = Cells(Info("", "Pod"), R"({"metadata":{"name":"q"},"spec":{"initContainers":[{},{}],
    "containers":[{}]},"status":{"phase":"Pending","initContainerStatuses":[
      {"restartCount":0,"state":{"terminated":{"exitCode":0}}},{"restartCount":2,"state":{"running":{}}}]}})");
  EXPECT_EQ(init[2], "Init:1/2");
  EXPECT_EQ(init[3], "2");
  EXPECT_EQ(init[4], "<unknown>");
  auto deleting = Cells(Info("", "Pod"),
                        R"({"metadata":{"name":"r","deletionTimestamp":"2026-01-01T00:00:00Z"},
    "spec":{"containers":[{}]},"status":{"phase":"Running"}})");
  EXPECT_EQ(deleting[2], "Terminating");
}

TEST(TableSpecTest, NodesServicesAndDeployments) {
  auto node = Cells(Info("", "Node"), R"({"metadata":{"name":"n","labels":{
    "node-role.kubernetes.io/master":"","node-role.kubernetes.io/control-plane":""}},
    "spec":{"unschedulable":true},"status":{"conditions":[{"type":"Ready","status":"False"}],
    "nodeInfo":{"kubeletVersion":"v1.20.2"}}})");
  EXPECT_EQ(node[1], "NotReady,SchedulingDisabled");
  EXPECT_EQ(node[2], "control-plane,master");
  EXPECT_EQ(node[7], "<unknown>");
  auto svc = Cells(Info("", "Service"), R"({"metadata":{"name":"s"},"spec":{"type":"NodePort",
    "clusterIPs":["10.0.0.9"],"ports":[{"port":443,"nodePort":30443,"protocol":"TCP"},
    {"port":53,"protocol":"UDP"}],"selector":{"b":"2","a":"1"}}})");
  EXPECT_EQ(svc[2], "10.0.0.9");
  EXPECT_EQ(svc[3], "<none>");
  EXPECT_EQ(svc[4], "443:30443/TCP,53/UDP");
  EXPECT_EQ(svc[6], "a=1,b=2");
  auto deploy = Cells(Info("apps", "Deployment"), R"({"metadata":{"name":"d"},"spec":{"replicas":3,
    "selector":{"matchLabels":{"app":"web"},"matchExpressions":[{"key":"tier","operator":"In",
    "values":["frontend","edge"]},{"key":"canary","operator":"DoesNotExist"}]},
    "template":{"spec":{"containers":[{"name":"a","image":"x"},{"name":"b","image":"y"}]}}},
    "status":{"readyReplicas":1,"updatedReplicas":2,"availableReplicas":1}})");
  EXPECT_EQ(deploy, (std::vector<std::string>{"d", "1/3", "2", "1", "<unknown>", "a,b", "x,y",
                                              "app=web,!canary,tier in (edge,frontend)"}));
}

TEST(TableSpecTest, CustomResourceColumnsTakeTheFirstValueOfTheirType) {
  ResourceInfo info = Info("golden.kcache.io", "Gadget");
  info.custom = true;
  info.printer_columns = {{"Size", "integer", "", ".spec.size", 0},
                          {"Parts", "string", "", ".spec.parts[*].name", 1},
                          {"Ready", "boolean", "", ".status.ready", 0},
                          {"Ratio", "number", "", ".spec.ratio", 0},
                          {"Since", "date", "", ".metadata.creationTimestamp", 0}};
  auto cells = Cells(info, R"({"metadata":{"name":"g","creationTimestamp":"2026-01-01T00:59:00Z"},
    "spec":{"size":12,"ratio":0.25,"parts":[{"name":"cog"},{"name":"axle"}]}})");
  EXPECT_EQ(cells, (std::vector<std::string>{"g", "12", "cog", "null", "0.25", "60s"}));
  info.printer_columns.clear();
  EXPECT_EQ(Cells(info, R"({"metadata":{"name":"h"}})"), (std::vector<std::string>{"h", "null"}));
}

}  // namespace
}  // namespace kcache::tool
