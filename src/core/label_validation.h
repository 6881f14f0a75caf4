// SPDX-License-Identifier: Apache-2.0

// Validation of label keys and values (apimachinery util/validation rules).

#ifndef KCACHE_SRC_CORE_LABEL_VALIDATION_H_
#define KCACHE_SRC_CORE_LABEL_VALIDATION_H_

#include <string>
#include <string_view>
#include <vector>

namespace kcache::labels {

// Each returns the reasons `s` is invalid; empty if valid.
std::vector<std::string> IsQualifiedName(std::string_view s);
std::vector<std::string> IsValidLabelValue(std::string_view s);
std::vector<std::string> IsDNS1123Subdomain(std::string_view s);

// "<path>: Invalid value: <value>: <reasons joined by '; '>".
std::string InvalidField(std::string_view path, std::string_view quoted_value,
                         const std::vector<std::string>& reasons);

// `"s"` with quotes and backslashes escaped, for error messages.
std::string Quote(std::string_view s);

}  // namespace kcache::labels

#endif  // KCACHE_SRC_CORE_LABEL_VALIDATION_H_
