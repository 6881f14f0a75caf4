// SPDX-License-Identifier: Apache-2.0

// The synthetic cluster `kcache serve` starts with, and the churn that
// keeps changing it.

#ifndef KCACHE_TOOLS_KCACHE_TESTCLUSTER_SYNTHETIC_H_
#define KCACHE_TOOLS_KCACHE_TESTCLUSTER_SYNTHETIC_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kcache/status.h"
#include "tools/kcache/testcluster/cluster_state.h"
#include "tools/kcache/testcluster/pods.h"

namespace kcache::serve {

struct SyntheticOptions {
  uint64_t seed = 1;
  int64_t pods = 10000;
  // Namespaces "ns-0" .. "ns-<n-1>", besides "default" and "kube-system".
  int64_t namespaces = 10;
  int64_t nodes = 100;
  // Pods are padded to this size with an annotation (0: their natural
  // size, about 6.5 KB).
  int64_t object_bytes = 0;
};

// Loads namespaces, nodes, pods and one Widget per Deployment of pods into
// `state` (whose types must include them).
Status LoadSyntheticCluster(ClusterState& state, const SyntheticOptions& options);

struct ChurnOptions {
  // Per second, over the pods. Deterministic for a seed.
  int64_t creates = 1;
  int64_t updates = 4;   // a container restart: status changes
  int64_t relabels = 1;  // the "track" label flips between stable and canary
  int64_t deletes = 1;
};

// Applies ChurnOptions' changes on a thread of its own until stopped.
// Thread-safety: Start and Stop from one thread.
class Churn {
 public:
  Churn(ClusterState* state, SyntheticOptions synthetic, ChurnOptions options);
  ~Churn();
  void Start();
  void Stop();
  // Changes applied so far.
  uint64_t applied() const { return applied_; }

 private:
  void Run();
  bool Step(int kind);

  ClusterState* const state_;
  const SyntheticOptions synthetic_;
  const serve::synth::PodOptions pod_options_;
  const ChurnOptions options_;
  int pods_ = -1;
  uint64_t rng_;
  uint64_t next_index_ = 0;
  std::vector<std::string> keys_;  // live pods
  std::atomic<uint64_t> applied_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

// Replaces the value of the first "resourceVersion" member in `json`: the
// object's own in the synthetic objects, whose metadata comes first.
std::string StampResourceVersion(std::string json, uint64_t rv);

}  // namespace kcache::serve

#endif  // KCACHE_TOOLS_KCACHE_TESTCLUSTER_SYNTHETIC_H_
