// SPDX-License-Identifier: Apache-2.0

// The resident memory of this process, as the kernel counts it.

#ifndef KCACHE_TOOLS_KCACHE_RESIDENT_H_
#define KCACHE_TOOLS_KCACHE_RESIDENT_H_

#include <cstdint>

namespace kcache::tool {

// Resident set size in bytes now (/proc/self/statm); 0 if unreadable.
uint64_t ResidentBytes();

// The highest resident set size of this process so far, in bytes, as the
// kernel tracked it (getrusage): it also sees peaks between samples of
// ResidentBytes. 0 if unreadable.
uint64_t PeakResidentBytes();

}  // namespace kcache::tool

#endif  // KCACHE_TOOLS_KCACHE_RESIDENT_H_
