// SPDX-License-Identifier: Apache-2.0

// Output of kcache's inspection commands in kubectl's formats.

#ifndef KCACHE_TOOLS_KCACHE_KUBECTL_PRINTERS_H_
#define KCACHE_TOOLS_KCACHE_KUBECTL_PRINTERS_H_

#include <chrono>
#include <ostream>
#include <string>
#include <vector>

namespace kcache::tool {

// kubectl's AGE column for a creationTimestamp: "45s", "3m20s", "5h", "8d"
// (tables.h's HumanDuration); "<unknown>" if it does not parse.
std::string Age(const std::string& timestamp, std::chrono::system_clock::time_point now);

// Rows laid out as kubectl's tabwriter lays them out: every cell but the
// last padded to its column's width, the widest cell in characters (not
// bytes: cells may be UTF-8) plus 3, and at least `min_width` (kubectl's
// tables use 6). Measure every row first, then Write them.
class TabWriter {
 public:
  explicit TabWriter(size_t min_width = 0) : min_width_(min_width) {}
  void Measure(const std::vector<std::string>& row);
  void Write(const std::vector<std::string>& row, std::string* out) const;

 private:
  size_t min_width_;
  std::vector<size_t> width_;
};

// Left-aligned columns, three spaces apart (a TabWriter without a minimum).
void PrintTable(const std::vector<std::vector<std::string>>& rows, std::ostream& out);

}  // namespace kcache::tool

#endif  // KCACHE_TOOLS_KCACHE_KUBECTL_PRINTERS_H_
