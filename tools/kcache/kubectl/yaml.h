// SPDX-License-Identifier: Apache-2.0

// JSON documents as YAML the way kubectl -o yaml writes them (Go's yaml.v2
// encoder behind sigs.k8s.io/yaml): keys in yaml.v2's natural order
// ("a2" before "a10", digits and punctuation before letters), two-space
// indentation, sequences in mappings not indented, strings plain where they
// would read back as the same string, else single- or double-quoted or as a
// literal block, and long plain or quoted strings folded at spaces past
// column 80.

#ifndef KCACHE_TOOLS_KCACHE_KUBECTL_YAML_H_
#define KCACHE_TOOLS_KCACHE_KUBECTL_YAML_H_

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace kcache::tool {

// Appends `doc` (an object, array or scalar) as a YAML document.
void AppendYaml(const nlohmann::json& doc, std::string* out);

// Appends `doc` as one item of a block sequence at indent 0 ("- " first),
// for printing a list's items one at a time.
void AppendYamlItem(const nlohmann::json& doc, std::string* out);

// yaml.v2's order of mapping keys.
bool YamlKeyLess(std::string_view a, std::string_view b);

}  // namespace kcache::tool

#endif  // KCACHE_TOOLS_KCACHE_KUBECTL_YAML_H_
