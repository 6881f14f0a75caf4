// SPDX-License-Identifier: Apache-2.0

#include "informer/reflector_impl.h"

#include <atomic>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "client/http_error.h"
#include "core/resource_version.h"
#include "informer/backoff.h"
#include "informer/read_ahead.h"
#include "informer/watch_errors.h"

namespace kcache::informer {
namespace {

// A seed for a reflector's jitter: one read of the system's entropy per
// process (opening the device costs a system call or two per reflector at a
// thousand types), then distinct per reflector.
uint64_t UnseededJitter() {
  static const uint64_t base = std::random_device{}();
  static std::atomic<uint64_t> next{0};
  return base + 0x9e3779b97f4a7c15ULL * next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

ReflectorImpl::ReflectorImpl(std::shared_ptr<ListerWatcher> lw, std::shared_ptr<ReflectorSink> sink,
                             ReflectorOptions o)
    : lw_(std::move(lw)),
      sink_(std::move(sink)),
      o_(std::move(o)),
      clock_(o_.clock ? o_.clock : Clock::Real()),
      rng_(o_.seed ? o_.seed : UnseededJitter()),
      backoff_(clock_,
               informer::BackoffOptions{o_.backoff_initial, o_.backoff_max, o_.backoff_reset,
                                        o_.backoff_factor, o_.backoff_jitter, o_.backoff_steps},
               rng_()),
      streaming_(o_.streaming_list),
      need_list_(!o_.resume),
      unavailable_(!o_.resume),
      sink_trusted_(o_.resume) {}

void ReflectorImpl::Run(std::stop_token stop) {
  started_ = clock_->Now();
  std::stop_callback cancel(stop, [this] {
    std::lock_guard l(active_mu_);
    if (active_) active_->Cancel();
  });
  std::jthread resync;
  if (o_.resync_period.count() > 0) {
    resync = std::jthread([this, stop](std::stop_token own) { ResyncLoop(stop, own); });
  }
  while (!stop.stop_requested()) {
    log_only_ = sink_failed_ = false;
    Status st = ListAndWatch(stop);
    if (stop.stop_requested()) break;
    if (!st.ok()) {
      // A 410 was said as the relist it leads to (WatchExpired), and is
      // no failure.
      if (!st.IsExpired()) {
        MarkFailing();
        Emit(ReflectorEvent::Type::kError, std::string(st.message()));
      }
      if (!log_only_ && o_.watch_error_handler) o_.watch_error_handler(st);
    }
    clock_->SleepFor(backoff_.Next(), stop);
  }
  std::shared_ptr<Clock::Timer> timer;
  {
    std::lock_guard l(mu_);
    stopping_ = true;
    timer.swap(sync_timer_);
  }
  if (timer) timer->Cancel();  // waits for a check running now
}

void ReflectorImpl::ResyncLoop(std::stop_token outer, std::stop_token own) {
  while (clock_->SleepFor(o_.resync_period, own) && !outer.stop_requested()) {
    bool open;
    {
      std::lock_guard l(mu_);
      open = watching_;
    }
    if (!open || (o_.should_resync && !o_.should_resync())) continue;
    Status st = sink_->Resync();
    if (!st.ok())
      Emit(ReflectorEvent::Type::kError, lw_->Describe() + ": resync: " + st.ToString());
  }
}

std::string ReflectorImpl::LastSyncResourceVersion() const {
  std::lock_guard l(mu_);
  return last_rv_;
}

ReflectorStats ReflectorImpl::stats() const {
  std::lock_guard l(mu_);
  return stats_;
}

Status ReflectorImpl::ListAndWatch(std::stop_token stop) {
  if (!identity_asked_ && o_.server_identity) {
    identity_asked_ = true;
    // The sink holds what a list or resume of this server gives.
    if (StatusOr<std::string> id = o_.server_identity(); id.ok()) {
      identity_ = *id;
      {
        std::lock_guard l(mu_);
        stats_.server_identity = identity_;
      }
      if (!identity_.empty() && !o_.sink_identity.empty() && identity_ != o_.sink_identity &&
          !need_list_) {
        Emit(ReflectorEvent::Type::kRelist,
             lw_->Describe() +
                 ": the server is not the cluster the store was synced from (its "
                 "identity is " +
                 identity_ + ", the store's " + o_.sink_identity +
                 "): listing from the server's current state");
        need_list_ = unavailable_ = true;
      }
    }
  }
  std::string resume = sink_->ResumeResourceVersion();
  std::unique_ptr<WatchStream> stream;
  if (need_list_ || resume.empty()) {
    KCACHE_ASSIGN_OR_RETURN(stream, ListAll(stop));
  } else if (!synced_ && !probed_) {
    SetLastRV(resume);
    Emit(ReflectorEvent::Type::kResumed,
         lw_->Describe() + ": resuming the watch from resourceVersion " + resume + " (no LIST)");
    KCACHE_RETURN_IF_ERROR(Probe(resume, stop));
    if (need_list_) {
      KCACHE_ASSIGN_OR_RETURN(stream, ListAll(stop));
    }
  } else {
    SetLastRV(resume);
  }
  return WatchLoop(std::move(stream), stop);
}

Status ReflectorImpl::Probe(const std::string& resume, std::stop_token stop) {
  auto own = [&]() -> StatusOr<std::string> {
    ListOptions o;
    o.limit = 1;
    o.cancel = stop;
    auto list = lw_->List(o);
    {
      std::lock_guard l(mu_);
      ++stats_.probes;
    }
    if (!list.ok()) return list.status();
    return list->resource_version;
  };
  StatusOr<ProbeAnswer> answer = Status::OK();
  if (o_.shared_probe) {
    answer = o_.shared_probe(own, started_);
  } else if (auto rv = own(); rv.ok()) {
    answer = ProbeAnswer{*rv, true};
  } else {
    answer = rv.status();
  }
  if (!answer.ok()) return answer.status();
  std::optional<int> cmp = Compare(resume, answer->resource_version);
  if (!answer->own && cmp && *cmp > 0) {
    // Past another collection's resourceVersion: only this collection's
    // own can tell a reset history from a numbering of its own.
    KCACHE_ASSIGN_OR_RETURN(std::string rv, own());
    answer = ProbeAnswer{std::move(rv), true};
    cmp = Compare(resume, answer->resource_version);
  }
  probed_ = true;
  target_ = answer->resource_version;
  if (cmp && *cmp > 0) {
    need_list_ = true;
    unavailable_ = true;
    Emit(ReflectorEvent::Type::kRelist,
         lw_->Describe() + ": the server is at resourceVersion " + target_ +
             ", behind the cache's " + resume +
             " (its history was reset or replaced): relisting from the server's current state");
    return Status::OK();
  }
  if (cmp && *cmp == 0) {
    MarkSynced();
    return Status::OK();
  }
  StartSyncTimer();
  return Status::OK();
}

void ReflectorImpl::StartSyncTimer() {
  if (o_.sync_quiet_period.count() <= 0) return;
  std::lock_guard l(mu_);
  if (sync_timer_ || sync_timer_started_) return;
  sync_timer_started_ = true;
  ArmSyncCheckLocked(clock_->Now() + o_.sync_quiet_period);
}

void ReflectorImpl::ArmSyncCheckLocked(Clock::TimePoint when) {
  if (stopping_) return;
  sync_timer_ = clock_->At(when, [this] { SyncCheck(); });
}

void ReflectorImpl::SyncCheck() {
  // The quiet rule holds for the resumed watch only: once a list has
  // started, only the list's end marks the sink synced.
  Clock::TimePoint due;
  {
    std::lock_guard l(mu_);
    std::shared_ptr<Clock::Timer> self = std::move(sync_timer_);  // this timer: it ran
    if (stopping_ || synced_ || quiet_rule_closed_) return;
    due = last_activity_ + o_.sync_quiet_period;
    const Clock::TimePoint now = clock_->Now();
    if (!watching_ || now < due) {
      ArmSyncCheckLocked(watching_ ? due : now + o_.sync_quiet_period);
      return;
    }
  }
  if (!quiet_rule_closed_.exchange(true)) MarkSynced();
}

StatusOr<std::unique_ptr<WatchStream>> ReflectorImpl::Rewatch(std::stop_token stop, bool* again) {
  if (check_identity_) {
    Status st = CheckIdentity();
    if (!st.ok()) {
      SayOutageOnce("cannot ask who the server is", st);
      clock_->SleepFor(backoff_.Next(), stop);
      *again = true;
      return nullptr;
    }
    if (need_list_) {  // another cluster, which answers: list it now
      *again = true;
      return ListAll(stop);
    }
  }
  ListOptions o;
  o.resource_version = LastSyncResourceVersion();
  o.allow_watch_bookmarks = true;
  o.timeout_seconds = WatchTimeout();
  o.cancel = stop;
  auto opened = OpenWatch(o);
  {
    std::lock_guard l(mu_);
    ++stats_.watches;
  }
  if (!opened.ok()) {
    if (informer::IsRetriableWatchError(opened.status())) {
      // No answer (unlike a 429): the server may be another one when it answers.
      if (opened.status().code() != StatusCode::kResourceExhausted)
        check_identity_ = o_.server_identity != nullptr;
      SayOutageOnce("cannot open the watch", opened.status());
      clock_->SleepFor(backoff_.Next(), stop);
      *again = true;
      return nullptr;
    }
    watch_failing_ = false;
    // client-go returns the Watch call's own error from
    // ListAndWatch, 410 included: its handler hears it.
    if (opened.status().IsExpired()) WatchExpired(opened.status());
    need_list_ = true;
    return opened.status();
  }
  if (watch_failing_) {
    watch_failing_ = false;
    Emit(ReflectorEvent::Type::kResumed,
         lw_->Describe() + ": the server answers again: " + "watching from resourceVersion " +
             LastSyncResourceVersion());
  }
  return opened;
}

Status ReflectorImpl::WatchLoop(std::unique_ptr<WatchStream> stream, std::stop_token stop) {
  informer::InternalErrorRetry retry(clock_.get(), o_.max_internal_error_retry);
  for (;;) {
    if (stop.stop_requested()) return Status::OK();
    // Before the request, as client-go: a proxy may hold the headers
    // back until the first event.
    const Clock::TimePoint start = clock_->Now();
    if (!stream) {
      bool again = false;
      KCACHE_ASSIGN_OR_RETURN(stream, Rewatch(stop, &again));
      if (again) continue;
    }
    if (!SetActive(stream.get(), stop)) return Status::OK();
    uint64_t events = 0;
    Status st = Consume(&stream, stop, &events);
    SetActive(nullptr, stop);
    stream.reset();
    if (stop.stop_requested() || st.code() == StatusCode::kCancelled) return Status::OK();
    if (informer::IsClientDeadline(st)) {
      // Nothing received for the client's idle timeout (no event, no
      // bookmark), or no close by the watch's deadline: a stalled
      // connection. Watch again from where the store is.
      check_identity_ = o_.server_identity != nullptr;
      {
        std::lock_guard l(mu_);
        ++stats_.stalled_watches;
      }
      // A quiet resource stalls each idle timeout: kube-apiserver sends
      // it no bookmark until an event of it passes the watch's start.
      // Said once until a watch receives something again.
      if (events > 0) stall_said_ = false;
      if (!stall_said_) {
        stall_said_ = true;
        Emit(ReflectorEvent::Type::kError,
             lw_->Describe() + ": the watch from resourceVersion " + LastSyncResourceVersion() +
                 " stalled (" + std::string(st.message()) +
                 "): watching again (said again once a watch receives something)");
      }
      continue;
    }
    if (events > 0) stall_said_ = false;
    const bool very_short = events == 0 && clock_->Now() - start < std::chrono::seconds(1);
    if (st.ok()) {
      if (very_short) {
        need_list_ = true;
        return LogOnly(Status::Unavailable(
            "very short watch: " + lw_->Describe() +
            ": Unexpected watch close - watch lasted less than a second and no items received"));
      }
      continue;  // the server's timeout: watch again from the last RV
    }
    if (st.code() == StatusCode::kUnavailable && st.http_error() == nullptr) {
      // The stream broke (client-go: unexpected EOF): watch again, once
      // the server is known to be the same one (it may have restarted).
      // One that broke at once with nothing is watched again after
      // backoff, not in a tight loop against a server that cuts them all.
      check_identity_ = o_.server_identity != nullptr;
      if (very_short) {
        Emit(ReflectorEvent::Type::kError, lw_->Describe() + ": the watch from resourceVersion " +
                                               LastSyncResourceVersion() + " broke at once (" +
                                               std::string(st.message()) +
                                               "): watching again after backoff");
        clock_->SleepFor(backoff_.Next(), stop);
      }
      continue;
    }
    retry.After(st);
    if (st.IsExpired()) {
      WatchExpired(st);
      return LogOnly(st);
    }
    if (st.code() == StatusCode::kResourceExhausted) {
      clock_->SleepFor(backoff_.Next(), stop);
      continue;
    }
    if (informer::IsInternalError(st) && retry.ShouldRetry()) continue;
    need_list_ = true;
    // An error event or a broken stream ends the watch as client-go's
    // watchHandler does (logged, not handed to its handler); the sink's
    // own failures (a store that cannot write) are handed on.
    return sink_failed_ ? st : LogOnly(st);
  }
}

Status ReflectorImpl::LogOnly(Status st) {
  log_only_ = true;
  return st;
}

void ReflectorImpl::WatchExpired(const Status& st) {
  const std::string rv = LastSyncResourceVersion();
  need_list_ = true;
  expired_ = rv;
  const bool stale_list = !listed_rv_.empty() && rv == listed_rv_;
  if (stale_list) unavailable_ = true;
  Emit(
      ReflectorEvent::Type::kRelist,
      lw_->Describe() + ": the watch from resourceVersion " + rv + " expired (" +
          std::string(st.message()) + "): relisting" +
          (stale_list ? " from the server's current state (the last list was at " + rv + ")" : ""));
}

void ReflectorImpl::MarkFailing() {
  std::lock_guard l(mu_);
  if (stats_.failing_since == Clock::TimePoint{}) stats_.failing_since = clock_->Now();
}

void ReflectorImpl::SayOutageOnce(const std::string& what, const Status& st) {
  MarkFailing();
  if (watch_failing_) return;
  watch_failing_ = true;
  Emit(ReflectorEvent::Type::kError, lw_->Describe() + ": " + what + " (" +
                                         std::string(st.message()) +
                                         "): retrying with backoff until the server answers");
}

Status ReflectorImpl::CheckIdentity() {
  StatusOr<std::string> id = o_.server_identity();
  if (!id.ok() && informer::IsRetriableWatchError(id.status())) return id.status();
  check_identity_ = false;
  if (!id.ok() || id->empty()) return Status::OK();
  if (!identity_.empty() && *id != identity_) {
    Emit(ReflectorEvent::Type::kRelist,
         lw_->Describe() + ": the server is not the one the store followed (its identity is " +
             *id + ", was " + identity_ + "): relisting from the server's current state");
    need_list_ = true;
    unavailable_ = true;
    watch_failing_ = false;  // it answers
  }
  identity_ = *id;
  return Status::OK();
}

Status ReflectorImpl::Consume(std::unique_ptr<WatchStream>* owned, const std::stop_token& stop,
                              uint64_t* count) {
  WatchStream* stream = owned->get();
  for (;;) {
    auto ev = stream->Next();
    if (!ev.ok()) return ev.status();
    if (!*ev) return Status::OK();
    std::vector<WatchEvent> batch;
    std::string rv;
    uint64_t bytes = 0;
    Status end;
    bool ended = false;
    uint64_t received = 0;  // bookmarks included
    // An event without a resourceVersion (the API allows it) is applied;
    // the resume point stays where the last one that had one put it.
    auto take = [&](WatchEvent e) {
      ++received;
      if (!Expected(e)) return;
      if (!e.object->resource_version().empty()) rv = e.object->resource_version();
      if (e.type == WatchEventType::kBookmark) return;
      bytes += e.object->byte_size();
      batch.push_back(std::move(e));
    };
    take(std::move(**ev));
    while (batch.size() < o_.max_batch && stream->Ready()) {
      auto next = stream->Next();
      if (!next.ok()) {
        end = next.status();
        break;
      }
      if (!*next) {
        ended = true;
        break;
      }
      take(std::move(**next));
    }
    size_t n = batch.size();
    if (rv.empty() && n > 0) rv = LastSyncResourceVersion();
    if (rv.empty()) {  // only skipped events
      *count += received;
      if (!end.ok()) return end;
      if (ended) return Status::OK();
      continue;
    }
    if (Status st = sink_->Apply(std::move(batch), rv); !st.ok()) {
      sink_failed_ = true;
      return st;
    }
    *count += received;
    {
      std::lock_guard l(mu_);
      last_rv_ = rv;
      stats_.events += n;
      stats_.bytes += bytes;
      last_activity_ = clock_->Now();
      stats_.last_applied = last_activity_;
    }
    if (!synced_ && probed_) {
      std::optional<int> cmp = Compare(rv, target_);
      if (cmp && *cmp >= 0) MarkSynced();
    }
    if (!end.ok()) return end;
    if (ended) return Status::OK();
    if (n >= o_.max_batch && o_.read_ahead_bytes > 0 && !read_ahead_) {
      // A full batch was waiting: a busy stream, read ahead from now on
      // (a quiet one costs no thread).
      auto ahead =
          std::make_unique<informer::ReadAheadStream>(std::move(*owned), o_.read_ahead_bytes);
      stream = ahead.get();
      *owned = std::move(ahead);
      read_ahead_ = true;
      if (!SetActive(stream, stop)) return Status::Cancelled("stopped");
    }
  }
}

StatusOr<std::unique_ptr<WatchStream>> ReflectorImpl::OpenWatch(const ListOptions& o, bool list) {
  auto opened = lw_->Watch(o);
  read_ahead_ = false;
  if (!opened.ok() || o_.read_ahead_bytes == 0 || !list) return opened;
  read_ahead_ = true;
  return std::unique_ptr<WatchStream>(
      std::make_unique<informer::ReadAheadStream>(*std::move(opened), o_.read_ahead_bytes));
}

bool ReflectorImpl::SetActive(WatchStream* stream, const std::stop_token& stop) {
  std::lock_guard l(active_mu_);
  active_ = stream;
  {
    std::lock_guard m(mu_);
    watching_ = stream != nullptr;
    last_activity_ = clock_->Now();
    if (stream) stats_.failing_since = Clock::TimePoint{};
  }
  if (stream && stop.stop_requested()) {
    active_ = nullptr;
    return false;
  }
  return true;
}

void ReflectorImpl::SetLastRV(std::string rv) {
  std::lock_guard l(mu_);
  last_rv_ = std::move(rv);
}

std::optional<int> ReflectorImpl::Compare(const std::string& a, const std::string& b) const {
  if (!o_.ordered_resource_versions) return std::nullopt;
  return CompareResourceVersions(a, b);
}

int64_t ReflectorImpl::WatchTimeout() {
  double min = static_cast<double>(std::max<int64_t>(o_.min_watch_timeout.count(), 300));
  std::uniform_real_distribution<double> u(1.0, 2.0);
  return static_cast<int64_t>(min * u(rng_));
}

bool ReflectorImpl::Expected(const WatchEvent& e) {
  if (e.type == WatchEventType::kBookmark) return true;
  const Object& o = *e.object;
  if ((o_.expected_kind.empty() || o.kind() == o_.expected_kind) &&
      (o_.expected_api_version.empty() || o.api_version() == o_.expected_api_version)) {
    return true;
  }
  {
    std::lock_guard l(mu_);
    ++stats_.skipped;
  }
  Emit(ReflectorEvent::Type::kSkipped,
       lw_->Describe() + ": expected " + o_.expected_api_version + ", Kind=" + o_.expected_kind +
           ", but watch event object had " + o.api_version() + ", Kind=" + o.kind() + " (" +
           o.namespace_() + "/" + o.name() + " not applied)");
  return false;
}

void ReflectorImpl::MarkSynced() {
  if (synced_.exchange(true)) return;
  {
    std::lock_guard l(mu_);
    stats_.last_applied = clock_->Now();  // a resumed store is current now
  }
  sink_->Synced();
  Emit(ReflectorEvent::Type::kSynced,
       lw_->Describe() + ": synced at resourceVersion " + LastSyncResourceVersion());
}

void ReflectorImpl::Emit(ReflectorEvent::Type type, std::string message) {
  if (o_.on_event) o_.on_event(ReflectorEvent{type, std::move(message)});
}

}  // namespace kcache::informer

namespace kcache {

std::unique_ptr<Reflector> Reflector::Create(std::shared_ptr<ListerWatcher> lw,
                                             std::shared_ptr<ReflectorSink> sink,
                                             ReflectorOptions options) {
  return std::make_unique<informer::ReflectorImpl>(std::move(lw), std::move(sink),
                                                   std::move(options));
}

}  // namespace kcache
