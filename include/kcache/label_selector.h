// SPDX-License-Identifier: Apache-2.0

// LabelSelector: Kubernetes label selectors ("app=web,tier in (a,b),!canary").
//
// Grammar, validation, matching and canonical printing follow apimachinery's
// labels package: requirements are ANDed; a parsed selector's requirements
// are sorted by key; multi-value sets print sorted.
//
// Thread-safety: immutable values; safe to share across threads.

#ifndef KCACHE_LABEL_SELECTOR_H_
#define KCACHE_LABEL_SELECTOR_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kcache/export.h"
#include "kcache/labels.h"
#include "kcache/status_or.h"

namespace kcache {

enum class SelectionOperator {
  kUnset,         // a default-constructed Requirement: matches nothing
  kEquals,        // key=v
  kDoubleEquals,  // key==v
  kNotEquals,     // key!=v (true when the label is absent)
  kIn,            // key in (a,b)
  kNotIn,         // key notin (a,b) (true when the label is absent)
  kExists,        // key
  kDoesNotExist,  // !key
  kGreaterThan,   // key>n (integer comparison)
  kLessThan,      // key<n
};

// One requirement of a selector.
class KCACHE_EXPORT Requirement {
 public:
  // An empty requirement: matches nothing and prints as "".
  Requirement() = default;

  // Validates as apimachinery's NewRequirement: the key is a qualified name
  // (optional DNS subdomain prefix + '/' + name of at most 63 characters),
  // each value a valid label value; in/notin need at least one value,
  // =/==/!= and >/< exactly one (an integer for >/<), exists/! none.
  // InvalidArgument naming the field path ("key", "values", "values[0]",
  // "values[0][key]", "operator") and the bad value.
  static StatusOr<Requirement> Create(std::string key, SelectionOperator op,
                                      std::vector<std::string> values);

  const std::string& key() const { return key_; }
  SelectionOperator op() const { return op_; }
  // Sorted and without duplicates.
  const std::vector<std::string>& values() const { return values_; }

  bool Matches(const Labels& labels) const;
  // Canonical form: "!k", "k", "k=v", "k==v", "k!=v", "k in (a,b)",
  // "k notin (a,b)", "k>n", "k<n".
  std::string String() const;

  friend bool operator==(const Requirement&, const Requirement&) = default;

 private:
  friend class LabelSelector;
  Requirement(std::string key, SelectionOperator op, std::vector<std::string> values)
      : key_(std::move(key)), op_(op), values_(std::move(values)) {}

  std::string key_;
  SelectionOperator op_ = SelectionOperator::kUnset;
  std::vector<std::string> values_;
};

class KCACHE_EXPORT LabelSelector {
 public:
  // Matches everything (the empty selector).
  LabelSelector() = default;

  static LabelSelector Everything() { return LabelSelector(); }
  // Matches nothing; distinct from every parsed selector.
  static LabelSelector Nothing();
  // Parses the selector grammar. InvalidArgument with the parser's message,
  // e.g. "found ',', expected: identifier after ','".
  static StatusOr<LabelSelector> Parse(std::string_view selector);
  // key=value for each entry, in key order; values are not validated.
  static LabelSelector FromSet(const Labels& set);
  // As FromSet, but every key and value is validated.
  static StatusOr<LabelSelector> ValidatedFromSet(const Labels& set);
  // Keeps the requirements in the given order.
  static LabelSelector FromRequirements(std::vector<Requirement> requirements);

  // A copy with `r` added, requirements sorted by key (stable).
  LabelSelector Add(Requirement r) const;

  bool Matches(const Labels& labels) const;
  // True for a selector with no requirements (matches everything).
  bool Empty() const { return !nothing_ && requirements_.empty(); }
  bool MatchesNothing() const { return nothing_; }
  // Requirements joined by ","; "" for Everything and Nothing.
  std::string String() const;
  // The value that `key` must have, if a requirement on `key` pins one value
  // (=, == or in with one value).
  std::optional<std::string> RequiresExactMatch(std::string_view key) const;

  const std::vector<Requirement>& requirements() const { return requirements_; }

 private:
  std::vector<Requirement> requirements_;
  bool nothing_ = false;
};

}  // namespace kcache

#endif  // KCACHE_LABEL_SELECTOR_H_
