// SPDX-License-Identifier: Apache-2.0

// Locating errors in malformed JSON.

#ifndef KCACHE_SRC_CORE_JSON_ERROR_H_
#define KCACHE_SRC_CORE_JSON_ERROR_H_

#include <cstddef>
#include <string_view>

#include "kcache/status.h"

namespace kcache::json {

// Returns InvalidArgument "malformed JSON at byte N: <reason>" for the first
// error in `text`, where N is a 0-based offset into `text` plus `base_offset`
// (the position of `text` within a larger stream). Returns OK if `text` is
// valid JSON. Slow path: call it only once a fast parser has failed.
Status DescribeJsonError(std::string_view text, size_t base_offset = 0);

}  // namespace kcache::json

#endif  // KCACHE_SRC_CORE_JSON_ERROR_H_
