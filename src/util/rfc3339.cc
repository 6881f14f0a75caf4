// SPDX-License-Identifier: Apache-2.0

#include "util/rfc3339.h"

#include <cstdint>
#include <cstdio>
#include <ctime>

namespace kcache::util {

std::string FormatRfc3339(std::chrono::system_clock::time_point t) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  if (ms % 1000 < 0) --secs;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(((ms % 1000) + 1000) % 1000));
  return buf;
}

std::optional<std::chrono::system_clock::time_point> ParseRfc3339(std::string_view s) {
  std::string str(s);
  std::tm tm{};
  const char* rest = strptime(str.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (!rest) return std::nullopt;
  int64_t ms = 0;
  if (*rest == '.') {
    ++rest;
    int digits = 0;
    while (*rest >= '0' && *rest <= '9') {
      if (digits < 3) ms = ms * 10 + (*rest - '0');
      ++digits;
      ++rest;
    }
    if (digits == 0) return std::nullopt;
    for (int d = digits; d < 3; ++d) ms *= 10;
  }
  if (std::string_view(rest) != "Z") return std::nullopt;
  // system_clock counts nanoseconds in 64 bits: about 1678 to 2262. Times
  // outside that are refused rather than overflowed.
  const int64_t secs = timegm(&tm);
  constexpr int64_t kLimit = 9'000'000'000;  // seconds, about year 2255
  if (secs <= -kLimit || secs >= kLimit) return std::nullopt;
  return std::chrono::system_clock::time_point(std::chrono::seconds(secs) +
                                               std::chrono::milliseconds(ms));
}

}  // namespace kcache::util
