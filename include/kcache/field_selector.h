// SPDX-License-Identifier: Apache-2.0

// FieldSelector: Kubernetes field selectors ("metadata.name=a,status.phase!=Running").
//
// Terms are "field=value", "field==value" or "field!=value", ANDed; ',', '='
// and '\' inside values are escaped with '\'. Parsing and printing follow
// apimachinery's fields package (terms sorted on parse).
//
// Unlike the API server, which allows a fixed set of fields per resource, a
// FieldSelector evaluated by kcache accepts any dotted path to a scalar.
//
// Thread-safety: immutable values; safe to share across threads.

#ifndef KCACHE_FIELD_SELECTOR_H_
#define KCACHE_FIELD_SELECTOR_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kcache/export.h"
#include "kcache/labels.h"
#include "kcache/object.h"
#include "kcache/status_or.h"

namespace kcache {

// Field path -> value, as a field selector reads it. Same type as Labels.
using Fields = Labels;

class KCACHE_EXPORT FieldSelector {
 public:
  struct Term {
    std::string field{};
    bool equal = true;    // false for "!="
    std::string value{};  // unescaped
  };

  // Matches everything.
  FieldSelector() = default;
  static FieldSelector Everything() { return FieldSelector(); }
  // InvalidArgument "invalid selector: '<s>'; can't understand '<term>'", or
  // "invalid field selector: invalid escape sequence: \x" /
  // "invalid field selector: unescaped character in value: ,".
  static StatusOr<FieldSelector> Parse(std::string_view selector);
  // field=value for each entry.
  static FieldSelector FromSet(const Fields& set);

  // An absent field reads as "".
  bool Matches(const Fields& fields) const;
  // Reads each term's field from the object (metadata.name and
  // metadata.namespace without parsing; other paths via Object::FieldValue).
  bool Matches(const Object& object) const;
  bool Empty() const { return terms_.empty(); }
  // Terms joined by ",", values escaped.
  std::string String() const;
  // The value `field` must equal, if a "=" term pins it.
  std::optional<std::string> RequiresExactMatch(std::string_view field) const;

  const std::vector<Term>& terms() const { return terms_; }

 private:
  std::vector<Term> terms_;
};

// Escapes '\', ',' and '=' with a backslash.
KCACHE_EXPORT std::string EscapeFieldValue(std::string_view value);
// Inverse of EscapeFieldValue; errors as FieldSelector::Parse.
KCACHE_EXPORT StatusOr<std::string> UnescapeFieldValue(std::string_view value);

}  // namespace kcache

#endif  // KCACHE_FIELD_SELECTOR_H_
