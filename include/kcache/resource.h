// GroupResource and GroupVersionResource: how an API resource is named.
//
// Thread-safety: plain values.

#ifndef KCACHE_RESOURCE_H_
#define KCACHE_RESOURCE_H_

#include <string>

#include "kcache/export.h"

namespace kcache {

struct KCACHE_EXPORT GroupResource {
  std::string group;     // "" for the core group
  std::string resource;  // plural, lower case: "pods"

  // "pods", or "deployments.apps" for a named group.
  std::string String() const { return group.empty() ? resource : resource + "." + group; }
  friend bool operator==(const GroupResource&, const GroupResource&) = default;
};

struct KCACHE_EXPORT GroupVersionResource {
  std::string group;
  std::string version;
  std::string resource;

  GroupResource group_resource() const { return {group, resource}; }
  friend bool operator==(const GroupVersionResource&, const GroupVersionResource&) = default;
};

// A collection to list or watch: a resource, and a namespace for namespaced
// resources ("" = all namespaces).
struct KCACHE_EXPORT ResourceRef {
  GroupVersionResource gvr;
  bool namespaced = true;
  std::string namespace_;

  // "/api/v1/pods", "/api/v1/namespaces/ns/pods", "/apis/apps/v1/deployments".
  std::string CollectionPath() const {
    std::string p =
        gvr.group.empty() ? "/api/" + gvr.version : "/apis/" + gvr.group + "/" + gvr.version;
    if (namespaced && !namespace_.empty()) p += "/namespaces/" + namespace_;
    return p + "/" + gvr.resource;
  }
  friend bool operator==(const ResourceRef&, const ResourceRef&) = default;
};

}  // namespace kcache

#endif  // KCACHE_RESOURCE_H_
