// SPDX-License-Identifier: Apache-2.0

// The resource types `kcache serve` knows: what discovery reports of each
// and which fields its field selectors accept (as the apiserver's per-type
// field label conversion does).

#ifndef KCACHE_TOOLS_KCACHE_APISERVER_RESOURCE_TYPES_H_
#define KCACHE_TOOLS_KCACHE_APISERVER_RESOURCE_TYPES_H_

#include <string>
#include <string_view>
#include <vector>

#include "kcache/api_resource.h"

namespace kcache::serve {

// A resource type as discovery reports it, and the fields its field
// selectors accept.
struct ResourceType : ApiResource {
  // Accepted by field selectors besides metadata.name (and
  // metadata.namespace for namespaced types).
  std::vector<std::string> fields;

  std::string group_version_path() const {
    return group.empty() ? "/api/" + version : "/apis/" + group + "/" + version;
  }
  std::string list_kind() const { return kind + "List"; }
  // The field selector fields this type accepts, in full.
  std::vector<std::string> selectable_fields() const;
};

// Whether `group` is one of Kubernetes' own (the core group, a group
// without a dot, or *.k8s.io but metrics.k8s.io): its resources never come
// from a CustomResourceDefinition.
bool BuiltInGroup(const std::string& group);

// Where kube-apiserver's discovery lists `group`: 0 for the core group (at
// /api), then the built-in groups in the order /apis lists them (1.20), then
// every other group, tied (callers break ties by name). kubectl expands a
// category ("all") in discovery's order, and prints in that order.
int GroupDiscoveryRank(std::string_view group);

// pods, configmaps, secrets, namespaces and nodes (core/v1), and the custom resource
// widgets.demo.kcache.io/v1.
const std::vector<ResourceType>& BuiltinResourceTypes();

// Discovery documents as the apiserver serves them (JSON): APIVersions for
// /api, APIGroupList for /apis, APIResourceList for a group version.
std::string ApiVersionsJson(const std::string& server_address);
std::string ApiGroupListJson(const std::vector<ResourceType>& types);
// A read-only server lists the verbs get, list and watch only.
std::string ApiResourceListJson(const std::vector<ResourceType>& types, const std::string& group,
                                const std::string& version, bool read_only = false);

}  // namespace kcache::serve

#endif  // KCACHE_TOOLS_KCACHE_APISERVER_RESOURCE_TYPES_H_
