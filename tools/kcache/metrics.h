// The Prometheus text exposition of informer metrics, for
// `kcache sync --metrics-listen`.
#ifndef KCACHE_TOOLS_KCACHE_METRICS_H_
#define KCACHE_TOOLS_KCACHE_METRICS_H_

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

}  // namespace kcache::tool

#endif  // KCACHE_TOOLS_KCACHE_METRICS_H_
