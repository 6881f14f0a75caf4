// SPDX-License-Identifier: Apache-2.0

// ApiResource: one type of resource as an API server serves it (client-go's
// metav1.APIResource): its names, scope and verbs. Discovery reports it, a
// keyspace records it (ResourceInfo, in cache.h, adds what the cache knows
// of the type), and the kcache tool's servers serve it.
//
// Thread-safety: a plain value.
#ifndef KCACHE_API_RESOURCE_H_
#define KCACHE_API_RESOURCE_H_

#include <string>
#include <string_view>
#include <vector>

#include "kcache/export.h"
#include "kcache/resource.h"

namespace kcache {

struct KCACHE_EXPORT ApiResource {
  std::string group{};     // "" for the core group
  std::string version{};   // "v1"
  std::string resource{};  // plural, lower case: "pods"
  std::string kind{};      // "Pod"
  std::string singular{};  // "pod" (empty when the server does not say)
  bool namespaced = true;
  std::vector<std::string> short_names{};  // "po"
  // "list", "watch", ...; empty in a keyspace's record (ResourceInfo), which
  // does not keep them.
  std::vector<std::string> verbs{};
  // The groups kubectl names the resource by ("all" for pods, services,
  // deployments, ...), in the server's order.
  std::vector<std::string> categories{};

  GroupVersionResource gvr() const { return {group, version, resource}; }
  GroupResource group_resource() const { return {group, resource}; }
  // "v1", or "apps/v1" for a named group.
  std::string api_version() const { return group.empty() ? version : group + "/" + version; }
  bool Supports(std::string_view verb) const;
  // A collection of this resource in `namespace_` ("" = all namespaces).
  ResourceRef Ref(std::string namespace_ = "") const {
    return ResourceRef{gvr(), namespaced, namespaced ? std::move(namespace_) : std::string()};
  }
  bool operator==(const ApiResource&) const = default;
};

}  // namespace kcache

#endif  // KCACHE_API_RESOURCE_H_
