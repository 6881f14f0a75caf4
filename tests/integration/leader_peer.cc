// SPDX-License-Identifier: Apache-2.0

// A candidate of leader election for LeaderElectionIntegrationTest, run as
// its own process so that it can be SIGKILLed: it prints "leading ID" when
// it starts leading and "stopped ID" when it stops, and runs until SIGTERM.
//
// Usage: leader_peer KUBECONFIG NAMESPACE LEASE IDENTITY LEASE_MS RENEW_MS RETRY_MS

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <stop_token>
#include <string>

#include "kcache/exit_on_error.h"
#include "kcache/leader_election.h"
#include "kcache/signals.h"

int main(int argc, char** argv) {
  if (argc != 8) {
    std::fprintf(stderr,
                 "usage: leader_peer KUBECONFIG NAMESPACE LEASE IDENTITY LEASE_MS "
                 "RENEW_MS RETRY_MS\n");
    return 2;
  }
  std::stop_token stop = kcache::SetupSignalHandler();
  KCACHE_ASSIGN_OR_EXIT(kcache::RestConfig config, kcache::LoadKubeconfig({.path = argv[1]}));
  kcache::LeaderElectionConfig e;
  e.lease_namespace = argv[2];
  e.lease_name = argv[3];
  e.identity = argv[4];
  e.lease_duration = std::chrono::milliseconds(std::atoi(argv[5]));
  e.renew_deadline = std::chrono::milliseconds(std::atoi(argv[6]));
  e.retry_period = std::chrono::milliseconds(std::atoi(argv[7]));
  const std::string id = e.identity;
  e.callbacks.on_started_leading = [id](std::stop_token leading) {
    std::printf("leading %s\n", id.c_str());
    std::fflush(stdout);
    std::mutex mu;
    std::condition_variable_any cv;
    std::unique_lock l(mu);
    cv.wait(l, leading, [] { return false; });
  };
  e.callbacks.on_stopped_leading = [id] {
    std::printf("stopped %s\n", id.c_str());
    std::fflush(stdout);
  };
  KCACHE_ASSIGN_OR_EXIT(auto elector, kcache::LeaderElector::Create(config, std::move(e)));
  elector->Run(stop);
  return 0;
}
