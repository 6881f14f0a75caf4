// SPDX-License-Identifier: Apache-2.0

// `kcache demo`: what exists so far, on a built-in synthetic cluster (no
// cluster needed): decode pods, load them into an Indexer, query it with
// selectors and indexes, and relist with a diff.

#ifndef KCACHE_TOOLS_KCACHE_BENCH_DEMO_H_
#define KCACHE_TOOLS_KCACHE_BENCH_DEMO_H_

#include <ostream>

#include "kcache/status.h"

namespace kcache::bench::demo {

struct DemoOptions {
  // Pods in the synthetic cluster. Default: 20000.
  int pods = 20000;
  // Namespaces they are spread over. Default: 10.
  int namespaces = 10;
};

Status RunDemo(const DemoOptions& options, std::ostream& out);

}  // namespace kcache::bench::demo

#endif  // KCACHE_TOOLS_KCACHE_BENCH_DEMO_H_
