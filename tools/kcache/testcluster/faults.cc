// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/testcluster/faults.h"

#include <algorithm>
#include <charconv>

namespace kcache::serve {

StatusOr<RequestSet> RequestSet::Parse(std::string_view flag, std::string_view spec) {
  RequestSet out;
  while (!spec.empty()) {
    size_t comma = spec.find(',');
    std::string_view item = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
    bool every = !item.empty() && item.front() == '*';
    std::string_view digits = every ? item.substr(1) : item;
    uint64_t n = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || n == 0) {
      return Status::InvalidArgument(
          "invalid argument \"" + std::string(item) + "\" for \"--" + std::string(flag) +
          "\" flag: want request numbers from 1 (\"3\"), or \"*N\" for every Nth");
    }
    (every ? out.every_ : out.numbers_).push_back(n);
  }
  return out;
}

bool RequestSet::Contains(uint64_t request) const {
  if (std::find(numbers_.begin(), numbers_.end(), request) != numbers_.end()) return true;
  return std::any_of(every_.begin(), every_.end(), [&](uint64_t n) { return request % n == 0; });
}

}  // namespace kcache::serve
