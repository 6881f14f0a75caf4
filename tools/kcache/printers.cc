#include "tools/kcache/printers.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "tools/kcache/tables.h"
#include "tools/kcache/yaml.h"
#include "util/rfc3339.h"

namespace kcache::tool {
void PrintYaml(const nlohmann::json& doc, std::ostream& out) {
  std::string text;
  AppendYaml(doc, &text);
  out << text;
}

std::string KindPath(const Object& o) {
  std::string kind = o.kind();
  std::transform(kind.begin(), kind.end(), kind.begin(), ::tolower);
  const std::string& av = o.api_version();
  size_t slash = av.find('/');
  if (slash != std::string::npos) kind += "." + av.substr(0, slash);
  return kind;
}

std::string Age(const std::string& timestamp, std::chrono::system_clock::time_point now) {
  auto t = util::ParseRfc3339(timestamp);
  return t ? HumanDuration(now - *t) : "<unknown>";
}

void PrintTable(const std::vector<std::vector<std::string>>& rows, std::ostream& out) {
  // Columns are as wide as their widest cell in characters, not bytes (the
  // tree's lines are UTF-8).
  auto chars = [](const std::string& s) {
    return static_cast<size_t>(
        std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xc0) != 0x80; }));
  };
  std::vector<size_t> width;
  for (const auto& row : rows) {
    if (width.size() < row.size()) width.resize(row.size());
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], chars(row[i]));
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] + 3 - chars(row[i]), ' ');
    }
    out << line << "\n";
  }
}

}  // namespace kcache::tool
