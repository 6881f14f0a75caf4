// SPDX-License-Identifier: Apache-2.0

#include "kcache/leader_election.h"

#include <ctime>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/json_text.h"
#include "kcache/rest_client.h"

namespace kcache {
namespace {

// Lease times are metav1.MicroTime: RFC 3339 with microseconds, in UTC.
std::string MicroTime(std::chrono::system_clock::time_point t) {
  const auto us =
      std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(us / 1000000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char out[96];
  std::snprintf(out, sizeof out, "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(us % 1000000));
  return out;
}

// What a lease's spec says; compared whole to notice any change.
struct LeaseRecord {
  std::string holder;
  int64_t duration_seconds = 0;
  std::string acquire_time;
  std::string renew_time;
  int64_t transitions = 0;

  friend bool operator==(const LeaseRecord&, const LeaseRecord&) = default;
};

LeaseRecord RecordOf(const nlohmann::json& lease) {
  LeaseRecord r;
  auto spec = lease.find("spec");
  if (spec == lease.end() || !spec->is_object()) return r;
  auto str = [&](const char* f) {
    auto it = spec->find(f);
    return it != spec->end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  auto num = [&](const char* f) {
    auto it = spec->find(f);
    return it != spec->end() && it->is_number_integer() ? it->get<int64_t>() : int64_t{0};
  };
  r.holder = str("holderIdentity");
  r.duration_seconds = num("leaseDurationSeconds");
  r.acquire_time = str("acquireTime");
  r.renew_time = str("renewTime");
  r.transitions = num("leaseTransitions");
  return r;
}

nlohmann::json SpecOf(const LeaseRecord& r) {
  nlohmann::json spec = {{"holderIdentity", r.holder},
                         {"leaseDurationSeconds", r.duration_seconds},
                         {"leaseTransitions", r.transitions}};
  if (!r.acquire_time.empty()) spec["acquireTime"] = r.acquire_time;
  if (!r.renew_time.empty()) spec["renewTime"] = r.renew_time;
  return spec;
}

using json::Dump;

class Elector final : public LeaderElector {
 public:
  Elector(std::shared_ptr<RestClient> client, LeaderElectionConfig c)
      : client_(std::move(client)),
        c_(std::move(c)),
        ref_{{"coordination.k8s.io", "v1", "leases"}, true, c_.lease_namespace} {}

  void Run(std::stop_token stop) override {
    if (!Acquire(stop)) return;
    std::stop_source leading;
    std::jthread work([&] { c_.callbacks.on_started_leading(leading.get_token()); });
    Renew(stop);
    SetLeading(false);
    leading.request_stop();
    work.join();
    if (c_.release_on_cancel && stop.stop_requested()) Release();
    if (c_.callbacks.on_stopped_leading) c_.callbacks.on_stopped_leading();
  }

  bool IsLeader() const override {
    std::lock_guard l(mu_);
    return leading_;
  }

  std::string GetLeader() const override {
    std::lock_guard l(mu_);
    return observed_ ? observed_->holder : "";
  }

 private:
  // Tries every retry period (jittered up to 1.2x, as client-go) until it
  // holds the lease or `stop`.
  bool Acquire(std::stop_token stop) {
    std::mt19937_64 rng(std::random_device{}());
    for (;;) {
      if (stop.stop_requested()) return false;
      if (TryAcquireOrRenew()) {
        SetLeading(true);
        return true;
      }
      std::uniform_real_distribution<double> jitter(1.0, 1.2);
      const auto wait =
          std::chrono::duration_cast<std::chrono::milliseconds>(c_.retry_period * jitter(rng));
      if (!c_.clock->SleepUntil(c_.clock->Now() + wait, stop)) return false;
    }
  }

  // Renews every retry period; returns once a renewal has not succeeded
  // for renew_deadline (each request times out within retry_period), or at
  // `stop`.
  void Renew(std::stop_token stop) {
    Clock::TimePoint renewed = c_.clock->Now();
    for (;;) {
      if (!c_.clock->SleepUntil(c_.clock->Now() + c_.retry_period, stop)) return;
      if (TryAcquireOrRenew()) {
        renewed = c_.clock->Now();
      } else if (c_.clock->Now() - renewed >= c_.renew_deadline) {
        return;
      }
    }
  }

  // client-go's tryAcquireOrRenew: takes or renews the lease if it is free,
  // ours, or expired by our clock; false otherwise or on any error. Then
  // tells on_new_leader of a new holder it saw.
  bool TryAcquireOrRenew() {
    const bool ok = TryAcquireOrRenewOnce();
    std::optional<std::string> announce;
    {
      std::lock_guard l(mu_);
      announce.swap(pending_leader_);
    }
    if (announce) c_.callbacks.on_new_leader(*announce);
    return ok;
  }

  bool TryAcquireOrRenewOnce() {
    const Clock::TimePoint now = c_.clock->Now();
    const std::string wall = MicroTime(std::chrono::system_clock::now());
    LeaseRecord want{c_.identity,
                     std::chrono::duration_cast<std::chrono::seconds>(c_.lease_duration).count(),
                     wall, wall, 0};
    StatusOr<ObjectPtr> got = client_->Get(ref_, c_.lease_name);
    if (!got.ok()) {
      if (!got.status().IsNotFound()) return false;
      nlohmann::json lease = {
          {"apiVersion", "coordination.k8s.io/v1"},
          {"kind", "Lease"},
          {"metadata", {{"name", c_.lease_name}, {"namespace", c_.lease_namespace}}},
          {"spec", SpecOf(want)}};
      if (!client_->Create(ref_, Dump(lease)).ok()) return false;
      Observe(want, now);
      return true;
    }
    StatusOr<nlohmann::json> doc = (*got)->Document();
    if (!doc.ok()) return false;
    const LeaseRecord old = RecordOf(*doc);
    Clock::TimePoint observed_at;
    {
      std::lock_guard l(mu_);
      if (!observed_ || !(*observed_ == old)) {
        Changed(old);
        observed_ = old;
        observed_time_ = now;
      }
      observed_at = observed_time_;
    }
    const bool ours = old.holder == c_.identity;
    if (!old.holder.empty() && !ours &&
        observed_at + std::chrono::seconds(old.duration_seconds) > now) {
      return false;  // held by another, not expired
    }
    if (ours) {
      want.acquire_time = old.acquire_time;
      want.transitions = old.transitions;
    } else {
      want.transitions = old.transitions + 1;
    }
    (*doc)["spec"] = SpecOf(want);
    // Carries the resourceVersion read: a concurrent change is a Conflict.
    if (!client_->Update(ref_, Dump(*doc)).ok()) return false;
    Observe(want, now);
    return true;
  }

  // Gives the lease up: empty holder, one-second duration.
  void Release() {
    StatusOr<ObjectPtr> got = client_->Get(ref_, c_.lease_name);
    if (!got.ok()) return;
    StatusOr<nlohmann::json> doc = (*got)->Document();
    if (!doc.ok() || RecordOf(*doc).holder != c_.identity) return;
    LeaseRecord gone = RecordOf(*doc);
    gone.holder = "";
    gone.duration_seconds = 1;
    gone.renew_time = MicroTime(std::chrono::system_clock::now());
    (*doc)["spec"] = SpecOf(gone);
    (void)client_->Update(ref_, Dump(*doc));
  }

  void Observe(const LeaseRecord& r, Clock::TimePoint now) {
    std::lock_guard l(mu_);
    if (!observed_ || observed_->holder != r.holder) Changed(r);
    observed_ = r;
    observed_time_ = now;
  }

  // A new holder: on_new_leader, outside the lock. REQUIRES: mu_ held.
  void Changed(const LeaseRecord& r) {
    if (r.holder.empty() || (observed_ && observed_->holder == r.holder)) return;
    if (c_.callbacks.on_new_leader) pending_leader_ = r.holder;
  }

  void SetLeading(bool leading) {
    std::lock_guard l(mu_);
    leading_ = leading;
  }

  const std::shared_ptr<RestClient> client_;
  const LeaderElectionConfig c_;
  const ResourceRef ref_;

  mutable std::mutex mu_;
  bool leading_ = false;                       // guarded by mu_
  std::optional<LeaseRecord> observed_;        // guarded by mu_
  Clock::TimePoint observed_time_;             // guarded by mu_
  std::optional<std::string> pending_leader_;  // guarded by mu_
};

}  // namespace

StatusOr<std::shared_ptr<LeaderElector>> LeaderElector::Create(const RestConfig& config,
                                                               LeaderElectionConfig election) {
  const LeaderElectionConfig& e = election;
  if (e.lease_name.empty() || e.lease_namespace.empty()) {
    return Status::InvalidArgument("leader election: the lease's namespace and name are required");
  }
  if (e.identity.empty()) return Status::InvalidArgument("leader election: identity is required");
  if (!e.callbacks.on_started_leading) {
    return Status::InvalidArgument("leader election: on_started_leading is required");
  }
  using std::chrono::milliseconds;
  if (e.lease_duration <= milliseconds(0) || e.renew_deadline <= milliseconds(0) ||
      e.retry_period <= milliseconds(0)) {
    return Status::InvalidArgument("leader election: durations must be positive");
  }
  if (e.lease_duration <= e.renew_deadline + e.retry_period) {
    return Status::InvalidArgument(
        "leader election: lease_duration must be greater than renew_deadline + retry_period");
  }
  if (e.renew_deadline.count() * 10 <= e.retry_period.count() * 12) {
    return Status::InvalidArgument(
        "leader election: renew_deadline must be greater than 1.2 * retry_period");
  }
  if (!election.clock) election.clock = Clock::Real();
  // Each request ends within a retry period and is not retried, so that a
  // leader cut off notices within renew_deadline + retry_period.
  RestClientOptions o;
  o.request_timeout = e.retry_period;
  o.connect_timeout = e.retry_period;
  o.max_retries = 0;
  KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<RestClient> client, RestClient::Create(config, o));
  return std::shared_ptr<LeaderElector>(
      std::make_shared<Elector>(std::move(client), std::move(election)));
}

}  // namespace kcache
