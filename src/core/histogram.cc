// SPDX-License-Identifier: Apache-2.0

#include "kcache/histogram.h"

#include <cstddef>

namespace kcache {

void LatencyHistogram::Observe(double seconds) {
  size_t b = 0;
  while (b < kBounds.size() && seconds > kBounds[b]) ++b;
  ++buckets[b];
  ++count;
  sum_seconds += seconds;
}

}  // namespace kcache
