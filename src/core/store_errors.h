// SPDX-License-Identifier: Apache-2.0

// The errors every store returns in the same words.

#ifndef KCACHE_SRC_CORE_STORE_ERRORS_H_
#define KCACHE_SRC_CORE_STORE_ERRORS_H_

#include <string_view>
#include <vector>

#include "kcache/object.h"
#include "kcache/status.h"

namespace kcache {

// Same code as `cause`; message "couldn't create key for object <what>: <cause>",
// where <what> names the object by kind/namespace/name or its first bytes.
Status KeyError(const Object& object, const Status& cause);

// NotFound "Index with name <name> does not exist".
Status UnknownIndexError(std::string_view name);

// Same code as `cause`; "unable to calculate an index entry for key "<key>"
// on index "<index>": <cause>".
Status IndexFuncError(std::string_view key, std::string_view index, const Status& cause);

// OK if `taken` is empty, else InvalidArgument "indexer conflict: [a, b]".
Status IndexerConflictError(const std::vector<std::string>& taken);

}  // namespace kcache

#endif  // KCACHE_SRC_CORE_STORE_ERRORS_H_
