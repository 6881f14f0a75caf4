// SPDX-License-Identifier: Apache-2.0

// The flags every Kubernetes client takes, in kubectl's spelling, and the
// RestConfig they name: a program's main() need not parse them itself.
//
// Thread-safety: plain functions.

#ifndef KCACHE_CLIENT_FLAGS_H_
#define KCACHE_CLIENT_FLAGS_H_

#include <string>
#include <vector>

#include "kcache/export.h"
#include "kcache/rest_config.h"
#include "kcache/status_or.h"

namespace kcache {

// Takes --kubeconfig, --context, --server (-s) and --namespace (-n), each
// as "--flag value" or "--flag=value", out of `args` (the others stay, in
// order: the program's own flags and arguments). InvalidArgument "flag
// needs an argument: --kubeconfig" for a flag at the end without a value.
KCACHE_EXPORT StatusOr<KubeconfigOptions> TakeClientFlags(std::vector<std::string>* args);

// TakeClientFlags, then LoadClientConfig: the configuration kubectl would
// use with those flags (in a pod without a kubeconfig, the in-cluster one).
KCACHE_EXPORT StatusOr<RestConfig> RestConfigFromFlags(std::vector<std::string>* args);

}  // namespace kcache

#endif  // KCACHE_CLIENT_FLAGS_H_
