// SPDX-License-Identifier: Apache-2.0

#include "core/resource_version.h"

#include <algorithm>
#include <charconv>

namespace kcache {
namespace {

bool IsDecimal(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string_view StripZeros(std::string_view s) {
  size_t i = s.find_first_not_of('0');
  return i == std::string_view::npos ? std::string_view("0") : s.substr(i);
}

}  // namespace

std::optional<uint64_t> ParseResourceVersion(std::string_view rv) {
  if (!IsDecimal(rv)) return std::nullopt;  // from_chars would take a prefix
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(rv.data(), rv.data() + rv.size(), v);
  if (ec != std::errc() || end != rv.data() + rv.size()) return std::nullopt;
  return v;
}

std::optional<uint64_t> ParseCanonicalResourceVersion(std::string_view rv) {
  if (rv.size() > 1 && rv[0] == '0') return std::nullopt;
  return ParseResourceVersion(rv);
}

std::optional<int> CompareResourceVersions(std::string_view a, std::string_view b) {
  if (!IsDecimal(a) || !IsDecimal(b)) return std::nullopt;
  a = StripZeros(a);
  b = StripZeros(b);
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  int c = a.compare(b);
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

}  // namespace kcache
