// SPDX-License-Identifier: Apache-2.0

// Values written the way kubectl (a Go program) writes them, so that kcache's
// output can be compared with kubectl's byte for byte.

#ifndef KCACHE_TOOLS_KCACHE_KUBECTL_GO_FORMAT_H_
#define KCACHE_TOOLS_KCACHE_KUBECTL_GO_FORMAT_H_

#include <nlohmann/json.hpp>
#include <string>

namespace kcache::tool {

// `v` as Go's encoding/json writes it: object keys sorted, <, > and & (and
// U+2028, U+2029) escaped as \u003c..., floats in Go's shortest form.
// `indent` > 0 is json.MarshalIndent with that many spaces per level,
// starting at `depth` levels; 0 is json.Marshal (compact).
std::string GoJson(const nlohmann::json& v, int indent = 0, int depth = 0);
void AppendGoJson(const nlohmann::json& v, int indent, int depth, std::string* out);

// `v` as Go's fmt prints it with %v after decoding JSON into interface{}:
// strings bare, maps as map[k:v ...] with sorted keys, arrays as [a b],
// null as <nil>.
std::string GoValue(const nlohmann::json& v);

// The kind of Go value a decoded JSON value is (interface{} holding nil,
// bool, an integer, float64, string, map or slice).
enum class GoKind { kNil, kBool, kInt, kFloat, kString, kMap, kSlice };
GoKind GoKindOf(const nlohmann::json& v);
// bool, integers, floats and strings: what Go's templates compare.
inline bool IsBasic(GoKind k) {
  return k != GoKind::kNil && k != GoKind::kMap && k != GoKind::kSlice;
}

// A float64 as Go's %v prints it (the shortest digits; an exponent below
// 1e-4 and from 1e6): 0.5, 123456, 1e+06, 1e-05.
std::string GoFloat(double d);

}  // namespace kcache::tool

#endif  // KCACHE_TOOLS_KCACHE_KUBECTL_GO_FORMAT_H_
