#include "tools/kcache/apiserver/resource_types.h"

#include <set>

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
      {.group = "",
       .version = "v1",
       .resource = "pods",
       .singular = "pod",
       .kind = "Pod",
       .namespaced = true,
       .short_names = {"po"},
       .fields = {"spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
                  "spec.serviceAccountName", "status.phase", "status.podIP",
                  "status.nominatedNodeName"}},
      {.group = "",
       .version = "v1",
       .resource = "configmaps",
       .singular = "configmap",
       .kind = "ConfigMap",
       .namespaced = true,
       .short_names = {"cm"}},
      {.group = "",
       .version = "v1",
       .resource = "namespaces",
       .singular = "namespace",
       .kind = "Namespace",
       .namespaced = false,
       .short_names = {"ns"},
       .fields = {"status.phase"}},
      {.group = "",
       .version = "v1",
       .resource = "nodes",
       .singular = "node",
       .kind = "Node",
       .namespaced = false,
       .short_names = {"no"},
       .fields = {"spec.unschedulable"}},
      {.group = "demo.kcache.io",
       .version = "v1",
       .resource = "widgets",
       .singular = "widget",
       .kind = "Widget",
       .namespaced = true,
       .short_names = {"wd"}},
  };
  return kTypes;
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
  for (const ResourceType& t : types) {
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
    resources.push_back(std::move(r));
  }
  nlohmann::ordered_json j = {{"kind", "APIResourceList"},
                              {"apiVersion", "v1"},
                              {"groupVersion", group.empty() ? version : group + "/" + version},
                              {"resources", resources}};
  return j.dump();
}

}  // namespace kcache::serve
