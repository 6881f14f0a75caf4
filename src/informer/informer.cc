// SPDX-License-Identifier: Apache-2.0

#include "kcache/informer.h"

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <list>
#include <map>
#include <mutex>
#include <thread>

#include "core/resource_version.h"
#include "exec/fiber.h"
#include "exec/thread_pool.h"
#include "informer/events.h"

namespace kcache {
namespace {

// One notification, shared by every handler's queue.
struct Notification {
  enum class Type { kAdd, kUpdate, kDelete };
  Type type;
  ObjectPtr object;       // kAdd, kUpdate (new)
  ObjectPtr old_object;   // kUpdate
  DeletedObject deleted;  // kDelete
  bool initial = false;   // kAdd
};
using NotificationPtr = std::shared_ptr<const Notification>;

// A queue entry: a notification, or a walk over a store snapshot (a replay
// delivers OnAdd(o, true), a resync OnUpdate(o, o)).
struct Entry {
  NotificationPtr notification;
  std::shared_ptr<ObjectIterator> walk;
  bool resync = false;
};

// A handler's queue, run as a serial task on the process's handler pool
// (exec::HandlerPool): one turn at a time, in order, so that a slow handler
// holds up only itself (and a pool thread while it blocks; the pool grows).
class Listener final : public HandlerRegistration, public std::enable_shared_from_this<Listener> {
 public:
  Listener(std::shared_ptr<ResourceEventHandler> handler, HandlerOptions options,
           std::shared_ptr<Clock> clock, std::shared_ptr<exec::ThreadPool> pool)
      : handler_(std::move(handler)),
        options_(std::move(options)),
        clock_(std::move(clock)),
        pool_(std::move(pool)) {}

  HandlerMetrics Metrics() const {
    HandlerMetrics m;
    m.name = options_.name;
    std::lock_guard l(mu_);
    m.queued = queue_.size();
    m.latency = latency_;
    return m;
  }

  bool HasSynced() const override {
    std::lock_guard l(mu_);
    return sync_mark_ && done_ >= *sync_mark_;
  }
  size_t Backlog() const override {
    std::lock_guard l(mu_);
    return queue_.size();
  }
  uint64_t Delivered() const override { return delivered_; }
  bool IsActive() const override { return active_; }

  const HandlerOptions& options() const { return options_; }

  void Push(Entry e) {
    bool post;
    {
      std::lock_guard l(mu_);
      if (e.resync) resync_pending_ = true;
      queue_.push_back(std::move(e));
      ++pushed_;
      post = ScheduleLocked();
    }
    if (post) PostTurn();
  }
  // Everything pushed so far must be handled before HasSynced().
  void MarkSynced() {
    std::lock_guard l(mu_);
    if (!sync_mark_) sync_mark_ = pushed_;
  }
  bool ResyncPending() const {
    std::lock_guard l(mu_);
    return resync_pending_;
  }

  // Deliveries begin. Each turn keeps its listener alive, so that a handler
  // may remove itself (or stop the informer) from inside a call.
  void StartWorker() {
    bool post;
    {
      std::lock_guard l(mu_);
      started_ = true;
      post = ScheduleLocked();
    }
    if (post) PostTurn();
  }
  // Stops deliveries; waits for the call in progress unless called from it.
  void Stop() {
    active_ = false;
    std::unique_lock l(mu_);
    if (turn_thread_ == std::this_thread::get_id()) return;
    idle_cv_.wait(l, [&] { return !in_turn_; });
  }

 private:
  // Calls per turn before the pool's other work gets its turn.
  static constexpr int kCallsPerTurn = 64;

  // Whether a turn is to be posted now. REQUIRES: mu_ held.
  bool ScheduleLocked() {
    if (!started_ || scheduled_ || !active_ || queue_.empty()) return false;
    scheduled_ = true;
    return true;
  }
  void PostTurn() {
    pool_->Post([self = shared_from_this()] { self->Turn(); });
  }

  void Turn() {
    {
      std::lock_guard l(mu_);
      in_turn_ = true;
      turn_thread_ = std::this_thread::get_id();
    }
    for (int i = 0; i < kCallsPerTurn && active_ && CallOne(); ++i) {
    }
    bool again;
    {
      std::lock_guard l(mu_);
      in_turn_ = false;
      turn_thread_ = {};
      scheduled_ = false;
      again = ScheduleLocked();
    }
    idle_cv_.notify_all();
    if (again) PostTurn();
  }

  // Makes the next call: a notification, or one object of a walk. False if
  // nothing is queued.
  bool CallOne() {
    Entry e;
    {
      std::lock_guard l(mu_);
      if (queue_.empty()) return false;
      e = queue_.front();  // shared pointers: cheap
      if (!e.walk) queue_.pop_front();
    }
    if (e.walk) {
      if (e.walk->Valid()) {
        const ObjectPtr& o = e.walk->object();
        Clock::TimePoint start = clock_->Now();
        if (e.resync) {
          handler_->OnUpdate(o, o);
        } else {
          handler_->OnAdd(o, true);
        }
        Observe(start);
        e.walk->Next();
      }
      if (!e.walk->Valid()) {
        std::lock_guard l(mu_);
        queue_.pop_front();
        if (e.resync) resync_pending_ = false;
        ++done_;
      }
      return true;
    }
    const Notification& n = *e.notification;
    Clock::TimePoint start = clock_->Now();
    switch (n.type) {
      case Notification::Type::kAdd:
        handler_->OnAdd(n.object, n.initial);
        break;
      case Notification::Type::kUpdate:
        handler_->OnUpdate(n.old_object, n.object);
        break;
      case Notification::Type::kDelete:
        handler_->OnDelete(n.deleted);
        break;
    }
    Observe(start);
    std::lock_guard l(mu_);
    ++done_;
    return true;
  }

  // Counts a handler call that began at `start`.
  void Observe(Clock::TimePoint start) {
    double seconds = std::chrono::duration<double>(clock_->Now() - start).count();
    ++delivered_;
    std::lock_guard l(mu_);
    latency_.Observe(seconds);
  }

  const std::shared_ptr<ResourceEventHandler> handler_;
  const HandlerOptions options_;
  const std::shared_ptr<Clock> clock_;
  const std::shared_ptr<exec::ThreadPool> pool_;
  std::atomic<bool> active_{true};
  std::atomic<uint64_t> delivered_{0};

  mutable std::mutex mu_;
  std::condition_variable idle_cv_;    // a turn ended
  std::deque<Entry> queue_;            // guarded by mu_
  uint64_t pushed_ = 0;                // guarded by mu_
  uint64_t done_ = 0;                  // guarded by mu_
  std::optional<uint64_t> sync_mark_;  // guarded by mu_
  bool resync_pending_ = false;        // guarded by mu_
  LatencyHistogram latency_;           // guarded by mu_
  bool started_ = false;               // guarded by mu_
  bool scheduled_ = false;             // guarded by mu_: a turn is posted or running
  bool in_turn_ = false;               // guarded by mu_
  std::thread::id turn_thread_;        // guarded by mu_

 public:
  // Guarded by the informer's mutex: the resync period in effect, when the
  // next resync is due, and the relist chunks committed before the
  // listener was added (its replay walk shows them).
  std::chrono::milliseconds resync_period{0};
  Clock::TimePoint next_resync;
  uint64_t added_after_chunk = 0;
};

class Informer;

class InformerSink final : public ReflectorSink {
 public:
  explicit InformerSink(Informer* informer) : informer_(informer) {}
  Status Apply(std::vector<WatchEvent> events, std::string rv) override;
  StatusOr<std::unique_ptr<ReplaceSession>> BeginReplace() override;
  StatusOr<std::optional<CutShortRelist>> GetCutShortRelist() const override;
  StatusOr<std::unique_ptr<ReplaceSession>> ContinueReplace() override;
  std::string ResumeResourceVersion() const override;
  void Synced() override;

 private:
  Informer* informer_;
};

class Informer final : public SharedIndexInformer {
 public:
  Informer(std::shared_ptr<ListerWatcher> lw, std::shared_ptr<Indexer> indexer, InformerOptions o)
      : lw_(std::move(lw)),
        indexer_(std::move(indexer)),
        o_(std::move(o)),
        check_period_(o_.default_resync_period) {
    if (!o_.clock) o_.clock = Clock::Real();
    if (!o_.reflector.clock) o_.reflector.clock = o_.clock;
  }
  ~Informer() override { Stop(); }

  StatusOr<std::shared_ptr<HandlerRegistration>> AddEventHandler(
      std::shared_ptr<ResourceEventHandler> handler, HandlerOptions options) override {
    if (!handler) return Status::InvalidArgument("AddEventHandler with a null handler");
    {
      std::lock_guard l(mu_);
      ++registrations_;
      if (options.name.empty()) options.name = "handler-" + std::to_string(registrations_);
    }
    auto listener =
        std::make_shared<Listener>(std::move(handler), options, o_.clock, exec::HandlerPool());
    {
      std::lock_guard l(mu_);
      if (stopped_) {
        return Status::FailedPrecondition(
            "handler was not added to shared informer because it has stopped already");
      }
      listener->resync_period = ResyncPeriodLocked(options);
      listener->next_resync = o_.clock->Now() + listener->resync_period;
      ArmResyncLocked();
      listener->added_after_chunk = chunks_;
      // During the first list, PublishFirstList will walk the store for it.
      if (started_ && !first_list_ && options.start_mode == StartMode::kReplay) {
        KCACHE_RETURN_IF_ERROR(PushWalk(*listener, false));
      }
      if (synced_) listener->MarkSynced();
      listeners_.push_back(listener);
      listener->StartWorker();
    }
    return std::shared_ptr<HandlerRegistration>(listener);
  }

  Status RemoveEventHandler(const std::shared_ptr<HandlerRegistration>& registration) override {
    std::shared_ptr<Listener> found;
    {
      std::lock_guard l(mu_);
      for (auto it = listeners_.begin(); it != listeners_.end(); ++it) {
        if (*it == registration) {
          found = *it;
          listeners_.erase(it);
          break;
        }
      }
    }
    if (found) found->Stop();
    return Status::OK();
  }

  Status Start() override {
    Reflector* reflector;
    {
      std::lock_guard l(mu_);
      if (started_) return Status::FailedPrecondition("the informer was started already");
      if (stopped_) return Status::FailedPrecondition("the informer has stopped");
      started_ = true;
      reflector_ = Reflector::Create(lw_, std::make_shared<InformerSink>(this), o_.reflector);
      reflector = reflector_.get();
      // Handlers registered before Start replay what the store holds now.
      for (auto& listener : listeners_) {
        if (listener->options().start_mode == StartMode::kReplay) {
          KCACHE_RETURN_IF_ERROR(PushWalk(*listener, false));
        }
      }
    }
    // A reflector that waits only on kcache's own REST client and clock runs
    // as a fiber: a thousand informers share a few threads.
    const bool fiber =
        lw_->SharesThreads() && (!o_.reflector.clock || o_.reflector.clock == Clock::Real());
    if (fiber) {
      reflector_fiber_ =
          exec::Spawn([reflector, stop = reflector_stop_.get_token()] { reflector->Run(stop); });
    } else {
      reflector_thread_ = std::jthread([reflector, stop = reflector_stop_.get_token()](
                                           std::stop_token) { reflector->Run(stop); });
      pthread_setname_np(reflector_thread_.native_handle(), "kcache-reflect");
    }
    {
      std::lock_guard l(mu_);
      ArmResyncLocked();
    }
    return Status::OK();
  }

  void Stop() override {
    std::list<std::shared_ptr<Listener>> listeners;
    {
      std::lock_guard l(mu_);
      if (stopped_) return;
      stopped_ = true;
      listeners.swap(listeners_);
    }
    sync_cv_.notify_all();
    reflector_stop_.request_stop();
    std::shared_ptr<Clock::Timer> resync;
    {
      std::lock_guard l(mu_);
      resync.swap(resync_timer_);
    }
    if (resync) resync->Cancel();  // waits for a check running now
    if (reflector_thread_.joinable()) reflector_thread_.join();
    if (reflector_fiber_) reflector_fiber_->Join();
    for (auto& listener : listeners) listener->Stop();
  }

  bool HasStarted() const override {
    std::lock_guard l(mu_);
    return started_;
  }
  bool IsStopped() const override {
    std::lock_guard l(mu_);
    return stopped_;
  }
  bool HasSynced() const override {
    std::lock_guard l(mu_);
    return synced_;
  }
  bool WaitForSync(std::chrono::milliseconds timeout) const override {
    std::unique_lock l(mu_);
    sync_cv_.wait_for(l, timeout, [&] { return synced_ || stopped_; });
    return synced_;
  }

  std::shared_ptr<Indexer> GetIndexer() const override { return indexer_; }
  Lister GetLister() const override {
    if (std::optional<ResourceRef> ref = lw_->Ref()) {
      return Lister::ForCollection(indexer_, std::move(*ref));
    }
    return Lister(indexer_, lw_->Resource());
  }
  std::optional<ResourceRef> Ref() const override { return lw_->Ref(); }
  Status AddIndexers(const Indexers& indexers) override {
    if (IsStopped())
      return Status::FailedPrecondition("indexer was not added because it has stopped already");
    return indexer_->AddIndexers(indexers);
  }
  std::string LastSyncResourceVersion() const override {
    const Reflector* r = reflector();
    return r ? r->LastSyncResourceVersion() : indexer_->LastSyncResourceVersion();
  }

  Status WaitForResourceVersion(std::string_view rv,
                                std::chrono::milliseconds timeout) const override {
    const std::optional<uint64_t> want = ParseCanonicalResourceVersion(rv);
    if (!want) {
      return Status::InvalidArgument("resourceVersion \"" + std::string(rv) +
                                     "\" is not a decimal version");
    }
    if (!o_.reflector.ordered_resource_versions) {
      return Status::FailedPrecondition(
          "the server's resourceVersions are not ordered: wait for the object's version "
          "(WaitForObjectVersion)");
    }
    return WaitUntil(timeout, "resourceVersion " + std::string(rv), [&] {
      std::optional<uint64_t> at =
          ParseCanonicalResourceVersion(indexer_->LastSyncResourceVersion());
      return at && *at >= *want;
    });
  }

  Status WaitForObjectVersion(std::string_view key, std::string_view rv,
                              std::chrono::milliseconds timeout) const override {
    return WaitUntil(timeout, std::string(key) + " at resourceVersion " + std::string(rv), [&] {
      StatusOr<ObjectPtr> got = indexer_->GetByKey(key);
      return got.ok() && (!*got || (*got)->resource_version() == rv);
    });
  }

  Staleness GetStaleness(std::string_view server_rv) const override {
    Staleness s;
    s.store_resource_version = indexer_->LastSyncResourceVersion();
    const std::optional<uint64_t> at = ParseCanonicalResourceVersion(s.store_resource_version);
    const std::optional<uint64_t> server = ParseCanonicalResourceVersion(server_rv);
    if (at && server && o_.reflector.ordered_resource_versions) {
      s.versions_behind = *server > *at ? *server - *at : 0;
    }
    const Clock::TimePoint last = stats().last_applied;
    if (last != Clock::TimePoint{}) {
      s.since_last_sync =
          std::chrono::duration_cast<std::chrono::milliseconds>(o_.clock->Now() - last);
    }
    return s;
  }
  ReflectorStats stats() const override {
    const Reflector* r = reflector();
    return r ? r->stats() : ReflectorStats{};
  }
  InformerMetrics Metrics() const override {
    InformerMetrics m;
    m.reflector = stats();
    m.resource_version = indexer_->LastSyncResourceVersion();
    if (m.reflector.last_applied != Clock::TimePoint{}) {
      m.since_last_sync = std::chrono::duration_cast<std::chrono::milliseconds>(
          o_.clock->Now() - m.reflector.last_applied);
    }
    if (m.reflector.failing_since != Clock::TimePoint{}) {
      m.failing_for = std::chrono::duration_cast<std::chrono::milliseconds>(
          o_.clock->Now() - m.reflector.failing_since);
    }
    std::lock_guard l(mu_);
    m.synced = synced_;
    for (const auto& listener : listeners_) m.handlers.push_back(listener->Metrics());
    return m;
  }

  // --- the sink side, on the reflector's thread ---

  Status Apply(std::vector<WatchEvent> events, std::string rv) {
    for (WatchEvent& e : events) {
      KCACHE_ASSIGN_OR_RETURN(e.object, Transform(std::move(e.object)));
    }
    std::lock_guard l(mu_);
    Transaction txn;
    txn.resource_version = std::move(rv);
    std::vector<NotificationPtr> out;
    const bool notify = !listeners_.empty();
    // What this batch has written so far, by key, for old objects.
    std::map<std::string, ObjectPtr, std::less<>> written;
    for (WatchEvent& e : events) {
      if (notify) {
        KCACHE_ASSIGN_OR_RETURN(std::string key, indexer_->KeyOf(*e.object));
        ObjectPtr old;
        if (auto w = written.find(key); w != written.end()) {
          old = w->second;
        } else {
          KCACHE_ASSIGN_OR_RETURN(old, indexer_->GetByKey(key));
        }
        auto n = std::make_shared<Notification>();
        if (e.type == WatchEventType::kDeleted) {
          n->type = Notification::Type::kDelete;
          n->deleted = e.object;
          written[key] = nullptr;
        } else {
          n->type = old ? Notification::Type::kUpdate : Notification::Type::kAdd;
          n->object = e.object;
          n->old_object = old;
          written[key] = e.object;
        }
        out.push_back(std::move(n));
      }
      informer::AppendToTransaction(std::move(e), &txn);
    }
    KCACHE_RETURN_IF_ERROR(indexer_->Commit(txn, nullptr));
    for (const NotificationPtr& n : out) {
      for (auto& listener : listeners_) listener->Push(Entry{n, nullptr, false});
    }
    sync_cv_.notify_all();  // WaitForResourceVersion
    return Status::OK();
  }

  // A relist, or (`continuing`) the relist the store holds cut short.
  StatusOr<std::unique_ptr<ReplaceSession>> BeginReplace(bool continuing);

  StatusOr<std::optional<CutShortRelist>> GetCutShortRelist() const {
    return indexer_->GetCutShortRelist();
  }
  std::string ResumeResourceVersion() const { return indexer_->LastSyncResourceVersion(); }

  void Synced() {
    {
      std::lock_guard l(mu_);
      synced_ = true;
      for (auto& listener : listeners_) listener->MarkSynced();
    }
    sync_cv_.notify_all();
  }

  bool has_listeners() const { return !listeners_.empty(); }  // REQUIRES: mu_ held

  // Waits until `reached()` (read without mu_ held: it reads the store),
  // woken by each applied batch and every 50 ms (a relist's end).
  template <typename F>
  Status WaitUntil(std::chrono::milliseconds timeout, const std::string& what, F reached) const {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (reached()) return Status::OK();
      std::unique_lock l(mu_);
      if (stopped_) return Status::FailedPrecondition("the informer stopped before " + what);
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) {
        return Status::DeadlineExceeded("the informer's store did not reach " + what + " in " +
                                        std::to_string(timeout.count()) + " ms");
      }
      sync_cv_.wait_for(l, std::min<std::chrono::steady_clock::duration>(
                               deadline - now, std::chrono::milliseconds(50)));
    }
  }

  // A relist's committed changes: a chunk of adds and updates is held back
  // until the relist ends, so that its deletions are announced first, as
  // client-go's informers do. Called with mu_ held (the session's calls
  // take it). With no listener nothing is held: a listener added later sees
  // the chunk in its replay walk, so no one would be given it, and a
  // relist's old and new objects grow with what changed.
  void HoldChunk(std::vector<StoreChange> changes) {
    ++chunks_;
    if (listeners_.empty()) return;
    held_.push_back({chunks_, std::move(changes)});
  }
  // At the end of a relist: `deletions`, then the held chunks, each to the
  // listeners that were there when it was committed (a listener added
  // later saw it in its replay walk). REQUIRES: mu_ held.
  void PublishRelist(std::vector<StoreChange> deletions) {
    Publish(std::move(deletions), 0);
    std::vector<HeldChunk> held;
    held.swap(held_);
    for (HeldChunk& c : held) Publish(std::move(c.changes), c.chunk);
  }

  // Turns committed changes into notifications for the listeners added
  // before chunk `chunk` (0: all). REQUIRES: mu_ held.
  void Publish(std::vector<StoreChange> changes, uint64_t chunk) {
    if (listeners_.empty()) return;
    for (StoreChange& c : changes) {
      auto n = std::make_shared<Notification>();
      switch (c.type) {
        case StoreChange::Type::kAdded:
          n->type = Notification::Type::kAdd;
          n->object = std::move(c.new_object);
          n->initial = !synced_;
          break;
        case StoreChange::Type::kUpdated:
          n->type = Notification::Type::kUpdate;
          n->object = std::move(c.new_object);
          n->old_object = std::move(c.old_object);
          break;
        case StoreChange::Type::kDeleted:
          n->type = Notification::Type::kDelete;
          n->deleted = DeletedFinalStateUnknown{std::move(c.key), std::move(c.old_object)};
          break;
      }
      NotificationPtr shared = std::move(n);
      for (auto& listener : listeners_) {
        if (chunk == 0 || listener->added_after_chunk < chunk) {
          listener->Push(Entry{shared, nullptr, false});
        }
      }
    }
  }

  // After the first list into an empty store: one walk over the store per
  // handler instead of a queued OnAdd per object, so that memory does not
  // grow with the list.
  Status PublishFirstList() {
    for (auto& listener : listeners_) KCACHE_RETURN_IF_ERROR(PushWalk(*listener, false));
    return Status::OK();
  }

  StatusOr<ObjectPtr> Transform(ObjectPtr o) {
    if (!o_.transform) return o;
    return o_.transform(std::move(o));
  }

  std::mutex& mu() { return mu_; }
  // REQUIRES: mu_ held.
  void set_first_list(bool on) { first_list_ = on; }
  // A first list into an empty store that did not finish leaves objects
  // no handler heard of: the next list is a first list too.
  // REQUIRES: mu_ held.
  void set_first_list_pending(bool on) { first_list_pending_ = on; }

 private:
  // Set once by Start(); lives as long as the informer.
  const Reflector* reflector() const {
    std::lock_guard l(mu_);
    return reflector_.get();
  }

  // Queues a walk over a snapshot of the store. REQUIRES: mu_ held, so that
  // the snapshot and the queue agree on which changes came before it.
  Status PushWalk(Listener& listener, bool resync) {
    std::shared_ptr<ObjectIterator> it = indexer_->NewIterator();
    if (!it->Valid() && !it->status().ok()) return it->status();
    listener.Push(Entry{nullptr, std::move(it), resync});
    return Status::OK();
  }

  // The period in effect for a new handler (client-go's
  // AddEventHandlerWithResyncPeriod). REQUIRES: mu_ held.
  std::chrono::milliseconds ResyncPeriodLocked(const HandlerOptions& options) {
    using std::chrono::milliseconds;
    milliseconds period = options.resync_period.value_or(o_.default_resync_period);
    if (period.count() <= 0) return milliseconds(0);
    period = std::max(period, milliseconds(std::chrono::seconds(1)));
    if (check_period_.count() == 0 || period < check_period_) {
      if (started_ && check_period_.count() > 0) {
        period = check_period_;
      } else {
        check_period_ = period;
      }
    }
    return period;
  }

  // A resync check every check period, on the clock's timer, while a
  // handler has a period (client-go's reflector resync asking the processor
  // shouldResync). REQUIRES: mu_ held.
  void ArmResyncLocked() {
    if (!started_ || stopped_ || resync_timer_ || check_period_.count() <= 0) return;
    resync_timer_ = o_.clock->At(o_.clock->Now() + check_period_, [this] { ResyncCheck(); });
  }

  // A resync walk for each handler whose period has passed; then the next
  // check. On the clock's timer thread: it only queues walks.
  void ResyncCheck() {
    std::lock_guard l(mu_);
    // The handle of this very timer: dropped here, not cancelled (a timer
    // cancelled from inside its call returns at once).
    std::shared_ptr<Clock::Timer> self = std::move(resync_timer_);
    if (stopped_) return;
    Clock::TimePoint now = o_.clock->Now();
    for (auto& listener : listeners_) {
      if (listener->resync_period.count() <= 0 || now < listener->next_resync) continue;
      // A resync still streaming, or an informer not synced yet, skips
      // this round.
      if (synced_ && !listener->ResyncPending()) (void)PushWalk(*listener, true);
      listener->next_resync = now + listener->resync_period;
    }
    ArmResyncLocked();
  }

  const std::shared_ptr<ListerWatcher> lw_;
  const std::shared_ptr<Indexer> indexer_;
  InformerOptions o_;

  mutable std::mutex mu_;
  mutable std::condition_variable sync_cv_;
  std::list<std::shared_ptr<Listener>> listeners_;  // guarded by mu_
  bool started_ = false;                            // guarded by mu_
  bool stopped_ = false;                            // guarded by mu_
  bool synced_ = false;                             // guarded by mu_
  bool first_list_ = false;                         // guarded by mu_
  bool first_list_pending_ = false;                 // guarded by mu_
  uint64_t registrations_ = 0;                      // guarded by mu_
  std::chrono::milliseconds check_period_;          // guarded by mu_
  // The relist chunks committed so far, and those held back until the
  // relist's deletions are announced.
  struct HeldChunk {
    uint64_t chunk;
    std::vector<StoreChange> changes;
  };
  uint64_t chunks_ = 0;          // guarded by mu_
  std::vector<HeldChunk> held_;  // guarded by mu_

  std::unique_ptr<Reflector> reflector_;        // guarded by mu_
  std::shared_ptr<Clock::Timer> resync_timer_;  // guarded by mu_
  // The reflector runs on one of these until reflector_stop_.
  std::stop_source reflector_stop_;
  std::jthread reflector_thread_;
  std::shared_ptr<exec::FiberHandle> reflector_fiber_;
};

// Holds the informer's mutex around each call, so that handler
// registration sees either none or all of a committed chunk.
class InformerReplaceSession final : public ReplaceSession {
 public:
  InformerReplaceSession(Informer* informer, bool first) : informer_(informer), first_(first) {}
  ~InformerReplaceSession() override {
    std::lock_guard l(informer_->mu());
    inner_.reset();
    if (first_) informer_->set_first_list(false);
    // Cut short: a first list leaves the next one first too (what it wrote
    // is announced by that one's walk); a relist announces what it
    // committed (reported changes are committed ones).
    if (!finished_) Announce();
  }
  Status Open(bool continuing) {
    std::lock_guard l(informer_->mu());
    if (first_) {
      informer_->set_first_list(true);
      informer_->set_first_list_pending(true);
    }
    // The store's writer lock is taken inside, after ours: the same order
    // as Apply's commits. A first list's changes are announced by the walk
    // after it, not one by one: it asks for none (so that the store may
    // write it by its fastest path).
    ChangeSink sink;
    if (!first_) {
      sink = [this](std::vector<StoreChange> changes) {
        if (finishing_) {
          // Finish holds the informer's mutex throughout: no listener
          // can come before these are announced.
          if (!informer_->has_listeners()) return;
          for (StoreChange& c : changes) {
            (c.type == StoreChange::Type::kDeleted ? deletions_ : last_chunk_)
                .push_back(std::move(c));
          }
        } else {
          informer_->HoldChunk(std::move(changes));
        }
      };
    }
    Indexer& store = *informer_->GetIndexer();
    KCACHE_ASSIGN_OR_RETURN(inner_, continuing ? store.ContinueReplace(std::move(sink))
                                               : store.BeginReplace(std::move(sink)));
    return Status::OK();
  }
  Status Put(ObjectPtr object) override {
    KCACHE_ASSIGN_OR_RETURN(object, informer_->Transform(std::move(object)));
    std::lock_guard l(informer_->mu());
    return inner_->Put(std::move(object));
  }
  Status Checkpoint(std::string progress) override {
    std::lock_guard l(informer_->mu());
    return inner_->Checkpoint(std::move(progress));
  }
  StatusOr<size_t> Finish(std::string resource_version) override {
    std::lock_guard l(informer_->mu());
    finishing_ = true;
    KCACHE_ASSIGN_OR_RETURN(size_t unchanged, inner_->Finish(std::move(resource_version)));
    finished_ = true;
    if (first_) {
      informer_->set_first_list(false);
      informer_->set_first_list_pending(false);
      KCACHE_RETURN_IF_ERROR(informer_->PublishFirstList());
    } else {
      Announce();
    }
    return unchanged;
  }

 private:
  Informer* informer_;
  bool first_;
  std::unique_ptr<ReplaceSession> inner_;
  // The relist's deletions, then its held adds and updates.
  // REQUIRES: the informer's mutex held.
  void Announce() {
    if (!last_chunk_.empty()) informer_->HoldChunk(std::move(last_chunk_));
    informer_->PublishRelist(std::move(deletions_));
  }

  // Set under the informer's mutex, inside Finish: changes reported from
  // then on are the last chunk and the deletions.
  bool finishing_ = false;
  bool finished_ = false;
  std::vector<StoreChange> last_chunk_, deletions_;
};

StatusOr<std::unique_ptr<ReplaceSession>> Informer::BeginReplace(bool continuing) {
  bool first;
  {
    std::lock_guard l(mu_);
    KCACHE_ASSIGN_OR_RETURN(size_t size, indexer_->Size());
    first = !synced_ && (size == 0 || first_list_pending_);
  }
  auto session = std::make_unique<InformerReplaceSession>(this, first);
  KCACHE_RETURN_IF_ERROR(session->Open(continuing));
  return std::unique_ptr<ReplaceSession>(std::move(session));
}

Status InformerSink::Apply(std::vector<WatchEvent> events, std::string rv) {
  return informer_->Apply(std::move(events), std::move(rv));
}
StatusOr<std::unique_ptr<ReplaceSession>> InformerSink::BeginReplace() {
  return informer_->BeginReplace(false);
}
StatusOr<std::optional<CutShortRelist>> InformerSink::GetCutShortRelist() const {
  return informer_->GetCutShortRelist();
}
StatusOr<std::unique_ptr<ReplaceSession>> InformerSink::ContinueReplace() {
  return informer_->BeginReplace(true);
}
std::string InformerSink::ResumeResourceVersion() const {
  return informer_->ResumeResourceVersion();
}
void InformerSink::Synced() { informer_->Synced(); }

}  // namespace

std::shared_ptr<SharedIndexInformer> SharedIndexInformer::Create(std::shared_ptr<ListerWatcher> lw,
                                                                 std::shared_ptr<Indexer> indexer,
                                                                 InformerOptions options) {
  return std::make_shared<Informer>(std::move(lw), std::move(indexer), std::move(options));
}

std::shared_ptr<ResourceEventHandler> NewKeyHandler(
    std::function<void(const std::string& namespace_, const std::string& name)> fn) {
  auto h = std::make_shared<ResourceEventHandlerFuncs>();
  h->add = [fn](const ObjectPtr& o, bool) { fn(o->namespace_(), o->name()); };
  h->update = [fn](const ObjectPtr&, const ObjectPtr& o) { fn(o->namespace_(), o->name()); };
  h->del = [fn](const DeletedObject& d) {
    if (StatusOr<ObjectName> n = DeletionHandlingObjectToName(d); n.ok())
      fn(n->namespace_, n->name);
  };
  return h;
}

}  // namespace kcache
