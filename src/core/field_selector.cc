// SPDX-License-Identifier: Apache-2.0

#include <algorithm>

#include "core/field_terms.h"
#include "kcache/field_selector.h"

namespace kcache {
namespace fields {

std::vector<std::string> SplitTerms(std::string_view selector) {
  std::vector<std::string> terms;
  if (selector.empty()) return terms;
  size_t start = 0;
  bool in_slash = false;
  for (size_t i = 0; i < selector.size(); ++i) {
    char c = selector[i];
    if (in_slash) {
      in_slash = false;
    } else if (c == '\\') {
      in_slash = true;
    } else if (c == ',') {
      terms.emplace_back(selector.substr(start, i - start));
      start = i + 1;
    }
  }
  terms.emplace_back(selector.substr(start));
  return terms;
}

bool SplitTerm(std::string_view term, std::string* lhs, std::string* op, std::string* rhs) {
  static constexpr std::string_view kOperators[] = {"!=", "==", "="};
  for (size_t i = 0; i < term.size(); ++i) {
    std::string_view rest = term.substr(i);
    for (std::string_view o : kOperators) {
      if (rest.substr(0, o.size()) == o) {
        *lhs = term.substr(0, i);
        *op = o;
        *rhs = term.substr(i + o.size());
        return true;
      }
    }
  }
  return false;
}

}  // namespace fields

std::string EscapeFieldValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\' || c == ',' || c == '=') out += '\\';
    out += c;
  }
  return out;
}

StatusOr<std::string> UnescapeFieldValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  bool in_slash = false;
  for (char c : value) {
    if (in_slash) {
      if (c != '\\' && c != ',' && c != '=') {
        return Status::InvalidArgument(
            std::string("invalid field selector: invalid escape sequence: \\") + c);
      }
      out += c;
      in_slash = false;
      continue;
    }
    if (c == '\\') {
      in_slash = true;
    } else if (c == ',' || c == '=') {
      return Status::InvalidArgument(
          std::string("invalid field selector: unescaped character in value: ") + c);
    } else {
      out += c;
    }
  }
  if (in_slash)
    return Status::InvalidArgument("invalid field selector: invalid escape sequence: \\");
  return out;
}

StatusOr<FieldSelector> FieldSelector::Parse(std::string_view selector) {
  std::vector<std::string> parts = fields::SplitTerms(selector);
  std::sort(parts.begin(), parts.end());
  FieldSelector s;
  for (const std::string& part : parts) {
    if (part.empty()) continue;
    std::string lhs, op, rhs;
    if (!fields::SplitTerm(part, &lhs, &op, &rhs)) {
      return Status::InvalidArgument("invalid selector: '" + std::string(selector) +
                                     "'; can't understand '" + part + "'");
    }
    KCACHE_ASSIGN_OR_RETURN(std::string value, UnescapeFieldValue(rhs));
    s.terms_.push_back(Term{lhs, op != "!=", std::move(value)});
  }
  return s;
}

FieldSelector FieldSelector::FromSet(const Fields& set) {
  FieldSelector s;
  for (const auto& [k, v] : set) s.terms_.push_back(Term{k, true, v});
  return s;
}

bool FieldSelector::Matches(const Fields& fields) const {
  for (const Term& t : terms_) {
    auto it = fields.find(t.field);
    std::string_view have = it == fields.end() ? std::string_view() : std::string_view(it->second);
    if ((have == t.value) != t.equal) return false;
  }
  return true;
}

bool FieldSelector::Matches(const Object& object) const {
  for (const Term& t : terms_) {
    std::string have;
    if (t.field == "metadata.name") {
      have = object.name();
    } else if (t.field == "metadata.namespace") {
      have = object.namespace_();
    } else {
      StatusOr<std::string> v = object.FieldValue(t.field);
      if (v.ok()) have = std::move(v).value();  // absent or non-scalar reads as ""
    }
    if ((have == t.value) != t.equal) return false;
  }
  return true;
}

std::string FieldSelector::String() const {
  std::string out;
  for (size_t i = 0; i < terms_.size(); ++i) {
    if (i) out += ",";
    out += terms_[i].field + (terms_[i].equal ? "=" : "!=") + EscapeFieldValue(terms_[i].value);
  }
  return out;
}

std::optional<std::string> FieldSelector::RequiresExactMatch(std::string_view field) const {
  for (const Term& t : terms_) {
    if (t.field == field && t.equal) return t.value;
  }
  return std::nullopt;
}

}  // namespace kcache
