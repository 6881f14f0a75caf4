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

// `doc` as YAML the way kubectl -o yaml prints it (see yaml.h).
void PrintYaml(const nlohmann::json& doc, std::ostream& out);

// "kind.group" in lower case, as -o name prints it: "pod", "deployment.apps".
std::string KindPath(const Object& o);

// kubectl's AGE column for a creationTimestamp: "45s", "3m20s", "5h", "8d"
// (tables.h's HumanDuration); "<unknown>" if it does not parse.
std::string Age(const std::string& timestamp, std::chrono::system_clock::time_point now);

// Left-aligned columns, three spaces apart, as kubectl prints tables.
void PrintTable(const std::vector<std::vector<std::string>>& rows, std::ostream& out);

}  // namespace kcache::tool

#endif  // KCACHE_TOOLS_KCACHE_PRINTERS_H_
