// SPDX-License-Identifier: Apache-2.0

// kubectl's JSONPath templates (-o jsonpath, custom-columns, --sort-by):
// text with {actions}; fields .a.b and ['a'], [i], [-1], [a:b:step], [*],
// unions [0,2], recursive descent .., the wildcard .*, filters
// [?(@.x == "y")] with == != < > <= >= or existence, literals, and
// {range ...}...{end}. Where kubectl's order is Go's random map order
// (.* and .. over objects), keys come sorted.
//
// A JsonPath is immutable after Parse; Execute may be called from several
// threads at once.

#ifndef KCACHE_TOOLS_KCACHE_KUBECTL_JSONPATH_H_
#define KCACHE_TOOLS_KCACHE_KUBECTL_JSONPATH_H_

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kcache/status_or.h"

namespace kcache::tool {

class JsonPath {
 public:
  // InvalidArgument with the parser's reason, as kubectl words it.
  static StatusOr<JsonPath> Parse(const std::string& text);

  // kubectl's RelaxedJSONPathExpression: "a.b", ".a.b", "{a.b}" and
  // "{.a.b}" all become "{.a.b}" (custom-columns and --sort-by).
  static StatusOr<std::string> Relaxed(const std::string& expression);

  // The values of each action, in template order, range bodies expanded.
  // Pointers are into `data` or into this JsonPath (literals).
  using Values = std::vector<const nlohmann::json*>;
  StatusOr<std::vector<Values>> FindResults(const nlohmann::json& data) const;

  // Appends the template's output for `data` to `out`: text as written,
  // each action's values separated by spaces, objects and arrays as compact
  // JSON. `as_json` is -o jsonpath-as-json: each action's values as an
  // indented JSON array.
  Status Execute(const nlohmann::json& data, std::string* out, bool as_json = false) const;

  // Missing keys give no value (kubectl's default) or, when false, an
  // error "NAME is not found".
  void set_allow_missing_keys(bool allow) { allow_missing_ = allow; }

  struct Node;

 private:
  std::shared_ptr<const std::vector<Node>> nodes_;
  bool allow_missing_ = true;
};

}  // namespace kcache::tool

#endif  // KCACHE_TOOLS_KCACHE_KUBECTL_JSONPATH_H_
