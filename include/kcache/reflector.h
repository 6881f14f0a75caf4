// SPDX-License-Identifier: Apache-2.0

// Reflector: keeps a sink in step with one collection of the API server by
// LIST and WATCH (client-go's cache.Reflector), resuming from the sink's
// committed resourceVersion.
//
// The state machine follows client-go (docs/informers.md has the details):
// - With no resume point, or after the watch expired: a streaming list
//   (sendInitialEvents) where the server offers one, else a paginated LIST,
//   written into the sink as it arrives and diffed against what it holds.
// - A sink that holds a relist cut short (a crash, a lost connection) is
//   listed with a paginated LIST, each page committed with its continue
//   token (ReplaceSession::Checkpoint): the next attempt continues from the
//   last committed page of the same server and query while the server still
//   honours the token, and otherwise lists from the start, diffing what the
//   cut-short one wrote. Until a list finishes, the sink has no resume
//   point, so a crash in the middle lists again.
// - With a resume point: no LIST. One limit=1 probe learns the collection's
//   current resourceVersion, and the watch starts from the resume point.
// - A streaming list that fails (other than for 429, a connection failure
//   or an expired resourceVersion) is followed at once by a paginated LIST.
// - A watch that ends cleanly is reopened from the last resourceVersion
//   seen. 410 Expired, or a resourceVersion the server has not reached,
//   leads to a relist at that resourceVersion with
//   resourceVersionMatch=NotOlderThan (the server's state at or after it,
//   never the expired state), then at "" if that one is unavailable too. A
//   list whose resourceVersion the next watch rejects is never repeated.
//   429 and connection failures back off and watch again without a relist
//   (a stream that breaks is watched again at once, or after backoff if it
//   broke within a second with nothing). A 500 InternalError relists
//   unless max_internal_error_retry allows another watch.
// - After an outage, with server_identity set, the server's identity is
//   asked before the watch opens again: another cluster is listed from "".
// - Requests in flight are cancelled when the stop is requested.
// - Between failures: exponential backoff with jitter, 800 ms to 30 s,
//   reset after 2 minutes without one.
//
// Thread-safety: Run() is called once, from one thread; the other methods
// may be called from any thread.
#ifndef KCACHE_REFLECTOR_H_
#define KCACHE_REFLECTOR_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "kcache/clock.h"
#include "kcache/export.h"
#include "kcache/list.h"
#include "kcache/resource.h"
#include "kcache/rest_client.h"
#include "kcache/store.h"
#include "kcache/watch.h"

namespace kcache {

// The two calls a reflector makes (client-go's ListerWatcher).
//
// Thread-safety: implementations are safe for concurrent use.
class KCACHE_EXPORT ListerWatcher {
 public:
  virtual ~ListerWatcher() = default;
  virtual StatusOr<ObjectList> List(const ListOptions& options) = 0;
  virtual StatusOr<std::unique_ptr<WatchStream>> Watch(const ListOptions& options) = 0;
  // Names the collection in messages: "pods", "configmaps in namespace a".
  virtual std::string Describe() const = 0;
  // The resource listed, for listers' messages. Default: none ({}).
  virtual GroupResource Resource() const { return {}; }
  // The collection listed: where writes to its objects go (with
  // ResourceRef::InNamespace). Default: unknown.
  virtual std::optional<ResourceRef> Ref() const { return std::nullopt; }
  // True if List, Watch and the stream's Next wait only in ways that let a
  // waiting reflector share its thread with others (NewListWatch's, over a
  // client whose SharesThreads() is true): an informer then runs its
  // reflector on the process's shared threads. Default false: a thread of
  // its own.
  virtual bool SharesThreads() const { return false; }
};

// Lists and watches `resource` through `client`, adding the selectors
// (either may be empty) to every request.
KCACHE_EXPORT std::shared_ptr<ListerWatcher> NewListWatch(std::shared_ptr<RestClient> client,
                                                          ResourceRef resource,
                                                          std::string label_selector = "",
                                                          std::string field_selector = "");

// Where a reflector writes. Calls come from the reflector (its thread, or
// the fiber an informer runs it on), one at a time.
class KCACHE_EXPORT ReflectorSink {
 public:
  virtual ~ReflectorSink() = default;
  // Commits watch events (never bookmarks) in order, with the resume point
  // they lead to, as one atomic write. `events` may be empty: a bookmark
  // moves the resume point alone.
  virtual Status Apply(std::vector<WatchEvent> events, std::string resource_version) = 0;
  // Starts a relist; see Store::BeginReplace.
  virtual StatusOr<std::unique_ptr<ReplaceSession>> BeginReplace() = 0;
  // A relist cut short, and a session that goes on with it; see
  // Store::GetCutShortRelist and Store::ContinueReplace. Defaults: none,
  // and Unimplemented.
  virtual StatusOr<std::optional<CutShortRelist>> GetCutShortRelist() const {
    return std::optional<CutShortRelist>();
  }
  virtual StatusOr<std::unique_ptr<ReplaceSession>> ContinueReplace() {
    return Status::Unimplemented("this sink cannot continue a relist");
  }
  // The committed resume point; "" if none (or a relist was cut short).
  virtual std::string ResumeResourceVersion() const = 0;
  // Called once, when the sink first holds the server's state (see
  // Reflector::HasSynced).
  virtual void Synced() {}
  // Called every ReflectorOptions::resync_period while a watch is open
  // (client-go's Store.Resync), from the reflector's resync thread: unlike
  // the other calls, it may overlap them. An error is reported as a
  // kError event.
  virtual Status Resync() { return Status::OK(); }
};

// A sink writing straight into `store`, with no notifications.
KCACHE_EXPORT std::shared_ptr<ReflectorSink> NewStoreSink(std::shared_ptr<Store> store);

// What happened, for logs: one line per list, resume and relist.
struct KCACHE_EXPORT ReflectorEvent {
  enum class Type {
    kListed,   // a LIST or streaming list was applied
    kResumed,  // started from a resume point, without a LIST
    kSynced,   // caught up with the server
    kRelist,   // a relist follows: the watch expired, or the server is another
    kError,    // a list or watch failed; a retry follows after backoff
    kSkipped,  // a watch event was not applied (not of the expected kind)
  };
  Type type;
  std::string message;
};

// The answer to the probe of a resume (ReflectorOptions::shared_probe).
struct KCACHE_EXPORT ProbeAnswer {
  // A collection's resourceVersion, from a LIST with limit=1.
  std::string resource_version;
  // Whether the collection listed was the reflector's own.
  bool own = true;
};

// Whether a server streams lists (sendInitialEvents), learned once for the
// reflectors of that server (ReflectorOptions::streaming_support): the
// first to ask tries alone; the others wait for its watch to open or be
// refused, then stream or list without asking the server again.
//
// Thread-safety: safe for concurrent use; a waiting reflector on a fiber
// gives its carrier away.
class KCACHE_EXPORT StreamingSupport {
 public:
  static std::shared_ptr<StreamingSupport> Create();
  virtual ~StreamingSupport() = default;

  enum class Decision {
    kStream,        // the server opened one: stream
    kTryAndReport,  // unknown: try, then Report what the open gave
    kList,          // the server refused one: list page by page
  };
  // Waits while another reflector tries (until `stop`).
  virtual Decision Decide(std::stop_token stop) = 0;

  enum class Outcome { kOpened, kRefused, kUnknown };
  // After kTryAndReport, what the streaming list's open gave (kUnknown: no
  // answer, such as a connection refused or a stop; the next to ask tries).
  // kRefused may also come later from any reflector (a server that ignored
  // sendInitialEvents).
  virtual void Report(Outcome outcome) = 0;
};

struct KCACHE_EXPORT ReflectorOptions {
  // Default: Clock::Real().
  std::shared_ptr<Clock> clock{};
  // LIST page size. Default: 500 (client-go's pager).
  int64_t page_size = 500;
  // Ask for a streaming list (sendInitialEvents) first; a server that
  // refuses it (HTTP 4xx, e.g. before Kubernetes 1.27) or ignores it is
  // then listed with LIST for the rest of the reflector's life.
  // Default: true.
  bool streaming_list = true;
  // Shares what the first streaming list learned with the reflectors of one
  // server (an InformerFactory sets it), so that a server that refuses them
  // is asked once, not once per type. Default: null (each learns alone).
  std::shared_ptr<StreamingSupport> streaming_support{};
  // Watches ask for timeoutSeconds of min * U[1, 2), rounded down. Values
  // below 5 minutes are raised to 5 minutes, as client-go does, so that a
  // fleet of watchers cannot make the server reopen watches more often.
  // Default: 5 min.
  std::chrono::seconds min_watch_timeout{300};
  // Backoff between failed attempts (client-go's wait.Backoff): the delay
  // starts at `backoff_initial` and is multiplied by `backoff_factor` after
  // each of the first `backoff_steps` delays, up to `backoff_max`; each
  // delay is stretched by up to `backoff_jitter` times itself. It starts
  // over after `backoff_reset` without a failure. Defaults: client-go's.
  std::chrono::milliseconds backoff_initial{800};
  std::chrono::milliseconds backoff_max{30000};
  std::chrono::milliseconds backoff_reset{120000};
  double backoff_factor = 2.0;
  double backoff_jitter = 1.0;
  int backoff_steps = 38;
  // A watch ending in a 500 InternalError is reopened (no relist) while
  // less than this has passed since the first of the current run of such
  // errors; a run ends after a minute without one. 0: never, every such
  // error relists. Default: 0 (client-go's).
  std::chrono::milliseconds max_internal_error_retry{0};
  // Every period while a watch is open, the sink's Resync() is called if
  // `should_resync` (when set) says so. 0: never. Default: 0.
  std::chrono::milliseconds resync_period{0};
  std::function<bool()> should_resync;
  // When set, watch events whose object has another apiVersion or kind are
  // not applied but reported as kSkipped (client-go's expected GVK).
  // Default: empty, any.
  std::string expected_api_version{};
  std::string expected_kind{};
  // Starting from a resume point, the reflector counts as synced once the
  // watch is quiet for this long (the server sends the backlog since the
  // resume point at once), or once it reaches the probe's resourceVersion.
  // Default: 100 ms.
  std::chrono::milliseconds sync_quiet_period{100};
  // Compare decimal resourceVersions as integers (KEP-5504: kube-apiserver
  // and the custom resources it serves promise that order). Set false for
  // an aggregated API server whose versions are opaque: a resumed reflector
  // then counts as synced by the quiet rule alone (invariant 5).
  // Default: true.
  bool ordered_resource_versions = true;
  // Start from the sink's resume point without a LIST. false: the first
  // list is from "" whatever the sink holds, for a store known to hold
  // another history (another cluster's objects). Default: true.
  bool resume = true;
  // Names the history the server's resourceVersions belong to, such as the
  // uid of the cluster's kube-system namespace (kcache sync's choice). When
  // set, it is asked once before the first list or resume, and again after
  // every outage (a watch that could not be opened, broke off or stalled)
  // before the watch opens again. Another answer than before means another
  // cluster answers at the address now, whose resourceVersions say nothing
  // of the sink's: the reflector lists again from "". "" or an HTTP error
  // is unknown, which compares equal to anything; a connection error is
  // retried like the watch. Default: none.
  std::function<StatusOr<std::string>()> server_identity;
  // The server_identity the sink's contents were listed under, when known
  // (InformerFactory: the cache's recorded cluster). If the first answer of
  // server_identity differs, the sink holds another cluster's objects and
  // resourceVersions: the reflector lists from "" instead of resuming.
  // Default: "" (unknown: resume).
  std::string sink_identity{};
  // Shares the probe of a resume among the reflectors of one server (an
  // InformerFactory sets it): called with this reflector's own probe (its
  // collection's LIST with limit=1, giving the list's resourceVersion) and
  // the time Run began (on this clock), it answers with a collection's
  // resourceVersion read at or after that time. Another collection's may
  // tell the reflector it is caught up (its resume point is that
  // resourceVersion) or which one to wait for, never that the server's
  // history was reset: a resume point past it is checked with the
  // reflector's own probe (types kept in another etcd, or served by an
  // aggregated API, number their resourceVersions apart). Default: none
  // (each reflector probes its own collection).
  std::function<StatusOr<ProbeAnswer>(const std::function<StatusOr<std::string>()>& own,
                                      Clock::TimePoint since)>
      shared_probe;
  // Watch events committed per write, at most. Default: 1,000.
  size_t max_batch = 1000;
  // A thread of the reflector's own reads and decodes a streaming list, and
  // a watch once a full batch (max_batch) shows it busy, ahead of the thread
  // that commits, holding at most this many bytes of decoded objects, so
  // that parsing overlaps with writing; a quiet watch is decoded on the
  // committing thread. 0: one thread does both. Default: 8 MiB.
  size_t read_ahead_bytes = size_t{8} << 20;
  // Seeds the jitter of backoff and watch timeouts. Default: random.
  uint64_t seed = 0;
  // Called on the reflector's thread with the errors client-go hands to its
  // WatchErrorHandler: a watch request refused when it opens (410 Expired
  // included, with the server's message; not a 429 or a connection not
  // made, which are retried), a LIST that failed (after the retry from ""
  // that a 410 or "too large resource version" earns), and the limit=1
  // probe of a resume. Beyond client-go, also a watch ended because the
  // sink could not apply it. Not heard, as in client-go, only said through
  // on_event: an ERROR event or a broken stream inside an open watch, a very
  // short watch, and a streaming list's failure (docs/informers.md).
  std::function<void(const Status&)> watch_error_handler;
  // Called for each ReflectorEvent, on the reflector's (or its sync
  // timer's) thread.
  std::function<void(const ReflectorEvent&)> on_event;
};

// Counters since the reflector was created.
struct KCACHE_EXPORT ReflectorStats {
  uint64_t lists = 0;  // full lists (LIST or streaming), each counted once
  // Full lists that went on from a cut-short one's last committed page
  // instead of starting over (counted in `lists` too).
  uint64_t continued_lists = 0;
  uint64_t list_requests = 0;   // LIST requests of full lists (pages)
  uint64_t probes = 0;          // limit=1 LIST probes
  uint64_t watches = 0;         // watch requests opened
  uint64_t events = 0;          // ADDED/MODIFIED/DELETED events applied
  uint64_t listed_objects = 0;  // objects received by full lists
  uint64_t bytes = 0;           // JSON bytes of listed objects and events
  uint64_t listed_bytes = 0;    // JSON bytes of listed objects alone
  uint64_t skipped = 0;         // watch events not applied (kSkipped)
  // Watches given up as stalled: nothing received for the client's idle
  // timeout (RestClientOptions::watch_idle_timeout) or by their deadline.
  uint64_t stalled_watches = 0;
  // The full list in progress, counted as its items arrive (a streamed or
  // paged list of 100,000 objects takes a while); both 0 between lists.
  // When it is applied they move to listed_objects and bytes.
  uint64_t listing_objects = 0;
  uint64_t listing_bytes = 0;
  // The objects the list in progress will have: listing_objects plus the
  // remainingItemCount of its last page. 0 where the server did not say (a
  // streaming list, the last page, a selector the count cannot honour).
  uint64_t listing_expected = 0;
  // When the sink was last known current: a list, watch batch or bookmark
  // applied, or a resumed sink found synced. On the reflector's clock; the
  // clock's epoch if never.
  Clock::TimePoint last_applied{};
  // When the current run of failed lists and watches began: the first
  // failure since a list was applied or a watch opened. The clock's epoch
  // while none has failed since (readiness: kcache sync's /readyz).
  Clock::TimePoint failing_since{};
  // The server_identity the sink's contents were listed (or resumed) under;
  // "" if unknown or not asked.
  std::string server_identity{};
};

class KCACHE_EXPORT Reflector {
 public:
  static std::unique_ptr<Reflector> Create(std::shared_ptr<ListerWatcher> lw,
                                           std::shared_ptr<ReflectorSink> sink,
                                           ReflectorOptions options = {});
  virtual ~Reflector() = default;

  // Lists and watches until `stop` is requested (client-go's Run).
  virtual void Run(std::stop_token stop) = 0;

  // True once the sink holds the server's state: a list has been applied,
  // or, from a resume point, the watch has caught up.
  virtual bool HasSynced() const = 0;
  // The resourceVersion of the last event, bookmark or list applied.
  virtual std::string LastSyncResourceVersion() const = 0;
  virtual ReflectorStats stats() const = 0;
};

}  // namespace kcache

#endif  // KCACHE_REFLECTOR_H_
