// SPDX-License-Identifier: Apache-2.0

// `kcache bench snapshot`: export and import throughput of a cache of
// synthetic pods as ratios to the disk's sequential write rate measured in
// the same run, and the time from opening the cache to the first result of
// `kcache get`.

#ifndef KCACHE_TOOLS_KCACHE_BENCH_SNAPSHOT_BENCH_H_
#define KCACHE_TOOLS_KCACHE_BENCH_SNAPSHOT_BENCH_H_

#include <ostream>
#include <string>

#include "kcache/status.h"

namespace kcache::bench {

struct SnapshotBenchOptions {
  // Pods in the cache. Default: 1000000.
  int objects = 1000000;
  // Timed runs of each step; medians are reported. Default: 3.
  int runs = 3;
  // zstd level of the exported file. Default: 1.
  int zstd_level = 1;
  // Where the cache, files and imports go; kept afterwards. Default: a new
  // directory under /tmp, removed afterwards.
  std::string dir;
};

Status RunSnapshotBench(const SnapshotBenchOptions& options, std::ostream& out);

}  // namespace kcache::bench

#endif  // KCACHE_TOOLS_KCACHE_BENCH_SNAPSHOT_BENCH_H_
