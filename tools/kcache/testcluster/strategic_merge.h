// SPDX-License-Identifier: Apache-2.0

// Strategic merge patches, as kube-apiserver applies them to the built-in
// types the synthetic cluster serves (pods, configmaps, namespaces, nodes):
// kubectl sends one for `patch` (its default type), `edit` and
// client-side `apply`, and the synthetic cluster applies the same merge to
// a server-side apply.
//
// Maps merge as in a JSON merge patch (a null deletes). A list merges
// element by element where its field has a merge key in the built-in types
// (containers by name, env by name, ports by containerPort, conditions by
// type, ...) and as a set where it is a primitive list with the merge
// strategy (finalizers); other lists are replaced. The directives are
// kube-apiserver's: $patch (replace, delete, merge), $retainKeys,
// $setElementOrder/FIELD and $deleteFromPrimitiveList/FIELD. The merge keys
// are looked up by field name alone, which the served types allow: no two
// of their fields of one name have different keys.

#ifndef KCACHE_TOOLS_KCACHE_TESTCLUSTER_STRATEGIC_MERGE_H_
#define KCACHE_TOOLS_KCACHE_TESTCLUSTER_STRATEGIC_MERGE_H_

#include <nlohmann/json.hpp>

#include "kcache/status_or.h"

namespace kcache::serve {

// `target` with `patch` applied. InvalidArgument for a patch that is not an
// object or a directive kube-apiserver would refuse (an unknown $patch, an
// element without its merge key).
StatusOr<nlohmann::ordered_json> StrategicMerge(const nlohmann::ordered_json& target,
                                                const nlohmann::ordered_json& patch);

}  // namespace kcache::serve

#endif  // KCACHE_TOOLS_KCACHE_TESTCLUSTER_STRATEGIC_MERGE_H_
