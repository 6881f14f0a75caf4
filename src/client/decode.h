// SPDX-License-Identifier: Apache-2.0

// Decoding API server responses: list pages and watch events, located by
// simdjson's on-demand parser and each object validated by Object::Parse.
#ifndef KCACHE_SRC_CLIENT_DECODE_H_
#define KCACHE_SRC_CLIENT_DECODE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "kcache/list.h"
#include "kcache/object.h"
#include "kcache/status_or.h"
#include "kcache/watch.h"

namespace kcache::rest {

// Decodes a LIST response. Items without kind/apiVersion (as in built-in
// list responses) get them from the list ("PodList" -> "Pod").
StatusOr<ObjectList> DecodeList(std::string body, const ParseOptions& options);

// Decodes one watch frame (one JSON object) that began at `stream_offset`.
// An ERROR event becomes its Status (see StatusFromErrorEvent), prefixed by
// `what`; an unknown type is InvalidArgument.
StatusOr<WatchEvent> DecodeWatchEvent(std::string_view frame, uint64_t stream_offset,
                                      const ParseOptions& options, std::string_view what);

}  // namespace kcache::rest

#endif  // KCACHE_SRC_CLIENT_DECODE_H_
