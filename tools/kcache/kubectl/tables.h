// SPDX-License-Identifier: Apache-2.0

// The tables `kcache get` prints: the columns and cells the API server's
// table printers give kubectl (Kubernetes 1.20's, the version the golden
// test runs) for pods, nodes, namespaces, deployments, replicasets,
// services, configmaps, secrets and events; a custom resource's declared
// columns; NAME and AGE for everything else.

#ifndef KCACHE_TOOLS_KCACHE_KUBECTL_TABLES_H_
#define KCACHE_TOOLS_KCACHE_KUBECTL_TABLES_H_

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kcache/cache.h"
#include "kcache/status_or.h"
#include "tools/kcache/kubectl/jsonpath.h"

namespace kcache::tool {

struct TableColumn {
  std::string name;  // as the server names it: "Restarts", "Port(s)"
  int priority = 0;  // > 0: only with -o wide
};

// How one resource's objects become table rows. Immutable; thread-safe.
class TableSpec {
 public:
  // The spec for the resource `info` describes (kind and group decide).
  static StatusOr<TableSpec> For(const ResourceInfo& info);

  const std::vector<TableColumn>& columns() const { return columns_; }
  // The column holding the object's name (kubectl prefixes it with the
  // kind when several resources print): NAME, or an event's wide NAME.
  size_t name_column() const { return kind_ == Kind::kEvent ? 9 : 0; }

  // One cell per column (wide ones included), as the server's Table would
  // hold them: strings, integers, floats, booleans, or null for nothing.
  StatusOr<std::vector<nlohmann::json>> Cells(const nlohmann::json& object,
                                              std::chrono::system_clock::time_point now) const;

 private:
  enum class Kind {
    kDefault,
    kPod,
    kNode,
    kNamespace,
    kDeployment,
    kReplicaSet,
    kService,
    kConfigMap,
    kSecret,
    kEvent,
    kCustom
  };
  Kind kind_ = Kind::kDefault;
  std::vector<TableColumn> columns_;
  std::vector<PrinterColumn> custom_;  // kCustom: the columns after NAME
  std::vector<JsonPath> paths_;        // kCustom: one per custom_ column
};

// kubectl's AGE: Kubernetes' duration.HumanDuration ("45s", "3m20s", "5h",
// "2d3h", "3y"), "<invalid>" for more than a second in the future.
std::string HumanDuration(std::chrono::system_clock::duration d);

// The age of an RFC 3339 timestamp at `now`; "<unknown>" if unset.
std::string TimestampAge(const nlohmann::json& timestamp,
                         std::chrono::system_clock::time_point now);

}  // namespace kcache::tool

#endif  // KCACHE_TOOLS_KCACHE_KUBECTL_TABLES_H_
