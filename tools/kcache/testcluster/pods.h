// SPDX-License-Identifier: Apache-2.0

// Synthetic, realistic pods: the JSON a kube-apiserver returns for a pod of
// a Deployment (labels, owner reference, managedFields, spec, status),
// about 6.5 KB each; and the namespaces, nodes and custom resources around
// them. Deterministic for a given seed and index.

#ifndef KCACHE_TOOLS_KCACHE_TESTCLUSTER_PODS_H_
#define KCACHE_TOOLS_KCACHE_TESTCLUSTER_PODS_H_

#include <cstdint>
#include <string>

namespace kcache::serve::synth {

struct PodOptions {
  uint64_t seed = 1;
  // Namespaces are "ns-0" .. "ns-<n-1>".
  int namespaces = 10;
  // Pods are grouped into Deployments of this many pods.
  int pods_per_app = 20;
  // Pods run on "node-0" .. "node-<n-1>".
  int nodes = 500;
};

// The JSON of pod number `index`; `resource_version` is stamped into it.
std::string PodJson(const PodOptions& options, uint64_t index, uint64_t resource_version);

// The objects around the pods, deterministic in the same way.
// A namespace's uid depends on the seed as well, so that clusters of two
// seeds have different identities (the kube-system namespace's uid).
std::string NamespaceJson(const PodOptions& options, const std::string& name,
                          uint64_t resource_version);
// "node-<index>".
std::string NodeJson(const PodOptions& options, int index, uint64_t resource_version);
// The custom resource (demo.kcache.io/v1 Widget) of app `app_index`: one
// per Deployment of pods.
std::string WidgetJson(const PodOptions& options, uint64_t app_index, uint64_t resource_version);

// Grows `json` (an object with metadata.annotations) to `bytes` with a
// filler annotation; unchanged if it is already that large.
std::string PadJson(std::string json, size_t bytes);

}  // namespace kcache::serve::synth

#endif  // KCACHE_TOOLS_KCACHE_TESTCLUSTER_PODS_H_
