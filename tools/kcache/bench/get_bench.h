// SPDX-License-Identifier: Apache-2.0

// `kcache bench get`: the memory and time of `kcache get` over caches of
// growing size. Each form runs as its own process (this binary), so its
// peak resident memory is the whole command's: invariant 4 (every API that
// can return everything streams) holds when that peak stays flat as the
// cache grows.

#ifndef KCACHE_TOOLS_KCACHE_BENCH_GET_BENCH_H_
#define KCACHE_TOOLS_KCACHE_BENCH_GET_BENCH_H_

#include <ostream>
#include <string>
#include <vector>

#include "kcache/status.h"

namespace kcache::bench {

struct GetBenchOptions {
  // Cache sizes, ascending; one cache grows through them. Default: 10,000,
  // 100,000 and 1,000,000 pods.
  std::vector<int> sizes = {10000, 100000, 1000000};
  // Runs of each form at each size; medians are reported. Default: 3.
  int runs = 3;
  // Where the cache goes (created, then removed). Default: a new directory
  // under /tmp.
  std::string dir;
};

Status RunGetBench(const GetBenchOptions& options, std::ostream& out);

}  // namespace kcache::bench

#endif  // KCACHE_TOOLS_KCACHE_BENCH_GET_BENCH_H_
