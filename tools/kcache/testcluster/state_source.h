// SPDX-License-Identifier: Apache-2.0

// StateSource: a ClusterState as the API front end lists and watches it.
//
// Thread-safety: thread-safe, as ClusterState.

#ifndef KCACHE_TOOLS_KCACHE_TESTCLUSTER_STATE_SOURCE_H_
#define KCACHE_TOOLS_KCACHE_TESTCLUSTER_STATE_SOURCE_H_

#include <chrono>
#include <cstdint>
#include <memory>

#include "tools/kcache/apiserver/api_source.h"
#include "tools/kcache/testcluster/cluster_state.h"

namespace kcache::serve {

class StateSource : public ApiSource {
 public:
  explicit StateSource(ClusterState* state) : state_(state) {}

  // Reads as etcd and the watch cache answer: an exact version in the
  // future is etcd's error (FailedPrecondition), a newer one to start from
  // is not waited for (DeadlineExceeded at once).
  StatusOr<std::unique_ptr<ListCursor>> OpenList(int type, const ListRequest& request) override;
  Status Reach(int type, uint64_t rv, uint64_t* current) override;
  StatusOr<ChangeBatch> Changes(int type, uint64_t after, size_t max,
                                std::chrono::steady_clock::time_point until) override;

 private:
  ClusterState* const state_;
};

}  // namespace kcache::serve

#endif  // KCACHE_TOOLS_KCACHE_TESTCLUSTER_STATE_SOURCE_H_
