// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/sync.h"

#include <signal.h>
#include <unistd.h>
#include <iostream>
#include "tools/kcache/command.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <functional>
#include <future>
#include <iomanip>
#include <map>
#include <mutex>
#include <ostream>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/json_text.h"
#include "kcache/cache.h"
#include "kcache/discovery.h"
#include "kcache/field_selector.h"
#include "kcache/fleet.h"
#include "kcache/informer_factory.h"
#include "kcache/label_selector.h"
#include "tools/kcache/apiserver/http_server.h"
#include "tools/kcache/apiserver/resource_types.h"
#include "tools/kcache/metrics.h"
#include "tools/kcache/progress.h"
#include "tools/kcache/resident.h"
#include "util/rfc3339.h"
#include "util/strings.h"

namespace kcache::tool {
namespace {

// "HH:MM:SS.mmm" (UTC), for log lines.
std::string TimeOfDay() {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm;
  gmtime_r(&t, &tm);
  std::ostringstream out;
  out << std::put_time(&tm, "%H:%M:%S") << '.' << std::setw(3) << std::setfill('0') << ms;
  return out.str();
}

// The table columns each CustomResourceDefinition declares, by
// "plural.group" and then version, from one paginated LIST of the
// definitions (not a GET per type: a start's round trips do not grow with
// the number of types). A LIST that fails (forbidden, an old server) is said
// once and gives none: the default columns.
using DeclaredColumns = std::map<std::string, std::map<std::string, std::vector<PrinterColumn>>>;

DeclaredColumns ListDeclaredColumns(RestClient& client, bool from_server_cache,
                                    const std::function<void(const std::string&)>& say) {
  DeclaredColumns out;
  const ResourceRef crds =
      builtin::ClusterScoped("apiextensions.k8s.io", "customresourcedefinitions");
  std::string rv;
  // `from_server_cache` (at start) reads the server's cache
  // (resourceVersion 0), not its store: the definitions discovery just
  // served are there, and a consistent read of every definition costs the
  // server a read of its store. A definition seen new while syncing is
  // read consistently. Members are found in place, not copied (a
  // definition's schema may be large).
  using ::kcache::json::At;
  using ::kcache::json::String;
  Status st = client.Pager(crds).EachListItem(
      ListOptions{.resource_version = from_server_cache ? "0" : "", .limit = 500},
      [&](const ObjectPtr& o) -> Status {
        nlohmann::json def = nlohmann::json::parse(o->json(), nullptr, false);
        const nlohmann::json& spec = At(def, {"spec"});
        if (!spec.is_object()) return Status::OK();
        const std::string name =
            String(At(spec, {"names", "plural"})) + "." + String(At(spec, {"group"}));
        auto& versions = out[name];
        const nlohmann::json& listed = At(spec, {"versions"});
        if (!listed.is_array()) return Status::OK();
        for (const nlohmann::json& v : listed) {
          auto& columns = versions[String(At(v, {"name"}))];
          const nlohmann::json& declared = At(v, {"additionalPrinterColumns"});
          if (!declared.is_array()) continue;
          for (const nlohmann::json& c : declared) {
            const nlohmann::json& priority = At(c, {"priority"});
            columns.push_back(
                PrinterColumn{String(At(c, {"name"})), String(At(c, {"type"})),
                              String(At(c, {"format"})), String(At(c, {"jsonPath"})),
                              priority.is_number_integer() ? priority.get<int32_t>() : int32_t{0}});
          }
        }
        return Status::OK();
      },
      &rv);
  if (!st.ok()) say("no table columns recorded for custom resources: " + std::string(st.message()));
  return out;
}

std::string Megabytes(uint64_t bytes) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << bytes / 1e6 << " MB";
  return out.str();
}

// The process's resident memory at its highest sample, and what the cache's
// configured caches held then; the rest is what syncing needs beside them.
struct MemorySample {
  uint64_t resident = 0;
  CacheMemory cache;
};

// The sample's account, then the kernel's peak, which also counts spikes
// shorter than the sampling interval and so may be higher.
std::string DescribeMemory(const MemorySample& m, uint64_t peak_resident) {
  const uint64_t held = m.cache.block_cache + m.cache.memtables + m.cache.table_readers;
  return "memory at the highest resident size sampled: " + Megabytes(m.resident) +
         " = block cache " + Megabytes(m.cache.block_cache) + " + memtables " +
         Megabytes(m.cache.memtables) + " + table readers " + Megabytes(m.cache.table_readers) +
         " + the rest " + Megabytes(m.resident > held ? m.resident - held : 0) +
         "; peak resident size " + Megabytes(peak_resident);
}

using Informers = std::map<std::string, std::shared_ptr<SharedIndexInformer>>;

// What one informer has received: list items (also those of a list still
// arriving) and events.
void Received(const ReflectorStats& s, uint64_t* objects, uint64_t* bytes) {
  *objects = s.listed_objects + s.listing_objects + s.events;
  *bytes = s.bytes + s.listing_bytes;
}

}  // namespace

std::string ProgressLine(const std::vector<ProgressSample>& resources, double seconds) {
  uint64_t objects = 0, bytes = 0, left = 0;
  bool synced = true, counted = true, listing_any = false;
  std::string each;
  for (const ProgressSample& r : resources) {
    objects += r.objects;
    bytes += r.bytes;
    synced = synced && r.synced;
    const bool listing = !r.synced && r.listing_objects > 0;
    std::string count = std::to_string(r.objects);
    if (listing) {
      listing_any = true;
      if (r.listing_expected > r.listing_objects) {
        left += r.listing_expected - r.listing_objects;
        count = std::to_string(r.listing_objects) + "/" + std::to_string(r.listing_expected);
      } else {
        counted = false;  // the server did not say how many
      }
    }
    each += (each.empty() ? "" : ", ") + r.name + " " + count +
            (r.synced  ? " synced"
             : listing ? " listing"
                       : " waiting");
  }
  const double rate = objects / std::max(seconds, 1e-3);
  std::ostringstream out;
  out << (synced ? "synced: " : "syncing: ") << objects << " objects, " << Megabytes(bytes) << ", "
      << static_cast<uint64_t>(rate) << " objects/s";
  // Time left only where every list under way has said its size.
  if (listing_any && counted) out << TimeLeft(static_cast<double>(left), rate);
  out << " (" << each << ")";
  return out.str();
}

namespace {

// The terminal's progress line of `informers`, `start` being the sync's.
std::string ProgressLine(const Informers& informers, std::chrono::steady_clock::time_point start) {
  std::vector<ProgressSample> samples;
  for (const auto& [name, informer] : informers) {
    ProgressSample s{name};
    const ReflectorStats stats = informer->stats();
    Received(stats, &s.objects, &s.bytes);
    s.listing_objects = stats.listing_objects;
    s.listing_expected = stats.listing_expected;
    s.synced = informer->HasSynced();
    samples.push_back(std::move(s));
  }
  return ProgressLine(
      samples, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

std::string Summary(const Informers& informers, std::chrono::steady_clock::time_point start) {
  uint64_t objects = 0, bytes = 0, stored = 0;
  for (const auto& [name, informer] : informers) {
    uint64_t n, b;
    Received(informer->stats(), &n, &b);
    objects += n;
    bytes += b;
    if (StatusOr<size_t> size = informer->GetIndexer()->Size(); size.ok()) stored += *size;
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::ostringstream out;
  out << "summary: " << informers.size() << " resource(s), " << stored
      << " objects in the cache; received " << objects << " objects (" << Megabytes(bytes)
      << " of JSON) in " << std::fixed << std::setprecision(1) << secs << " s";
  return out.str();
}

// Records the cluster the cache mirrors: its address and version (for
// stats and snapshot manifests). Its identity, the uid of its kube-system
// namespace, is the factory's to check and record (check_cluster_identity):
// a cache recorded from another cluster (one rebuilt at the same address)
// is listed again from "", and the new identity recorded once synced. The
// sync refuses that when the cache holds resources it does not name, which
// would stay stale. A server that does not say its version or identity is
// no reason to stop.
Status CheckCluster(RestClient& client, const std::string& server, Cache& cache,
                    const std::vector<ApiResource>& resources,
                    const std::function<void(const std::string&)>& say) {
  ClusterInfo cluster{server, "", ""};
  if (StatusOr<std::string> body = client.Get("/version"); body.ok()) {
    nlohmann::json v = nlohmann::json::parse(*body, nullptr, false);
    if (v.is_object()) cluster.version = v.value("gitVersion", "");
  }
  KCACHE_ASSIGN_OR_RETURN(std::optional<ClusterInfo> recorded, cache.GetClusterInfo());
  const std::string known = recorded ? recorded->uid : "";
  cluster.uid = known;  // the factory records a new one once synced
  StatusOr<std::string> uid = KubeSystemUid(client);
  if (!uid.ok() || uid->empty()) {
    if (!known.empty()) {
      say("cannot read the kube-system namespace to check that this is the cluster the cache "
          "was synced from" +
          (uid.ok() ? std::string() : " (" + std::string(uid.status().message()) + ")"));
    }
  } else if (!known.empty() && known != *uid) {
    std::vector<std::string> named;
    for (const ApiResource& r : resources) named.push_back(r.group_resource().String());
    KCACHE_ASSIGN_OR_RETURN(std::vector<std::string> keyspaces, cache.ListKeyspaces());
    std::string others;
    for (const std::string& k : keyspaces) {
      if (std::find(named.begin(), named.end(), k) == named.end())
        others += (others.empty() ? "" : ", ") + k;
    }
    const std::string what = "the server at " + server +
                             " is not the cluster this cache was synced from (its kube-system "
                             "namespace has uid " +
                             *uid + ", the cache recorded " + known + ")";
    if (!others.empty()) {
      return Status::FailedPrecondition(what + "; the cache also holds " + others +
                                        ", which this sync would leave stale: name them too, or "
                                        "sync into another cache");
    }
    say(what + ": listing every resource again");
  }
  return cache.SetClusterInfo(cluster);
}

// Errors that retrying cannot end: a request the server refuses as
// malformed (400 BadRequest, 422 Invalid), unlike 403, 404 or 5xx, which a
// change on the server can end; and a cache that stopped taking writes (an
// I/O error such as a full disk, or corruption), which only a reopen after
// the cause is fixed resumes.
bool IsPermanent(const Status& st) {
  if (st.code() == StatusCode::kIOError || st.code() == StatusCode::kCorruption) return true;
  const HttpError* h = st.http_error();
  return h && (h->http_code == 400 || h->http_code == 422);
}

}  // namespace

namespace {

// The options' own errors, before anything opens; selectors are checked
// as the server would check them.
Status CheckOptions(const SyncOptions& options) {
  if (options.resources.empty() && !options.all)
    return Status::InvalidArgument("name at least one resource to sync, e.g. pods, or give --all");
  if (!options.exclude.empty() && !options.all)
    return Status::InvalidArgument("--exclude applies to --all only");
  if (options.cache_dir.empty()) return Status::InvalidArgument("--cache DIR is required");
  if (auto st = LabelSelector::Parse(options.label_selector); !st.ok())
    return st.status().WithContext("-l " + options.label_selector);
  if (auto st = FieldSelector::Parse(options.field_selector); !st.ok())
    return st.status().WithContext("--field-selector " + options.field_selector);
  return Status::OK();
}

// GET /metrics on `listen`: the factory's informers in Prometheus text;
// /healthz, /livez and /readyz: probes for a kubelet.
StatusOr<std::unique_ptr<serve::http::Server>> ServeMetrics(
    const std::string& listen, InformerFactory* factory, std::chrono::milliseconds unready_after) {
  auto started = serve::http::Server::Start(
      listen,
      [factory, unready_after](const serve::http::Request& req, serve::http::ResponseWriter& w) {
        const serve::http::Headers text = {{"Content-Type", "text/plain; charset=utf-8"}};
        if (req.path == "/metrics") {
          w.Send(200, {{"Content-Type", "text/plain; version=0.0.4"}},
                 RenderPrometheus(factory->informers()));
        } else if (req.path == "/healthz" || req.path == "/livez") {
          w.Send(200, text, "ok");
        } else if (req.path == "/readyz") {
          const bool verbose = std::any_of(req.query.begin(), req.query.end(),
                                           [](const auto& kv) { return kv.first == "verbose"; });
          Readiness r = CheckReadiness(factory->informers(), unready_after, verbose);
          w.Send(r.ready ? 200 : 503, text, r.body);
        } else {
          w.Send(404, {{"Content-Type", "text/plain"}}, "404 page not found\n");
        }
      });
  if (!started.ok()) return started.status().WithContext("--metrics-listen");
  return started;
}

// What a stopped sync received, held at its peak, and where each resource
// resumes from.
void SayStopped(const InformerFactory& factory, const RestConfig& config, const MemorySample& peak,
                std::chrono::steady_clock::time_point started,
                const std::function<void(const std::string&)>& say) {
  say("received " + Megabytes(factory.BytesReceived()) + " of responses over the network" +
      (config.disable_compression ? " (compression disabled)" : ""));
  say(DescribeMemory(peak, tool::PeakResidentBytes()));
  for (auto& [name, informer] : factory.informers()) {
    const std::string rv = informer->GetIndexer()->LastSyncResourceVersion();
    say(rv.empty()
            ? name + ": stopped with no resume point (the next start lists)"
            : name + ": stopped at resourceVersion " + rv + " (the next start resumes from it)");
  }
  say(Summary(factory.informers(), started));
}

}  // namespace

namespace {

// Built-in resources that kube-apiserver serves under two groups from one
// storage (the same objects twice): sync each once.
bool SharesStorageAcrossGroups(const GroupVersionResource& gvr) {
  struct Alias {
    const char* resource;
    const char* groups[2];
  };
  static constexpr Alias kAliases[] = {
      {"events", {"", "events.k8s.io"}},
      {"ingresses", {"extensions", "networking.k8s.io"}},
      {"networkpolicies", {"extensions", "networking.k8s.io"}},
      {"deployments", {"extensions", "apps"}},
      {"daemonsets", {"extensions", "apps"}},
      {"replicasets", {"extensions", "apps"}},
      {"podsecuritypolicies", {"extensions", "policy"}},
  };
  for (const Alias& a : kAliases) {
    if (gvr.resource == a.resource && (gvr.group == a.groups[0] || gvr.group == a.groups[1]))
      return true;
  }
  return false;
}

}  // namespace

StatusOr<AllSelection> AllSelection::Make(const Discovery& discovery, const SyncOptions& options) {
  auto names = [&](const std::vector<std::string>& list,
                   const std::string& flag) -> StatusOr<std::set<std::string>> {
    std::set<std::string> out;
    for (const std::string& name : list) {
      StatusOr<ApiResource> r = discovery.Resolve(name);
      if (!r.ok()) return r.status().WithContext(flag + name);
      out.insert(r->group_resource().String());
    }
    return out;
  };
  AllSelection s;
  KCACHE_ASSIGN_OR_RETURN(s.named_, names(options.resources, ""));
  KCACHE_ASSIGN_OR_RETURN(s.excluded_, names(options.exclude, "--exclude "));
  if (!options.key_encryption_key.empty()) {
    KCACHE_ASSIGN_OR_RETURN(s.sealed_, names(options.encrypt, "--encrypt "));
  }
  for (const std::string& n : s.named_) {
    if (s.excluded_.count(n)) {
      return Status::InvalidArgument(n + " is both named and excluded (--exclude)");
    }
  }
  return s;
}

bool AllSelection::Takes(const Discovery& discovery, const ApiResource& r,
                         std::string* note) const {
  note->clear();
  const std::string gr = r.group_resource().String();
  if (named_.count(gr)) return true;
  if (!r.Supports("list") || !r.Supports("watch") || excluded_.count(gr)) return false;
  if (gr == "secrets" && !sealed_.count(gr)) {
    *note =
        "secrets: not synced (--all syncs them only when --encrypt covers them with a key, or "
        "when named)";
    return false;
  }
  if (SharesStorageAcrossGroups(r.gvr())) {
    StatusOr<ApiResource> preferred = discovery.Resolve(r.resource);
    if (preferred.ok() && preferred->group != r.group) {
      *note = gr + ": the same objects as " + preferred->group_resource().String() +
              " (one storage served under two groups): synced once, as " +
              preferred->group_resource().String();
      return false;
    }
  }
  return true;
}

StatusOr<std::vector<ApiResource>> SelectAll(const Discovery& discovery, const SyncOptions& options,
                                             std::vector<std::string>* notes) {
  KCACHE_ASSIGN_OR_RETURN(const AllSelection selection, AllSelection::Make(discovery, options));
  std::vector<ApiResource> out;
  std::string note;
  for (const ApiResource& r : discovery.resources()) {
    if (selection.Takes(discovery, r, &note)) {
      out.push_back(r);
    } else if (!note.empty()) {
      notes->push_back(note);
    }
  }
  return out;
}

namespace {

// --postgres: the feed of the cache into a fleet database; `on_fatal` when
// it stops for good.
StatusOr<std::unique_ptr<FleetFeed>> StartFleetFeed(
    const SyncOptions& options, const std::string& server,
    const std::function<void(const std::string&)>& say,
    std::function<void(const Status&)> on_fatal) {
  FleetFeedOptions fleet;
  fleet.conninfo = options.postgres;
  fleet.cluster = options.cluster.empty() ? DefaultFleetClusterName(server) : options.cluster;
  fleet.include_secrets = options.postgres_secrets;
  fleet.key_encryption_key = options.key_encryption_key;
  fleet.log = say;
  fleet.on_fatal = std::move(on_fatal);
  const std::string name = fleet.cluster;
  KCACHE_ASSIGN_OR_RETURN(std::unique_ptr<FleetFeed> feed,
                          FleetFeed::Start(options.cache_dir, std::move(fleet)));
  say("feeding " + RedactConninfo(options.postgres) + " as cluster " + name);
  return feed;
}

// One `kcache sync`, from its flags to its stop: each step a member, the state they share in
// one place. Say and Fail are called from the informers' threads; everything else runs on the
// thread that called Run.
class SyncRun {
 public:
  SyncRun(const SyncOptions& options, std::ostream& log, std::ostream& progress)
      : options_(options), log_(log), progress_(progress) {}

  Status Run();

 private:
  // The server, its discovery and the resources named or selected.
  Status Connect();
  Status OpenCache();
  // An informer per resource (and, with --all, per resource that appears later), each
  // keyspace's record of names and columns written before any starts.
  Status MakeInformers();
  Status FollowAllResources();
  Status StartFeedAndMetrics();
  // Until synced (--until-synced), a signal or an error that retrying cannot end: the signal,
  // or 0.
  int WaitForStop();
  void Stop(int sig);

  // The factory recorded names, scope and selection; a custom resource adds its table columns
  // for offline readers (kcache get).
  Status RecordColumns(const ApiResource& r, const DeclaredColumns& of);
  void Say(const std::string& line);
  // The first error that retrying cannot end stops the sync.
  void Fail(const Status& st);
  void SampleMemory();

  const SyncOptions& options_;
  std::ostream& log_;
  std::ostream& progress_;
  const std::function<void(const std::string&)> say_ = [this](const std::string& l) { Say(l); };
  sigset_t signals_{};
  RestConfig config_;
  RestClientOptions client_options_;
  std::shared_ptr<RestClient> client_;
  std::shared_ptr<const Discovery> discovery_;
  std::vector<ApiResource> resources_;
  std::vector<std::string> notes_;
  std::shared_ptr<Cache> cache_;
  std::unique_ptr<InformerFactory> factory_;
  std::unique_ptr<FleetFeed> feed_;
  std::unique_ptr<serve::http::Server> metrics_;
  std::chrono::steady_clock::time_point started_;
  // Sampled with every turn of WaitForStop's loop (20 a second, 100 until synced with
  // --until-synced).
  MemorySample peak_;

  std::mutex log_mu_;  // one line at a time, and the progress line between them
  std::mutex fatal_mu_;
  Status fatal_;  // guarded by fatal_mu_
  std::atomic<bool> failed_{false};
};

void SyncRun::Say(const std::string& line) {
  std::lock_guard l(log_mu_);
  if (options_.progress) progress_ << "\r\033[K" << std::flush;
  if (options_.log_format == "json") {
    log_ << (json::Dump(
                 {{"time", util::FormatRfc3339(std::chrono::system_clock::now())}, {"msg", line}}) +
             "\n")
         << std::flush;
  } else {
    // One write per line: the log is often unbuffered (stderr).
    log_ << (TimeOfDay() + " " + line + "\n") << std::flush;
  }
}

void SyncRun::Fail(const Status& st) {
  std::lock_guard l(fatal_mu_);
  if (fatal_.ok()) fatal_ = st;
  failed_ = true;
}

void SyncRun::SampleMemory() {
  const uint64_t resident = tool::ResidentBytes();
  if (resident > peak_.resident) peak_ = {resident, cache_->Memory()};
}

Status SyncRun::Connect() {
  KCACHE_ASSIGN_OR_RETURN(config_, LoadClientConfig(options_.kubeconfig));
  client_options_.request_timeout = options_.request_timeout;
  KCACHE_ASSIGN_OR_RETURN(client_, RestClient::Create(config_, client_options_));
  KCACHE_ASSIGN_OR_RETURN(discovery_, Discovery::Fetch(*client_));
  if (options_.all) {
    KCACHE_ASSIGN_OR_RETURN(resources_, SelectAll(*discovery_, options_, &notes_));
    return Status::OK();
  }
  for (const std::string& name : options_.resources) {
    KCACHE_ASSIGN_OR_RETURN(ApiResource r, discovery_->Resolve(name));
    resources_.push_back(std::move(r));
  }
  return Status::OK();
}

Status SyncRun::OpenCache() {
  CacheOptions cache_options;
  cache_options.journal = options_.journal;
  cache_options.encryption.key_encryption_key = options_.key_encryption_key;
  cache_options.encryption.keyspaces.clear();
  if (!options_.key_encryption_key.empty()) {
    for (const std::string& name : options_.encrypt) {
      StatusOr<ApiResource> r = discovery_->Resolve(name);
      if (!r.ok()) return r.status().WithContext("--encrypt " + name);
      cache_options.encryption.keyspaces.push_back(r->group_resource().String());
    }
  }
  KCACHE_ASSIGN_OR_RETURN(cache_, Cache::Open(options_.cache_dir, cache_options));
  return Status::OK();
}

Status SyncRun::RecordColumns(const ApiResource& r, const DeclaredColumns& of) {
  const std::string keyspace = r.group_resource().String();
  auto declared = of.find(keyspace);
  if (declared == of.end()) return Status::OK();
  KCACHE_ASSIGN_OR_RETURN(std::optional<ResourceInfo> info, cache_->GetResourceInfo(keyspace));
  if (!info) return Status::OK();
  info->custom = true;
  auto version = declared->second.find(r.version);
  info->printer_columns =
      version == declared->second.end() ? std::vector<PrinterColumn>() : version->second;
  // A record that did not change is not written again.
  return cache_->SetResourceInfo(keyspace, *info);
}

Status SyncRun::MakeInformers() {
  if (options_.disable_compression) config_.disable_compression = true;
  InformerFactoryOptions fo;
  fo.namespace_ = options_.all_namespaces ? "" : config_.namespace_;
  fo.label_selector = options_.label_selector;
  fo.field_selector = options_.field_selector;
  fo.client = client_options_;
  fo.client.parse.drop_managed_fields = options_.drop_managed_fields;
  fo.informer.reflector.on_event = [this](const ReflectorEvent& e) {
    Say(e.type == ReflectorEvent::Type::kError ? "error: " + e.message : e.message);
  };
  // The error itself was logged as the reflector's event.
  fo.informer.reflector.watch_error_handler = [this](const Status& st) {
    if (IsPermanent(st)) Fail(st);
  };
  const bool any_custom =
      std::any_of(resources_.begin(), resources_.end(),
                  [](const ApiResource& r) { return !serve::BuiltInGroup(r.group); });
  // The definitions' columns are read while the cluster is checked and the
  // informers made (none starts before they are recorded): one round trip
  // less before the first watch.
  std::future<DeclaredColumns> reading_columns;
  if (any_custom) {
    reading_columns = std::async(std::launch::async,
                                 [this] { return ListDeclaredColumns(*client_, true, say_); });
  }
  KCACHE_RETURN_IF_ERROR(CheckCluster(*client_, config_.server, *cache_, resources_, say_));
  fo.discovery = discovery_;
  factory_ = InformerFactory::Create(config_, cache_, fo);
  for (const ApiResource& r : resources_) KCACHE_RETURN_IF_ERROR(factory_->ForResource(r).status());
  if (any_custom) {
    const DeclaredColumns columns = reading_columns.get();
    for (const ApiResource& r : resources_) KCACHE_RETURN_IF_ERROR(RecordColumns(r, columns));
  }
  return options_.all ? FollowAllResources() : Status::OK();
}

Status SyncRun::FollowAllResources() {
  // Resources that come and go while the sync runs (a new or deleted
  // CustomResourceDefinition, an aggregated API) get or lose an informer.
  KCACHE_ASSIGN_OR_RETURN(AllSelection selection, AllSelection::Make(*discovery_, options_));
  AllResourcesOptions all;
  all.select = [selection](const Discovery& d, const ApiResource& r) {
    std::string note;
    return selection.Takes(d, r, &note);
  };
  all.on_change = [this](const ApiResource& r, bool added, const Status& error) {
    const std::string name = r.group_resource().String();
    if (!error.ok()) {
      Say("error: " + (name.empty() ? std::string("reading discovery again") : name) + ": " +
          error.ToString());
    } else if (added) {
      Say(name + ": new on the server: syncing it");
      if (!serve::BuiltInGroup(r.group)) {
        if (Status st = RecordColumns(r, ListDeclaredColumns(*client_, false, say_)); !st.ok()) {
          Say("error: " + name + ": recording its columns: " + st.ToString());
        }
      }
    } else {
      Say(name + ": no longer served: its informer stopped, its keyspace kept as last synced");
    }
  };
  return factory_->ForAllResources(std::move(all));
}

Status SyncRun::StartFeedAndMetrics() {
  if (!options_.postgres.empty()) {
    KCACHE_ASSIGN_OR_RETURN(feed_, StartFleetFeed(options_, config_.server, say_,
                                                  [this](const Status& st) { Fail(st); }));
  }
  if (!options_.metrics_listen.empty()) {
    KCACHE_ASSIGN_OR_RETURN(
        metrics_, ServeMetrics(options_.metrics_listen, factory_.get(), options_.unready_after));
    Say("serving metrics on " + metrics_->url() + "/metrics");
  }
  return Status::OK();
}

int SyncRun::WaitForStop() {
  std::jthread ticker;
  if (options_.progress) {
    ticker = std::jthread([this](std::stop_token stop) {
      while (!stop.stop_requested()) {
        std::this_thread::sleep_for(std::chrono::seconds(1));
        std::lock_guard l(log_mu_);
        progress_ << "\r\033[K" << ProgressLine(factory_->informers(), started_) << std::flush;
      }
    });
  }
  for (;;) {
    SampleMemory();
    if (failed_) return 0;
    const bool synced = factory_->WaitForCacheSync(std::chrono::milliseconds(0)).ok();
    if (options_.until_synced && synced) return 0;
    // Until-synced looks more often: the turn bounds how late it stops.
    timespec poll{0, (options_.until_synced ? 10 : 50) * 1000 * 1000};
    if (int got = sigtimedwait(&signals_, nullptr, &poll); got > 0) return got;
  }
}

void SyncRun::Stop(int sig) {
  Say(failed_ ? std::string("stopping: the error above does not go away by retrying")
      : sig == 0
          ? std::string("synced: stopping (--until-synced)")
          : std::string("received ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") + ": stopping");
  if (metrics_) metrics_->Stop();
  factory_->Stop();
  const bool synced = options_.until_synced && sig == 0 && !failed_;
  if (feed_ && synced) {
    // Synced means fed too (the informers stopped, the cache holds still): what the cache holds is
    // in the database.
    if (Status st = feed_->WaitCaughtUp(std::chrono::minutes(10)); !st.ok()) {
      Fail(st.WithContext("feeding " + RedactConninfo(options_.postgres)));
    } else {
      Say("postgres: fed up to the cache's resume points");
    }
  }
  // The feed's fatal error, if any, is `fatal_` already.
  if (feed_) feed_->Stop().IgnoreError();
  if (synced) {
    // A cache left for offline reads has its label index in one sorted
    // run. A stop by signal does not wait: RocksDB's compactions take the
    // unmerged tables after the next open, and reads are correct meanwhile.
    if (Status st = cache_->WaitForIndexMerges(); !st.ok()) {
      Say("the label index was left unmerged (reads are correct, slower): " + st.ToString());
    }
  }
  SampleMemory();
  SayStopped(*factory_, config_, peak_, started_, say_);
}

Status SyncRun::Run() {
  KCACHE_RETURN_IF_ERROR(CheckOptions(options_));
  // Block the signals before any thread starts, so that only sigwait sees them.
  sigemptyset(&signals_);
  sigaddset(&signals_, SIGINT);
  sigaddset(&signals_, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals_, nullptr);

  KCACHE_RETURN_IF_ERROR(Connect());
  KCACHE_RETURN_IF_ERROR(OpenCache());
  KCACHE_RETURN_IF_ERROR(MakeInformers());
  for (const std::string& note : notes_) Say(note);
  Say("syncing " + std::to_string(resources_.size()) + " resource(s) from " + config_.server +
      " into " + options_.cache_dir);
  KCACHE_RETURN_IF_ERROR(factory_->Start());
  KCACHE_RETURN_IF_ERROR(StartFeedAndMetrics());
  started_ = std::chrono::steady_clock::now();
  Stop(WaitForStop());
  std::lock_guard l(fatal_mu_);
  return fatal_;
}

}  // namespace

Status RunSync(const SyncOptions& options, std::ostream& log, std::ostream& progress) {
  return SyncRun(options, log, progress).Run();
}

namespace {

int SyncMain(const Command& self, const std::vector<std::string>& args) {
  SyncOptions o;
  std::string ns;
  std::string request_timeout = "60s";
  cli::FlagSet flags;
  flags.String("cache", '\0', &o.cache_dir, "the cache directory (created if missing)");
  flags.String("kubeconfig", '\0', &o.kubeconfig.path, "path to the kubeconfig file");
  flags.String("context", '\0', &o.kubeconfig.context, "the kubeconfig context to use");
  flags.String("server", '\0', &o.kubeconfig.server, "the address of the API server");
  flags.String("namespace", 'n', &ns, "sync this namespace only (default: all namespaces)");
  flags.String("selector", 'l', &o.label_selector, "label selector sent with every list and watch");
  flags.String("field-selector", '\0', &o.field_selector,
               "field selector sent with every list and watch");
  int64_t journal_events = static_cast<int64_t>(o.journal.max_events);
  int64_t journal_mib = static_cast<int64_t>(o.journal.max_bytes >> 20);
  int64_t journal_minutes = o.journal.max_age.count() / 60000;
  flags.Int("journal-max-events", '\0', &journal_events,
            "changes kept per resource for get -w and readers (0: no journal)");
  flags.Int("journal-max-mib", '\0', &journal_mib, "MiB of changes kept per resource");
  flags.Int("journal-max-minutes", '\0', &journal_minutes,
            "minutes a change is kept in the journal");
  flags.Bool("drop-managed-fields", '\0', &o.drop_managed_fields,
             "store objects without metadata.managedFields, asking servers to omit them");
  flags.Bool("until-synced", '\0', &o.until_synced,
             "exit once every resource has synced (and its label index is merged)");
  flags.Bool("disable-compression", '\0', &o.disable_compression,
             "do not ask the server to compress list responses");
  flags.String("metrics-listen", '\0', &o.metrics_listen,
               "serve Prometheus metrics at http://HOST:PORT/metrics, and /healthz and /readyz "
               "probes (port 0: any free one)");
  std::string unready_after = "1m";
  flags.String("unready-after", '\0', &unready_after,
               "/readyz fails once a resource's lists and watches have failed for this long");
  flags.String("log-format", '\0', &o.log_format,
               "text (HH:MM:SS.mmm message) or json (one {\"time\", \"msg\"} object per line)");
  flags.Bool("all", '\0', &o.all,
             "every resource the server can list and watch (secrets only when --encrypt covers "
             "them or they are named; events and ingresses once)");
  flags.StringSlice("exclude", '\0', &o.exclude, "with --all: resources not to sync");
  o.encrypt.clear();  // the flag appends; its default is set after parsing
  flags.StringSlice("encrypt", '\0', &o.encrypt,
                    "resources stored encrypted, given a key-encryption key (default: secrets)");
  KeyFlags(flags);
  flags.String("postgres", '\0', &o.postgres,
               "feed every change into this PostgreSQL database (a libpq URL or key=value "
               "string; the password from PGPASSWORD or PGPASSFILE), exactly once");
  flags.String("cluster", '\0', &o.cluster,
               "the cluster's name in --postgres (default: the server's host-port)");
  flags.Bool("postgres-secrets", '\0', &o.postgres_secrets,
             "feed secrets to --postgres too (sealed under the key-encryption key where "
             "--encrypt seals them)");
  flags.String("request-timeout", '\0', &request_timeout,
               "the longest a list or other request may take before it is retried (watches "
               "end at their timeoutSeconds), e.g. 30s; 0: no limit");
  std::vector<std::string> positional;
  if (int rc = ParseFlags(self, flags, args, &positional); rc >= 0) return rc;
  StatusOr<std::chrono::milliseconds> timeout = cli::ParseDuration(request_timeout);
  if (!timeout.ok()) return Fail(timeout.status(), "sync");
  o.request_timeout = *timeout;
  StatusOr<std::chrono::milliseconds> unready = cli::ParseDuration(unready_after);
  if (!unready.ok()) return Fail(unready.status().WithContext("--unready-after"), "sync");
  o.unready_after = *unready;
  if (!flags.Changed("encrypt")) o.encrypt = {"secrets"};
  std::erase(o.encrypt, "");  // --encrypt= : nothing
  StatusOr<std::string> key = GivenKeyEncryptionKey();
  if (!key.ok()) return Fail(key.status(), "sync");
  o.key_encryption_key = *std::move(key);
  if (flags.Changed("encrypt") && !o.encrypt.empty() && o.key_encryption_key.empty()) {
    return Fail(Status::InvalidArgument("--encrypt needs a key-encryption key: give "
                                        "--encryption-key-file, --encryption-key-env or "
                                        "--encryption-key-exec"),
                "sync");
  }
  if (journal_events < 0 || journal_mib < 0 || journal_minutes < 0) {
    return Fail(Status::InvalidArgument("--journal-max-* must not be negative"), "sync");
  }
  o.journal.max_events = static_cast<size_t>(journal_events);
  o.journal.max_bytes = static_cast<size_t>(journal_mib) << 20;
  o.journal.max_age = std::chrono::minutes(journal_minutes);
  // "deploy,cm" names two resources, as in kubectl.
  for (const std::string& arg : positional) {
    for (std::string_view name : Split(arg, ',')) {
      if (name.empty()) {
        return Fail(Status::InvalidArgument("resource list \"" + arg + "\" has an empty name"),
                    "sync");
      }
      o.resources.emplace_back(name);
    }
  }
  if (!ns.empty()) {
    o.kubeconfig.namespace_ = ns;
    o.all_namespaces = false;
  }
  if (o.log_format != "text" && o.log_format != "json") {
    return Fail(
        Status::InvalidArgument("--log-format must be text or json, not \"" + o.log_format + "\""),
        "sync");
  }
  // Structured logs are for machines: no progress line among them.
  o.progress = isatty(STDERR_FILENO) && o.log_format == "text";
  Status st = RunSync(o, std::cerr, std::cerr);
  if (o.progress) std::cerr << "\n";
  return st.ok() ? 0 : Fail(st, "sync");
}

}  // namespace

const Command kSyncCommand = {
    "sync",
    "sync (RESOURCE... | --all [--exclude R,...]) --cache DIR [--kubeconfig FILE] [flags]",
    "mirror resources of a cluster into a cache and keep it current",
    "Mirrors resources of a cluster into a cache directory (created if missing) and keeps it "
    "current until SIGINT or SIGTERM. RESOURCE is a name kubectl accepts: pods, po, "
    "deployments.apps, a custom resource's plural or short name. A restart resumes each "
    "resource's watch from the cache with no full LIST.",
    "  # Pods and nodes of the kubeconfig's cluster, until interrupted\n"
    "  kcache sync pods nodes --cache /var/lib/kcache\n"
    "  # One namespace, once, then exit\n"
    "  kcache sync deploy,cm -n prod --cache ./prod.cache --until-synced\n"
    "  # Everything the server lists and watches but events\n"
    "  kcache sync --all --exclude events --cache ./all.cache\n"
    "  # Against the built-in list/watch server, with JSON logs\n"
    "  kcache sync pods --server http://127.0.0.1:8001 --cache ./c --log-format=json\n",
    SyncMain};

}  // namespace kcache::tool
