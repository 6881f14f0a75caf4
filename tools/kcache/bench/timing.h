// SPDX-License-Identifier: Apache-2.0

// Helpers shared by the benchmarks: timing and disk use.

#ifndef KCACHE_TOOLS_KCACHE_BENCH_TIMING_H_
#define KCACHE_TOOLS_KCACHE_BENCH_TIMING_H_

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace kcache::bench {

using Clock = std::chrono::steady_clock;

inline double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// The median of `v` (the upper one of an even count). REQUIRES: !v.empty().
inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The bytes of every file under `dir`: tables, logs, manifests.
inline uint64_t DiskBytes(const std::string& dir) {
  uint64_t n = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) n += e.file_size();
  }
  return n;
}

}  // namespace kcache::bench

#endif  // KCACHE_TOOLS_KCACHE_BENCH_TIMING_H_
