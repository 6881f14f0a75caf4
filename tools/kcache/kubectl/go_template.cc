// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/kubectl/go_template.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "tools/kcache/kubectl/go_format.h"
#include "util/base64.h"

namespace kcache::tool {
namespace {

using json = nlohmann::json;

// ---------------------------------------------------------------- values

// A value as the template engine holds it: none (a missing map key, Go's
// invalid reflect.Value), or JSON, which is Go's interface{} holding nil,
// bool, int64, float64, string, map or slice.
struct Value {
  std::shared_ptr<const json> owner;  // keeps *p alive for a computed value
  const json* p = nullptr;            // null: no value
  bool go_int = false;                // an int (a literal, len's), not int64

  bool valid() const { return p != nullptr; }
  bool nil() const { return !p || p->is_null(); }
  static Value Of(json j, bool go_int = false) {
    Value v;
    v.owner = std::make_shared<const json>(std::move(j));
    v.p = v.owner.get();
    v.go_int = go_int;
    return v;
  }
  // A part of `whole`, kept alive with it.
  Value Part(const json* part) const {
    Value v;
    v.owner = owner;
    v.p = part;
    return v;
  }
};

using Kind = GoKind;

Kind KindOf(const json& j) { return GoKindOf(j); }

// Go's name of the value's dynamic type.
std::string TypeName(const Value& v) {
  if (v.nil()) return "<nil>";
  switch (KindOf(*v.p)) {
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return v.go_int ? "int" : "int64";
    case Kind::kFloat:
      return "float64";
    case Kind::kString:
      return "string";
    case Kind::kMap:
      return "map[string]interface {}";
    case Kind::kSlice:
      return "[]interface {}";
    default:
      return "<nil>";
  }
}

// Go's truth: false, 0, nil and empty strings, maps and slices are false.
bool Truth(const Value& v) {
  if (v.nil()) return false;
  const json& j = *v.p;
  switch (KindOf(j)) {
    case Kind::kBool:
      return j.get<bool>();
    case Kind::kInt:
      return j.is_number_unsigned() ? j.get<uint64_t>() != 0 : j.get<int64_t>() != 0;
    case Kind::kFloat:
      return j.get<double>() != 0;
    case Kind::kString:
      return !j.get_ref<const std::string&>().empty();
    default:
      return !j.empty();
  }
}

// %v of a value, as fmt prints an interface{}.
std::string Print(const Value& v) { return v.nil() ? "<nil>" : GoValue(*v.p); }

// strconv.Quote.
std::string GoQuote(std::string_view s) {
  static const char* kHex = "0123456789abcdef";
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '\a':
        out += "\\a";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\v':
        out += "\\v";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += "\\x";
          out += kHex[c >> 4];
          out += kHex[c & 15];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

// One fmt verb's directive: flags, width and precision.
struct Spec {
  bool minus = false, plus = false, sharp = false, space = false, zero = false;
  int width = -1, prec = -1;
  char verb = 'v';
};

std::string Pad(std::string s, const Spec& f, bool numeric) {
  const int n = static_cast<int>(s.size());
  if (f.width <= n) return s;
  const size_t fill = static_cast<size_t>(f.width - n);
  if (f.minus) return s + std::string(fill, ' ');
  if (f.zero && numeric) {
    const size_t sign = !s.empty() && (s[0] == '-' || s[0] == '+') ? 1 : 0;
    return s.substr(0, sign) + std::string(fill, '0') + s.substr(sign);
  }
  return std::string(fill, ' ') + s;
}

std::string BadVerb(char verb, const Value& v) {
  if (v.nil()) return std::string("%!") + verb + "(<nil>)";
  return std::string("%!") + verb + "(" + TypeName(v) + "=" + Print(v) + ")";
}

std::string Format(const Spec& f, const Value& v);

// A map or slice formatted element by element with the same verb, as fmt
// does.
std::string FormatContainer(const Spec& f, const Value& v) {
  Spec inner = f;
  inner.width = -1;
  std::string out;
  if (v.p->is_array()) {
    out = "[";
    for (size_t i = 0; i < v.p->size(); ++i) {
      out += (i ? " " : "") + Format(inner, v.Part(&(*v.p)[i]));
    }
    return out + "]";
  }
  out = "map[";
  bool first = true;
  for (auto it = v.p->begin(); it != v.p->end(); ++it) {
    out += (first ? "" : " ") + Format(inner, Value::Of(json(it.key()))) + ":" +
           Format(inner, v.Part(&it.value()));
    first = false;
  }
  return out + "]";
}

std::string Format(const Spec& f, const Value& v) {
  const char verb = f.verb;
  if (verb == 'T') return Pad(TypeName(v), f, false);
  if (v.nil()) return verb == 'v' ? Pad("<nil>", f, false) : BadVerb(verb, v);
  const json& j = *v.p;
  switch (KindOf(j)) {
    case Kind::kMap:
    case Kind::kSlice:
      return FormatContainer(f, v);
    case Kind::kBool:
      if (verb != 'v' && verb != 't') return BadVerb(verb, v);
      return Pad(j.get<bool>() ? "true" : "false", f, false);
    case Kind::kString: {
      const std::string& s = j.get_ref<const std::string&>();
      if (verb == 'v' || verb == 's') {
        return Pad(f.prec >= 0 ? s.substr(0, static_cast<size_t>(f.prec)) : s, f, false);
      }
      if (verb == 'q') return Pad(GoQuote(s), f, false);
      if (verb == 'x' || verb == 'X') {
        std::string hex;
        char buf[4];
        for (unsigned char c : s) {
          std::snprintf(buf, sizeof buf, verb == 'x' ? "%02x" : "%02X", c);
          hex += buf;
        }
        return Pad(hex, f, false);
      }
      return BadVerb(verb, v);
    }
    case Kind::kInt: {
      const bool is_unsigned = j.is_number_unsigned();
      const int64_t i = is_unsigned ? static_cast<int64_t>(j.get<uint64_t>()) : j.get<int64_t>();
      char buf[80];
      std::string s;
      switch (verb) {
        case 'v':
        case 'd':
          s = is_unsigned ? std::to_string(j.get<uint64_t>()) : std::to_string(i);
          if (f.plus && i >= 0) s = "+" + s;
          return Pad(s, f, true);
        case 'x':
        case 'X':
        case 'o':
          std::snprintf(buf, sizeof buf,
                        verb == 'x'   ? "%llx"
                        : verb == 'X' ? "%llX"
                                      : "%llo",
                        static_cast<unsigned long long>(i < 0 ? -i : i));
          s = (i < 0 ? "-" : "") + std::string(buf);
          return Pad(s, f, true);
        case 'c':
          return Pad(std::string(1, static_cast<char>(i)), f, false);
        case 'q':
          return Pad("'" + std::string(1, static_cast<char>(i)) + "'", f, false);
        default:
          return BadVerb(verb, v);
      }
    }
    case Kind::kFloat: {
      const double d = j.get<double>();
      // printf into a string as long as it needs (a precision may be 10^6).
      auto print = [](const char* fmt, int prec, double x) {
        std::string s(static_cast<size_t>(std::snprintf(nullptr, 0, fmt, prec, x)), '\0');
        std::snprintf(s.data(), s.size() + 1, fmt, prec, x);
        return s;
      };
      switch (verb) {
        case 'v':
          if (f.prec < 0) return Pad(GoFloat(d), f, true);
          [[fallthrough]];
        case 'g':
        case 'G':
          if (f.prec < 0) return Pad(GoFloat(d), f, true);
          return Pad(print(verb == 'G' ? "%.*G" : "%.*g", f.prec, d), f, true);
        case 'f':
        case 'F':
        case 'e':
        case 'E': {
          const char fmt[] = {'%', '.', '*', verb == 'F' ? 'f' : verb, '\0'};
          std::string s = print(fmt, f.prec < 0 ? 6 : f.prec, d);
          if (f.plus && d >= 0) s = "+" + s;
          return Pad(s, f, true);
        }
        default:
          return BadVerb(verb, v);
      }
    }
    default:
      return BadVerb(verb, v);
  }
}

// fmt.Sprintf.
std::string Sprintf(std::string_view format, const std::vector<Value>& args) {
  std::string out;
  size_t next = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      out += format[i];
      continue;
    }
    Spec f;
    ++i;
    for (; i < format.size(); ++i) {
      const char c = format[i];
      if (c == '-') {
        f.minus = true;
      } else if (c == '+') {
        f.plus = true;
      } else if (c == '#') {
        f.sharp = true;
      } else if (c == ' ') {
        f.space = true;
      } else if (c == '0') {
        f.zero = !f.minus;
      } else {
        break;
      }
    }
    // A width or precision. As Go's fmt, a number that passes 10^6 before
    // its last digit ends the directive, and the format, with no verb.
    auto number = [&](int* n) {
      for (*n = 0; i < format.size() && format[i] >= '0' && format[i] <= '9'; ++i) {
        if (*n > 1000000) {
          i = format.size();
          return;
        }
        *n = *n * 10 + (format[i] - '0');
      }
    };
    if (i < format.size() && format[i] >= '0' && format[i] <= '9') number(&f.width);
    if (i < format.size() && format[i] == '.') {
      ++i;
      number(&f.prec);
    }
    if (i >= format.size()) {
      out += "%!(NOVERB)";
      break;
    }
    f.verb = format[i];
    if (f.verb == '%') {
      out += '%';
      continue;
    }
    if (next >= args.size()) {
      out += std::string("%!") + f.verb + "(MISSING)";
      continue;
    }
    out += Format(f, args[next++]);
  }
  if (next < args.size()) {
    out += "%!(EXTRA ";
    for (size_t k = next; k < args.size(); ++k) {
      out += (k > next ? ", " : "") + TypeName(args[k]) + "=" + Print(args[k]);
    }
    out += ")";
  }
  return out;
}

// --------------------------------------------------------------- the tree

// Bounds on recursion, which Go's growable stacks do not need: blocks and
// parentheses nested deeper than this are refused, and so are template
// calls ({{template}}) deeper than this (Go allows 100,000).
constexpr int kMaxDepth = 200;

// Counts one level of `*depth` while it lives.
struct DepthGuard {
  explicit DepthGuard(int* depth) : depth_(depth) { ++*depth_; }
  ~DepthGuard() { --*depth_; }
  bool too_deep() const { return *depth_ > kMaxDepth; }
  int* depth_;
};

struct Pipe;

struct Operand {
  enum class Type { kDot, kField, kVariable, kFunction, kLiteral, kNil, kPipe } type;
  std::string name;                 // a variable ("$x") or a function
  std::vector<std::string> fields;  // the field chain after the term
  json literal;
  bool go_int = false;
  std::shared_ptr<const Pipe> pipe;
  size_t pos = 0;
  // Where Go places a field chain in messages: its second link, if any.
  size_t chain_pos = 0;
  std::string text;  // as written
  size_t at() const { return fields.size() > (type == Type::kField ? 1u : 0u) ? chain_pos : pos; }
};

struct Command {
  std::vector<Operand> args;
  size_t pos = 0;
  std::string text;
};

struct Pipe {
  std::vector<std::string> decl;  // the variables it declares or assigns
  bool assign = false;            // "=" rather than ":="
  std::vector<Command> cmds;
  size_t pos = 0;
};

const std::set<std::string>& Functions() {
  static const std::set<std::string> kFunctions = {
      "and", "or",  "not",   "eq",    "ne",     "lt",      "le",     "gt",
      "ge",  "len", "index", "print", "printf", "println", "exists", "base64decode"};
  return kFunctions;
}

}  // namespace

struct GoTemplate::Node {
  enum class Type { kList, kText, kAction, kIf, kRange, kWith, kBreak, kContinue, kTemplate } type;
  std::string text;  // kText: the text; kTemplate: the name
  // The root's: the templates {{define}} and {{block}} name.
  std::shared_ptr<const std::map<std::string, std::shared_ptr<const Node>>> defines;
  std::shared_ptr<const Pipe> pipe;
  std::vector<std::shared_ptr<const Node>> list;
  std::shared_ptr<const Node> body, else_body;
  size_t pos = 0;
};

namespace {

using Node = GoTemplate::Node;
using NodePtr = std::shared_ptr<const Node>;

// ------------------------------------------------------------- the parser

struct Token {
  enum class Type {
    kEOF,
    kRight,  // }} (trim: -}})
    kField,
    kDot,
    kVariable,
    kIdentifier,
    kString,
    kNumber,
    kChar,
    kPipe,
    kLeftParen,
    kRightParen,
    kComma,
    kDeclare,
    kAssign,
  } type;
  std::string text;  // as written (a string's value for kString)
  size_t pos = 0;
  bool space_before = false;
  bool trim = false;  // kRight: -}}
};

class Parser {
 public:
  explicit Parser(std::string_view src) : src_(src) {}

  StatusOr<NodePtr> Run() {
    std::string end;
    KCACHE_ASSIGN_OR_RETURN(NodePtr list, ParseList(&end));
    if (!end.empty()) return Error("unexpected {{" + end + "}}");
    auto root = std::make_shared<Node>(*list);
    root->defines = std::make_shared<const std::map<std::string, NodePtr>>(std::move(defines_));
    return NodePtr(root);
  }

 private:
  Status Error(const std::string& message) const {
    return Status::InvalidArgument("template: output:" + std::to_string(Line(error_pos_)) + ": " +
                                   message);
  }
  int Line(size_t pos) const {
    return 1 + static_cast<int>(
                   std::count(src_.begin(), src_.begin() + std::min(pos, src_.size()), '\n'));
  }
  static bool Space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

  // Parses text and actions up to {{end}}, {{else ...}} (leaving the
  // tokens after "else" unread) or the end, which `*end` names ("" for
  // the end of the text).
  StatusOr<NodePtr> ParseList(std::string* end) {
    DepthGuard depth(&depth_);
    if (depth.too_deep()) return TooDeep();
    auto list = std::make_shared<Node>();
    list->type = Node::Type::kList;
    for (;;) {
      size_t open = src_.find("{{", at_);
      std::string text(src_.substr(at_, open == std::string_view::npos ? open : open - at_));
      if (trim_next_) {
        size_t first = 0;
        while (first < text.size() && Space(text[first])) ++first;
        text.erase(0, first);
        trim_next_ = false;
      }
      if (open == std::string_view::npos) {
        if (!text.empty()) list->list.push_back(TextNode(std::move(text)));
        at_ = src_.size();
        *end = "";
        return NodePtr(list);
      }
      at_ = open + 2;
      error_pos_ = open;
      if (at_ + 1 < src_.size() && src_[at_] == '-' && Space(src_[at_ + 1])) {
        while (!text.empty() && Space(text.back())) text.pop_back();
        at_ += 2;
      }
      if (!text.empty()) list->list.push_back(TextNode(std::move(text)));
      // A comment: {{/* ... */}}, with the trim markers allowed.
      size_t c = at_;
      while (c < src_.size() && Space(src_[c])) ++c;
      if (src_.substr(c, 2) == "/*") {
        const size_t close = src_.find("*/", c + 2);
        if (close == std::string_view::npos) return Error("unclosed comment");
        size_t after = close + 2;
        if (src_.substr(after, 2) == "}}") {
          at_ = after + 2;
        } else if (src_.substr(after, 4) == " -}}") {
          at_ = after + 4;
          trim_next_ = true;
        } else {
          return Error("comment ends before closing delimiter");
        }
        continue;
      }
      KCACHE_ASSIGN_OR_RETURN(Token first, Next());
      if (first.type == Token::Type::kIdentifier) {
        const std::string& w = first.text;
        if (w == "end") {
          KCACHE_RETURN_IF_ERROR(ExpectRight("end"));
          *end = "end";
          return NodePtr(list);
        }
        if (w == "else") {
          *end = "else";
          return NodePtr(list);
        }
        if (w == "if" || w == "range" || w == "with") {
          KCACHE_ASSIGN_OR_RETURN(NodePtr control, ParseControl(w, first.pos));
          list->list.push_back(std::move(control));
          continue;
        }
        if (w == "break" || w == "continue") {
          if (range_depth_ == 0) return Error("{{" + w + "}} outside {{range}}");
          KCACHE_RETURN_IF_ERROR(ExpectRight(w));
          auto n = std::make_shared<Node>();
          n->type = w == "break" ? Node::Type::kBreak : Node::Type::kContinue;
          list->list.push_back(std::move(n));
          continue;
        }
        if (w == "define" || w == "template" || w == "block") {
          KCACHE_ASSIGN_OR_RETURN(Token name, Next());
          if (name.type != Token::Type::kString) {
            return Error("unexpected \"" + name.text + "\" in " + w + " clause");
          }
          auto call = std::make_shared<Node>();
          call->type = Node::Type::kTemplate;
          call->text = name.text;
          call->pos = name.pos;
          if (w == "define") {
            KCACHE_RETURN_IF_ERROR(ExpectRight("define clause"));
          } else {
            KCACHE_ASSIGN_OR_RETURN(Token t, Next());
            if (t.type == Token::Type::kRight) {
              trim_next_ = t.trim;
            } else {
              pushed_ = t;
              KCACHE_ASSIGN_OR_RETURN(call->pipe, ParsePipe(w, /*in_parens=*/false));
            }
          }
          if (w != "template") {
            std::string body_end;
            KCACHE_ASSIGN_OR_RETURN(NodePtr body, ParseList(&body_end));
            if (body_end != "end") {
              return Error(body_end.empty() ? "unexpected EOF" : "unexpected {{else}}");
            }
            defines_[name.text] = std::move(body);
          }
          if (w != "define") list->list.push_back(std::move(call));
          continue;
        }
      }
      pushed_ = first;
      auto action = std::make_shared<Node>();
      action->type = Node::Type::kAction;
      action->pos = first.pos;
      KCACHE_ASSIGN_OR_RETURN(action->pipe, ParsePipe("command", /*in_parens=*/false));
      list->list.push_back(std::move(action));
    }
  }

  Status TooDeep() const {
    return Error("nested too deeply (more than " + std::to_string(kMaxDepth) + " levels)");
  }

  static NodePtr TextNode(std::string text) {
    auto n = std::make_shared<Node>();
    n->type = Node::Type::kText;
    n->text = std::move(text);
    return n;
  }

  Status ExpectRight(const std::string& context) {
    KCACHE_ASSIGN_OR_RETURN(Token t, Next());
    if (t.type != Token::Type::kRight) {
      return Error("unexpected \"" + t.text + "\" in " + context);
    }
    trim_next_ = t.trim;
    return Status::OK();
  }

  // {{if|range|with PIPELINE}} LIST [{{else [if|with ...]}} LIST] {{end}},
  // the keyword read.
  StatusOr<NodePtr> ParseControl(const std::string& keyword, size_t pos) {
    auto n = std::make_shared<Node>();
    n->type = keyword == "if"      ? Node::Type::kIf
              : keyword == "range" ? Node::Type::kRange
                                   : Node::Type::kWith;
    n->pos = pos;
    KCACHE_ASSIGN_OR_RETURN(n->pipe, ParsePipe(keyword, /*in_parens=*/false));
    if (n->pipe->cmds.empty()) return Error("missing value for " + keyword);
    if (keyword == "range") ++range_depth_;
    std::string end;
    StatusOr<NodePtr> body = ParseList(&end);
    if (keyword == "range") --range_depth_;
    if (!body.ok()) return body.status();
    n->body = *body;
    if (end.empty()) return Error("unexpected EOF");
    if (end == "else") {
      KCACHE_ASSIGN_OR_RETURN(Token t, Next());
      if (t.type == Token::Type::kIdentifier && (t.text == "if" || t.text == "with") &&
          keyword != "range") {
        // {{else if ...}}: an if in the else branch that ends with this one.
        auto chained = std::make_shared<Node>();
        chained->type = Node::Type::kList;
        KCACHE_ASSIGN_OR_RETURN(NodePtr inner, ParseControl(t.text, t.pos));
        chained->list.push_back(std::move(inner));
        n->else_body = std::move(chained);
        return NodePtr(n);
      }
      if (t.type != Token::Type::kRight) return Error("unexpected \"" + t.text + "\" in else");
      trim_next_ = t.trim;
      KCACHE_ASSIGN_OR_RETURN(n->else_body, ParseList(&end));
      if (end.empty()) return Error("unexpected EOF");
      if (end != "end") return Error("expected end; found {{else}}");
    }
    return NodePtr(n);
  }

  // A pipeline up to }} (or to ')' in parentheses).
  StatusOr<std::shared_ptr<const Pipe>> ParsePipe(const std::string& context, bool in_parens) {
    DepthGuard depth(&depth_);
    if (depth.too_deep()) return TooDeep();
    auto pipe = std::make_shared<Pipe>();
    KCACHE_ASSIGN_OR_RETURN(Token t, Next());
    pipe->pos = t.pos;
    // Declarations: $x := / $x = / $i, $e :=
    if (t.type == Token::Type::kVariable) {
      KCACHE_ASSIGN_OR_RETURN(Token after, Next());
      if (after.type == Token::Type::kDeclare || after.type == Token::Type::kAssign) {
        pipe->decl.push_back(t.text);
        pipe->assign = after.type == Token::Type::kAssign;
        KCACHE_ASSIGN_OR_RETURN(t, Next());
      } else if (after.type == Token::Type::kComma && context == "range") {
        KCACHE_ASSIGN_OR_RETURN(Token second, Next());
        KCACHE_ASSIGN_OR_RETURN(Token op, Next());
        if (second.type != Token::Type::kVariable ||
            (op.type != Token::Type::kDeclare && op.type != Token::Type::kAssign)) {
          return Error("range can only initialize variables");
        }
        pipe->decl = {t.text, second.text};
        pipe->assign = op.type == Token::Type::kAssign;
        KCACHE_ASSIGN_OR_RETURN(t, Next());
      } else {
        pushed_ = after;
      }
      for (const std::string& v : pipe->decl) {
        if (!pipe->assign) declared_.insert(v);
      }
    }
    for (;;) {
      const bool end =
          in_parens ? t.type == Token::Type::kRightParen : t.type == Token::Type::kRight;
      if (end) {
        if (!in_parens) trim_next_ = t.trim;
        if (!pipe->decl.empty() && pipe->cmds.empty()) return Error("missing value for " + context);
        if (pipe->cmds.empty() && context == "command") return Error("missing value for command");
        return std::shared_ptr<const Pipe>(pipe);
      }
      if (t.type == Token::Type::kEOF) {
        return Error(in_parens ? "unclosed left paren" : "unclosed action");
      }
      Command cmd;
      cmd.pos = t.pos;
      for (;;) {
        if (t.type == Token::Type::kPipe) {
          if (cmd.args.empty()) return Error("missing command");
          KCACHE_ASSIGN_OR_RETURN(t, Next());
          break;
        }
        const bool stop =
            t.type == Token::Type::kEOF ||
            (in_parens ? t.type == Token::Type::kRightParen : t.type == Token::Type::kRight);
        if (stop) break;
        KCACHE_ASSIGN_OR_RETURN(Operand op, ParseOperand(t, context));
        cmd.args.push_back(std::move(op));
        KCACHE_ASSIGN_OR_RETURN(t, Next());
        // Fields right after a term chain onto it: (x).a, $x.a.
        while (t.type == Token::Type::kField && !t.space_before) {
          Operand& last = cmd.args.back();
          if (last.type == Operand::Type::kLiteral || last.type == Operand::Type::kNil ||
              last.type == Operand::Type::kFunction) {
            return Error("unexpected . after term \"" + last.text + "\"");
          }
          if (last.fields.size() == (last.type == Operand::Type::kField ? 1u : 0u)) {
            last.chain_pos = t.pos;
          }
          last.fields.push_back(t.text.substr(1));
          last.text += t.text;
          KCACHE_ASSIGN_OR_RETURN(t, Next());
        }
      }
      if (cmd.args.empty()) return Error("missing value for command");
      cmd.text = CommandText(cmd);
      pipe->cmds.push_back(std::move(cmd));
    }
  }

  static std::string CommandText(const Command& cmd) {
    std::string s;
    for (const Operand& a : cmd.args) s += (s.empty() ? "" : " ") + a.text;
    return s;
  }

  StatusOr<Operand> ParseOperand(const Token& t, const std::string& context) {
    Operand op;
    op.pos = t.pos;
    op.text = t.text;
    switch (t.type) {
      case Token::Type::kDot:
        op.type = Operand::Type::kDot;
        return op;
      case Token::Type::kField:
        op.type = Operand::Type::kField;
        op.fields.push_back(t.text.substr(1));
        return op;
      case Token::Type::kVariable: {
        op.type = Operand::Type::kVariable;
        op.name = t.text;
        if (op.name != "$" && !declared_.count(op.name)) {
          return Error("undefined variable \"" + op.name + "\"");
        }
        return op;
      }
      case Token::Type::kString:
        op.type = Operand::Type::kLiteral;
        op.literal = t.text;
        op.text = GoQuote(t.text);
        return op;
      case Token::Type::kChar:
        op.type = Operand::Type::kLiteral;
        op.literal = static_cast<int64_t>(static_cast<unsigned char>(t.text[0]));
        op.go_int = true;
        return op;
      case Token::Type::kNumber:
        return NumberOperand(t);
      case Token::Type::kIdentifier:
        if (t.text == "true" || t.text == "false") {
          op.type = Operand::Type::kLiteral;
          op.literal = t.text == "true";
          return op;
        }
        if (t.text == "nil") {
          op.type = Operand::Type::kNil;
          return op;
        }
        if (!Functions().count(t.text)) return Error("function \"" + t.text + "\" not defined");
        op.type = Operand::Type::kFunction;
        op.name = t.text;
        return op;
      case Token::Type::kLeftParen: {
        op.type = Operand::Type::kPipe;
        KCACHE_ASSIGN_OR_RETURN(op.pipe, ParsePipe("parenthesized pipeline", /*in_parens=*/true));
        if (op.pipe->cmds.empty()) return Error("missing value for parenthesized pipeline");
        op.text = "(" + PipeText(*op.pipe) + ")";
        return op;
      }
      default:
        return Error("unexpected \"" + t.text + "\" in " + context);
    }
  }

  static std::string PipeText(const Pipe& p) {
    std::string s;
    for (const Command& c : p.cmds) s += (s.empty() ? "" : " | ") + c.text;
    return s;
  }

  StatusOr<Operand> NumberOperand(const Token& t) {
    Operand op;
    op.type = Operand::Type::kLiteral;
    op.pos = t.pos;
    op.text = t.text;
    std::string digits;
    for (char c : t.text) {
      if (c != '_') digits += c;
    }
    const bool is_float = digits.find_first_of(".eEpP") != std::string::npos &&
                          digits.rfind("0x", 0) != 0 && digits.rfind("0X", 0) != 0;
    errno = 0;
    char* end = nullptr;
    if (!is_float) {
      std::string body = digits;
      int base = 10;
      bool negative = false;
      if (!body.empty() && (body[0] == '-' || body[0] == '+')) {
        negative = body[0] == '-';
        body.erase(0, 1);
      }
      if (body.size() > 1 && body[0] == '0') {
        const char b = static_cast<char>(std::tolower(body[1]));
        if (b == 'x')
          base = 16, body.erase(0, 2);
        else if (b == 'o')
          base = 8, body.erase(0, 2);
        else if (b == 'b')
          base = 2, body.erase(0, 2);
        else
          base = 8, body.erase(0, 1);
      }
      const long long v = std::strtoll(body.c_str(), &end, base);
      if (body.empty() || *end != '\0' || errno == ERANGE) {
        return Error("bad number syntax: \"" + t.text + "\"");
      }
      op.literal = static_cast<int64_t>(negative ? -v : v);
      op.go_int = true;
      return op;
    }
    const double d = std::strtod(digits.c_str(), &end);
    if (*end != '\0') return Error("bad number syntax: \"" + t.text + "\"");
    op.literal = d;
    return op;
  }

  // ---- the lexer, within an action

  StatusOr<Token> Next() {
    if (pushed_) {
      Token t = std::move(*pushed_);
      pushed_.reset();
      return t;
    }
    Token t;
    const size_t start = at_;
    while (at_ < src_.size() && Space(src_[at_])) ++at_;
    t.space_before = at_ > start;
    t.pos = at_;
    error_pos_ = at_;
    if (at_ >= src_.size()) {
      t.type = Token::Type::kEOF;
      t.text = "EOF";
      return t;
    }
    auto take = [&](Token::Type type, size_t n) {
      t.type = type;
      t.text = std::string(src_.substr(at_, n));
      at_ += n;
      return t;
    };
    const char c = src_[at_];
    if (src_.substr(at_, 2) == "}}") return take(Token::Type::kRight, 2);
    if (t.space_before && src_.substr(at_, 3) == "-}}") {
      t.trim = true;
      return take(Token::Type::kRight, 3);
    }
    if (c == '|') return take(Token::Type::kPipe, 1);
    if (c == '(') return take(Token::Type::kLeftParen, 1);
    if (c == ')') return take(Token::Type::kRightParen, 1);
    if (c == ',') return take(Token::Type::kComma, 1);
    if (src_.substr(at_, 2) == ":=") return take(Token::Type::kDeclare, 2);
    if (c == '=') return take(Token::Type::kAssign, 1);
    if (c == '"') return QuotedString();
    if (c == '`') {
      const size_t close = src_.find('`', at_ + 1);
      if (close == std::string_view::npos) return Error("unterminated raw quoted string");
      t.type = Token::Type::kString;
      t.text = std::string(src_.substr(at_ + 1, close - at_ - 1));
      at_ = close + 1;
      return t;
    }
    if (c == '\'') {
      if (at_ + 2 < src_.size() && src_[at_ + 1] != '\\' && src_[at_ + 2] == '\'') {
        t.type = Token::Type::kChar;
        t.text = std::string(1, src_[at_ + 1]);
        at_ += 3;
        return t;
      }
      return Error("unterminated character constant");
    }
    auto word_char = [](char ch) {
      return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
    };
    if (c == '$') {
      size_t e = at_ + 1;
      while (e < src_.size() && word_char(src_[e])) ++e;
      return take(Token::Type::kVariable, e - at_);
    }
    if (c == '.') {
      if (at_ + 1 < src_.size() && std::isdigit(static_cast<unsigned char>(src_[at_ + 1]))) {
        return Number();
      }
      size_t e = at_ + 1;
      while (e < src_.size() && word_char(src_[e])) ++e;
      return take(e == at_ + 1 ? Token::Type::kDot : Token::Type::kField, e - at_);
    }
    if (std::isdigit(static_cast<unsigned char>(c)) ||
        ((c == '-' || c == '+') && at_ + 1 < src_.size() &&
         std::isdigit(static_cast<unsigned char>(src_[at_ + 1])))) {
      return Number();
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t e = at_;
      while (e < src_.size() && word_char(src_[e])) ++e;
      return take(Token::Type::kIdentifier, e - at_);
    }
    return Error(std::string("unexpected \"") + c + "\" in command");
  }

  StatusOr<Token> Number() {
    size_t e = at_;
    if (src_[e] == '-' || src_[e] == '+') ++e;
    while (e < src_.size() &&
           (std::isalnum(static_cast<unsigned char>(src_[e])) || src_[e] == '.' || src_[e] == '_' ||
            ((src_[e] == '-' || src_[e] == '+') && std::tolower(src_[e - 1]) == 'e'))) {
      ++e;
    }
    Token t;
    t.type = Token::Type::kNumber;
    t.pos = at_;
    t.text = std::string(src_.substr(at_, e - at_));
    at_ = e;
    return t;
  }

  static bool Hex(std::string_view digits, uint32_t* out) {
    *out = 0;
    for (char d : digits) {
      const int v = d >= '0' && d <= '9'   ? d - '0'
                    : d >= 'a' && d <= 'f' ? d - 'a' + 10
                    : d >= 'A' && d <= 'F' ? d - 'A' + 10
                                           : -1;
      if (v < 0) return false;
      *out = *out * 16 + static_cast<uint32_t>(v);
    }
    return true;
  }

  static void AppendUtf8(uint32_t cp, std::string* out) {
    if (cp < 0x80) {
      *out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      *out += static_cast<char>(0xC0 | (cp >> 6));
      *out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      *out += static_cast<char>(0xE0 | (cp >> 12));
      *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      *out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      *out += static_cast<char>(0xF0 | (cp >> 18));
      *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      *out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  StatusOr<Token> QuotedString() {
    Token t;
    t.type = Token::Type::kString;
    t.pos = at_;
    size_t i = at_ + 1;
    std::string value;
    for (;;) {
      if (i >= src_.size() || src_[i] == '\n') return Error("unterminated quoted string");
      const char c = src_[i++];
      if (c == '"') break;
      if (c != '\\') {
        value += c;
        continue;
      }
      if (i >= src_.size()) return Error("unterminated quoted string");
      const char e = src_[i++];
      switch (e) {
        case 'n':
          value += '\n';
          break;
        case 't':
          value += '\t';
          break;
        case 'r':
          value += '\r';
          break;
        case 'a':
          value += '\a';
          break;
        case 'b':
          value += '\b';
          break;
        case 'f':
          value += '\f';
          break;
        case 'v':
          value += '\v';
          break;
        case '\\':
          value += '\\';
          break;
        case '"':
          value += '"';
          break;
        case 'x':
        case 'u':
        case 'U': {
          const size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          uint32_t cp = 0;
          if (i + n > src_.size() || !Hex(src_.substr(i, n), &cp)) return Error("invalid syntax");
          i += n;
          if (e == 'x') {
            value += static_cast<char>(cp);
          } else if (cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000)) {
            return Error("invalid syntax");
          } else {
            AppendUtf8(cp, &value);
          }
          break;
        }
        case '0':
        case '1':
        case '2':
        case '3':
        case '4':
        case '5':
        case '6':
        case '7': {
          // Three octal digits, at most \377.
          if (i + 2 > src_.size()) return Error("invalid syntax");
          uint32_t b = static_cast<uint32_t>(e - '0');
          for (size_t k = 0; k < 2; ++k) {
            const char d = src_[i + k];
            if (d < '0' || d > '7') return Error("invalid syntax");
            b = b * 8 + static_cast<uint32_t>(d - '0');
          }
          if (b > 255) return Error("invalid syntax");
          value += static_cast<char>(b);
          i += 2;
          break;
        }
        default:
          return Error("invalid syntax");
      }
    }
    t.text = std::move(value);
    at_ = i;
    return t;
  }

  std::string_view src_;
  size_t at_ = 0;
  size_t error_pos_ = 0;
  bool trim_next_ = false;
  int range_depth_ = 0;
  std::optional<Token> pushed_;
  std::set<std::string> declared_;
  std::map<std::string, NodePtr> defines_;
  int depth_ = 0;
};

// ------------------------------------------------------------- execution

class Exec {
 public:
  Exec(const json& root, const std::map<std::string, NodePtr>& defines, std::string_view source,
       std::string* out)
      : out_(out), defines_(defines), source_(source) {
    root_.p = &root;
    vars_.emplace_back("$", root_);
  }

  enum class Flow { kNormal, kBreak, kContinue };

  Status Walk(const Node& n, const Value& dot, Flow* flow) {
    switch (n.type) {
      case Node::Type::kList:
        for (const NodePtr& child : n.list) {
          KCACHE_RETURN_IF_ERROR(Walk(*child, dot, flow));
          if (*flow != Flow::kNormal) return Status::OK();
        }
        return Status::OK();
      case Node::Type::kText:
        *out_ += n.text;
        return Status::OK();
      case Node::Type::kAction: {
        KCACHE_ASSIGN_OR_RETURN(Value v, EvalPipe(*n.pipe, dot));
        if (n.pipe->decl.empty()) *out_ += v.valid() ? Print(v) : "<no value>";
        return Status::OK();
      }
      case Node::Type::kBreak:
        *flow = Flow::kBreak;
        return Status::OK();
      case Node::Type::kContinue:
        *flow = Flow::kContinue;
        return Status::OK();
      case Node::Type::kIf:
      case Node::Type::kWith: {
        const size_t mark = vars_.size();
        KCACHE_ASSIGN_OR_RETURN(Value v, EvalPipe(*n.pipe, dot));
        Status st;
        if (Truth(v)) {
          st = Walk(*n.body, n.type == Node::Type::kWith ? v : dot, flow);
        } else if (n.else_body) {
          st = Walk(*n.else_body, dot, flow);
        }
        vars_.resize(mark);
        return st;
      }
      case Node::Type::kRange:
        return Range(n, dot);
      case Node::Type::kTemplate: {
        auto it = defines_.find(n.text);
        if (it == defines_.end()) {
          return ExecError(n.pos, "{{template " + GoQuote(n.text) + "}}",
                           "template " + GoQuote(n.text) + " not defined");
        }
        Value arg;
        if (n.pipe) {
          KCACHE_ASSIGN_OR_RETURN(arg, EvalPipe(*n.pipe, dot));
        }
        DepthGuard depth(&calls_);
        if (depth.too_deep()) {
          return ExecError(n.pos, "{{template " + GoQuote(n.text) + "}}",
                           "exceeded maximum template depth (" + std::to_string(kMaxDepth) + ")");
        }
        // A template's variables are its own: $ is what it was given.
        std::vector<std::pair<std::string, Value>> saved;
        saved.swap(vars_);
        vars_.emplace_back("$", arg);
        Flow inner = Flow::kNormal;
        Status st = Walk(*it->second, arg, &inner);
        vars_.swap(saved);
        return st;
      }
    }
    return Status::OK();
  }

 private:
  Status Range(const Node& n, const Value& dot) {
    const size_t mark = vars_.size();
    // The pipeline's value, without its declarations: they are the
    // iteration's.
    Pipe plain = *n.pipe;
    plain.decl.clear();
    KCACHE_ASSIGN_OR_RETURN(Value v, EvalPipe(plain, dot));
    const std::vector<std::string>& decl = n.pipe->decl;
    bool any = false;
    auto one = [&](Value key, Value elem) -> StatusOr<bool> {
      any = true;
      vars_.resize(mark);
      if (decl.size() == 1) Bind(decl[0], elem, n.pipe->assign);
      if (decl.size() == 2) {
        Bind(decl[0], key, n.pipe->assign);
        Bind(decl[1], elem, n.pipe->assign);
      }
      Flow flow = Flow::kNormal;
      KCACHE_RETURN_IF_ERROR(Walk(*n.body, elem, &flow));
      return flow != Flow::kBreak;
    };
    if (v.valid() && !v.p->is_null()) {
      const json& j = *v.p;
      if (j.is_array()) {
        for (size_t i = 0; i < j.size(); ++i) {
          KCACHE_ASSIGN_OR_RETURN(
              bool go_on, one(Value::Of(json(static_cast<int64_t>(i)), true), v.Part(&j[i])));
          if (!go_on) break;
        }
      } else if (j.is_object()) {
        for (auto it = j.begin(); it != j.end(); ++it) {  // keys sorted, as Go ranges a map
          KCACHE_ASSIGN_OR_RETURN(bool go_on, one(Value::Of(json(it.key())), v.Part(&it.value())));
          if (!go_on) break;
        }
      } else {
        const Operand& last = n.pipe->cmds.back().args[0];
        return ExecError(last.at(), last.text, "range can't iterate over " + Print(v));
      }
    }
    vars_.resize(mark);
    if (!any && n.else_body) {
      Flow flow = Flow::kNormal;
      Status st = Walk(*n.else_body, dot, &flow);
      vars_.resize(mark);
      return st;
    }
    return Status::OK();
  }

  void Bind(const std::string& name, const Value& v, bool assign) {
    if (assign) {
      for (auto it = vars_.rbegin(); it != vars_.rend(); ++it) {
        if (it->first == name) {
          it->second = v;
          return;
        }
      }
    }
    vars_.emplace_back(name, v);
  }

  // An execution error as Go words it: template: output:LINE:COL: ...
  Status ExecError(size_t pos, const std::string& node, const std::string& message) const {
    pos = std::min(pos, source_.size());
    const size_t line_start = source_.rfind('\n', pos == 0 ? 0 : pos - 1);
    const size_t line =
        1 + static_cast<size_t>(std::count(source_.begin(), source_.begin() + pos, '\n'));
    const size_t col =
        line_start == std::string_view::npos || pos == 0 ? pos : pos - line_start - 1;
    return Status::InvalidArgument("template: output:" + std::to_string(line) + ":" +
                                   std::to_string(col) + ": executing \"output\" at <" + node +
                                   ">: " + message);
  }

  StatusOr<Value> EvalPipe(const Pipe& pipe, const Value& dot) {
    Value v;
    bool have = false;
    for (const Command& cmd : pipe.cmds) {
      KCACHE_ASSIGN_OR_RETURN(v, EvalCommand(cmd, dot, have ? &v : nullptr));
      have = true;
      // An interface holding nil is no value once a command is done.
      if (v.valid() && v.p->is_null()) v = Value();
    }
    for (const std::string& name : pipe.decl) Bind(name, v, pipe.assign);
    return v;
  }

  StatusOr<Value> EvalCommand(const Command& cmd, const Value& dot, const Value* final) {
    const Operand& first = cmd.args[0];
    if (first.type == Operand::Type::kFunction) return Call(cmd, dot, final);
    if (cmd.args.size() > 1 || final) {
      if (!first.fields.empty()) {
        return ExecError(first.at(), first.text,
                         first.fields.back() + " is not a method but has arguments");
      }
      return ExecError(cmd.pos, cmd.text, "can't give argument to non-function " + first.text);
    }
    if (first.type == Operand::Type::kNil)
      return ExecError(cmd.pos, cmd.text, "nil is not a command");
    return EvalOperand(first, dot);
  }

  StatusOr<Value> EvalOperand(const Operand& op, const Value& dot) {
    Value v;
    switch (op.type) {
      case Operand::Type::kDot:
      case Operand::Type::kField:
        v = dot;
        break;
      case Operand::Type::kVariable: {
        bool found = false;
        for (auto it = vars_.rbegin(); it != vars_.rend(); ++it) {
          if (it->first == op.name) {
            v = it->second;
            found = true;
            break;
          }
        }
        if (!found) return ExecError(op.pos, op.text, "undefined variable: " + op.name);
        break;
      }
      case Operand::Type::kLiteral:
        return Value::Of(op.literal, op.go_int);
      case Operand::Type::kNil:
        return Value::Of(json(nullptr));
      case Operand::Type::kPipe: {
        KCACHE_ASSIGN_OR_RETURN(v, EvalPipe(*op.pipe, dot));
        break;
      }
      case Operand::Type::kFunction: {
        Command call;
        call.args.push_back(op);
        call.pos = op.pos;
        call.text = op.text;
        return Call(call, dot, nullptr);
      }
    }
    for (const std::string& name : op.fields) {
      if (!v.valid()) return Value();  // a missing key's fields are missing too
      if (v.p->is_null()) {
        return ExecError(op.at(), op.text, "nil pointer evaluating interface {}." + name);
      }
      if (!v.p->is_object()) {
        // The receiver's static type: a map's element, interface {}.
        return ExecError(op.at(), op.text,
                         "can't evaluate field " + name + " in type interface {}");
      }
      auto it = v.p->find(name);
      if (it == v.p->end()) return Value();
      v = v.Part(&*it);
    }
    return v;
  }

  // Where a function is called: what its builtin needs to check its
  // arguments and to name its errors as text/template does.
  struct CallSite {
    const Exec& exec;
    const Command& cmd;
    const std::string& fn;
    size_t given;  // arguments, the piped final value included

    Status Want(size_t n, bool at_least) const {
      if (at_least ? given >= n : given == n) return Status::OK();
      return exec.ExecError(cmd.pos, fn,
                            "wrong number of args for " + fn + ": want " +
                                (at_least ? "at least " : "") + std::to_string(n) + " got " +
                                std::to_string(given));
    }
    Status Fail(const std::string& message) const {
      return exec.ExecError(cmd.pos, cmd.text, "error calling " + fn + ": " + message);
    }
  };
  using Builtin = StatusOr<Value> (Exec::*)(const CallSite& c, const std::vector<Value>& args);

  // text/template's functions that kubectl's templates reach, and
  // kubectl's own (base64decode, exists); "and" and "or" are Call's, since
  // they evaluate their arguments only as far as needed.
  static const std::map<std::string_view, Builtin>& Builtins() {
    static const auto* builtins = new std::map<std::string_view, Builtin>{
        {"not", &Exec::Not},
        {"len", &Exec::Len},
        {"index", &Exec::Index},
        {"eq", &Exec::Compare},
        {"ne", &Exec::Compare},
        {"lt", &Exec::Compare},
        {"le", &Exec::Compare},
        {"gt", &Exec::Compare},
        {"ge", &Exec::Compare},
        {"print", &Exec::PrintFn},
        {"println", &Exec::PrintFn},
        {"printf", &Exec::Printf},
        {"base64decode", &Exec::Base64DecodeFn},
        {"exists", &Exec::Exists},
    };
    return *builtins;
  }

  StatusOr<Value> Call(const Command& cmd, const Value& dot, const Value* final) {
    const CallSite c{*this, cmd, cmd.args[0].name, cmd.args.size() - 1 + (final ? 1 : 0)};
    auto arg = [&](size_t i) -> StatusOr<Value> {
      if (i + 1 < cmd.args.size()) return EvalOperand(cmd.args[i + 1], dot);
      return *final;
    };
    if (c.fn == "and" || c.fn == "or") {
      KCACHE_RETURN_IF_ERROR(c.Want(1, true));
      Value v;
      for (size_t i = 0; i < c.given; ++i) {
        KCACHE_ASSIGN_OR_RETURN(v, arg(i));
        if (Truth(v) == (c.fn == "or")) return v;
      }
      return v;
    }
    std::vector<Value> args;
    for (size_t i = 0; i < c.given; ++i) {
      KCACHE_ASSIGN_OR_RETURN(Value v, arg(i));
      args.push_back(std::move(v));
    }
    auto builtin = Builtins().find(c.fn);
    if (builtin == Builtins().end()) {
      return ExecError(cmd.pos, cmd.text, "function \"" + c.fn + "\" not defined");
    }
    return (this->*builtin->second)(c, args);
  }

  StatusOr<Value> Not(const CallSite& c, const std::vector<Value>& args) {
    KCACHE_RETURN_IF_ERROR(c.Want(1, false));
    return Value::Of(json(!Truth(args[0])));
  }

  StatusOr<Value> Len(const CallSite& c, const std::vector<Value>& args) {
    KCACHE_RETURN_IF_ERROR(c.Want(1, false));
    const Value& v = args[0];
    if (!v.valid()) return c.Fail("reflect: call of reflect.Value.Type on zero Value");
    if (v.nil()) return c.Fail("len of nil pointer");
    if (v.p->is_string()) {
      return Value::Of(json(static_cast<int64_t>(v.p->get_ref<const std::string&>().size())), true);
    }
    if (v.p->is_array() || v.p->is_object()) {
      return Value::Of(json(static_cast<int64_t>(v.p->size())), true);
    }
    return c.Fail("len of type " + TypeName(v));
  }

  StatusOr<Value> Index(const CallSite& c, const std::vector<Value>& args) {
    KCACHE_RETURN_IF_ERROR(c.Want(1, true));
    Value v = args[0];
    for (size_t i = 1; i < args.size(); ++i) {
      const Value& key = args[i];
      if (v.nil()) return c.Fail("index of untyped nil");
      if (v.p->is_object()) {
        if (key.nil() || !key.p->is_string()) {
          return c.Fail("value has type " + TypeName(key) + "; should be string");
        }
        auto it = v.p->find(key.p->get_ref<const std::string&>());
        if (it == v.p->end()) {
          v = Value::Of(json(nullptr));
          continue;
        }
        v = v.Part(&*it);
      } else if (v.p->is_array() || v.p->is_string()) {
        if (key.nil() || KindOf(*key.p) != Kind::kInt) {
          return c.Fail("cannot index slice/array with type " + TypeName(key));
        }
        const int64_t x = key.p->get<int64_t>();
        const size_t size =
            v.p->is_array() ? v.p->size() : v.p->get_ref<const std::string&>().size();
        if (x < 0 || static_cast<size_t>(x) >= size) {
          return c.Fail("index out of range: " + std::to_string(x));
        }
        if (v.p->is_array()) {
          v = v.Part(&(*v.p)[static_cast<size_t>(x)]);
        } else {
          v = Value::Of(json(static_cast<int64_t>(static_cast<unsigned char>(
              v.p->get_ref<const std::string&>()[static_cast<size_t>(x)]))));
        }
      } else {
        return c.Fail("can't index item of type " + TypeName(v));
      }
    }
    return v;
  }

  // eq, ne, lt, le, gt and ge.
  StatusOr<Value> Compare(const CallSite& c, const std::vector<Value>& args) {
    const bool equality = c.fn == "eq" || c.fn == "ne";
    KCACHE_RETURN_IF_ERROR(c.fn == "eq" ? c.Want(2, true) : c.Want(2, false));
    const Value& a = args[0];
    bool truth = false;
    for (size_t i = 1; i < args.size() && !truth; ++i) {
      const Value& b = args[i];
      if (a.nil() || b.nil()) {
        if (!equality) return c.Fail("invalid type for comparison");
        truth = a.nil() && b.nil();
        continue;
      }
      const Kind ka = KindOf(*a.p), kb = KindOf(*b.p);
      if (ka != kb) return c.Fail("incompatible types for comparison");
      if (ka == Kind::kMap || ka == Kind::kSlice) {
        return c.Fail(equality ? "non-comparable type " + Print(a) + ": " + TypeName(a)
                               : "invalid type for comparison");
      }
      int cmp = 0;
      switch (ka) {
        case Kind::kBool:
          if (!equality) return c.Fail("invalid type for comparison");
          cmp = a.p->get<bool>() == b.p->get<bool>() ? 0 : 1;
          break;
        case Kind::kInt: {
          const int64_t x = a.p->get<int64_t>(), y = b.p->get<int64_t>();
          cmp = x < y ? -1 : x > y ? 1 : 0;
          break;
        }
        case Kind::kFloat: {
          const double x = a.p->get<double>(), y = b.p->get<double>();
          cmp = x < y ? -1 : x > y ? 1 : 0;
          break;
        }
        default: {
          const std::string& x = a.p->get_ref<const std::string&>();
          const std::string& y = b.p->get_ref<const std::string&>();
          cmp = x.compare(y) < 0 ? -1 : x.compare(y) > 0 ? 1 : 0;
        }
      }
      truth = c.fn == "eq"   ? cmp == 0
              : c.fn == "ne" ? cmp != 0
              : c.fn == "lt" ? cmp < 0
              : c.fn == "le" ? cmp <= 0
              : c.fn == "gt" ? cmp > 0
                             : cmp >= 0;
    }
    return Value::Of(json(truth));
  }

  // print and println.
  StatusOr<Value> PrintFn(const CallSite& c, const std::vector<Value>& args) {
    std::string s;
    for (size_t i = 0; i < args.size(); ++i) {
      // Sprint puts a space between operands when neither is a string;
      // Sprintln always does.
      const bool either_string = i > 0 && ((!args[i].nil() && args[i].p->is_string()) ||
                                           (!args[i - 1].nil() && args[i - 1].p->is_string()));
      if (i > 0 && (c.fn == "println" || !either_string)) s += ' ';
      s += Print(args[i]);
    }
    if (c.fn == "println") s += '\n';
    return Value::Of(json(s));
  }

  StatusOr<Value> Printf(const CallSite& c, const std::vector<Value>& args) {
    KCACHE_RETURN_IF_ERROR(c.Want(1, true));
    if (args[0].nil() || !args[0].p->is_string()) {
      return ExecError(c.cmd.pos, c.cmd.text,
                       "wrong type for value; expected string; got " + TypeName(args[0]));
    }
    return Value::Of(json(Sprintf(args[0].p->get_ref<const std::string&>(),
                                  std::vector<Value>(args.begin() + 1, args.end()))));
  }

  StatusOr<Value> Base64DecodeFn(const CallSite& c, const std::vector<Value>& args) {
    KCACHE_RETURN_IF_ERROR(c.Want(1, false));
    if (args[0].nil() || !args[0].p->is_string()) {
      return ExecError(c.cmd.pos, c.cmd.text,
                       "wrong type for value; expected string; got " + TypeName(args[0]));
    }
    std::optional<std::string> decoded = Base64Decode(args[0].p->get_ref<const std::string&>());
    if (!decoded) return c.Fail("base64 decode failed: illegal base64 data");
    return Value::Of(json(*decoded));
  }

  StatusOr<Value> Exists(const CallSite& c, const std::vector<Value>& args) {
    KCACHE_RETURN_IF_ERROR(c.Want(1, true));
    Value v = args[0];
    for (size_t i = 1; i < args.size(); ++i) {
      if (v.nil()) return Value::Of(json(false));
      const Value& key = args[i];
      if (v.p->is_object()) {
        if (key.nil() || !key.p->is_string()) return Value::Of(json(false));
        auto it = v.p->find(key.p->get_ref<const std::string&>());
        if (it == v.p->end()) return Value::Of(json(false));
        v = v.Part(&*it);
      } else if (v.p->is_array()) {
        if (key.nil() || KindOf(*key.p) != Kind::kInt) return Value::Of(json(false));
        const int64_t x = key.p->get<int64_t>();
        if (x < 0 || static_cast<size_t>(x) >= v.p->size()) return Value::Of(json(false));
        v = v.Part(&(*v.p)[static_cast<size_t>(x)]);
      } else {
        return Value::Of(json(false));
      }
    }
    return Value::Of(json(!v.nil()));
  }

  std::string* out_;
  const std::map<std::string, NodePtr>& defines_;
  const std::string_view source_;  // the template, for the line and column of errors
  int calls_ = 0;                  // {{template}} calls in progress
  Value root_;
  std::vector<std::pair<std::string, Value>> vars_;
};

}  // namespace

StatusOr<GoTemplate> GoTemplate::Parse(std::string_view text) {
  Parser parser(text);
  KCACHE_ASSIGN_OR_RETURN(NodePtr root, parser.Run());
  return GoTemplate(std::move(root), std::make_shared<const std::string>(text));
}

Status GoTemplate::Execute(const nlohmann::json& data, std::string* out) const {
  Exec exec(data, *root_->defines, *source_, out);
  Exec::Flow flow = Exec::Flow::kNormal;
  return exec.Walk(*root_, Value{nullptr, &data, false}, &flow);
}

}  // namespace kcache::tool
