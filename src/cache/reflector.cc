// SPDX-License-Identifier: Apache-2.0

#include "kcache/reflector.h"

#include <atomic>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "cache/backoff.h"
#include "cache/events.h"
#include "cache/read_ahead.h"
#include "cache/watch_errors.h"
#include "client/http_error.h"
#include "core/resource_version.h"
#include "exec/fiber.h"
#include "util/scope_guard.h"

namespace kcache {
namespace {

// A seed for a reflector's jitter: one read of the system's entropy per
// process (opening the device costs a system call or two per reflector at a
// thousand types), then distinct per reflector.
uint64_t UnseededJitter() {
  static const uint64_t base = std::random_device{}();
  static std::atomic<uint64_t> next{0};
  return base + 0x9e3779b97f4a7c15ULL * next.fetch_add(1, std::memory_order_relaxed);
}

class ReflectorImpl final : public Reflector {
 public:
  ReflectorImpl(std::shared_ptr<ListerWatcher> lw, std::shared_ptr<ReflectorSink> sink,
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

  void Run(std::stop_token stop) override {
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

  // Calls the sink's Resync every period while a watch is open (client-go
  // resyncs only while watching, not during a list).
  void ResyncLoop(std::stop_token outer, std::stop_token own) {
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

  bool HasSynced() const override { return synced_; }
  std::string LastSyncResourceVersion() const override {
    std::lock_guard l(mu_);
    return last_rv_;
  }
  ReflectorStats stats() const override {
    std::lock_guard l(mu_);
    return stats_;
  }

 private:
  Status ListAndWatch(std::stop_token stop) {
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

  // Learns the collection's current resourceVersion with a limit=1 LIST.
  // If the resume point is there, the store is in sync; if it is past it,
  // the server's history is not the one the store followed (etcd restored
  // or replaced) and only a list from "" can tell what the server holds;
  // otherwise Consume() compares each batch with it, and a timer watches
  // for a quiet stream.
  Status Probe(const std::string& resume, std::stop_token stop) {
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

  // The quiet rule, checked on the clock's timer (no thread of its own):
  // once the resumed watch has been open and quiet for sync_quiet_period,
  // the sink is synced.
  void StartSyncTimer() {
    if (o_.sync_quiet_period.count() <= 0) return;
    std::lock_guard l(mu_);
    if (sync_timer_ || sync_timer_started_) return;
    sync_timer_started_ = true;
    ArmSyncCheckLocked(clock_->Now() + o_.sync_quiet_period);
  }

  // REQUIRES: mu_ held.
  void ArmSyncCheckLocked(Clock::TimePoint when) {
    if (stopping_) return;
    sync_timer_ = clock_->At(when, [this] { SyncCheck(); });
  }

  void SyncCheck() {
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

  // A full list into a replace session, following client-go's ladder:
  // the last resourceVersion seen, then "" once that is unavailable. A
  // streaming list that fails for another reason than 429 or a lost
  // connection is followed by a paginated LIST at once. A sink holding a
  // list cut short gets a paginated LIST, continued from its last
  // committed page where that can be. Returns the open watch stream when
  // the list was a streaming one.
  StatusOr<std::unique_ptr<WatchStream>> ListAll(std::stop_token stop) {
    quiet_rule_closed_ = true;
    bool fall_back = false;
    KCACHE_ASSIGN_OR_RETURN(std::optional<CutShortRelist> cut, sink_->GetCutShortRelist());
    std::optional<ListProgress> from;
    if (cut) from = Continuable(cut->progress);
    for (;;) {
      std::string rv = unavailable_ ? "" : LastSyncResourceVersion();
      // Whether to stream, as the server's other reflectors learned it.
      StreamingSupport::Decision decision = StreamingSupport::Decision::kStream;
      if (!from && streaming_ && !fall_back && !cut && o_.streaming_support)
        decision = o_.streaming_support->Decide(stop);
      StatusOr<std::unique_ptr<WatchStream>> result = Status::OK();
      if (from) {
        bool refused = false;
        Status st = PagedList("", stop, &*from, &refused);
        if (refused) {
          Emit(ReflectorEvent::Type::kRelist,
               lw_->Describe() + ": the server would not continue the LIST cut short (" +
                   std::string(st.message()) + "): listing from the start");
          from.reset();
          continue;
        }
        result = st.ok() ? StatusOr<std::unique_ptr<WatchStream>>(nullptr)
                         : StatusOr<std::unique_ptr<WatchStream>>(st);
      } else if (streaming_ && !fall_back && !cut &&
                 decision != StreamingSupport::Decision::kList) {
        bool refused = false;
        result = StreamingList(rv, stop, &refused,
                               decision == StreamingSupport::Decision::kTryAndReport);
        if (!result.ok() && !stop.stop_requested()) {
          const Status& st = result.status();
          if (refused) {
            streaming_ = false;
            continue;
          }
          if (!rv.empty() && informer::IsUnavailableResourceVersion(st)) {
            unavailable_ = true;  // retry at once from ""
            continue;
          }
          if (!informer::IsRetriableWatchError(st)) {
            Emit(ReflectorEvent::Type::kError, lw_->Describe() + ": the streaming list failed (" +
                                                   std::string(st.message()) +
                                                   "): falling back to LIST");
            fall_back = true;
            continue;
          }
          // 429 or no connection: client-go backs off and streams again
          // without telling its handler; so does Run here.
          return LogOnly(st);
        }
      } else {
        Status st = PagedList(rv, stop);
        result = st.ok() ? StatusOr<std::unique_ptr<WatchStream>>(nullptr)
                         : StatusOr<std::unique_ptr<WatchStream>>(st);
        if (!st.ok() && !rv.empty() && informer::IsUnavailableResourceVersion(st)) {
          unavailable_ = true;  // retry at once from ""
          continue;
        }
      }
      if (result.ok()) {
        need_list_ = false;
        unavailable_ = false;
        sink_trusted_ = true;
        expired_.clear();
        listed_rv_ = LastSyncResourceVersion();
        MarkSynced();
      }
      return result;
    }
  }

  // Where a paginated LIST stands: what ReplaceSession::Checkpoint records
  // with each page, as JSON.
  struct ListProgress {
    std::string continue_token;    // the next page's
    std::string resource_version;  // the list's
    std::string server;            // the server's identity ("" if unknown)
    std::string list;              // what was listed: lw_->Describe()
    uint64_t objects = 0;          // listed before the next page
    uint64_t bytes = 0;            // their JSON bytes
  };

  static std::string Encode(const ListProgress& p) {
    return nlohmann::json{{"continue", p.continue_token}, {"resourceVersion", p.resource_version},
                          {"server", p.server},           {"list", p.list},
                          {"objects", p.objects},         {"bytes", p.bytes}}
        .dump();
  }

  // The progress of a list cut short, if this reflector may continue it:
  // one of the same query, from the same server (as far as its identity
  // tells). Says why not, otherwise.
  std::optional<ListProgress> Continuable(const std::string& progress) {
    std::string why;
    ListProgress p;
    if (!sink_trusted_) {
      why = "the reflector was asked not to build on what the sink holds";
    } else if (progress.empty()) {
      why = "no page of it was committed";
    } else {
      // Read field by field, type checked: a damaged record is no reason
      // to stop (nlohmann's value() throws on a type it did not expect).
      const nlohmann::json j = nlohmann::json::parse(progress, nullptr, false);
      auto text = [&](const char* k) {
        auto it = j.is_object() ? j.find(k) : j.end();
        return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
      };
      auto number = [&](const char* k) {
        auto it = j.is_object() ? j.find(k) : j.end();
        return it != j.end() && it->is_number_unsigned() ? it->get<uint64_t>() : uint64_t{0};
      };
      p.continue_token = text("continue");
      p.resource_version = text("resourceVersion");
      p.server = text("server");
      p.list = text("list");
      p.objects = number("objects");
      p.bytes = number("bytes");
      if (p.continue_token.empty()) {
        why = "its progress record has no continue token, or is not one this version wrote";
      } else if (p.list != lw_->Describe()) {
        why = "it listed " + p.list;
      } else if (p.server != identity_) {
        why = "it listed the server whose identity is " +
              (p.server.empty() ? std::string("unknown") : p.server) + ", not " +
              (identity_.empty() ? std::string("this unknown one") : identity_);
      }
    }
    if (!why.empty()) {
      Emit(ReflectorEvent::Type::kRelist,
           lw_->Describe() + ": the last list was cut short and cannot be continued (" + why +
               "): listing again page by page, keeping what it wrote where it is unchanged");
      return std::nullopt;
    }
    Emit(ReflectorEvent::Type::kRelist,
         lw_->Describe() + ": continuing the LIST cut short at resourceVersion " +
             p.resource_version + " after " + std::to_string(p.objects) + " objects");
    return p;
  }

  // A paginated LIST, each page checkpointed with its continue token. At a
  // resourceVersion it asks for NotOlderThan: the server's state at or after
  // it (without the match, a paginated LIST at a resourceVersion is Exact,
  // the old state itself). A first page that is not newer than the expired
  // watch's resourceVersion shows a server that ignored the match (before
  // 1.19): Expired, so that "" follows. With `from`, it continues that list
  // instead; `*refused` tells a server that would not (the token expired or
  // is not its own).
  Status PagedList(const std::string& rv, std::stop_token stop, const ListProgress* from = nullptr,
                   bool* refused = nullptr) {
    Status failed;  // the last page request's error
    ListPager pager(
        [this, &stop, &rv, &failed](const ListOptions& o) -> StatusOr<ObjectList> {
          if (stop.stop_requested()) return Status::Cancelled("stopped");
          {
            std::lock_guard l(mu_);
            ++stats_.list_requests;
          }
          StatusOr<ObjectList> page = lw_->List(o);
          failed = page.status();
          if (page.ok() && o.continue_token.empty() && !expired_.empty() && rv == expired_) {
            std::optional<int> cmp = Compare(page->resource_version, expired_);
            if (cmp && *cmp <= 0) {
              return Status::Expired("the server listed resourceVersion " + page->resource_version +
                                     ", not newer than the expired " + expired_ +
                                     " (it ignored resourceVersionMatch)");
            }
          }
          return page;
        },
        ListPagerOptions{o_.page_size, true});
    std::unique_ptr<ReplaceSession> session;
    ListOptions o;
    o.limit = o_.page_size;
    o.cancel = stop;
    // Objects and bytes listed: by this request (n, bytes) and in all
    // (before the cut plus n, for the checkpoints).
    uint64_t n = 0, bytes = 0, n0 = 0, bytes0 = 0;
    if (from) {
      KCACHE_ASSIGN_OR_RETURN(session, sink_->ContinueReplace());
      o.continue_token = from->continue_token;
      n0 = from->objects;
      bytes0 = from->bytes;
    } else {
      // The session begins with the first page: a LIST refused outright
      // (a selector the server rejects, the server unreachable) leaves the
      // sink as it was, resume point included.
      o.resource_version = rv;
      if (!rv.empty() && rv != "0") o.resource_version_match = "NotOlderThan";
    }
    std::string list_rv;
    bool first = true, continued = from != nullptr;
    Listing(n0, bytes0);
    Status st = pager.EachListPage(
        o,
        [&](ObjectList& page) -> Status {
          if (first) list_rv = page.resource_version;
          first = false;
          if (!session) {
            KCACHE_ASSIGN_OR_RETURN(session, sink_->BeginReplace());
          }
          for (ObjectPtr& obj : page.items) {
            ++n;
            bytes += obj->byte_size();
            KCACHE_RETURN_IF_ERROR(session->Put(std::move(obj)));
          }
          Listing(n0 + n, bytes0 + bytes,
                  page.remaining_item_count && *page.remaining_item_count > 0
                      ? n0 + n + static_cast<uint64_t>(*page.remaining_item_count)
                      : 0);
          if (page.continue_token.empty()) return Status::OK();
          return session->Checkpoint(Encode(
              {page.continue_token, list_rv, identity_, lw_->Describe(), n0 + n, bytes0 + bytes}));
        },
        [&]() -> Status {
          // The token of the first page asked for: the list cut short
          // cannot go on.
          if (from && first) {
            *refused = true;
            return failed;
          }
          // A continue token expired: the pager lists everything again in
          // one request, into a new session (the old one is dropped unfinished).
          session.reset();
          n = bytes = n0 = bytes0 = 0;
          first = true;
          continued = false;
          Listing(0, 0);
          return Status::OK();
        });
    if (!st.ok()) {
      if (from && first && informer::IsRefusedAsInvalid(st)) *refused = true;
      return st;
    }
    KCACHE_ASSIGN_OR_RETURN(size_t unchanged, session->Finish(list_rv));
    if (continued) {
      std::lock_guard l(mu_);
      ++stats_.continued_lists;
    }
    const std::string how = continued ? "LIST (continued after " + std::to_string(n0) + " objects)"
                                      : std::string("LIST");
    Listed(how, n, bytes, unchanged, list_rv);
    return Status::OK();
  }

  // `report`: tell o_.streaming_support what the open gave.
  StatusOr<std::unique_ptr<WatchStream>> StreamingList(const std::string& rv, std::stop_token stop,
                                                       bool* refused, bool report) {
    ListOptions o;
    o.resource_version = rv;
    o.resource_version_match = "NotOlderThan";
    o.send_initial_events = true;
    o.allow_watch_bookmarks = true;
    o.timeout_seconds = WatchTimeout();
    o.cancel = stop;
    auto opened = OpenWatch(o, /*list=*/true);
    if (!opened.ok()) *refused = informer::IsRefusedAsInvalid(opened.status());
    if (report) {
      using Outcome = StreamingSupport::Outcome;
      o_.streaming_support->Report(opened.ok() ? Outcome::kOpened
                                   : *refused  ? Outcome::kRefused
                                               : Outcome::kUnknown);
    }
    if (!opened.ok()) return opened.status();
    {
      std::lock_guard l(mu_);
      ++stats_.watches;
    }
    std::unique_ptr<WatchStream> stream = *std::move(opened);
    if (!SetActive(stream.get(), stop)) return Status::Cancelled("stopped");
    // Stop cancels through active_: it is cleared on every return, before
    // `stream` (declared first) is destroyed or handed to the caller.
    util::ScopeGuard inactive([&] { SetActive(nullptr, stop); });
    KCACHE_ASSIGN_OR_RETURN(auto session, sink_->BeginReplace());
    uint64_t n = 0, bytes = 0;
    Listing(0, 0);
    for (;;) {
      auto ev = stream->Next();
      if (!ev.ok()) return ev.status();
      if (!*ev) {
        return Status::Unavailable(
            lw_->Describe() + ": the streaming list ended before its initial-events-end bookmark");
      }
      WatchEvent& e = **ev;
      if (e.IsInitialEventsEnd()) {
        std::string list_rv = e.object->resource_version();
        KCACHE_ASSIGN_OR_RETURN(size_t unchanged, session->Finish(list_rv));
        Listed("streaming list", n, bytes, unchanged, list_rv);
        return stream;  // the same stream goes on as a watch
      }
      if (e.type == WatchEventType::kAdded && !Expected(e)) continue;
      if (e.type != WatchEventType::kAdded) {
        // A server that ignores sendInitialEvents sends ordinary events
        // with no end bookmark.
        *refused = true;
        if (o_.streaming_support) o_.streaming_support->Report(StreamingSupport::Outcome::kRefused);
        return Status::Unimplemented(lw_->Describe() + ": the server ignored sendInitialEvents");
      }
      ++n;
      bytes += e.object->byte_size();
      Listing(n, bytes);
      KCACHE_RETURN_IF_ERROR(session->Put(std::move(e.object)));
    }
  }

  // The progress of the list in progress, for stats().
  void Listing(uint64_t n, uint64_t bytes, uint64_t expected = 0) {
    std::lock_guard l(mu_);
    stats_.listing_objects = n;
    stats_.listing_bytes = bytes;
    stats_.listing_expected = expected;
  }

  void Listed(const std::string& how, uint64_t n, uint64_t bytes, size_t unchanged,
              const std::string& rv) {
    {
      std::lock_guard l(mu_);
      stats_.listing_objects = stats_.listing_bytes = stats_.listing_expected = 0;
      ++stats_.lists;
      stats_.listed_objects += n;
      stats_.listed_bytes += bytes;
      stats_.bytes += bytes;
      stats_.last_applied = clock_->Now();
      stats_.failing_since = Clock::TimePoint{};
      stats_.server_identity = identity_;  // before kListed: its handlers read it
      last_rv_ = rv;
    }
    Emit(ReflectorEvent::Type::kListed, lw_->Describe() + ": " + how + " of " + std::to_string(n) +
                                            " objects at resourceVersion " + rv + " applied (" +
                                            std::to_string(n - std::min<uint64_t>(n, unchanged)) +
                                            " written, " + std::to_string(unchanged) +
                                            " unchanged)");
  }

  Status WatchLoop(std::unique_ptr<WatchStream> stream, std::stop_token stop) {
    informer::InternalErrorRetry retry(clock_.get(), o_.max_internal_error_retry);
    for (;;) {
      if (stop.stop_requested()) return Status::OK();
      // Before the request, as client-go: a proxy may hold the headers
      // back until the first event.
      const Clock::TimePoint start = clock_->Now();
      if (!stream) {
        if (check_identity_) {
          Status st = CheckIdentity();
          if (!st.ok()) {
            SayOutageOnce("cannot ask who the server is", st);
            clock_->SleepFor(backoff_.Next(), stop);
            continue;
          }
          if (need_list_) {  // another cluster, which answers: list it now
            KCACHE_ASSIGN_OR_RETURN(stream, ListAll(stop));
            continue;
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
            continue;
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
        stream = *std::move(opened);
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

  // Ends ListAndWatch with an error that client-go logs but does not hand
  // to its WatchErrorHandler: Run says it through on_event and backs off.
  Status LogOnly(Status st) {
    log_only_ = true;
    return st;
  }

  // A watch answered 410 Expired: the server's history no longer reaches
  // the resume point. The relist asks for a state at or after it; if the
  // resume point came from a list with nothing since, that list was the
  // stale one (a server that answered it Exact), and the relist is from "".
  // Never the same list twice. The relist follows Run's backoff.
  void WatchExpired(const Status& st) {
    const std::string rv = LastSyncResourceVersion();
    need_list_ = true;
    expired_ = rv;
    const bool stale_list = !listed_rv_.empty() && rv == listed_rv_;
    if (stale_list) unavailable_ = true;
    Emit(ReflectorEvent::Type::kRelist,
         lw_->Describe() + ": the watch from resourceVersion " + rv + " expired (" +
             std::string(st.message()) + "): relisting" +
             (stale_list ? " from the server's current state (the last list was at " + rv + ")"
                         : ""));
  }

  // Starts the current run of failures (ReflectorStats::failing_since)
  // unless one is under way; a list applied or a watch opened ends it.
  void MarkFailing() {
    std::lock_guard l(mu_);
    if (stats_.failing_since == Clock::TimePoint{}) stats_.failing_since = clock_->Now();
  }

  // Said once per outage; the retries follow client-go's backoff (0.8 s
  // doubling to 30 s), silently.
  void SayOutageOnce(const std::string& what, const Status& st) {
    MarkFailing();
    if (watch_failing_) return;
    watch_failing_ = true;
    Emit(ReflectorEvent::Type::kError, lw_->Describe() + ": " + what + " (" +
                                           std::string(st.message()) +
                                           "): retrying with backoff until the server answers");
  }

  // After an outage: asks the server's identity again. Another one than the
  // sink's means another cluster: a relist from "" follows (need_list_).
  // Returns a connection error, to be retried; an HTTP error is unknown.
  Status CheckIdentity() {
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

  // Applies a stream's events in batches until it ends; `*count` counts the
  // events received, bookmarks included.
  Status Consume(std::unique_ptr<WatchStream>* owned, const std::stop_token& stop,
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

  // Opens a watch. A streaming list (`list`) is read ahead on a thread of
  // its own unless configured not to; a watch is once it proves busy
  // (Consume).
  StatusOr<std::unique_ptr<WatchStream>> OpenWatch(const ListOptions& o, bool list = false) {
    auto opened = lw_->Watch(o);
    read_ahead_ = false;
    if (!opened.ok() || o_.read_ahead_bytes == 0 || !list) return opened;
    read_ahead_ = true;
    return std::unique_ptr<WatchStream>(
        std::make_unique<informer::ReadAheadStream>(*std::move(opened), o_.read_ahead_bytes));
  }

  // Makes `stream` the one Stop cancels. False if already stopped.
  bool SetActive(WatchStream* stream, const std::stop_token& stop) {
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

  void SetLastRV(std::string rv) {
    std::lock_guard l(mu_);
    last_rv_ = std::move(rv);
  }

  // The order of two resourceVersions, when this server promises one.
  std::optional<int> Compare(const std::string& a, const std::string& b) const {
    if (!o_.ordered_resource_versions) return std::nullopt;
    return CompareResourceVersions(a, b);
  }

  // min * U[1, 2) seconds, min at least 5 minutes (client-go's).
  int64_t WatchTimeout() {
    double min = static_cast<double>(std::max<int64_t>(o_.min_watch_timeout.count(), 300));
    std::uniform_real_distribution<double> u(1.0, 2.0);
    return static_cast<int64_t>(min * u(rng_));
  }

  // False, reporting it, for an event whose object is not of the expected
  // apiVersion and kind; bookmarks carry no kind that matters.
  bool Expected(const WatchEvent& e) {
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

  void MarkSynced() {
    if (synced_.exchange(true)) return;
    {
      std::lock_guard l(mu_);
      stats_.last_applied = clock_->Now();  // a resumed store is current now
    }
    sink_->Synced();
    Emit(ReflectorEvent::Type::kSynced,
         lw_->Describe() + ": synced at resourceVersion " + LastSyncResourceVersion());
  }

  void Emit(ReflectorEvent::Type type, std::string message) {
    if (o_.on_event) o_.on_event(ReflectorEvent{type, std::move(message)});
  }

  const std::shared_ptr<ListerWatcher> lw_;
  const std::shared_ptr<ReflectorSink> sink_;
  const ReflectorOptions o_;
  const std::shared_ptr<Clock> clock_;
  std::mt19937_64 rng_;
  informer::Backoff backoff_;

  // Reflector thread only.
  Clock::TimePoint started_;  // when Run began
  bool streaming_;
  bool need_list_;
  bool unavailable_;  // the next list is from ""
  // Whether what the sink holds may be built on: not before a first list
  // when ReflectorOptions::resume is false.
  bool sink_trusted_;
  std::string target_;  // the probe's resourceVersion
  // The resourceVersion a watch expired at, until a list succeeds.
  std::string expired_;
  // The resourceVersion of the last list applied (the resume point it set).
  std::string listed_rv_;
  // A watch could not be opened since the last one that could (said once).
  bool watch_failing_ = false;
  // A stall was said, and no watch has received anything since.
  bool stall_said_ = false;
  // server_identity: asked first; the last answer; to be asked before the
  // next watch (an outage).
  bool identity_asked_ = false;
  std::string identity_;
  bool check_identity_ = false;
  // The stream being consumed is read ahead (informer::ReadAheadStream).
  bool read_ahead_ = false;
  // The error ListAndWatch returns is one client-go only logs (LogOnly).
  bool log_only_ = false;
  // The watch ended because the sink's Apply failed.
  bool sink_failed_ = false;
  std::atomic<bool> probed_{false};
  // The quiet rule's next check; stopping_ once Run ends.
  std::shared_ptr<Clock::Timer> sync_timer_;  // guarded by mu_
  bool sync_timer_started_ = false;           // guarded by mu_
  bool stopping_ = false;                     // guarded by mu_
  // Closed by the first of: the sync timer firing, a list starting. Once a
  // list has started only its end marks the sink synced.
  std::atomic<bool> quiet_rule_closed_{false};

  std::atomic<bool> synced_{false};

  mutable std::mutex mu_;
  std::string last_rv_;             // guarded by mu_
  ReflectorStats stats_;            // guarded by mu_
  bool watching_ = false;           // guarded by mu_
  Clock::TimePoint last_activity_;  // guarded by mu_

  std::mutex active_mu_;
  WatchStream* active_ = nullptr;  // guarded by active_mu_
};

}  // namespace

std::unique_ptr<Reflector> Reflector::Create(std::shared_ptr<ListerWatcher> lw,
                                             std::shared_ptr<ReflectorSink> sink,
                                             ReflectorOptions options) {
  return std::make_unique<ReflectorImpl>(std::move(lw), std::move(sink), std::move(options));
}

}  // namespace kcache
