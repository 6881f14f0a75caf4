// SPDX-License-Identifier: Apache-2.0

// RFC 3339 timestamps in UTC, as Kubernetes writes them.

#ifndef KCACHE_SRC_UTIL_RFC3339_H_
#define KCACHE_SRC_UTIL_RFC3339_H_

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace kcache::util {

// "2026-11-22T11:00:00.123Z" (milliseconds).
std::string FormatRfc3339(std::chrono::system_clock::time_point t);
// Accepts "YYYY-MM-DDTHH:MM:SS[.fraction]Z"; nullopt otherwise.
std::optional<std::chrono::system_clock::time_point> ParseRfc3339(std::string_view s);

}  // namespace kcache::util

#endif  // KCACHE_SRC_UTIL_RFC3339_H_
