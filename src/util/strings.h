// SPDX-License-Identifier: Apache-2.0

// Small string helpers shared across subsystems.
#ifndef KCACHE_SRC_UTIL_STRINGS_H_
#define KCACHE_SRC_UTIL_STRINGS_H_

#include <string>
#include <string_view>
#include <vector>

namespace kcache {

// `s` without leading and trailing spaces, tabs, CRs and LFs.
inline std::string_view TrimSpace(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

// `s` with ASCII letters lower-cased (resource names, kinds, groups).
inline std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// `s` with ASCII letters upper-cased (table headers).
inline std::string AsciiUpper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

// The parts of `s` between `sep`s, empty ones included ("a,,b" is three
// parts; "" is one empty part).
inline std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (size_t from = 0;;) {
    size_t at = s.find(sep, from);
    out.push_back(s.substr(from, at == std::string_view::npos ? at : at - from));
    if (at == std::string_view::npos) return out;
    from = at + 1;
  }
}

}  // namespace kcache

#endif  // KCACHE_SRC_UTIL_STRINGS_H_
