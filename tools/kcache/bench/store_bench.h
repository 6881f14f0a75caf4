// SPDX-License-Identifier: Apache-2.0

// `kcache bench store`: ingest into a Cache against raw RocksDB batched
// puts of the same bytes, query latency, resident memory and disk use.

#ifndef KCACHE_TOOLS_KCACHE_BENCH_STORE_BENCH_H_
#define KCACHE_TOOLS_KCACHE_BENCH_STORE_BENCH_H_

#include <ostream>
#include <string>

#include "kcache/status.h"

namespace kcache::bench {

struct StoreBenchOptions {
  // Pods loaded. Default: 100000.
  int objects = 100000;
  // Objects per Commit / WriteBatch. Default: 1000.
  int batch = 1000;
  // Timed runs of each query; the median is reported. Default: 5.
  int runs = 5;
  // zstd dictionary bytes for the cache's objects (0: none). Default: 0.
  int zstd_dictionary_bytes = 0;
  // CacheOptions::fast_first_list. Default: true.
  bool fast_first_list = true;
  // Maintain the label index (five labels per pod). Default: true.
  bool label_index = true;
  // Where the databases go (created, then removed). Default: a new
  // directory under /tmp.
  std::string dir;
};

Status RunStoreBench(const StoreBenchOptions& options, std::ostream& out);

}  // namespace kcache::bench

#endif  // KCACHE_TOOLS_KCACHE_BENCH_STORE_BENCH_H_
