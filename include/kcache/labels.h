// SPDX-License-Identifier: Apache-2.0

// Labels: a set of key/value labels, and the helpers client-go's labels.Set has.
//
// Thread-safety: plain values.

#ifndef KCACHE_LABELS_H_
#define KCACHE_LABELS_H_

#include <map>
#include <string>
#include <string_view>

#include "kcache/export.h"
#include "kcache/status_or.h"

namespace kcache {

// Ordered by key, so printing and iteration are deterministic. Also used for
// annotations and field sets.
using Labels = std::map<std::string, std::string, std::less<>>;

// "k1=v1,k2=v2" in key order; "" for an empty set.
KCACHE_EXPORT std::string LabelsToString(const Labels& labels);

// True if some key is present in both with different values.
KCACHE_EXPORT bool LabelsConflict(const Labels& a, const Labels& b);

// Parses "k1=v1,k2=v2" (whitespace around tokens allowed) into a set. Only
// '=' is accepted; anything else (set-based requirements, '!=', '==', a bare
// key, a bad key or value) is InvalidArgument.
KCACHE_EXPORT StatusOr<Labels> ConvertSelectorToLabelsMap(std::string_view selector);

}  // namespace kcache

#endif  // KCACHE_LABELS_H_
