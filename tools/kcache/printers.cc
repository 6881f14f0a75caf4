#include "tools/kcache/printers.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "util/rfc3339.h"

namespace kcache::tool {
namespace {

bool LooksNumeric(const std::string& s) {
  size_t i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  if (i < s.size() && s[i] == '.') ++i;
  return i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]));
}

// Whether `s` can be written as a plain YAML scalar and read back as the
// same string.
bool Plain(const std::string& s) {
  if (s.empty() || s.front() == ' ' || s.back() == ' ') return false;
  if (std::string("-?:,[]{}#&*!|>'\"%@`").find(s.front()) != std::string::npos) return false;
  if (s.find(": ") != std::string::npos || s.find(" #") != std::string::npos || s.back() == ':')
    return false;
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) return false;
  }
  std::string lower = s;
  std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
  static const char* kWords[] = {"true", "false", "yes", "no", "on", "off", "y", "n", "null", "~"};
  for (const char* w : kWords) {
    if (lower == w) return false;
  }
  return !LooksNumeric(s);
}

std::string YamlString(const std::string& s) { return Plain(s) ? s : nlohmann::json(s).dump(); }

bool Nested(const nlohmann::json& v) { return (v.is_object() || v.is_array()) && !v.empty(); }

void Emit(const nlohmann::json& v, int indent, std::ostream& out);

void EmitMap(const nlohmann::json& m, int indent, std::ostream& out) {
  for (const auto& [k, v] : m.items()) {
    out << std::string(indent, ' ') << YamlString(k) << ":";
    if (Nested(v)) {
      out << "\n";
      Emit(v, v.is_object() ? indent + 2 : indent, out);
    } else {
      out << " " << Scalar(v) << "\n";
    }
  }
}

void EmitSeq(const nlohmann::json& a, int indent, std::ostream& out) {
  for (const nlohmann::json& v : a) {
    if (Nested(v)) {
      // The item's first line goes after "- "; the rest is indented under it.
      std::ostringstream item;
      Emit(v, indent + 2, item);
      out << std::string(indent, ' ') << "- " << item.str().substr(indent + 2);
    } else {
      out << std::string(indent, ' ') << "- " << Scalar(v) << "\n";
    }
  }
}

void Emit(const nlohmann::json& v, int indent, std::ostream& out) {
  if (v.is_object()) {
    EmitMap(v, indent, out);
  } else {
    EmitSeq(v, indent, out);
  }
}

}  // namespace

std::string Scalar(const nlohmann::json& v) {
  if (v.is_string()) return YamlString(v.get<std::string>());
  if (v.is_object()) return "{}";
  if (v.is_array()) return "[]";
  return v.dump();
}

void PrintYaml(const nlohmann::json& doc, std::ostream& out) {
  if (Nested(doc)) {
    Emit(doc, 0, out);
  } else {
    out << Scalar(doc) << "\n";
  }
}

std::string KindPath(const Object& o) {
  std::string kind = o.kind();
  std::transform(kind.begin(), kind.end(), kind.begin(), ::tolower);
  const std::string& av = o.api_version();
  size_t slash = av.find('/');
  if (slash != std::string::npos) kind += "." + av.substr(0, slash);
  return kind;
}

std::string Age(std::chrono::system_clock::duration d) {
  int64_t secs = std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::seconds>(d).count());
  if (secs < 120) return std::to_string(secs) + "s";
  if (secs < 7200) return std::to_string(secs / 60) + "m";
  if (secs < 172800) return std::to_string(secs / 3600) + "h";
  return std::to_string(secs / 86400) + "d";
}

std::string Age(const std::string& timestamp, std::chrono::system_clock::time_point now) {
  auto t = util::ParseRfc3339(timestamp);
  return t ? Age(now - *t) : "<unknown>";
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

StatusOr<nlohmann::json::json_pointer> ParseFieldPath(std::string path) {
  const std::string original = path;
  if (path.size() >= 2 && path.front() == '{' && path.back() == '}')
    path = path.substr(1, path.size() - 2);
  if (path.empty() || path.front() != '.') path = "." + path;
  nlohmann::json::json_pointer ptr;
  size_t i = 0;
  while (i < path.size()) {
    if (path[i] == '.') {
      size_t j = path.find_first_of(".[", i + 1);
      std::string step = path.substr(i + 1, j == std::string::npos ? std::string::npos : j - i - 1);
      if (step.empty()) return Status::InvalidArgument("bad field path \"" + original + "\"");
      ptr /= step;
      i = j == std::string::npos ? path.size() : j;
    } else if (path[i] == '[') {
      size_t j = path.find(']', i);
      std::string n = j == std::string::npos ? "" : path.substr(i + 1, j - i - 1);
      if (n.empty() || !std::all_of(n.begin(), n.end(), ::isdigit)) {
        return Status::InvalidArgument("bad field path \"" + original +
                                       "\": only [N] subscripts are supported");
      }
      ptr /= std::stoul(n);
      i = j + 1;
    } else {
      return Status::InvalidArgument("bad field path \"" + original + "\"");
    }
  }
  return ptr;
}

}  // namespace kcache::tool
