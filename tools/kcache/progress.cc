// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/progress.h"

#include <algorithm>
#include <cmath>

namespace kcache::tool {

std::string TimeLeft(double left, double rate) {
  if (!(left > 0) || !(rate > 0)) return "";
  const auto s = static_cast<uint64_t>(std::ceil(std::max(left / rate, 1.0)));
  return ", about " + (s < 90 ? std::to_string(s) + " s" : std::to_string((s + 59) / 60) + " min") +
         " left";
}

}  // namespace kcache::tool
