// Output of kcache's inspection commands in kubectl's formats.

#ifndef KCACHE_TOOLS_KCACHE_PRINTERS_H_
#define KCACHE_TOOLS_KCACHE_PRINTERS_H_

#include <chrono>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "kcache/object.h"

namespace kcache::tool {

// `doc` as YAML the way kubectl -o yaml prints it: keys sorted, two-space
// indentation, sequences at their key's indentation, strings quoted only
// where YAML would read them as something else.
void PrintYaml(const nlohmann::json& doc, std::ostream& out);

// A JSON scalar as one line: strings quoted, others as JSON writes them.
std::string Scalar(const nlohmann::json& v);

// "kind.group" in lower case, as -o name prints it: "pod", "deployment.apps".
std::string KindPath(const Object& o);

// kubectl's AGE column for a creationTimestamp: "45s", "12m", "3h", "8d".
std::string Age(const std::string& timestamp, std::chrono::system_clock::time_point now);
std::string Age(std::chrono::system_clock::duration d);

// Left-aligned columns, three spaces apart, as kubectl prints tables.
void PrintTable(const std::vector<std::vector<std::string>>& rows, std::ostream& out);

// A JSONPath of kubectl's --sort-by ("{.metadata.name}", ".spec.nodeName",
// "{.spec.containers[0].image}") as JSON pointer steps.
StatusOr<nlohmann::json::json_pointer> ParseFieldPath(std::string path);

}  // namespace kcache::tool

#endif  // KCACHE_TOOLS_KCACHE_PRINTERS_H_
