// Synthetic, realistic pods: the JSON a kube-apiserver returns for a pod of
// a Deployment (labels, owner reference, managedFields, spec, status),
// about 6.5 KB each. Deterministic for a given seed and index.

#ifndef KCACHE_SRC_SYNTH_PODS_H_
#define KCACHE_SRC_SYNTH_PODS_H_

#include <cstdint>
#include <string>

namespace kcache::synth {

struct PodOptions {
  uint64_t seed = 1;
  // Namespaces are "ns-0" .. "ns-<n-1>".
  int namespaces = 10;
  // Pods are grouped into Deployments of this many pods.
  int pods_per_app = 20;
};

// The JSON of pod number `index`; `resource_version` is stamped into it.
std::string PodJson(const PodOptions& options, uint64_t index, uint64_t resource_version);

}  // namespace kcache::synth

#endif  // KCACHE_SRC_SYNTH_PODS_H_
