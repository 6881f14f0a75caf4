// SPDX-License-Identifier: Apache-2.0

// The label selector lexer and parser (apimachinery's labels.Lexer/Parser).

#ifndef KCACHE_SRC_CORE_LABEL_PARSER_H_
#define KCACHE_SRC_CORE_LABEL_PARSER_H_

#include <string>
#include <string_view>
#include <vector>

#include "kcache/label_selector.h"
#include "kcache/status_or.h"

namespace kcache::labels {

enum class Token {
  kError,
  kEndOfString,
  kClosedPar,
  kComma,
  kDoesNotExist,
  kDoubleEquals,
  kEquals,
  kGreaterThan,
  kIdentifier,
  kIn,
  kLessThan,
  kNotEquals,
  kNotIn,
  kOpenPar,
};

// Splits a selector into tokens. Whitespace separates; the special symbols
// = ! ( ) , > < form the longest operator token they can; any other run of
// characters is an identifier or the keywords "in"/"notin".
class Lexer {
 public:
  explicit Lexer(std::string_view s) : s_(s) {}
  // Returns the next token and its literal; kEndOfString at the end.
  Token Lex(std::string* literal);

 private:
  char Read();
  void Unread() { --pos_; }
  Token ScanIdOrKeyword(std::string* literal);
  Token ScanSpecialSymbol(std::string* literal);

  std::string_view s_;
  size_t pos_ = 0;
};

// Recursive descent over the whole token stream.
class Parser {
 public:
  explicit Parser(std::string_view s);

  // Parses the whole selector; requirements in source order.
  StatusOr<std::vector<Requirement>> Parse();
  // Consumes one binary operator (exposed for tests).
  StatusOr<SelectionOperator> ParseOperator();

 private:
  enum class Context { kKeyAndOperator, kValues };
  struct Item {
    Token token;
    std::string literal;
  };

  Token Lookahead(Context ctx, std::string* literal = nullptr) const;
  Token Consume(Context ctx, std::string* literal = nullptr);
  StatusOr<Requirement> ParseRequirement();
  Status ParseKeyAndInferOperator(std::string* key, SelectionOperator* op);
  Status ParseValues(std::vector<std::string>* values);
  Status ParseIdentifiersList(std::vector<std::string>* values);
  Status ParseExactValue(std::vector<std::string>* values);

  std::vector<Item> items_;
  size_t position_ = 0;
};

}  // namespace kcache::labels

#endif  // KCACHE_SRC_CORE_LABEL_PARSER_H_
