// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/kubectl/jsonpath.h"

#include <cstdio>

#include "tools/kcache/kubectl/go_format.h"

namespace kcache::tool {

using json = nlohmann::json;

namespace {

struct Step;
using Steps = std::vector<Step>;

struct SliceParam {
  int value = 0;
  bool known = false;
  bool derived = false;  // [i] read as [i:i+1]
};

struct Step {
  enum Kind { kField, kWildcard, kRecursive, kSlice, kUnion, kFilter, kLiteral, kIdentifier };
  Kind kind;
  std::string name;  // field, identifier, or filter operator
  SliceParam params[3];
  std::vector<Steps> branches;  // union; filter: left and right
  json literal;
  bool text = false;  // a text literal gives one value whatever the input
};

}  // namespace

// A template item: text (an action of one text literal), an action, or a
// range over an action's values with its body.
struct JsonPath::Node {
  Steps steps;
  bool range = false;
  std::vector<Node> body;
};

namespace {

bool IsTerminator(int r) {
  switch (r) {
    case -1:
    case ' ':
    case '\t':
    case '\r':
    case '\n':
    case '.':
    case ',':
    case '[':
    case ']':
    case '$':
    case '@':
    case '{':
    case '}':
      return true;
  }
  return false;
}

bool IsDigit(int r) { return r >= '0' && r <= '9'; }
bool IsAlnum(int r) {
  // Letters beyond ASCII count too, as Go's unicode.IsLetter would mostly say.
  return r == '_' || IsDigit(r) || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || r >= 0x80;
}

Status Syntax(const std::string& why) { return Status::InvalidArgument(why); }

// Go's strconv.Unquote for a "..." or '...' literal (escapes \n, \t, \\,
// \", \', \xHH, \uHHHH, \UHHHHHHHH and octal \ooo).
StatusOr<std::string> Unquote(const std::string& quoted) {
  auto bad = [&] { return Syntax("unquote string " + quoted + " error invalid syntax"); };
  if (quoted.size() < 2 || quoted.front() != quoted.back()) return bad();
  const char q = quoted.front();
  std::string s = quoted.substr(1, quoted.size() - 2), out;
  auto append_utf8 = [&](uint32_t cp) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xc0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xe0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else {
      out.push_back(static_cast<char>(0xf0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    }
  };
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == q) return bad();
    if (c != '\\') {
      out.push_back(c);
      continue;
    }
    if (++i == s.size()) return bad();
    c = s[i];
    auto hex = [&](size_t n) -> StatusOr<uint32_t> {
      uint32_t v = 0;
      for (size_t k = 1; k <= n; ++k) {
        if (i + k >= s.size()) return bad();
        char h = s[i + k];
        int d = IsDigit(h)               ? h - '0'
                : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                : (h >= 'A' && h <= 'F') ? h - 'A' + 10
                                         : -1;
        if (d < 0) return bad();
        v = v * 16 + static_cast<uint32_t>(d);
      }
      i += n;
      return v;
    };
    switch (c) {
      case 'a':
        out.push_back('\a');
        break;
      case 'b':
        out.push_back('\b');
        break;
      case 'f':
        out.push_back('\f');
        break;
      case 'n':
        out.push_back('\n');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'v':
        out.push_back('\v');
        break;
      case '\\':
        out.push_back('\\');
        break;
      case '\'':
      case '"':
        if (c != q) return bad();
        out.push_back(c);
        break;
      case 'x': {
        KCACHE_ASSIGN_OR_RETURN(uint32_t v, hex(2));
        out.push_back(static_cast<char>(v));
        break;
      }
      case 'u':
      case 'U': {
        KCACHE_ASSIGN_OR_RETURN(uint32_t v, hex(c == 'u' ? 4 : 8));
        if (v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) return bad();
        append_utf8(v);
        break;
      }
      default: {
        if (c < '0' || c > '7' || i + 2 >= s.size()) return bad();
        uint32_t v = 0;
        for (size_t k = 0; k < 3; ++k) {
          char o = s[i + k];
          if (o < '0' || o > '7') return bad();
          v = v * 8 + static_cast<uint32_t>(o - '0');
        }
        if (v > 255) return bad();
        out.push_back(static_cast<char>(v));
        i += 2;
      }
    }
  }
  return out;
}

// One template's parser, after client-go's util/jsonpath grammar.
class Parser {
 public:
  explicit Parser(std::string input) : in_(std::move(input)) {}

  // The template as flat items: text literals and actions.
  Status Parse(std::vector<Steps>* items) {
    size_t text_start = 0;
    while (pos_ < in_.size()) {
      if (in_[pos_] != '{') {
        ++pos_;
        continue;
      }
      if (pos_ > text_start) items->push_back({Text(in_.substr(text_start, pos_ - text_start))});
      ++pos_;
      Steps action;
      KCACHE_RETURN_IF_ERROR(ParseAction(&action));
      items->push_back(std::move(action));
      text_start = pos_;
    }
    if (pos_ > text_start) items->push_back({Text(in_.substr(text_start))});
    return Status::OK();
  }

  // The steps of `text` read as the inside of one action.
  static StatusOr<Steps> Sub(const std::string& text) {
    Parser p("{" + text + "}");
    std::vector<Steps> items;
    KCACHE_RETURN_IF_ERROR(p.Parse(&items));
    return items.empty() ? Steps{} : std::move(items.front());
  }

  static Step Text(std::string s) {
    Step st{Step::kLiteral};
    st.literal = std::move(s);
    st.text = true;
    return st;
  }

 private:
  bool At(const char* prefix) const { return in_.compare(pos_, strlen(prefix), prefix) == 0; }

  // The code point at pos_ (-1 at the end), advancing past it.
  int Next() {
    if (pos_ >= in_.size()) {
      width_ = 0;
      return -1;
    }
    unsigned char c = in_[pos_];
    size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
    len = std::min(len, in_.size() - pos_);
    int cp = len == 1 ? c : c & (0xff >> (len + 1));
    for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (in_[pos_ + k] & 0x3f);
    width_ = len;
    pos_ += len;
    return cp;
  }
  void Backup() { pos_ -= width_; }
  int Peek() {
    int r = Next();
    Backup();
    return r;
  }

  Status ParseAction(Steps* cur) {
    for (;;) {
      if (At("}")) {
        ++pos_;
        return Status::OK();
      }
      if (At("[?(")) {
        KCACHE_RETURN_IF_ERROR(ParseFilter(cur));
        continue;
      }
      if (At("..")) {
        if (!cur->empty() && cur->back().kind == Step::kRecursive)
          return Syntax("invalid multiple recursive descent");
        pos_ += 2;
        cur->push_back(Step{Step::kRecursive});
        if (IsAlnum(Peek())) ParseField(cur);
        continue;
      }
      const size_t start = pos_;
      int r = Next();
      if (r == -1 || r == '\r' || r == '\n') return Syntax("unclosed action");
      if (r == ' ' || r == '@' || r == '$') continue;
      if (r == '[') {
        KCACHE_RETURN_IF_ERROR(ParseArray(cur));
      } else if (r == '"' || r == '\'') {
        KCACHE_RETURN_IF_ERROR(ParseQuote(cur, static_cast<char>(r), start));
      } else if (r == '.') {
        ParseField(cur);
      } else if (r == '+' || r == '-' || IsDigit(r)) {
        Backup();
        KCACHE_RETURN_IF_ERROR(ParseNumber(cur));
      } else if (IsAlnum(r)) {
        Backup();
        ParseIdentifier(cur);
      } else {
        char buf[64];
        std::snprintf(buf, sizeof(buf), "unrecognized character in action: U+%04X '", r);
        return Syntax(buf + in_.substr(start, pos_ - start) + "'");
      }
    }
  }

  void ParseField(Steps* cur) {
    const size_t start = pos_;
    for (;;) {
      int r = Next();
      if (r == '\\') {
        Next();
      } else if (IsTerminator(r)) {
        Backup();
        break;
      }
    }
    std::string value = in_.substr(start, pos_ - start);
    if (value == "*") {
      cur->push_back(Step{Step::kWildcard});
      return;
    }
    Step st{Step::kField};
    for (char c : value) {
      if (c != '\\') st.name.push_back(c);
    }
    cur->push_back(std::move(st));
  }

  void ParseIdentifier(Steps* cur) {
    const size_t start = pos_;
    while (!IsTerminator(Next())) {
    }
    Backup();
    std::string value = in_.substr(start, pos_ - start);
    if (value == "true" || value == "false") {
      Step st{Step::kLiteral};
      st.literal = value == "true";
      cur->push_back(std::move(st));
      return;
    }
    Step st{Step::kIdentifier};
    st.name = std::move(value);
    cur->push_back(std::move(st));
  }

  Status ParseNumber(Steps* cur) {
    const size_t start = pos_;
    if (int r = Peek(); r == '+' || r == '-') Next();
    for (;;) {
      int r = Next();
      if (r != '.' && !IsDigit(r)) {
        Backup();
        break;
      }
    }
    std::string value = in_.substr(start, pos_ - start);
    Step st{Step::kLiteral};
    size_t digits = value.find_first_not_of("+-");
    if (digits != std::string::npos && value.find('.') == std::string::npos &&
        value.find_first_of("+-", digits) == std::string::npos) {
      st.literal = std::stoll(value);
    } else {
      char* end = nullptr;
      double d = std::strtod(value.c_str(), &end);
      if (value.empty() || end != value.c_str() + value.size() ||
          value.find_first_of("0123456789") == std::string::npos) {
        return Syntax("cannot parse number " + value);
      }
      st.literal = d;
    }
    cur->push_back(std::move(st));
    return Status::OK();
  }

  Status ParseArray(Steps* cur) {
    const size_t start = pos_;
    for (;;) {
      int r = Next();
      if (r == -1 || r == '\n') return Syntax("unterminated array");
      if (r == ']') break;
    }
    std::string text = in_.substr(start, pos_ - 1 - start);
    if (text == "*") text = ":";
    if (text.find(',') != std::string::npos) {
      Step u{Step::kUnion};
      size_t from = 0;
      for (;;) {
        size_t comma = text.find(',', from);
        std::string part = text.substr(from, comma == std::string::npos ? comma : comma - from);
        size_t b = part.find_first_not_of(' '), e = part.find_last_not_of(' ');
        part = b == std::string::npos ? "" : part.substr(b, e - b + 1);
        KCACHE_ASSIGN_OR_RETURN(Steps branch, Sub("[" + part + "]"));
        u.branches.push_back(std::move(branch));
        if (comma == std::string::npos) break;
        from = comma + 1;
      }
      cur->push_back(std::move(u));
      return Status::OK();
    }
    if (text.size() >= 2 && text.front() == '\'' && text.back() == '\'' &&
        text.find('\'', 1) == text.size() - 1) {
      KCACHE_ASSIGN_OR_RETURN(Steps fields, Sub("." + text.substr(1, text.size() - 2)));
      for (Step& s : fields) cur->push_back(std::move(s));
      return Status::OK();
    }
    // [a], [a:b], [a:b:c], each part an optional signed integer.
    std::vector<std::string> parts;
    size_t from = 0;
    for (;;) {
      size_t colon = text.find(':', from);
      parts.push_back(text.substr(from, colon == std::string::npos ? colon : colon - from));
      if (colon == std::string::npos) break;
      from = colon + 1;
    }
    bool valid = parts.size() <= 3;
    for (const std::string& p : parts) {
      size_t i = !p.empty() && p[0] == '-' ? 1 : 0;
      for (; i < p.size(); ++i) valid = valid && IsDigit(p[i]);
    }
    if (!valid) return Syntax("invalid array index " + text);
    Step st{Step::kSlice};
    for (int i = 0; i < 3; ++i) {
      const bool present = static_cast<size_t>(i) < parts.size();
      if (present && !parts[i].empty()) {
        if (parts[i] == "-") return Syntax("array index " + parts[i] + " is not a number");
        st.params[i].known = true;
        st.params[i].value = std::stoi(parts[i]);
      } else if (i == 1 && !present) {
        st.params[1] = {st.params[0].value + 1, true, true};
      }
    }
    cur->push_back(std::move(st));
    return Status::OK();
  }

  Status ParseFilter(Steps* cur) {
    pos_ += 3;
    const size_t start = pos_;
    bool begin = false, end = false;
    int pair = 0;
    for (;;) {
      int r = Next();
      if (r == -1 || r == '\n') return Syntax("unterminated filter");
      if (r == '"' || r == '\'') {
        if (!begin) {
          begin = true;
          pair = r;
          continue;
        }
        if (in_[pos_ - 2] != '\\' && r == pair) end = true;
      } else if (r == ')' && begin == end) {
        break;
      }
    }
    if (Next() != ']') return Syntax("unclosed array expect ]");
    std::string text = in_.substr(start, pos_ - 2 - start);
    Step st{Step::kFilter};
    // LEFT OP RIGHT, OP a run of !<>=; else an existence test.
    size_t op = text.find_first_of("!<>=");
    size_t rest = op == std::string::npos ? op : text.find_first_not_of("!<>=", op);
    if (op == 0 || op == std::string::npos || rest == std::string::npos) {
      st.name = "exists";
      KCACHE_ASSIGN_OR_RETURN(Steps left, Sub(text));
      st.branches = {std::move(left), {}};
    } else {
      st.name = text.substr(op, rest - op);
      KCACHE_ASSIGN_OR_RETURN(Steps left, Sub(text.substr(0, op)));
      KCACHE_ASSIGN_OR_RETURN(Steps right, Sub(text.substr(rest)));
      st.branches = {std::move(left), std::move(right)};
    }
    cur->push_back(std::move(st));
    return Status::OK();
  }

  Status ParseQuote(Steps* cur, char quote, size_t start) {
    for (;;) {
      int r = Next();
      if (r == -1 || r == '\n') return Syntax("unterminated quoted string");
      if (r == quote && in_[pos_ - 2] != '\\') break;
    }
    KCACHE_ASSIGN_OR_RETURN(std::string s, Unquote(in_.substr(start, pos_ - start)));
    cur->push_back(Text(std::move(s)));
    return Status::OK();
  }

  std::string in_;
  size_t pos_ = 0;
  size_t width_ = 0;
};

// Go's reflect type name of a decoded JSON value, for error messages.
std::string GoType(const json& v) {
  switch (v.type()) {
    case json::value_t::object:
      return "map[string]interface {}";
    case json::value_t::array:
      return "[]interface {}";
    case json::value_t::string:
      return "string";
    case json::value_t::boolean:
      return "bool";
    case json::value_t::number_float:
      return "float64";
    case json::value_t::null:
      return "interface {}";
    default:
      return "int64";
  }
}

Status BadType() { return Status::InvalidArgument("invalid type for comparison"); }
Status Incompatible() { return Status::InvalidArgument("incompatible types for comparison"); }

StatusOr<bool> Equal(const json& a, const json& b) {
  const GoKind ka = GoKindOf(a), kb = GoKindOf(b);
  if (!IsBasic(ka) || !IsBasic(kb)) return BadType();
  if (ka != kb) return Incompatible();
  if (ka == GoKind::kInt) return a.get<int64_t>() == b.get<int64_t>();
  return a == b;
}

StatusOr<bool> Less(const json& a, const json& b) {
  const GoKind ka = GoKindOf(a), kb = GoKindOf(b);
  if (!IsBasic(ka) || !IsBasic(kb)) return BadType();
  if (ka != kb) return Incompatible();
  switch (ka) {
    case GoKind::kInt:
      return a.get<int64_t>() < b.get<int64_t>();
    case GoKind::kFloat:
      return a.get<double>() < b.get<double>();
    case GoKind::kString:
      return a.get_ref<const std::string&>() < b.get_ref<const std::string&>();
    default:
      return BadType();
  }
}

StatusOr<bool> Compare(const std::string& op, const json& a, const json& b) {
  if (op == "==") return Equal(a, b);
  if (op == "!=") {
    KCACHE_ASSIGN_OR_RETURN(bool eq, Equal(a, b));
    return !eq;
  }
  if (op == "<") return Less(a, b);
  if (op == ">=") {
    KCACHE_ASSIGN_OR_RETURN(bool lt, Less(a, b));
    return !lt;
  }
  if (op == "<=" || op == ">") {
    KCACHE_ASSIGN_OR_RETURN(bool lt, Less(a, b));
    bool le = lt;
    if (!lt) {
      KCACHE_ASSIGN_OR_RETURN(le, Equal(a, b));
    }
    return op == "<=" ? le : !le;
  }
  return Status::InvalidArgument("unrecognized filter operator " + op);
}

class Evaluator {
 public:
  explicit Evaluator(bool allow_missing) : allow_missing_(allow_missing) {}

  StatusOr<JsonPath::Values> Eval(const Steps& steps, JsonPath::Values in) const {
    for (const Step& s : steps) {
      KCACHE_ASSIGN_OR_RETURN(in, Apply(s, in));
    }
    return in;
  }

 private:
  StatusOr<JsonPath::Values> Apply(const Step& s, const JsonPath::Values& in) const {
    JsonPath::Values out;
    switch (s.kind) {
      case Step::kField:
        for (const json* v : in) {
          if (!v->is_object()) continue;
          auto it = v->find(s.name);
          if (it != v->end()) out.push_back(&*it);
        }
        if (out.empty() && !in.empty() && !allow_missing_)
          return Status::NotFound(s.name + " is not found");
        return out;
      case Step::kWildcard:
        for (const json* v : in) {
          if (v->is_structured()) {
            for (const json& e : *v) out.push_back(&e);
          }
        }
        return out;
      case Step::kRecursive:
        for (const json* v : in) Descend(*v, &out);
        return out;
      case Step::kSlice:
        for (const json* v : in) KCACHE_RETURN_IF_ERROR(Slice(s, *v, &out));
        return out;
      case Step::kUnion:
        for (const Steps& branch : s.branches) {
          KCACHE_ASSIGN_OR_RETURN(JsonPath::Values part, Eval(branch, in));
          out.insert(out.end(), part.begin(), part.end());
        }
        return out;
      case Step::kFilter:
        for (const json* v : in) KCACHE_RETURN_IF_ERROR(Filter(s, *v, &out));
        return out;
      case Step::kLiteral:
        if (s.text) return JsonPath::Values{&s.literal};
        return JsonPath::Values(in.size(), &s.literal);
      case Step::kIdentifier:
        if (s.name == "end") return Status::InvalidArgument("not in range, nothing to end");
        return Status::InvalidArgument("unrecognized identifier " + s.name);
    }
    return out;
  }

  // The value and every value under it that has children, depth first.
  static void Descend(const json& v, JsonPath::Values* out) {
    if (v.is_string()) {
      if (!v.get_ref<const std::string&>().empty()) out->push_back(&v);
      return;
    }
    if (!v.is_structured() || v.empty()) return;
    out->push_back(&v);
    for (const json& e : v) Descend(e, out);
  }

  static Status Slice(const Step& s, const json& v, JsonPath::Values* out) {
    if (v.is_null()) return Status::OK();
    if (!v.is_array()) return Status::InvalidArgument(GoType(v) + " is not array or slice");
    const int len = static_cast<int>(v.size());
    int from = s.params[0].known ? s.params[0].value : 0;
    if (from < 0) from += len;
    int to = s.params[1].known ? s.params[1].value : len;
    if (to < 0 || (to == 0 && s.params[1].derived)) to += len;
    if (to == from) return Status::OK();
    if (from >= len || from < 0) {
      return Status::InvalidArgument("array index out of bounds: index " + std::to_string(from) +
                                     ", length " + std::to_string(len));
    }
    if (to > len || to < 0) {
      return Status::InvalidArgument("array index out of bounds: index " + std::to_string(to - 1) +
                                     ", length " + std::to_string(len));
    }
    if (from > to) {
      return Status::InvalidArgument("starting index " + std::to_string(from) +
                                     " is greater than ending index " + std::to_string(to));
    }
    int step = 1;
    if (s.params[2].known) {
      if (s.params[2].value <= 0) return Status::InvalidArgument("step must be > 0");
      step = s.params[2].value;
    }
    for (int i = from; i < to; i += step) out->push_back(&v[static_cast<size_t>(i)]);
    return Status::OK();
  }

  Status Filter(const Step& s, const json& v, JsonPath::Values* out) const {
    if (!v.is_array()) {
      return Status::InvalidArgument(GoValue(v) + " is not array or slice and cannot be filtered");
    }
    for (const json& e : v) {
      StatusOr<JsonPath::Values> lefts = Eval(s.branches[0], {&e});
      if (s.name == "exists") {
        if (lefts.ok() && !lefts->empty()) out->push_back(&e);
        continue;
      }
      KCACHE_RETURN_IF_ERROR(lefts.status());
      if (lefts->empty()) continue;
      if (lefts->size() > 1)
        return Status::InvalidArgument("can only compare one element at a time");
      KCACHE_ASSIGN_OR_RETURN(JsonPath::Values rights, Eval(s.branches[1], {&e}));
      if (rights.empty()) continue;
      if (rights.size() > 1)
        return Status::InvalidArgument("can only compare one element at a time");
      KCACHE_ASSIGN_OR_RETURN(bool pass, Compare(s.name, *lefts->front(), *rights.front()));
      if (pass) out->push_back(&e);
    }
    return Status::OK();
  }

  bool allow_missing_;
};

bool IsIdentifier(const Steps& steps, const char* name) {
  return !steps.empty() && steps.front().kind == Step::kIdentifier && steps.front().name == name;
}

// Nests the flat items: {range X} opens a body that {end} closes; a range
// left open runs to the end of the template.
StatusOr<std::vector<JsonPath::Node>> Nest(std::vector<Steps>& items, size_t* i, bool in_range) {
  std::vector<JsonPath::Node> nodes;
  while (*i < items.size()) {
    Steps& steps = items[(*i)++];
    if (IsIdentifier(steps, "end")) {
      if (!in_range) return Status::InvalidArgument("not in range, nothing to end");
      return nodes;
    }
    JsonPath::Node node;
    if (IsIdentifier(steps, "range")) {
      node.range = true;
      steps.erase(steps.begin());
      KCACHE_ASSIGN_OR_RETURN(node.body, Nest(items, i, true));
    }
    node.steps = std::move(steps);
    nodes.push_back(std::move(node));
  }
  return nodes;
}

Status Run(const std::vector<JsonPath::Node>& nodes, const json& data, const Evaluator& eval,
           std::vector<JsonPath::Values>* results) {
  for (const JsonPath::Node& node : nodes) {
    KCACHE_ASSIGN_OR_RETURN(JsonPath::Values values, eval.Eval(node.steps, {&data}));
    if (!node.range) {
      results->push_back(std::move(values));
      continue;
    }
    for (const json* v : values) KCACHE_RETURN_IF_ERROR(Run(node.body, *v, eval, results));
  }
  return Status::OK();
}

}  // namespace

StatusOr<JsonPath> JsonPath::Parse(const std::string& text) {
  Parser parser(text);
  std::vector<Steps> items;
  KCACHE_RETURN_IF_ERROR(parser.Parse(&items));
  size_t i = 0;
  KCACHE_ASSIGN_OR_RETURN(std::vector<Node> nodes, Nest(items, &i, false));
  JsonPath path;
  path.nodes_ = std::make_shared<const std::vector<Node>>(std::move(nodes));
  return path;
}

StatusOr<std::string> JsonPath::Relaxed(const std::string& expression) {
  if (expression.empty()) return expression;
  std::string inner = expression;
  if (inner.front() == '{' && inner.back() == '}' && inner.size() >= 2)
    inner = inner.substr(1, inner.size() - 2);
  if (!inner.empty() && inner.front() == '.') inner = inner.substr(1);
  if (inner.empty() || inner.find_first_of("{}") != std::string::npos) {
    return Status::InvalidArgument(
        "unexpected path string, expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' "
        "or '{.name1.name2}'");
  }
  return "{." + inner + "}";
}

StatusOr<std::vector<JsonPath::Values>> JsonPath::FindResults(const nlohmann::json& data) const {
  std::vector<Values> results;
  KCACHE_RETURN_IF_ERROR(Run(*nodes_, data, Evaluator(allow_missing_), &results));
  return results;
}

Status JsonPath::Execute(const nlohmann::json& data, std::string* out, bool as_json) const {
  KCACHE_ASSIGN_OR_RETURN(std::vector<Values> results, FindResults(data));
  for (const Values& values : results) {
    if (as_json) {
      json array = json::array();
      for (const json* v : values) array.push_back(*v);
      AppendGoJson(array, 4, 0, out);
      out->push_back('\n');
      continue;
    }
    for (size_t i = 0; i < values.size(); ++i) {
      if (i) out->push_back(' ');
      if (values[i]->is_structured()) {
        AppendGoJson(*values[i], 0, 0, out);
      } else {
        *out += GoValue(*values[i]);
      }
    }
  }
  return Status::OK();
}

}  // namespace kcache::tool
