// SPDX-License-Identifier: Apache-2.0

// `kcache bench serve`: how fast kcache serve sends a LIST and a burst of
// watch events, against the loopback limit measured in the same run (the
// same client reading the same number of bytes from a socket that a thread
// fills from memory).

#ifndef KCACHE_TOOLS_KCACHE_BENCH_SERVE_BENCH_H_
#define KCACHE_TOOLS_KCACHE_BENCH_SERVE_BENCH_H_

#include <ostream>
#include <string>

#include "kcache/status.h"

namespace kcache::bench {

struct ServeBenchOptions {
  // Pods in the served cluster. Default: 50000 (about 330 MB of JSON).
  int pods = 50000;
  // Watch events in the burst. Default: 50000.
  int events = 50000;
  // Timed runs of each; the median is reported. Default: 5.
  int runs = 5;
  // "HOST:PORT" of another HTTP server that answers GET /?bytes=N with N
  // bytes, chunked (tools/bench/http-bench starts libmicrohttpd's). When
  // set, kcache's own HTTP server and that one each send a body of the
  // LIST's size from memory, read by the same client. Default: none.
  std::string http_peer;
};

Status RunServeBench(const ServeBenchOptions& options, std::ostream& out);

}  // namespace kcache::bench

#endif  // KCACHE_TOOLS_KCACHE_BENCH_SERVE_BENCH_H_
