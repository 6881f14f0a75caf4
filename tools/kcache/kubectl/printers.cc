// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/kubectl/printers.h"

#include <algorithm>

#include "tools/kcache/kubectl/tables.h"
#include "util/rfc3339.h"

namespace kcache::tool {
std::string Age(const std::string& timestamp, std::chrono::system_clock::time_point now) {
  auto t = util::ParseRfc3339(timestamp);
  return t ? HumanDuration(now - *t) : "<unknown>";
}

namespace {

size_t Runes(const std::string& s) {
  return static_cast<size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xc0) != 0x80; }));
}

}  // namespace

void TabWriter::Measure(const std::vector<std::string>& row) {
  if (width_.size() < row.size()) width_.resize(row.size(), 0);
  for (size_t i = 0; i + 1 < row.size(); ++i)
    width_[i] = std::max({width_[i], min_width_, Runes(row[i]) + 3});
}

void TabWriter::Write(const std::vector<std::string>& row, std::string* out) const {
  for (size_t i = 0; i < row.size(); ++i) {
    *out += row[i];
    if (i + 1 < row.size()) out->append(width_[i] - Runes(row[i]), ' ');
  }
  out->push_back('\n');
}

void PrintTable(const std::vector<std::vector<std::string>>& rows, std::ostream& out) {
  TabWriter tab;
  for (const auto& row : rows) tab.Measure(row);
  std::string text;
  for (const auto& row : rows) tab.Write(row, &text);
  out << text;
}

}  // namespace kcache::tool
