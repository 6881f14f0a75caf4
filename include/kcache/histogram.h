// SPDX-License-Identifier: Apache-2.0

// LatencyHistogram: durations counted in fixed buckets, as a Prometheus
// histogram keeps them (informer handler latency, work queue latencies).
//
// Thread-safety: a plain value; callers that share one lock around it.
#ifndef KCACHE_HISTOGRAM_H_
#define KCACHE_HISTOGRAM_H_

#include <array>
#include <cstddef>
#include <cstdint>

#include "kcache/export.h"

namespace kcache {

struct KCACHE_EXPORT LatencyHistogram {
  // Upper bounds, in seconds, of the buckets; a last bucket holds the
  // slower observations.
  static constexpr std::array<double, 8> kBounds = {0.0001, 0.001, 0.01, 0.1, 1, 10, 100, 1000};

  uint64_t count = 0;
  // Observations per bucket (not cumulative).
  std::array<uint64_t, kBounds.size() + 1> buckets{};
  double sum_seconds = 0;

  void Observe(double seconds);
};

}  // namespace kcache

#endif  // KCACHE_HISTOGRAM_H_
