// GroupResource and GroupVersionResource: how an API resource is named.
//
// Thread-safety: plain values.

#ifndef KCACHE_RESOURCE_H_
#define KCACHE_RESOURCE_H_

#include <string>

namespace kcache {

struct GroupResource {
  std::string group;     // "" for the core group
  std::string resource;  // plural, lower case: "pods"

  // "pods", or "deployments.apps" for a named group.
  std::string String() const { return group.empty() ? resource : resource + "." + group; }
  friend bool operator==(const GroupResource&, const GroupResource&) = default;
};

struct GroupVersionResource {
  std::string group;
  std::string version;
  std::string resource;

  GroupResource group_resource() const { return {group, resource}; }
  friend bool operator==(const GroupVersionResource&, const GroupVersionResource&) = default;
};

}  // namespace kcache

#endif  // KCACHE_RESOURCE_H_
