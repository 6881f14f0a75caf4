// SPDX-License-Identifier: Apache-2.0

// ConfigMaps in a namespace of the real kube-apiserver, and `kcache sync`
// of them as a child process: what the integration tests drive.

#ifndef KCACHE_TESTS_INTEGRATION_CONFIGMAPS_H_
#define KCACHE_TESTS_INTEGRATION_CONFIGMAPS_H_

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "integration/cluster.h"
#include "kcache/indexer.h"
#include "kcache/rest_client.h"
#include "testing/serve_fixture.h"
#include "testing/status_matchers.h"

namespace kcache::testing {

inline ResourceRef ConfigMaps(const std::string& ns) {
  return {{"", "v1", "configmaps"}, true, ns};
}

inline std::string ConfigMapJson(const std::string& name, const std::string& value,
                                 const std::string& track = "a") {
  return R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name +
         R"(","labels":{"track":")" + track + R"("}},"data":{"k":")" + value + R"("}})";
}

// The sum of the apiserver's /metrics samples of `metric` whose labels
// include verb="LIST" and resource=`resource`.
inline double ListMetric(RestClient& client, const std::string& metric,
                         const std::string& resource) {
  auto body = client.Get("/metrics");
  EXPECT_OK(body) << body.status();
  double total = 0;
  std::istringstream in(body.ok() ? *body : "");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(metric + "{", 0) != 0) continue;
    if (line.find(R"(verb="LIST")") == std::string::npos) continue;
    if (line.find(R"(resource=")" + resource + "\"") == std::string::npos) continue;
    total += std::stod(line.substr(line.rfind(' ') + 1));
  }
  return total;
}

// name -> resourceVersion of `resource`, as the API returns them now.
inline std::map<std::string, std::string> ApiState(RestClient& client,
                                                   const ResourceRef& resource) {
  std::map<std::string, std::string> out;
  auto list = client.List(resource, {});
  EXPECT_OK(list) << list.status();
  if (list.ok()) {
    for (auto& o : list->items) out[o->name()] = o->resource_version();
  }
  return out;
}

class Api {
 public:
  explicit Api(std::string ns) : ns_(std::move(ns)), client_(Cluster::Get().Admin()) {}
  void Create(const std::string& name, const std::string& value = "1") {
    auto r = client_->Do("POST", Path(""), ConfigMapJson(name, value));
    ASSERT_OK(r) << r.status();
  }
  void Update(const std::string& name, const std::string& value, const std::string& track = "a") {
    auto r = client_->Do("PUT", Path(name), ConfigMapJson(name, value, track));
    ASSERT_OK(r) << r.status();
  }
  void Delete(const std::string& name) {
    auto r = client_->Do("DELETE", Path(name));
    ASSERT_OK(r) << r.status();
  }
  // name -> resourceVersion, as the API returns them now.
  std::map<std::string, std::string> State() { return ApiState(*client_, ConfigMaps(ns_)); }
  double ListMetric(const std::string& metric) {
    return testing::ListMetric(*client_, metric, "configmaps");
  }
  const std::string& ns() const { return ns_; }
  std::shared_ptr<RestClient> client() const { return client_; }

 private:
  std::string Path(const std::string& name) const {
    return "/api/v1/namespaces/" + ns_ + "/configmaps" + (name.empty() ? "" : "/" + name);
  }
  std::string ns_;
  std::shared_ptr<RestClient> client_;
};

inline std::map<std::string, std::string> CacheState(Indexer& indexer) {
  std::map<std::string, std::string> out;
  auto all = indexer.List();
  EXPECT_OK(all) << all.status();
  if (all.ok()) {
    for (auto& o : *all) out[o->name()] = o->resource_version();
  }
  return out;
}

// Runs `kcache sync RESOURCES -n NS` in the background, stderr to a log
// file; RESOURCES is one argument or several separated by spaces.
class SyncProcess {
 public:
  SyncProcess(const std::string& ns, const std::string& cache, const std::string& log,
              const std::string& resources = "configmaps")
      : log_(log) {
    const char* bin = std::getenv("KCACHE_BIN");
    if (bin == nullptr) {
      ADD_FAILURE() << "KCACHE_BIN is not set";
      return;
    }
    pid_ = fork();
    if (pid_ == 0) {
      int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, 2);
      std::string kubeconfig = Cluster::Get().File("kubeconfig");
      std::vector<std::string> args = {bin, "sync"};
      std::istringstream names(resources);
      for (std::string r; names >> r;) args.push_back(r);
      for (const std::string& a : {std::string("-n"), ns, std::string("--kubeconfig"), kubeconfig,
                                   std::string("--cache"), cache}) {
        args.push_back(a);
      }
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(bin, argv.data());
      _exit(127);
    }
  }
  ~SyncProcess() { Kill(SIGKILL); }
  bool WaitSynced() {
    return Eventually([&] { return Log().find(": synced at") != std::string::npos; });
  }
  std::string Log() const {
    std::ifstream in(log_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  void Kill(int sig) {
    if (pid_ <= 0) return;
    kill(pid_, sig);
    int status;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }

 private:
  std::string log_;
  pid_t pid_ = -1;
};

}  // namespace kcache::testing

#endif  // KCACHE_TESTS_INTEGRATION_CONFIGMAPS_H_
