// SPDX-License-Identifier: Apache-2.0

// Leader election over a coordination.k8s.io/v1 Lease, as client-go's
// tools/leaderelection: of the candidates that share a lease, one leads at a
// time; it renews the lease every retry period, and stops leading when it
// has not renewed it for renew_deadline, which is shorter than the
// lease_duration another candidate waits (on its own clock, from when it
// last saw the lease change) before taking it. So a leader cut off from the
// API server stops acting before another can start.
//
// Thread-safety: a LeaderElector is safe for concurrent use; Run is called
// once, and the callbacks run on Run's threads, under no lock of ours.

#ifndef KCACHE_LEADER_ELECTION_H_
#define KCACHE_LEADER_ELECTION_H_

#include <chrono>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>

#include "kcache/clock.h"
#include "kcache/export.h"
#include "kcache/rest_config.h"
#include "kcache/status_or.h"

namespace kcache {

struct KCACHE_EXPORT LeaderCallbacks {
  // Called on a thread of its own once this candidate leads; `stop` is
  // requested when it stops leading (lease lost or Run stopped), and the
  // callback must then return promptly: Run waits for it. Required.
  std::function<void(std::stop_token stop)> on_started_leading;
  // Called after on_started_leading returned, when this candidate stops
  // leading. Optional. (client-go calls it also when a candidate that never
  // led stops; here it follows only a lead.)
  std::function<void()> on_stopped_leading;
  // Called with the identity of each new leader this candidate observes,
  // itself included. Optional.
  std::function<void(const std::string& identity)> on_new_leader;
};

struct KCACHE_EXPORT LeaderElectionConfig {
  // The Lease "namespace/name" the candidates share, created if absent.
  std::string lease_namespace{};
  std::string lease_name{};
  // Unique among the candidates: hostname and pid, or a pod name.
  std::string identity{};
  // How long a lease held by another is respected after it was last seen
  // to change. Default: 15 s (client-go's common choice).
  std::chrono::milliseconds lease_duration{std::chrono::seconds(15)};
  // How long a leader keeps trying to renew before it stops leading; below
  // lease_duration less retry_period. Default: 10 s.
  std::chrono::milliseconds renew_deadline{std::chrono::seconds(10)};
  // Between tries to acquire or renew; also each request's timeout.
  // Default: 2 s.
  std::chrono::milliseconds retry_period{std::chrono::seconds(2)};
  // On stopping (Run's stop requested), give the lease up at once
  // (holderIdentity emptied, leaseDurationSeconds 1) so that another
  // candidate need not wait out the lease. Default: false (client-go's).
  bool release_on_cancel = false;
  LeaderCallbacks callbacks{};
  // Times the lease's expiry. Default: Clock::Real().
  std::shared_ptr<Clock> clock{};
};

class KCACHE_EXPORT LeaderElector {
 public:
  // InvalidArgument, naming the field, for a missing lease name, identity
  // or on_started_leading, a duration that is not positive,
  // lease_duration <= renew_deadline + retry_period, or renew_deadline <=
  // 1.2 * retry_period (client-go's jitter bound).
  static StatusOr<std::shared_ptr<LeaderElector>> Create(const RestConfig& config,
                                                         LeaderElectionConfig election);
  virtual ~LeaderElector() = default;

  // Campaigns until this candidate leads or `stop` is requested, then
  // leads (on_started_leading) until it cannot renew within renew_deadline
  // or `stop` is requested; then returns, after on_stopped_leading. Once.
  virtual void Run(std::stop_token stop) = 0;
  virtual bool IsLeader() const = 0;
  // The holder last observed; "" if none yet.
  virtual std::string GetLeader() const = 0;
};

}  // namespace kcache

#endif  // KCACHE_LEADER_ELECTION_H_
