// SPDX-License-Identifier: Apache-2.0

// `kcache serve`: the project's own list/watch server on loopback, with a
// synthetic cluster, churn and fault injection. docs/serve.md describes
// what it serves and how it differs from kube-apiserver.
//
// Thread-safety: Start and Stop from one thread; state() is thread-safe.

#ifndef KCACHE_TOOLS_KCACHE_TESTCLUSTER_SERVER_H_
#define KCACHE_TOOLS_KCACHE_TESTCLUSTER_SERVER_H_

#include <iosfwd>
#include <memory>
#include <string>

#include "kcache/status_or.h"
#include "tools/kcache/apiserver/http_server.h"
#include "tools/kcache/testcluster/api.h"
#include "tools/kcache/testcluster/cluster_state.h"
#include "tools/kcache/testcluster/synthetic.h"

namespace kcache::serve {

struct ServeOptions {
  std::string listen = "127.0.0.1:8080";
  SyntheticOptions cluster;
  ChurnOptions churn;
  // Events per resource type in the watch window (the watch cache's
  // capacity): a watch from before them gets 410 Expired.
  int64_t history = 10000;
  // Events per resource type whose object versions stay listable exactly
  // (etcd's revisions before a compaction); a list or continue token from
  // before them gets 410. At least `history`; 0: twice `history`.
  int64_t list_history = 0;
  ApiOptions api;
};

class Server {
 public:
  // Loads the synthetic cluster, starts churn and listens.
  static StatusOr<std::unique_ptr<Server>> Start(const ServeOptions& options);
  ~Server();

  std::string url() const { return http_->url(); }
  ClusterState& state() { return *state_; }
  Api& api() { return *api_; }

  // Ends every watch and connection and stops the churn. Idempotent.
  void Stop();

 private:
  Server() = default;
  std::unique_ptr<ClusterState> state_;
  std::unique_ptr<Api> api_;
  std::unique_ptr<Churn> churn_;
  std::unique_ptr<serve::http::Server> http_;
};

// Runs a server until SIGINT or SIGTERM, reporting to `out`.
Status RunServe(const ServeOptions& options, std::ostream& out);

}  // namespace kcache::serve

#endif  // KCACHE_TOOLS_KCACHE_TESTCLUSTER_SERVER_H_
