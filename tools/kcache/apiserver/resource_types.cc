// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/apiserver/resource_types.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <string_view>

#include <nlohmann/json.hpp>

namespace kcache::serve {

std::vector<std::string> ResourceType::selectable_fields() const {
  std::vector<std::string> out = {"metadata.name"};
  if (namespaced) out.push_back("metadata.namespace");
  out.insert(out.end(), fields.begin(), fields.end());
  return out;
}

const std::vector<ResourceType>& BuiltinResourceTypes() {
  static const std::vector<ResourceType> kTypes = {
      {{.version = "v1",
        .resource = "pods",
        .kind = "Pod",
        .singular = "pod",
        .short_names = {"po"},
        .categories = {"all"}},
       {"spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
        "status.phase", "status.podIP", "status.nominatedNodeName"}},
      {{.version = "v1",
        .resource = "configmaps",
        .kind = "ConfigMap",
        .singular = "configmap",
        .short_names = {"cm"}},
       {}},
      {{.version = "v1", .resource = "secrets", .kind = "Secret", .singular = "secret"}, {"type"}},
      {{.version = "v1",
        .resource = "namespaces",
        .kind = "Namespace",
        .singular = "namespace",
        .namespaced = false,
        .short_names = {"ns"}},
       {"status.phase"}},
      {{.version = "v1",
        .resource = "nodes",
        .kind = "Node",
        .singular = "node",
        .namespaced = false,
        .short_names = {"no"}},
       {"spec.unschedulable"}},
      {{.group = "demo.kcache.io",
        .version = "v1",
        .resource = "widgets",
        .kind = "Widget",
        .singular = "widget",
        .short_names = {"wd"}},
       {}},
  };
  return kTypes;
}

int GroupDiscoveryRank(std::string_view group) {
  static constexpr std::string_view kBuiltin[] = {
      "",  // the core group
      "apiregistration.k8s.io",
      "apps",
      "events.k8s.io",
      "authentication.k8s.io",
      "authorization.k8s.io",
      "autoscaling",
      "batch",
      "certificates.k8s.io",
      "networking.k8s.io",
      "extensions",
      "policy",
      "rbac.authorization.k8s.io",
      "storage.k8s.io",
      "admissionregistration.k8s.io",
      "apiextensions.k8s.io",
      "scheduling.k8s.io",
      "coordination.k8s.io",
      "node.k8s.io",
      "discovery.k8s.io",
      "flowcontrol.apiserver.k8s.io",
  };
  for (size_t i = 0; i < std::size(kBuiltin); ++i) {
    if (kBuiltin[i] == group) return static_cast<int>(i);
  }
  return static_cast<int>(std::size(kBuiltin));
}

std::string ApiVersionsJson(const std::string& server_address) {
  nlohmann::ordered_json j = {{"kind", "APIVersions"},
                              {"versions", {"v1"}},
                              {"serverAddressByClientCIDRs",
                               {{{"clientCIDR", "0.0.0.0/0"}, {"serverAddress", server_address}}}}};
  return j.dump();
}

std::string ApiGroupListJson(const std::vector<ResourceType>& types) {
  nlohmann::ordered_json groups = nlohmann::ordered_json::array();
  std::set<std::string> seen;
  std::vector<const ResourceType*> ordered;
  for (const ResourceType& t : types) ordered.push_back(&t);
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const ResourceType* a, const ResourceType* b) {
                     const int ra = GroupDiscoveryRank(a->group), rb = GroupDiscoveryRank(b->group);
                     return ra != rb ? ra < rb : a->group < b->group;
                   });
  for (const ResourceType* tp : ordered) {
    const ResourceType& t = *tp;
    if (t.group.empty() || !seen.insert(t.group).second) continue;
    nlohmann::ordered_json gv = {{"groupVersion", t.api_version()}, {"version", t.version}};
    groups.push_back({{"name", t.group}, {"versions", {gv}}, {"preferredVersion", gv}});
  }
  nlohmann::ordered_json j = {{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", groups}};
  return j.dump();
}

std::string ApiResourceListJson(const std::vector<ResourceType>& types, const std::string& group,
                                const std::string& version, bool read_only) {
  nlohmann::ordered_json resources = nlohmann::ordered_json::array();
  for (const ResourceType& t : types) {
    if (t.group != group || t.version != version) continue;
    nlohmann::ordered_json r = {
        {"name", t.resource},
        {"singularName", t.singular},
        {"namespaced", t.namespaced},
        {"kind", t.kind},
        {"verbs",
         read_only ? nlohmann::ordered_json{"get", "list", "watch"}
                   : nlohmann::ordered_json{"create", "delete", "get", "list", "update", "watch"}}};
    if (!t.short_names.empty()) r["shortNames"] = t.short_names;
    if (!t.categories.empty()) r["categories"] = t.categories;
    resources.push_back(std::move(r));
  }
  nlohmann::ordered_json j = {{"kind", "APIResourceList"},
                              {"apiVersion", "v1"},
                              {"groupVersion", group.empty() ? version : group + "/" + version},
                              {"resources", resources}};
  return j.dump();
}

bool BuiltInGroup(const std::string& group) {
  return group.empty() || group.find('.') == std::string::npos ||
         (group.size() > 7 && group.compare(group.size() - 7, 7, ".k8s.io") == 0 &&
          group != "metrics.k8s.io");
}

}  // namespace kcache::serve
