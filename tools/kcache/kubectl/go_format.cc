// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/kubectl/go_format.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <optional>

namespace kcache::tool {
namespace {

// A finite, non-zero double as its sign, the shortest decimal digits that
// read back as it, and the power of ten of the first digit.
struct Shortest {
  const char* sign;
  std::string digits;
  int exp10;
};

std::optional<Shortest> Decompose(double d) {
  if (d == 0 || !std::isfinite(d)) return std::nullopt;
  char buf[64];
  auto [end, ec] =
      std::to_chars(buf, buf + sizeof(buf), std::fabs(d), std::chars_format::scientific);
  std::string s(buf, end);
  size_t e = s.find('e');
  Shortest out{d < 0 ? "-" : "", "", std::atoi(s.c_str() + e + 1)};
  for (size_t i = 0; i < e; ++i) {
    if (s[i] != '.') out.digits.push_back(s[i]);
  }
  return out;
}

std::string Fixed(const std::string& digits, int exp10) {
  if (exp10 < 0) return "0." + std::string(-exp10 - 1, '0') + digits;
  std::string out = digits.substr(0, std::min<size_t>(digits.size(), exp10 + 1));
  if (out.size() < static_cast<size_t>(exp10 + 1)) out += std::string(exp10 + 1 - out.size(), '0');
  if (digits.size() > static_cast<size_t>(exp10 + 1)) out += "." + digits.substr(exp10 + 1);
  return out;
}

// Go's 'e' form: d.ddde+XX, the exponent at least two digits.
std::string Exponent(const std::string& digits, int exp10) {
  std::string out = digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  out += exp10 < 0 ? "e-" : "e+";
  std::string e = std::to_string(std::abs(exp10));
  if (e.size() < 2) e = "0" + e;
  return out + e;
}

std::string SpecialFloat(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "+Inf" : "-Inf";
  return "0";
}

std::string JsonFloat(double d) {
  std::optional<Shortest> s = Decompose(d);
  if (!s) return SpecialFloat(d);
  const double abs = std::fabs(d);
  if (abs < 1e-6 || abs >= 1e21) {
    std::string e = Exponent(s->digits, s->exp10);
    // encoding/json writes e-7, not e-07.
    size_t n = e.size();
    if (n >= 4 && e[n - 4] == 'e' && e[n - 3] == '-' && e[n - 2] == '0') e.erase(n - 2, 1);
    return s->sign + e;
  }
  return s->sign + Fixed(s->digits, s->exp10);
}

constexpr char kHex[] = "0123456789abcdef";

void AppendGoString(const std::string& s, std::string* out) {
  out->push_back('"');
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = s[i];
    if (c < 0x80) {
      switch (c) {
        case '"':
          *out += "\\\"";
          break;
        case '\\':
          *out += "\\\\";
          break;
        case '\b':
          *out += "\\b";
          break;
        case '\f':
          *out += "\\f";
          break;
        case '\n':
          *out += "\\n";
          break;
        case '\r':
          *out += "\\r";
          break;
        case '\t':
          *out += "\\t";
          break;
        default:
          if (c < 0x20 || c == '<' || c == '>' || c == '&') {
            *out += "\\u00";
            out->push_back(kHex[c >> 4]);
            out->push_back(kHex[c & 0xf]);
          } else {
            out->push_back(static_cast<char>(c));
          }
      }
      ++i;
      continue;
    }
    // A UTF-8 sequence: copied when valid, else U+FFFD as Go writes it.
    size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;
    bool valid = len > 0 && i + len <= s.size() && c <= 0xf4;
    uint32_t cp = len ? c & (0xff >> (len + 1)) : 0;
    for (size_t k = 1; valid && k < len; ++k) {
      unsigned char cc = s[i + k];
      if ((cc & 0xc0) != 0x80) valid = false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    static const uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (valid && (cp < kMin[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))) valid = false;
    if (!valid) {
      *out += "\\ufffd";
      ++i;
      continue;
    }
    if (cp == 0x2028 || cp == 0x2029) {
      *out += cp == 0x2028 ? "\\u2028" : "\\u2029";
    } else {
      out->append(s, i, len);
    }
    i += len;
  }
  out->push_back('"');
}

void Newline(int indent, int depth, std::string* out) {
  out->push_back('\n');
  out->append(static_cast<size_t>(indent) * depth, ' ');
}

}  // namespace

GoKind GoKindOf(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::boolean:
      return GoKind::kBool;
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
      return GoKind::kInt;
    case nlohmann::json::value_t::number_float:
      return GoKind::kFloat;
    case nlohmann::json::value_t::string:
      return GoKind::kString;
    case nlohmann::json::value_t::object:
      return GoKind::kMap;
    case nlohmann::json::value_t::array:
      return GoKind::kSlice;
    default:
      return GoKind::kNil;
  }
}

std::string GoFloat(double d) {
  std::optional<Shortest> s = Decompose(d);
  if (!s) return SpecialFloat(d);
  if (s->exp10 < -4 || s->exp10 >= 6) return s->sign + Exponent(s->digits, s->exp10);
  return s->sign + Fixed(s->digits, s->exp10);
}

void AppendGoJson(const nlohmann::json& v, int indent, int depth, std::string* out) {
  switch (v.type()) {
    case nlohmann::json::value_t::object: {
      if (v.empty()) {
        *out += "{}";
        return;
      }
      out->push_back('{');
      bool first = true;
      for (const auto& [k, e] : v.items()) {
        if (!first) out->push_back(',');
        first = false;
        if (indent > 0) Newline(indent, depth + 1, out);
        AppendGoString(k, out);
        *out += indent > 0 ? ": " : ":";
        AppendGoJson(e, indent, depth + 1, out);
      }
      if (indent > 0) Newline(indent, depth, out);
      out->push_back('}');
      return;
    }
    case nlohmann::json::value_t::array: {
      if (v.empty()) {
        *out += "[]";
        return;
      }
      out->push_back('[');
      bool first = true;
      for (const nlohmann::json& e : v) {
        if (!first) out->push_back(',');
        first = false;
        if (indent > 0) Newline(indent, depth + 1, out);
        AppendGoJson(e, indent, depth + 1, out);
      }
      if (indent > 0) Newline(indent, depth, out);
      out->push_back(']');
      return;
    }
    case nlohmann::json::value_t::string:
      AppendGoString(v.get_ref<const std::string&>(), out);
      return;
    case nlohmann::json::value_t::number_float:
      *out += JsonFloat(v.get<double>());
      return;
    default:
      *out += v.dump();
  }
}

std::string GoJson(const nlohmann::json& v, int indent, int depth) {
  std::string out;
  AppendGoJson(v, indent, depth, &out);
  return out;
}

std::string GoValue(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::string:
      return v.get<std::string>();
    case nlohmann::json::value_t::null:
      return "<nil>";
    case nlohmann::json::value_t::number_float:
      return GoFloat(v.get<double>());
    case nlohmann::json::value_t::array: {
      std::string out = "[";
      for (size_t i = 0; i < v.size(); ++i) out += (i ? " " : "") + GoValue(v[i]);
      return out + "]";
    }
    case nlohmann::json::value_t::object: {
      std::string out = "map[";
      bool first = true;
      for (const auto& [k, e] : v.items()) {
        out += (first ? "" : " ") + k + ":" + GoValue(e);
        first = false;
      }
      return out + "]";
    }
    default:
      return v.dump();
  }
}

}  // namespace kcache::tool
