// SPDX-License-Identifier: Apache-2.0

// Access to the real control plane that tests/cluster/with-cluster starts:
// its state directory, a client for it, and helpers that change it.
#ifndef KCACHE_TESTS_INTEGRATION_CLUSTER_H_
#define KCACHE_TESTS_INTEGRATION_CLUSTER_H_

#include <map>
#include <memory>
#include <string>

#include "kcache/rest_client.h"

namespace kcache::testing {

class Cluster {
 public:
  // Reads $KCACHE_CLUSTER_DIR; fails the test (never skips) without it.
  static Cluster& Get();

  const std::string& dir() const { return dir_; }
  std::string File(const std::string& name) const { return dir_ + "/" + name; }
  const std::string& server() const { return env_.at("SERVER"); }
  const std::string& token() const { return env_.at("TOKEN"); }
  const std::string& etcd_port() const { return env_.at("ETCD_PORT"); }

  // The kubeconfig that `up` wrote: the server's CA and the admin token.
  RestConfig AdminConfig() const;
  std::shared_ptr<RestClient> Admin() const;

  // Creates a namespace named after `base` and this process (once) and
  // returns its name.
  std::string Namespace(const std::string& base) const;
  // Compacts etcd to its current revision: older resourceVersions of
  // resources outside the watch cache (configmaps) and all continue tokens
  // expire.
  void CompactEtcd() const;

 private:
  std::string dir_;
  std::map<std::string, std::string> env_;
};

}  // namespace kcache::testing

#endif  // KCACHE_TESTS_INTEGRATION_CLUSTER_H_
