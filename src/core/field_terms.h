// SPDX-License-Identifier: Apache-2.0

// Splitting field selectors into terms (exposed for tests).

#ifndef KCACHE_SRC_CORE_FIELD_TERMS_H_
#define KCACHE_SRC_CORE_FIELD_TERMS_H_

#include <string>
#include <string_view>
#include <vector>

namespace kcache::fields {

// Splits on commas not escaped by a backslash; "" gives no terms.
std::vector<std::string> SplitTerms(std::string_view selector);

// Splits "lhs<op>rhs" at the first of "!=", "==", "=" found scanning from the
// left. Returns false if the term has no operator.
bool SplitTerm(std::string_view term, std::string* lhs, std::string* op, std::string* rhs);

}  // namespace kcache::fields

#endif  // KCACHE_SRC_CORE_FIELD_TERMS_H_
