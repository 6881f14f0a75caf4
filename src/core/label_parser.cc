// SPDX-License-Identifier: Apache-2.0

#include "core/label_parser.h"

#include <algorithm>
#include <set>

namespace kcache::labels {
namespace {

bool IsWhitespace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

bool IsSpecialSymbol(char c) {
  return c == '=' || c == '!' || c == '(' || c == ')' || c == ',' || c == '>' || c == '<';
}

// The tokens that have a fixed spelling.
bool StringToToken(std::string_view s, Token* out) {
  static constexpr struct {
    std::string_view text;
    Token token;
  } kTable[] = {
      {")", Token::kClosedPar},     {",", Token::kComma},    {"!", Token::kDoesNotExist},
      {"==", Token::kDoubleEquals}, {"=", Token::kEquals},   {">", Token::kGreaterThan},
      {"in", Token::kIn},           {"<", Token::kLessThan}, {"!=", Token::kNotEquals},
      {"notin", Token::kNotIn},     {"(", Token::kOpenPar},
  };
  for (const auto& e : kTable) {
    if (e.text == s) {
      *out = e.token;
      return true;
    }
  }
  return false;
}

Status Error(std::string msg) { return Status::InvalidArgument(msg); }

}  // namespace

// '\0' at the end; never unread after it.
char Lexer::Read() { return pos_ < s_.size() ? s_[pos_++] : '\0'; }

Token Lexer::ScanIdOrKeyword(std::string* literal) {
  std::string buffer;
  while (true) {
    char c = Read();
    if (c == '\0') break;
    if (IsSpecialSymbol(c) || IsWhitespace(c)) {
      Unread();
      break;
    }
    buffer += c;
  }
  Token t;
  *literal = buffer;
  if (StringToToken(buffer, &t)) return t;
  return Token::kIdentifier;
}

Token Lexer::ScanSpecialSymbol(std::string* literal) {
  std::string buffer;
  bool have_last = false;
  Token last = Token::kError;
  std::string last_literal;
  while (true) {
    char c = Read();
    if (c == '\0') break;
    if (!IsSpecialSymbol(c)) {
      Unread();
      break;
    }
    buffer += c;
    Token t;
    if (StringToToken(buffer, &t)) {
      have_last = true;
      last = t;
      last_literal = buffer;
    } else if (have_last) {
      Unread();
      break;
    }
  }
  if (!have_last) {
    *literal = "error expected: keyword found '" + buffer + "'";
    return Token::kError;
  }
  *literal = last_literal;
  return last;
}

Token Lexer::Lex(std::string* literal) {
  char c = Read();
  while (IsWhitespace(c)) c = Read();
  if (c == '\0') {
    literal->clear();
    return Token::kEndOfString;
  }
  Unread();
  if (IsSpecialSymbol(c)) return ScanSpecialSymbol(literal);
  return ScanIdOrKeyword(literal);
}

Parser::Parser(std::string_view s) {
  Lexer lexer(s);
  while (true) {
    Item item;
    item.token = lexer.Lex(&item.literal);
    items_.push_back(item);
    if (item.token == Token::kEndOfString) break;
  }
}

Token Parser::Lookahead(Context ctx, std::string* literal) const {
  const Item& item = items_[std::min(position_, items_.size() - 1)];
  if (literal) *literal = item.literal;
  if (ctx == Context::kValues && (item.token == Token::kIn || item.token == Token::kNotIn)) {
    return Token::kIdentifier;  // "in" and "notin" are plain words inside values
  }
  return item.token;
}

Token Parser::Consume(Context ctx, std::string* literal) {
  Token t = Lookahead(ctx, literal);
  if (position_ < items_.size()) ++position_;
  return t;
}

StatusOr<std::vector<Requirement>> Parser::Parse() {
  std::vector<Requirement> requirements;
  while (true) {
    std::string lit;
    Token t = Lookahead(Context::kValues, &lit);
    switch (t) {
      case Token::kIdentifier:
      case Token::kDoesNotExist: {
        StatusOr<Requirement> r = ParseRequirement();
        if (!r.ok()) {
          return Error("unable to parse requirement: " + std::string(r.status().message()));
        }
        requirements.push_back(std::move(r).value());
        std::string l;
        Token next = Consume(Context::kValues, &l);
        if (next == Token::kEndOfString) return requirements;
        if (next != Token::kComma) {
          return Error("found '" + l + "', expected: ',' or 'end of string'");
        }
        std::string l2;
        Token t2 = Lookahead(Context::kValues, &l2);
        if (t2 != Token::kIdentifier && t2 != Token::kDoesNotExist) {
          return Error("found '" + l2 + "', expected: identifier after ','");
        }
        break;
      }
      case Token::kEndOfString:
        return requirements;
      default:
        return Error("found '" + lit + "', expected: !, identifier, or 'end of string'");
    }
  }
}

StatusOr<Requirement> Parser::ParseRequirement() {
  std::string key;
  SelectionOperator op = SelectionOperator::kUnset;
  KCACHE_RETURN_IF_ERROR(ParseKeyAndInferOperator(&key, &op));
  if (op == SelectionOperator::kExists || op == SelectionOperator::kDoesNotExist) {
    return Requirement::Create(key, op, {});
  }
  KCACHE_ASSIGN_OR_RETURN(op, ParseOperator());
  std::vector<std::string> values;
  if (op == SelectionOperator::kIn || op == SelectionOperator::kNotIn) {
    KCACHE_RETURN_IF_ERROR(ParseValues(&values));
  } else {
    KCACHE_RETURN_IF_ERROR(ParseExactValue(&values));
  }
  return Requirement::Create(key, op, std::move(values));
}

Status Parser::ParseKeyAndInferOperator(std::string* key, SelectionOperator* op) {
  std::string lit;
  Token t = Consume(Context::kValues, &lit);
  if (t == Token::kDoesNotExist) {
    *op = SelectionOperator::kDoesNotExist;
    t = Consume(Context::kValues, &lit);
  }
  if (t != Token::kIdentifier) return Error("found '" + lit + "', expected: identifier");
  // The key is validated by Requirement::Create with the others.
  *key = lit;
  Token next = Lookahead(Context::kValues);
  if ((next == Token::kEndOfString || next == Token::kComma) &&
      *op != SelectionOperator::kDoesNotExist) {
    *op = SelectionOperator::kExists;
  }
  return Status::OK();
}

StatusOr<SelectionOperator> Parser::ParseOperator() {
  std::string lit;
  switch (Consume(Context::kKeyAndOperator, &lit)) {
    case Token::kIn:
      return SelectionOperator::kIn;
    case Token::kEquals:
      return SelectionOperator::kEquals;
    case Token::kDoubleEquals:
      return SelectionOperator::kDoubleEquals;
    case Token::kGreaterThan:
      return SelectionOperator::kGreaterThan;
    case Token::kLessThan:
      return SelectionOperator::kLessThan;
    case Token::kNotIn:
      return SelectionOperator::kNotIn;
    case Token::kNotEquals:
      return SelectionOperator::kNotEquals;
    default:
      return Error("found '" + lit + "', expected: in, notin, =, ==, !=, gt, lt");
  }
}

Status Parser::ParseValues(std::vector<std::string>* values) {
  std::string lit;
  if (Consume(Context::kValues, &lit) != Token::kOpenPar) {
    return Error("found '" + lit + "' expected: '('");
  }
  Token t = Lookahead(Context::kValues, &lit);
  if (t == Token::kIdentifier || t == Token::kComma) {
    KCACHE_RETURN_IF_ERROR(ParseIdentifiersList(values));
    if (Consume(Context::kValues) != Token::kClosedPar) {
      return Error("found '" + lit + "', expected: ')'");
    }
    return Status::OK();
  }
  if (t == Token::kClosedPar) {  // "()" means the one value ""
    Consume(Context::kValues);
    values->assign(1, "");
    return Status::OK();
  }
  return Error("found '" + lit + "', expected: ',', ')' or identifier");
}

// A comma-separated list in which empty entries stand for "": "(,a)",
// "(a,)" and "(a,,b)" all contain "".
Status Parser::ParseIdentifiersList(std::vector<std::string>* values) {
  std::set<std::string> set;
  while (true) {
    std::string lit;
    Token t = Consume(Context::kValues, &lit);
    if (t == Token::kIdentifier) {
      set.insert(lit);
      std::string lit2;
      Token t2 = Lookahead(Context::kValues, &lit2);
      if (t2 == Token::kComma) continue;
      if (t2 == Token::kClosedPar) break;
      return Error("found '" + lit2 + "', expected: ',' or ')'");
    }
    if (t == Token::kComma) {
      if (set.empty()) set.insert("");  // "(,"
      Token t2 = Lookahead(Context::kValues);
      if (t2 == Token::kClosedPar) {  // ",)"
        set.insert("");
        break;
      }
      if (t2 == Token::kComma) set.insert("");  // ",,"
      continue;
    }
    return Error("found '" + lit + "', expected: ',', or identifier");
  }
  values->assign(set.begin(), set.end());
  return Status::OK();
}

Status Parser::ParseExactValue(std::vector<std::string>* values) {
  Token t = Lookahead(Context::kValues);
  if (t == Token::kEndOfString || t == Token::kComma) {  // "k=" means k has value ""
    values->assign(1, "");
    return Status::OK();
  }
  std::string lit;
  if (Consume(Context::kValues, &lit) == Token::kIdentifier) {
    values->assign(1, lit);
    return Status::OK();
  }
  return Error("found '" + lit + "', expected: identifier");
}

}  // namespace kcache::labels
