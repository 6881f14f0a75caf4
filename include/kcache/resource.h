// SPDX-License-Identifier: Apache-2.0

// GroupResource and GroupVersionResource: how an API resource is named.
//
// Thread-safety: plain values.

#ifndef KCACHE_RESOURCE_H_
#define KCACHE_RESOURCE_H_

#include <string>

#include "kcache/export.h"

namespace kcache {

struct KCACHE_EXPORT GroupResource {
  std::string group{};     // "" for the core group
  std::string resource{};  // plural, lower case: "pods"

  // "pods", or "deployments.apps" for a named group.
  std::string String() const { return group.empty() ? resource : resource + "." + group; }
  friend bool operator==(const GroupResource&, const GroupResource&) = default;
};

struct KCACHE_EXPORT GroupVersionResource {
  std::string group{};
  std::string version{};
  std::string resource{};

  GroupResource group_resource() const { return {group, resource}; }
  friend bool operator==(const GroupVersionResource&, const GroupVersionResource&) = default;
};

// A collection to list or watch: a resource, and a namespace for namespaced
// resources ("" = all namespaces).
struct KCACHE_EXPORT ResourceRef {
  GroupVersionResource gvr{};
  bool namespaced = true;
  std::string namespace_{};

  // "/api/v1/pods", "/api/v1/namespaces/ns/pods", "/apis/apps/v1/deployments".
  std::string CollectionPath() const {
    std::string p =
        gvr.group.empty() ? "/api/" + gvr.version : "/apis/" + gvr.group + "/" + gvr.version;
    if (namespaced && !namespace_.empty()) p += "/namespaces/" + namespace_;
    return p + "/" + gvr.resource;
  }
  // The same resource in namespace `ns`: where a write to an object of that
  // namespace goes. A cluster-scoped resource is returned as it is.
  ResourceRef InNamespace(std::string ns) const {
    ResourceRef r = *this;
    if (namespaced) r.namespace_ = std::move(ns);
    return r;
  }
  friend bool operator==(const ResourceRef&, const ResourceRef&) = default;
};

// The built-in resources controllers use most, at their stable versions: in
// every namespace, or in `ns` (ignored for cluster-scoped ones).
// client-go's typed clientsets name the same: kcache::builtin::ConfigMaps("prod").
namespace builtin {
inline ResourceRef Namespaced(const char* group, const char* resource, std::string ns) {
  return ResourceRef{GroupVersionResource{group, "v1", resource}, true, std::move(ns)};
}
inline ResourceRef ClusterScoped(const char* group, const char* resource) {
  return ResourceRef{GroupVersionResource{group, "v1", resource}, false, ""};
}
inline ResourceRef Pods(std::string ns = "") { return Namespaced("", "pods", std::move(ns)); }
inline ResourceRef ConfigMaps(std::string ns = "") {
  return Namespaced("", "configmaps", std::move(ns));
}
inline ResourceRef Secrets(std::string ns = "") { return Namespaced("", "secrets", std::move(ns)); }
inline ResourceRef Services(std::string ns = "") {
  return Namespaced("", "services", std::move(ns));
}
inline ResourceRef ServiceAccounts(std::string ns = "") {
  return Namespaced("", "serviceaccounts", std::move(ns));
}
inline ResourceRef Endpoints(std::string ns = "") {
  return Namespaced("", "endpoints", std::move(ns));
}
inline ResourceRef Events(std::string ns = "") { return Namespaced("", "events", std::move(ns)); }
inline ResourceRef PersistentVolumeClaims(std::string ns = "") {
  return Namespaced("", "persistentvolumeclaims", std::move(ns));
}
inline ResourceRef Deployments(std::string ns = "") {
  return Namespaced("apps", "deployments", std::move(ns));
}
inline ResourceRef ReplicaSets(std::string ns = "") {
  return Namespaced("apps", "replicasets", std::move(ns));
}
inline ResourceRef StatefulSets(std::string ns = "") {
  return Namespaced("apps", "statefulsets", std::move(ns));
}
inline ResourceRef DaemonSets(std::string ns = "") {
  return Namespaced("apps", "daemonsets", std::move(ns));
}
inline ResourceRef Jobs(std::string ns = "") { return Namespaced("batch", "jobs", std::move(ns)); }
inline ResourceRef CronJobs(std::string ns = "") {
  return Namespaced("batch", "cronjobs", std::move(ns));
}
inline ResourceRef Ingresses(std::string ns = "") {
  return Namespaced("networking.k8s.io", "ingresses", std::move(ns));
}
inline ResourceRef Leases(std::string ns = "") {
  return Namespaced("coordination.k8s.io", "leases", std::move(ns));
}
inline ResourceRef Namespaces() { return ClusterScoped("", "namespaces"); }
inline ResourceRef Nodes() { return ClusterScoped("", "nodes"); }
inline ResourceRef PersistentVolumes() { return ClusterScoped("", "persistentvolumes"); }
inline ResourceRef CustomResourceDefinitions() {
  return ClusterScoped("apiextensions.k8s.io", "customresourcedefinitions");
}
}  // namespace builtin

}  // namespace kcache

#endif  // KCACHE_RESOURCE_H_
