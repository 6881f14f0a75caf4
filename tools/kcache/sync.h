// SPDX-License-Identifier: Apache-2.0

// `kcache sync`: mirrors resources of a cluster into a cache directory and
// keeps it current until SIGINT or SIGTERM.

#ifndef KCACHE_TOOLS_KCACHE_SYNC_H_
#define KCACHE_TOOLS_KCACHE_SYNC_H_

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <set>
#include <string>
#include <vector>

#include "kcache/discovery.h"
#include "kcache/journal.h"
#include "kcache/rest_config.h"
#include "kcache/status_or.h"

namespace kcache::tool {

struct SyncOptions {
  std::vector<std::string> resources;  // as kubectl names them: pods, cm, deployments.apps
  // Every resource the server can list and watch (kubectl api-resources
  // --verbs=list,watch), with `resources` added and `exclude` removed.
  // Secrets only when named or when `encrypt` covers them with a key; a
  // resource served under two groups from one storage (events, ingresses)
  // once, under the group kubectl's resolution prefers (SelectAll).
  bool all = false;
  std::vector<std::string> exclude;  // as kubectl names them
  std::string cache_dir;
  KubeconfigOptions kubeconfig;  // --kubeconfig, --context, --server, -n
  bool all_namespaces = true;    // false: kubeconfig.namespace_ (-n) only
  std::string label_selector;
  std::string field_selector;
  bool drop_managed_fields = false;
  // Do not ask for compressed LIST responses (kubectl's flag).
  bool disable_compression = false;
  // "HOST:PORT": serve the informers' metrics at http://HOST:PORT/metrics
  // in the Prometheus text format, and probes: /healthz and /livez (the
  // process serves), /readyz (CheckReadiness; ?verbose names each
  // resource's state). Empty: no server.
  std::string metrics_listen;
  // /readyz says not ready once a resource's lists and watches have been
  // failing (the server unreachable, or refusing) for longer than this.
  std::chrono::milliseconds unready_after{60000};
  // A progress line on `progress` (a terminal) every second while syncing.
  bool progress = false;
  // Stop once every resource has synced, instead of at SIGINT/SIGTERM.
  bool until_synced = false;
  // "text": "HH:MM:SS.mmm message" lines; "json": one object per line,
  // {"time": RFC 3339 with milliseconds, "msg": ...}.
  std::string log_format = "text";
  // Bounds of each resource's change journal, which `kcache get -w` and
  // readers of Cache::ReadJournal follow (defaults: JournalOptions).
  JournalOptions journal;
  // Each request but a watch: a list page, discovery (RestClientOptions).
  // 0: no limit.
  std::chrono::milliseconds request_timeout{60000};
  // The resources stored encrypted (as kubectl names them), given
  // `key_encryption_key` (32 bytes; empty: none, and nothing is encrypted).
  std::vector<std::string> encrypt = {"secrets"};
  std::string key_encryption_key;
  // A PostgreSQL connection string: feed every change the cache commits
  // into that database (kcache::FleetFeed) under `cluster`; empty: none.
  std::string postgres;
  // The cluster's name there. Empty: DefaultFleetClusterName of the server.
  std::string cluster;
  // Feed Secrets too (sealed, where `encrypt` seals them).
  bool postgres_secrets = false;
};

// What `--all` syncs: the resources named, excluded and encrypted by the
// options, resolved once, and the rules of SyncOptions::all.
class AllSelection {
 public:
  static StatusOr<AllSelection> Make(const Discovery& discovery, const SyncOptions& options);
  // Whether `resource` of `discovery` is synced; if not, and a user would
  // ask why, `*note` says (one line), else it is left empty.
  bool Takes(const Discovery& discovery, const ApiResource& resource, std::string* note) const;

 private:
  std::set<std::string> named_, excluded_, sealed_;  // GroupResource::String()
};

// What `--all` syncs of what `discovery` serves, and why each resource left
// out of it is left out (`*notes`, one line each).
StatusOr<std::vector<ApiResource>> SelectAll(const Discovery& discovery, const SyncOptions& options,
                                             std::vector<std::string>* notes);

// One resource's share of the progress line.
struct ProgressSample {
  std::string name;
  uint64_t objects = 0;  // received: listed, being listed and watched
  uint64_t bytes = 0;
  uint64_t listing_objects = 0;   // ReflectorStats: the list under way
  uint64_t listing_expected = 0;  // its size, where the server said it; else 0
  bool synced = false;
};

// The progress line a terminal shows every second, `seconds` into the sync:
// totals and rate, the time left where every list under way has said its
// size (remainingItemCount), and each resource's count and state
// ("syncing: 41200 objects, 250.3 MB, 20600 objects/s, about 3 s left
// (pods 41200/100000 listing, nodes 12 synced)").
std::string ProgressLine(const std::vector<ProgressSample>& resources, double seconds);

// Runs until SIGINT or SIGTERM (or, with until_synced, until synced); logs each list, resume,
// relist and sync to `log`, progress to `progress`.
Status RunSync(const SyncOptions& options, std::ostream& log, std::ostream& progress);

}  // namespace kcache::tool

#endif  // KCACHE_TOOLS_KCACHE_SYNC_H_
