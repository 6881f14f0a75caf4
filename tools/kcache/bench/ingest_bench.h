// SPDX-License-Identifier: Apache-2.0

// `kcache bench ingest`: an informer's initial sync from kcache serve (which
// streams at wire speed) into a cache, against raw RocksDB batched puts of
// the same bytes, with the CPU each thread spent.

#ifndef KCACHE_TOOLS_KCACHE_BENCH_INGEST_BENCH_H_
#define KCACHE_TOOLS_KCACHE_BENCH_INGEST_BENCH_H_

#include <cstdint>
#include <ostream>
#include <string>

#include "kcache/status.h"

namespace kcache::bench {

struct IngestBenchOptions {
  // Pods in the served cluster. Default: 100000.
  int pods = 100000;
  // Pad each pod to this many bytes of JSON (0: natural, about 6.5 KB).
  // Default: 0.
  int object_bytes = 0;
  // Timed runs of each side; medians are reported. Default: 3.
  int runs = 3;
  // Bytes of decoded objects a reflector reads ahead of its commits
  // (ReflectorOptions::read_ahead_bytes; 0: one thread). Default: 8 MiB.
  int64_t read_ahead_bytes = int64_t{8} << 20;
  // Maintain the label index (KeyspaceOptions::label_index). Default: true.
  bool label_index = true;
  // Each run also syncs into a cache without the label index, and the
  // index's share of the sync's time and CPU is reported (side by side in
  // one run). Requires label_index. Default: false.
  bool label_index_cost = false;
  // CacheOptions::zstd_dictionary_bytes of both sides (-1: its default).
  // Default: -1.
  int zstd_dictionary_bytes = -1;
  // CacheOptions::fast_first_list of the synced cache. Default: true.
  bool fast_first_list = true;
  // Where the databases go (created, then removed). Default: a new
  // directory under /tmp.
  std::string dir;
  // If set, each run is appended to this file as a JSON line (pods,
  // object_bytes, label_index, read_ahead_bytes, fast_first_list, run,
  // objects, bytes, kcache_s, kcache_cpu_s, raw_s, and with
  // label_index_cost no_label_index_s), for tools/bench/plot. Default: none.
  std::string jsonl;
};

Status RunIngestBench(const IngestBenchOptions& options, std::ostream& out);

}  // namespace kcache::bench

#endif  // KCACHE_TOOLS_KCACHE_BENCH_INGEST_BENCH_H_
