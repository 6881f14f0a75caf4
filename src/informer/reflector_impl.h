// SPDX-License-Identifier: Apache-2.0

// The reflector's one implementation. Its definitions are in two files along
// the seam between its two jobs: reflector_list.cc lists (client-go's ladder
// of streaming, paginated and continued lists into a replace session), and
// reflector.cc runs the loop around them (resume, probe, watch, backoff).
//
// Thread-safety: as Reflector's; the members say which lock guards them.
#ifndef KCACHE_SRC_INFORMER_REFLECTOR_IMPL_H_
#define KCACHE_SRC_INFORMER_REFLECTOR_IMPL_H_

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <stop_token>
#include <string>

#include "informer/backoff.h"
#include "kcache/clock.h"
#include "kcache/reflector.h"

namespace kcache::informer {

class ReflectorImpl final : public Reflector {
 public:
  ReflectorImpl(std::shared_ptr<ListerWatcher> lw, std::shared_ptr<ReflectorSink> sink,
                ReflectorOptions o);

  void Run(std::stop_token stop) override;

  // Calls the sink's Resync every period while a watch is open (client-go
  // resyncs only while watching, not during a list).
  void ResyncLoop(std::stop_token outer, std::stop_token own);

  bool HasSynced() const override { return synced_; }
  std::string LastSyncResourceVersion() const override;
  ReflectorStats stats() const override;

 private:
  Status ListAndWatch(std::stop_token stop);

  // Learns the collection's current resourceVersion with a limit=1 LIST.
  // If the resume point is there, the store is in sync; if it is past it,
  // the server's history is not the one the store followed (etcd restored
  // or replaced) and only a list from "" can tell what the server holds;
  // otherwise Consume() compares each batch with it, and a timer watches
  // for a quiet stream.
  Status Probe(const std::string& resume, std::stop_token stop);

  // The quiet rule, checked on the clock's timer (no thread of its own):
  // once the resumed watch has been open and quiet for sync_quiet_period,
  // the sink is synced.
  void StartSyncTimer();

  // REQUIRES: mu_ held.
  void ArmSyncCheckLocked(Clock::TimePoint when);

  void SyncCheck();

  // Lists: reflector_list.cc.

  // A full list into a replace session, following client-go's ladder:
  // the last resourceVersion seen, then "" once that is unavailable. A
  // streaming list that fails for another reason than 429 or a lost
  // connection is followed by a paginated LIST at once. A sink holding a
  // list cut short gets a paginated LIST, continued from its last
  // committed page where that can be. Returns the open watch stream when
  // the list was a streaming one.
  StatusOr<std::unique_ptr<WatchStream>> ListAll(std::stop_token stop);

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

  static std::string Encode(const ListProgress& p);

  // The progress of a list cut short, if this reflector may continue it:
  // one of the same query, from the same server (as far as its identity
  // tells). Says why not, otherwise.
  std::optional<ListProgress> Continuable(const std::string& progress);

  // A paginated LIST, each page checkpointed with its continue token. At a
  // resourceVersion it asks for NotOlderThan: the server's state at or after
  // it (without the match, a paginated LIST at a resourceVersion is Exact,
  // the old state itself). A first page that is not newer than the expired
  // watch's resourceVersion shows a server that ignored the match (before
  // 1.19): Expired, so that "" follows. With `from`, it continues that list
  // instead; `*refused` tells a server that would not (the token expired or
  // is not its own).
  Status PagedList(const std::string& rv, std::stop_token stop, const ListProgress* from = nullptr,
                   bool* refused = nullptr);

  // `report`: tell o_.streaming_support what the open gave.
  StatusOr<std::unique_ptr<WatchStream>> StreamingList(const std::string& rv, std::stop_token stop,
                                                       bool* refused, bool report);

  // The progress of the list in progress, for stats().
  void Listing(uint64_t n, uint64_t bytes, uint64_t expected = 0);

  void Listed(const std::string& how, uint64_t n, uint64_t bytes, size_t unchanged,
              const std::string& rv);

  // Watches and the loop around them: reflector.cc.

  // The next watch, from the last resourceVersion: after an outage, once the
  // server is known to be the same one. `*again`: a try failed and was
  // backed off from, or another cluster was listed (its stream, if it was
  // a streaming list, returned); the loop goes round again.
  StatusOr<std::unique_ptr<WatchStream>> Rewatch(std::stop_token stop, bool* again);

  Status WatchLoop(std::unique_ptr<WatchStream> stream, std::stop_token stop);

  // Ends ListAndWatch with an error that client-go logs but does not hand
  // to its WatchErrorHandler: Run says it through on_event and backs off.
  Status LogOnly(Status st);

  // A watch answered 410 Expired: the server's history no longer reaches
  // the resume point. The relist asks for a state at or after it; if the
  // resume point came from a list with nothing since, that list was the
  // stale one (a server that answered it Exact), and the relist is from "".
  // Never the same list twice. The relist follows Run's backoff.
  void WatchExpired(const Status& st);

  // Starts the current run of failures (ReflectorStats::failing_since)
  // unless one is under way; a list applied or a watch opened ends it.
  void MarkFailing();

  // Said once per outage; the retries follow client-go's backoff (0.8 s
  // doubling to 30 s), silently.
  void SayOutageOnce(const std::string& what, const Status& st);

  // After an outage: asks the server's identity again. Another one than the
  // sink's means another cluster: a relist from "" follows (need_list_).
  // Returns a connection error, to be retried; an HTTP error is unknown.
  Status CheckIdentity();

  // Applies a stream's events in batches until it ends; `*count` counts the
  // events received, bookmarks included.
  Status Consume(std::unique_ptr<WatchStream>* owned, const std::stop_token& stop, uint64_t* count);

  // Opens a watch. A streaming list (`list`) is read ahead on a thread of
  // its own unless configured not to; a watch is once it proves busy
  // (Consume).
  StatusOr<std::unique_ptr<WatchStream>> OpenWatch(const ListOptions& o, bool list = false);

  // Makes `stream` the one Stop cancels. False if already stopped.
  bool SetActive(WatchStream* stream, const std::stop_token& stop);

  void SetLastRV(std::string rv);

  // The order of two resourceVersions, when this server promises one.
  std::optional<int> Compare(const std::string& a, const std::string& b) const;

  // min * U[1, 2) seconds, min at least 5 minutes (client-go's).
  int64_t WatchTimeout();

  // False, reporting it, for an event whose object is not of the expected
  // apiVersion and kind; bookmarks carry no kind that matters.
  bool Expected(const WatchEvent& e);

  void MarkSynced();

  void Emit(ReflectorEvent::Type type, std::string message);

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

}  // namespace kcache::informer

#endif  // KCACHE_SRC_INFORMER_REFLECTOR_IMPL_H_
