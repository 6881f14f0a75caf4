// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/resident.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>

namespace kcache::tool {

uint64_t ResidentBytes() {
  // statm: size resident shared text lib data dt, in pages. One short
  // read, cheap enough to sample every few milliseconds.
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long long size = 0, resident = 0;
  const int got = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  if (got != 2) return 0;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

uint64_t PeakResidentBytes() {
  struct rusage usage {};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;  // Linux counts KiB
}

}  // namespace kcache::tool
