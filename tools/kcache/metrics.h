// SPDX-License-Identifier: Apache-2.0

// The Prometheus text exposition of informer metrics, for
// `kcache sync --metrics-listen`.
#ifndef KCACHE_TOOLS_KCACHE_METRICS_H_
#define KCACHE_TOOLS_KCACHE_METRICS_H_

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "kcache/informer.h"

namespace kcache::tool {

// Renders the metrics of `informers` (keyed by resource, as
// InformerFactory::informers() gives them) in the Prometheus text format,
// version 0.0.4, each sample labelled with its resource (and handler).
std::string RenderPrometheus(
    const std::map<std::string, std::shared_ptr<SharedIndexInformer>>& informers);

// The answer of /readyz (kube-apiserver's shape): ready once every informer
// has synced, and while none has been failing to list and watch
// (InformerMetrics::failing_for) for longer than `unready_after`. The body
// names each resource's check, "[+]pods ok" or "[-]pods not synced" /
// "[-]pods failing for 75 s", every one with `verbose`, the failed ones
// otherwise, and ends with "readyz check passed" or "readyz check failed"
// ("ok" alone when ready and not verbose).
struct Readiness {
  bool ready = false;
  std::string body;
};
Readiness CheckReadiness(
    const std::map<std::string, std::shared_ptr<SharedIndexInformer>>& informers,
    std::chrono::milliseconds unready_after, bool verbose);

}  // namespace kcache::tool

#endif  // KCACHE_TOOLS_KCACHE_METRICS_H_
