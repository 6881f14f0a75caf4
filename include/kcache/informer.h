// SPDX-License-Identifier: Apache-2.0

// SharedIndexInformer: a reflector feeding an Indexer, with event handlers
// (client-go's SharedIndexInformer).
//
// Every change is committed to the Indexer before any handler hears of it,
// and reaches each handler in watch order. Each handler has its own queue,
// run one call at a time on the process's handler pool (4 threads, growing
// to 16 while handlers block it), so a slow handler holds up neither
// ingestion nor the others; its backlog is observable on its registration.
// Handlers never run under an informer lock.
//
// After a restart from a persistent Indexer, a handler starts in one of two
// modes (HandlerOptions::start_mode):
// - kReplay (default): an OnAdd for every cached object, streamed from the
//   store as the handler consumes them, then the changes since; for
//   level-triggered controllers, as client-go does on every start.
// - kChangesOnly: only what changed while the process was down (the watch
//   from the resume point, or a relist's differences) and what follows.
//
// Thread-safety: safe for concurrent use. Handlers are called from the
// handler pool's threads, one call at a time per handler.
#ifndef KCACHE_INFORMER_H_
#define KCACHE_INFORMER_H_

#include <array>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kcache/clock.h"
#include "kcache/export.h"
#include "kcache/histogram.h"
#include "kcache/indexer.h"
#include "kcache/key.h"
#include "kcache/lister.h"
#include "kcache/reflector.h"

namespace kcache {

// Receives notifications (client-go's ResourceEventHandler).
class KCACHE_EXPORT ResourceEventHandler {
 public:
  virtual ~ResourceEventHandler() = default;
  // `is_in_initial_list`: the object was in the store when the handler
  // started (replay) or came with the informer's first list.
  virtual void OnAdd(const ObjectPtr& object, bool is_in_initial_list) = 0;
  // Also called by resyncs, with old == new.
  virtual void OnUpdate(const ObjectPtr& old_object, const ObjectPtr& new_object) = 0;
  // A DeletedFinalStateUnknown when a relist found the object gone.
  virtual void OnDelete(const DeletedObject& object) = 0;
};

// A handler made of functions; unset ones do nothing.
class KCACHE_EXPORT ResourceEventHandlerFuncs final : public ResourceEventHandler {
 public:
  std::function<void(const ObjectPtr&, bool)> add;
  std::function<void(const ObjectPtr&, const ObjectPtr&)> update;
  std::function<void(const DeletedObject&)> del;

  void OnAdd(const ObjectPtr& o, bool initial) override {
    if (add) add(o, initial);
  }
  void OnUpdate(const ObjectPtr& o, const ObjectPtr& n) override {
    if (update) update(o, n);
  }
  void OnDelete(const DeletedObject& o) override {
    if (del) del(o);
  }
};

// A handler that calls `fn` with the namespace ("" for a cluster-scoped
// object) and name of every object added, updated or deleted, tombstones
// included: what a controller queues (controller-runtime's
// EnqueueRequestForObject).
KCACHE_EXPORT std::shared_ptr<ResourceEventHandler> NewKeyHandler(
    std::function<void(const std::string& namespace_, const std::string& name)> fn);

enum class StartMode { kReplay, kChangesOnly };

struct KCACHE_EXPORT HandlerOptions {
  // Every period, an OnUpdate(o, o) for every cached object, streamed from
  // the store. 0: never. Unset: the informer's default_resync_period.
  // As in client-go, a period under 1 s is raised to 1 s, and resyncs come
  // on the informer's resync checks: a period under the check period is
  // raised to it when the informer has started, and lowers it before.
  // Default: unset.
  std::optional<std::chrono::milliseconds> resync_period{};
  // Default: StartMode::kReplay.
  StartMode start_mode = StartMode::kReplay;
  // Names the handler in metrics. Default: "handler-N", N counting the
  // informer's registrations from 1.
  std::string name{};
};

// One AddEventHandler call (client-go's ResourceEventHandlerRegistration).
//
// Thread-safety: safe for concurrent use.
class KCACHE_EXPORT HandlerRegistration {
 public:
  virtual ~HandlerRegistration() = default;
  // True once the informer has synced and this handler has processed
  // everything queued for it up to then (its replay included).
  virtual bool HasSynced() const = 0;
  // Notifications queued and not yet handled; a replay or resync still
  // streaming from the store counts as one.
  virtual size_t Backlog() const = 0;
  // Handler calls made so far.
  virtual uint64_t Delivered() const = 0;
  // False once removed or the informer stopped.
  virtual bool IsActive() const = 0;
};

// One handler's share of InformerMetrics.
struct KCACHE_EXPORT HandlerMetrics {
  std::string name{};
  // Notifications queued and not yet handled (HandlerRegistration::Backlog).
  size_t queued = 0;
  // How long handler calls took (client-go's processing latency); its
  // count is the calls made.
  LatencyHistogram latency{};
};

// What an informer reports about itself (client-go's informer metrics: queue
// depth per handler, processing latency, the store's resourceVersion and
// last sync time).
struct KCACHE_EXPORT InformerMetrics {
  bool synced = false;
  // The store's committed resourceVersion (its resume point).
  std::string resource_version{};
  // How long ago the store was last known current (ReflectorStats::
  // last_applied), on the informer's clock; unset if never.
  std::optional<std::chrono::milliseconds> since_last_sync{};
  // How long the reflector's lists and watches have been failing
  // (ReflectorStats::failing_since); unset while none has failed since the
  // last that succeeded.
  std::optional<std::chrono::milliseconds> failing_for{};
  ReflectorStats reflector{};
  std::vector<HandlerMetrics> handlers{};  // in registration order
};

// How far an informer's store is behind what the caller knows of the
// server (SharedIndexInformer::Staleness).
struct KCACHE_EXPORT Staleness {
  std::string store_resource_version{};  // what the store has applied
  // Versions the store is behind the one given, where both are decimal and
  // the server orders them: 0 once it has caught up; unset otherwise.
  std::optional<uint64_t> versions_behind{};
  // Since a list, watch batch or bookmark was last applied; unset if never.
  std::optional<std::chrono::milliseconds> since_last_sync{};
};

struct KCACHE_EXPORT InformerOptions {
  // Default: Clock::Real(); also used by the reflector unless it has one.
  std::shared_ptr<Clock> clock{};
  ReflectorOptions reflector{};
  // Applied once to every object before it is stored (client-go's
  // SetTransform). Default: none.
  TransformFunc transform{};
  // The resync period of handlers registered without one, and the first
  // resync check period (client-go's defaultEventHandlerResyncPeriod).
  // 0: handlers without a period never resync. Default: 0.
  std::chrono::milliseconds default_resync_period{0};
};

class KCACHE_EXPORT SharedIndexInformer {
 public:
  // Keeps `indexer` in step with what `lw` lists and watches. A persistent
  // indexer (a Cache keyspace) with a resume point is resumed without a
  // LIST.
  static std::shared_ptr<SharedIndexInformer> Create(std::shared_ptr<ListerWatcher> lw,
                                                     std::shared_ptr<Indexer> indexer,
                                                     InformerOptions options = {});
  virtual ~SharedIndexInformer() = default;

  // Registers a handler. Added while running, a kReplay handler first
  // receives an OnAdd(o, true) for every cached object. FailedPrecondition
  // "handler ... was not added to shared informer because it has stopped
  // already" after Stop().
  virtual StatusOr<std::shared_ptr<HandlerRegistration>> AddEventHandler(
      std::shared_ptr<ResourceEventHandler> handler, HandlerOptions options = {}) = 0;
  // Stops the handler's deliveries (the call in progress finishes).
  // Removing a registration twice, or one of another informer, is a no-op.
  virtual Status RemoveEventHandler(const std::shared_ptr<HandlerRegistration>& registration) = 0;

  // Starts listing and watching. Once only.
  virtual Status Start() = 0;
  // Stops the reflector and every handler and waits for their threads. A
  // handler's call in progress finishes; notifications queued but not yet
  // delivered are dropped, as client-go's are. To have a handler hear
  // everything up to a point, wait for its registration's HasSynced() (or
  // Backlog() of 0) first.
  virtual void Stop() = 0;
  virtual bool HasStarted() const = 0;
  virtual bool IsStopped() const = 0;

  // True once the store holds the server's state (Reflector::HasSynced),
  // whatever the handlers' progress.
  virtual bool HasSynced() const = 0;
  // Waits until HasSynced(), Stop() or the timeout. Returns HasSynced().
  virtual bool WaitForSync(std::chrono::milliseconds timeout) const = 0;

  virtual std::shared_ptr<Indexer> GetIndexer() const = 0;
  // A lister over GetIndexer() for the informer's resource
  // (ListerWatcher::Resource()).
  virtual Lister GetLister() const = 0;
  // The collection the informer lists and watches, as its ListerWatcher
  // names it (every informer of an InformerFactory has one): where writes
  // to its objects go, with ResourceRef::InNamespace.
  virtual std::optional<ResourceRef> Ref() const { return std::nullopt; }
  // Adds indexes, also while running. FailedPrecondition after Stop().
  virtual Status AddIndexers(const Indexers& indexers) = 0;

  virtual std::string LastSyncResourceVersion() const = 0;

  // Read-your-writes (the model of Kubernetes' KEP-5647): after a write
  // answered with resourceVersion `rv`, waits until the store has applied
  // it, so that the informer's listers return what was written (or
  // something newer). Compares versions as integers, which the server
  // promises (ReflectorOptions::ordered_resource_versions). OK once the
  // store is at or past `rv`; DeadlineExceeded after `timeout`;
  // FailedPrecondition once stopped, or for a server whose versions are not
  // ordered (wait for the object instead); InvalidArgument for a `rv` that
  // is not a decimal version.
  virtual Status WaitForResourceVersion(std::string_view rv,
                                        std::chrono::milliseconds timeout) const {
    (void)rv, (void)timeout;
    return Status::Unimplemented("WaitForResourceVersion");
  }
  // The same for opaque versions: waits until the object stored under
  // `key` is at `rv` exactly, or has been deleted.
  virtual Status WaitForObjectVersion(std::string_view key, std::string_view rv,
                                      std::chrono::milliseconds timeout) const {
    (void)key, (void)rv, (void)timeout;
    return Status::Unimplemented("WaitForObjectVersion");
  }
  // How stale the store is against `server_rv`, the newest version the
  // caller has seen from the server (a write's answer); "" for the time
  // since the last sync alone.
  virtual Staleness GetStaleness(std::string_view server_rv = "") const {
    (void)server_rv;
    return {};
  }

  virtual ReflectorStats stats() const = 0;
  // A consistent-enough reading of every counter, for dashboards: each
  // value is read under its own lock.
  virtual InformerMetrics Metrics() const = 0;
};

}  // namespace kcache

#endif  // KCACHE_INFORMER_H_
