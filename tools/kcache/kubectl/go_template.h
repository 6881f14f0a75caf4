// SPDX-License-Identifier: Apache-2.0

// kubectl's -o go-template: the part of Go's text/template that kubectl
// users write, over an object as kubectl's printer gives it (decoded JSON:
// objects are maps, integers int64, other numbers float64).
//
// Supported: text with {{- and -}} trimming, comments, actions with
// pipelines, fields (.a.b, $x.a, (pipeline).a), variables ($, $x := and
// $x =), if / else if / else, range (arrays, and maps by sorted key;
// with $i, $e :=; else; break and continue), with / else with / else,
// literals (strings, raw strings, characters, numbers, true, false, nil),
// define, template and block, and the functions and, or, not, eq, ne, lt,
// le, gt, ge, index, len, print, printf, println, and kubectl's base64decode
// and exists. Parse and execution errors are worded as Go words them.
//
// Thread-safety: a parsed template is immutable; Execute may run on several
// threads at once.

#ifndef KCACHE_TOOLS_KCACHE_KUBECTL_GO_TEMPLATE_H_
#define KCACHE_TOOLS_KCACHE_KUBECTL_GO_TEMPLATE_H_

#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "kcache/status_or.h"

namespace kcache::tool {

class GoTemplate {
 public:
  // InvalidArgument "template: output:LINE: MESSAGE" for a malformed template.
  static StatusOr<GoTemplate> Parse(std::string_view text);

  // Appends the template's output for `data` to `out`. InvalidArgument
  // "template: output:LINE:COL: executing "output" at <NODE>: MESSAGE" when
  // execution fails; what was written before the failure stays in `out`.
  Status Execute(const nlohmann::json& data, std::string* out) const;

  struct Node;

 private:
  GoTemplate(std::shared_ptr<const Node> root, std::shared_ptr<const std::string> source)
      : root_(std::move(root)), source_(std::move(source)) {}
  std::shared_ptr<const Node> root_;
  std::shared_ptr<const std::string> source_;  // for the line and column of errors
};

}  // namespace kcache::tool

#endif  // KCACHE_TOOLS_KCACHE_KUBECTL_GO_TEMPLATE_H_
