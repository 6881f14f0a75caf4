// Timing helpers shared by the benchmarks.

#ifndef KCACHE_TOOLS_KCACHE_BENCH_TIMING_H_
#define KCACHE_TOOLS_KCACHE_BENCH_TIMING_H_

#include <algorithm>
#include <chrono>
#include <vector>

namespace kcache::bench {

using Clock = std::chrono::steady_clock;

inline double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// The median of `v` (the upper one of an even count). REQUIRES: !v.empty().
inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace kcache::bench

#endif  // KCACHE_TOOLS_KCACHE_BENCH_TIMING_H_
