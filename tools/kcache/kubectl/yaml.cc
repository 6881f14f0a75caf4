// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/kubectl/yaml.h"

#include <algorithm>
#include <vector>

#include "tools/kcache/kubectl/go_format.h"

namespace kcache::tool {

using json = nlohmann::json;

namespace {

constexpr int kBestWidth = 80;  // yaml.v2 folds long strings past this column

// A string as code points with their byte offsets (strings from JSON are
// valid UTF-8).
struct Runes {
  explicit Runes(std::string_view s) {
    for (size_t i = 0; i < s.size();) {
      unsigned char c = s[i];
      size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
      len = std::min(len, s.size() - i);
      char32_t r = len == 1 ? c : c & (0xff >> (len + 1));
      for (size_t k = 1; k < len; ++k) r = (r << 6) | (s[i + k] & 0x3f);
      cp.push_back(r);
      bytes.push_back(s.substr(i, len));
      i += len;
    }
  }
  std::vector<char32_t> cp;
  std::vector<std::string_view> bytes;
};

bool IsLetter(char32_t r) { return (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || r >= 0xc0; }
bool IsDigit(char32_t r) { return r >= '0' && r <= '9'; }
bool IsBreak(char32_t r) {
  return r == '\r' || r == '\n' || r == 0x85 || r == 0x2028 || r == 0x2029;
}
bool IsBlank(char32_t r) { return r == ' ' || r == '\t'; }
bool IsPrintable(char32_t r) {
  return r == 0x0a || (r >= 0x20 && r <= 0x7e) || (r >= 0xa0 && r <= 0xd7ff) ||
         (r >= 0xe000 && r <= 0xfffd && r != 0xfeff);
}

// --- yaml.v2's resolver: would `s`, written plain, read back as something
// other than this string? ---

bool AllDigits(std::string_view s, int base) {
  if (s.empty()) return false;
  for (char c : s) {
    int d = IsDigit(c)               ? c - '0'
            : (c >= 'a' && c <= 'f') ? c - 'a' + 10
            : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                     : 99;
    if (d >= base) return false;
  }
  return true;
}

// Go's strconv.ParseInt(s, 0, 64) syntax, ignoring range (an out-of-range
// integer still reads as a number, a float).
bool GoInteger(std::string_view s) {
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) s.remove_prefix(1);
  if (s.size() > 2 && s[0] == '0') {
    char p = static_cast<char>(s[1] | 0x20);
    if (p == 'x') return AllDigits(s.substr(2), 16);
    if (p == 'o') return AllDigits(s.substr(2), 8);
    if (p == 'b') return AllDigits(s.substr(2), 2);
  }
  if (s.size() > 1 && s[0] == '0') return AllDigits(s.substr(1), 8);
  return AllDigits(s, 10);
}

// ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$
bool YamlStyleFloat(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  size_t digits = 0;
  while (i < s.size() && IsDigit(s[i])) ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    size_t frac = 0;
    while (i < s.size() && IsDigit(s[i])) ++i, ++frac;
    if (digits == 0 && frac == 0) return false;
  } else if (digits == 0) {
    return false;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    size_t exp = 0;
    while (i < s.size() && IsDigit(s[i])) ++i, ++exp;
    if (exp == 0) return false;
  }
  return i == s.size();
}

// A number of 1 or 2 digits at s[*i] within [lo, hi].
bool Num(std::string_view s, size_t* i, int lo, int hi, int* out, size_t max_digits = 2) {
  size_t start = *i;
  int v = 0;
  while (*i < s.size() && IsDigit(s[*i]) && *i - start < max_digits) v = v * 10 + (s[(*i)++] - '0');
  *out = v;
  return *i > start && v >= lo && v <= hi;
}

// yaml.v2's timestamps: 2006-1-2, 2006-1-2T15:4:5[.frac](Z|±hh:mm) (also
// with t), 2006-1-2 15:4:5[.frac].
bool YamlTimestamp(std::string_view s) {
  if (s.size() < 5 || !AllDigits(s.substr(0, 4), 10) || s[4] != '-') return false;
  size_t i = 5;
  int year = std::stoi(std::string(s.substr(0, 4))), month, day;
  if (!Num(s, &i, 1, 12, &month) || i >= s.size() || s[i++] != '-') return false;
  if (!Num(s, &i, 1, 31, &day)) return false;
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  if (day > kDays[month - 1] + (month == 2 && leap ? 1 : 0)) return false;
  if (i == s.size()) return true;
  const char sep = s[i++];
  if (sep != 'T' && sep != 't' && sep != ' ') return false;
  int h, m, sec;
  if (!Num(s, &i, 0, 23, &h) || i >= s.size() || s[i++] != ':') return false;
  if (!Num(s, &i, 0, 59, &m) || i >= s.size() || s[i++] != ':') return false;
  if (!Num(s, &i, 0, 59, &sec)) return false;
  if (i < s.size() && (s[i] == '.' || s[i] == ',')) {
    size_t start = ++i;
    while (i < s.size() && IsDigit(s[i])) ++i;
    if (i == start) return false;
  }
  if (sep == ' ') return i == s.size();
  if (i < s.size() && s[i] == 'Z') return i + 1 == s.size();
  if (i >= s.size() || (s[i] != '+' && s[i] != '-')) return false;
  ++i;
  int zh, zm;
  if (!Num(s, &i, 0, 99, &zh, 2) || i - 1 >= s.size()) return false;
  if (i >= s.size() || s[i++] != ':') return false;
  return Num(s, &i, 0, 99, &zm, 2) && i == s.size();
}

bool ResolvesToNonString(std::string_view s) {
  static const char* kWords[] = {
      "",     "~",    "null", "Null",  "NULL",  "y",     "Y",     "yes",   "Yes",   "YES",
      "on",   "On",   "ON",   "true",  "True",  "TRUE",  "n",     "N",     "no",    "No",
      "NO",   "off",  "Off",  "OFF",   "false", "False", "FALSE", ".nan",  ".NaN",  ".NAN",
      ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", "<<"};
  for (const char* w : kWords) {
    if (s == w) return true;
  }
  const char c = s[0];
  if (c == '.') {
    return YamlStyleFloat(s);
  }
  if (c != '+' && c != '-' && !IsDigit(c)) return false;
  if (YamlTimestamp(s)) return true;
  std::string plain;
  for (char ch : s) {
    if (ch != '_') plain.push_back(ch);
  }
  return GoInteger(plain) || YamlStyleFloat(plain);
}

// ^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$
bool Base60Float(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  if (i >= s.size() || !IsDigit(s[i])) return false;
  while (i < s.size() && (IsDigit(s[i]) || s[i] == '_')) ++i;
  int groups = 0;
  while (i < s.size() && s[i] == ':') {
    ++i;
    size_t start = i;
    while (i < s.size() && IsDigit(s[i]) && i - start < 2) ++i;
    size_t n = i - start;
    if (n == 0 || (n == 2 && s[start] > '5')) return false;
    ++groups;
  }
  if (groups == 0) return false;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && (IsDigit(s[i]) || s[i] == '_')) ++i;
  }
  return i == s.size();
}

// --- the emitter's analysis of a scalar (what styles can carry it) ---

struct Analysis {
  bool multiline = false;
  bool block_plain = true;
  bool single_quoted = true;
  bool block = true;
};

Analysis Analyze(const Runes& v) {
  Analysis a;
  const size_t n = v.cp.size();
  bool block_indicators = false, line_breaks = false, special = false;
  bool leading_space = false, leading_break = false, trailing_space = false, trailing_break = false,
       break_space = false, space_break = false;
  bool previous_space = false, previous_break = false, preceded_by_whitespace = true;
  if (n >= 3 && ((v.cp[0] == '-' && v.cp[1] == '-' && v.cp[2] == '-') ||
                 (v.cp[0] == '.' && v.cp[1] == '.' && v.cp[2] == '.'))) {
    block_indicators = true;
  }
  for (size_t i = 0; i < n; ++i) {
    const char32_t r = v.cp[i];
    const bool followed_by_whitespace = i + 1 >= n || IsBlank(v.cp[i + 1]);
    if (i == 0) {
      switch (r) {
        case '#':
        case ',':
        case '[':
        case ']':
        case '{':
        case '}':
        case '&':
        case '*':
        case '!':
        case '|':
        case '>':
        case '\'':
        case '"':
        case '%':
        case '@':
        case '`':
          block_indicators = true;
          break;
        case '?':
        case ':':
        case '-':
          if (followed_by_whitespace) block_indicators = true;
          break;
      }
    } else if ((r == ':' && followed_by_whitespace) || (r == '#' && preceded_by_whitespace)) {
      block_indicators = true;
    }
    if (!IsPrintable(r)) special = true;
    if (r == ' ') {
      if (i == 0) leading_space = true;
      if (i + 1 == n) trailing_space = true;
      if (previous_break) break_space = true;
      previous_space = true;
      previous_break = false;
    } else if (IsBreak(r)) {
      line_breaks = true;
      if (i == 0) leading_break = true;
      if (i + 1 == n) trailing_break = true;
      if (previous_space) space_break = true;
      previous_space = false;
      previous_break = true;
    } else {
      previous_space = previous_break = false;
    }
    preceded_by_whitespace = IsBlank(r) || IsBreak(r) || r == 0;
  }
  a.multiline = line_breaks;
  if (leading_space || leading_break || trailing_space || trailing_break) a.block_plain = false;
  if (trailing_space) a.block = false;
  if (break_space) a.block_plain = a.single_quoted = false;
  if (space_break || special) a.block_plain = a.single_quoted = a.block = false;
  if (line_breaks) a.block_plain = false;
  if (block_indicators) a.block_plain = false;
  return a;
}

class Emitter {
 public:
  explicit Emitter(std::string* out) : out_(out) {}

  void Document(const json& v) {
    if (Nested(v) && v.is_object()) {
      Mapping(v, 0, false);
    } else if (Nested(v)) {
      Sequence(v, 0, false);
    } else {
      Scalar(v, false, 0);
    }
    if (column_ > 0) Break();
  }

  void Item(const json& v) {
    Write("- ");
    Node(v, 2);
    if (column_ > 0) Break();
  }

 private:
  static bool Nested(const json& v) { return v.is_structured() && !v.empty(); }

  void Put(std::string_view bytes) {
    out_->append(bytes);
    ++column_;
  }
  void Write(std::string_view ascii) {
    out_->append(ascii);
    column_ += static_cast<int>(ascii.size());
  }
  void Break() {
    out_->push_back('\n');
    column_ = 0;
  }
  // A new line at `indent`, unless already at the start of one.
  void Indent(int indent) {
    if (column_ > 0) Break();
    out_->append(static_cast<size_t>(indent), ' ');
    column_ = indent;
  }

  // A sequence item or mapping value already placed; `indent` is where its
  // nested content goes.
  void Node(const json& v, int indent) {
    if (Nested(v) && v.is_object()) {
      Mapping(v, indent, true);
    } else if (Nested(v)) {
      Sequence(v, indent, true);
    } else {
      Scalar(v, false, indent);
    }
  }

  void Mapping(const json& m, int indent, bool inline_first) {
    std::vector<const std::string*> keys;
    for (const auto& [k, v] : m.items()) keys.push_back(&k);
    std::stable_sort(keys.begin(), keys.end(), [](const std::string* a, const std::string* b) {
      return YamlKeyLess(*a, *b);
    });
    bool first = true;
    for (const std::string* k : keys) {
      if (!(first && inline_first)) Indent(indent);
      first = false;
      String(*k, /*key=*/true, indent + 2);
      Write(":");
      const json& v = m.at(*k);
      if (Nested(v) && v.is_object()) {
        Mapping(v, indent + 2, false);
      } else if (Nested(v)) {
        Sequence(v, indent, false);  // block sequences in mappings are not indented
      } else {
        Write(" ");
        Scalar(v, false, indent + 2);
      }
    }
  }

  void Sequence(const json& a, int indent, bool inline_first) {
    bool first = true;
    for (const json& item : a) {
      if (!(first && inline_first)) Indent(indent);
      first = false;
      Write("- ");
      Node(item, indent + 2);
    }
  }

  void Scalar(const json& v, bool key, int indent) {
    switch (v.type()) {
      case json::value_t::string:
        String(v.get_ref<const std::string&>(), key, indent);
        return;
      case json::value_t::object:
        Write("{}");
        return;
      case json::value_t::array:
        Write("[]");
        return;
      case json::value_t::number_float: {
        std::string f = GoFloat(v.get<double>());
        Write(f == "+Inf" ? ".inf" : f == "-Inf" ? "-.inf" : f == "NaN" ? ".nan" : f);
        return;
      }
      default:
        Write(v.dump());
    }
  }

  void String(const std::string& s, bool key, int indent) {
    enum Style { kPlain, kSingle, kDouble, kLiteral };
    const Runes r(s);
    Style style = s.find('\n') != std::string::npos            ? kLiteral
                  : !ResolvesToNonString(s) && !Base60Float(s) ? kPlain
                                                               : kDouble;
    const Analysis a = Analyze(r);
    if (key && a.multiline) style = kDouble;
    if (style == kPlain && (!a.block_plain || (s.empty() && key))) style = kSingle;
    if (style == kSingle && !a.single_quoted) style = kDouble;
    if (style == kLiteral && (!a.block || key)) style = kDouble;
    const bool breaks = !key;
    switch (style) {
      case kPlain:
        Plain(r, breaks, indent);
        break;
      case kSingle:
        Single(r, breaks, indent);
        break;
      case kDouble:
        Double(r, breaks, indent);
        break;
      case kLiteral:
        Literal(r, indent);
        break;
    }
  }

  bool SpaceAt(const Runes& r, size_t i) const { return i < r.cp.size() && r.cp[i] == ' '; }

  // At a space that is not in a run of them: whether yaml.v2 ends the line
  // here instead (`allow_breaks` is off for keys).
  bool Fold(bool allow_breaks, bool spaces) const {
    return allow_breaks && !spaces && column_ > kBestWidth;
  }

  void Plain(const Runes& r, bool allow_breaks, int indent) {
    bool spaces = false;
    for (size_t i = 0; i < r.cp.size(); ++i) {
      if (r.cp[i] == ' ') {
        if (Fold(allow_breaks, spaces) && !SpaceAt(r, i + 1)) {
          Indent(indent);
        } else {
          Put(r.bytes[i]);
        }
        spaces = true;
      } else {
        Put(r.bytes[i]);
        spaces = false;
      }
    }
  }

  void Single(const Runes& r, bool allow_breaks, int indent) {
    Write("'");
    bool spaces = false;
    const size_t n = r.cp.size();
    for (size_t i = 0; i < n; ++i) {
      if (r.cp[i] == ' ') {
        if (Fold(allow_breaks, spaces) && i > 0 && i + 1 < n && !SpaceAt(r, i + 1)) {
          Indent(indent);
        } else {
          Put(r.bytes[i]);
        }
        spaces = true;
      } else {
        if (r.cp[i] == '\'') Write("'");
        Put(r.bytes[i]);
        spaces = false;
      }
    }
    Write("'");
  }

  void Double(const Runes& r, bool allow_breaks, int indent) {
    Write("\"");
    bool spaces = false;
    const size_t n = r.cp.size();
    for (size_t i = 0; i < n; ++i) {
      const char32_t c = r.cp[i];
      if (!IsPrintable(c) || c == 0xfeff || IsBreak(c) || c == '"' || c == '\\') {
        Write("\\");
        switch (c) {
          case 0x00:
            Write("0");
            break;
          case 0x07:
            Write("a");
            break;
          case 0x08:
            Write("b");
            break;
          case 0x09:
            Write("t");
            break;
          case 0x0a:
            Write("n");
            break;
          case 0x0b:
            Write("v");
            break;
          case 0x0c:
            Write("f");
            break;
          case 0x0d:
            Write("r");
            break;
          case 0x1b:
            Write("e");
            break;
          case '"':
            Write("\"");
            break;
          case '\\':
            Write("\\");
            break;
          case 0x85:
            Write("N");
            break;
          case 0xa0:
            Write("_");
            break;
          case 0x2028:
            Write("L");
            break;
          case 0x2029:
            Write("P");
            break;
          default: {
            int digits = c <= 0xff ? 2 : c <= 0xffff ? 4 : 8;
            Write(c <= 0xff ? "x" : c <= 0xffff ? "u" : "U");
            for (int k = (digits - 1) * 4; k >= 0; k -= 4) {
              char d = static_cast<char>((c >> k) & 0xf);
              out_->push_back(d < 10 ? static_cast<char>('0' + d)
                                     : static_cast<char>('A' + d - 10));
              ++column_;
            }
          }
        }
        spaces = false;
      } else if (c == ' ') {
        if (Fold(allow_breaks, spaces) && i != 0 && i + 1 != n) {
          Indent(indent);
          if (SpaceAt(r, i + 1)) Write("\\");
        } else {
          Put(r.bytes[i]);
        }
        spaces = true;
      } else {
        Put(r.bytes[i]);
        spaces = false;
      }
    }
    Write("\"");
  }

  void Literal(const Runes& r, int indent) {
    const size_t n = r.cp.size();
    Write("|");
    if (r.cp[0] == ' ' || IsBreak(r.cp[0])) Write("2");
    if (!IsBreak(r.cp[n - 1])) {
      Write("-");
    } else if (n == 1 || IsBreak(r.cp[n - 2])) {
      Write("+");
    }
    Break();
    bool breaks = true;
    for (size_t i = 0; i < n; ++i) {
      if (IsBreak(r.cp[i])) {
        if (r.cp[i] == '\n') {
          Break();
        } else {
          out_->append(r.bytes[i]);
          column_ = 0;
        }
        breaks = true;
      } else {
        if (breaks) {
          out_->append(static_cast<size_t>(indent - column_), ' ');
          column_ = indent;
          breaks = false;
        }
        Put(r.bytes[i]);
      }
    }
  }

  std::string* out_;
  int column_ = 0;
};

}  // namespace

bool YamlKeyLess(std::string_view a_str, std::string_view b_str) {
  const Runes a(a_str), b(b_str);
  const std::vector<char32_t>& ar = a.cp;
  const std::vector<char32_t>& br = b.cp;
  for (size_t i = 0; i < ar.size() && i < br.size(); ++i) {
    if (ar[i] == br[i]) continue;
    const bool al = IsLetter(ar[i]), bl = IsLetter(br[i]);
    if (al && bl) return ar[i] < br[i];
    if (al || bl) return bl;
    int64_t an = 0, bn = 0;
    if (ar[i] == '0' || br[i] == '0') {
      for (size_t j = i; j-- > 0 && IsDigit(ar[j]);) {
        if (ar[j] != '0') {
          an = bn = 1;
          break;
        }
      }
    }
    size_t ai = i, bi = i;
    for (; ai < ar.size() && IsDigit(ar[ai]); ++ai) an = an * 10 + (ar[ai] - '0');
    for (; bi < br.size() && IsDigit(br[bi]); ++bi) bn = bn * 10 + (br[bi] - '0');
    if (an != bn) return an < bn;
    if (ai != bi) return ai < bi;
    return ar[i] < br[i];
  }
  return ar.size() < br.size();
}

void AppendYaml(const nlohmann::json& doc, std::string* out) { Emitter(out).Document(doc); }

void AppendYamlItem(const nlohmann::json& doc, std::string* out) { Emitter(out).Item(doc); }

}  // namespace kcache::tool
