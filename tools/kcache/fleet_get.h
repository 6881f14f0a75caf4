// SPDX-License-Identifier: Apache-2.0

// `kcache get --postgres URL`: reads the objects that kcache sync
// --postgres fed into a fleet database (docs/fleet.md), for one cluster
// (--cluster) or all (--all-clusters), and prints them as kubectl get
// prints a cluster's: tables (-o wide too) with a CLUSTER column first,
// -o name, and -o json|yaml Lists whose objects carry the annotation
// kcache.io/cluster.

#ifndef KCACHE_TOOLS_KCACHE_FLEET_GET_H_
#define KCACHE_TOOLS_KCACHE_FLEET_GET_H_

#include <iosfwd>

#include "kcache/status_or.h"
#include "tools/kcache/get.h"

namespace kcache::tool {

// RunGet for options.postgres: the same exit codes and messages.
StatusOr<int> RunFleetGet(const GetOptions& options, std::ostream& out, std::ostream& err);

}  // namespace kcache::tool

#endif  // KCACHE_TOOLS_KCACHE_FLEET_GET_H_
