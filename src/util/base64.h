// SPDX-License-Identifier: Apache-2.0

// Base64 (RFC 4648, standard alphabet, padded), as kubeconfig *-data fields
// and HTTP basic authentication use it.
#ifndef KCACHE_SRC_UTIL_BASE64_H_
#define KCACHE_SRC_UTIL_BASE64_H_

#include <optional>
#include <string>
#include <string_view>

namespace kcache {

std::string Base64Encode(std::string_view bytes);

// nullopt if `text` is not valid base64. Whitespace (line breaks) is ignored.
std::optional<std::string> Base64Decode(std::string_view text);

}  // namespace kcache

#endif  // KCACHE_SRC_UTIL_BASE64_H_
