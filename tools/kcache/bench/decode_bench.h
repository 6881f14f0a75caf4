// SPDX-License-Identifier: Apache-2.0

// `kcache bench decode`: metadata extraction (Object::Parse) against a full
// nlohmann_json parse of the same realistic pods, in one run.

#ifndef KCACHE_TOOLS_KCACHE_BENCH_DECODE_BENCH_H_
#define KCACHE_TOOLS_KCACHE_BENCH_DECODE_BENCH_H_

#include <ostream>

#include "kcache/status.h"

namespace kcache::bench {

struct DecodeBenchOptions {
  // Distinct synthetic pods decoded per run. Default: 20000.
  int objects = 20000;
  // Timed runs per method; the median is reported. Default: 5.
  int runs = 5;
};

Status RunDecodeBench(const DecodeBenchOptions& options, std::ostream& out);

}  // namespace kcache::bench

#endif  // KCACHE_TOOLS_KCACHE_BENCH_DECODE_BENCH_H_
