// SPDX-License-Identifier: Apache-2.0

// Wording shared by the progress lines of kcache sync and kcache snapshot.
#ifndef KCACHE_TOOLS_KCACHE_PROGRESS_H_
#define KCACHE_TOOLS_KCACHE_PROGRESS_H_

#include <cstdint>
#include <string>

namespace kcache::tool {

// ", about 40 s left" (or "3 min"), rounded up, for `left` units of work at
// `rate` units a second; "" when either is not positive.
std::string TimeLeft(double left, double rate);

}  // namespace kcache::tool

#endif  // KCACHE_TOOLS_KCACHE_PROGRESS_H_
