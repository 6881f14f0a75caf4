#include "tools/kcache/sync.h"

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <functional>
#include <iomanip>
#include <map>
#include <mutex>
#include <ostream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "kcache/cache.h"
#include "kcache/discovery.h"
#include "kcache/field_selector.h"
#include "kcache/informer_factory.h"
#include "kcache/label_selector.h"
#include "serve/http_server.h"
#include "tools/kcache/metrics.h"
#include "tools/kcache/resident.h"
#include "util/rfc3339.h"

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

// Built-in groups: resources in them never come from a definition.
bool BuiltInGroup(const std::string& group) {
  return group.empty() || group.find('.') == std::string::npos ||
         (group.size() > 7 && group.compare(group.size() - 7, 7, ".k8s.io") == 0 &&
          group != "metrics.k8s.io");
}

// `info` (what the informer factory records) with whether `r` is a custom
// resource and, if so, the table columns its definition declares for the
// synced version. A definition that cannot be read (forbidden, an old
// server) leaves the default columns, with a note.
ResourceInfo DescribeResource(RestClient& client, const ApiResource& r, ResourceInfo info,
                              const std::function<void(const std::string&)>& say) {
  const std::string crd = r.gvr.resource + "." + r.gvr.group;
  StatusOr<std::string> body =
      client.Get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + crd);
  if (!body.ok()) {
    if (!body.status().IsNotFound())
      say(crd + ": no table columns recorded: " + std::string(body.status().message()));
    return info;
  }
  nlohmann::json def = nlohmann::json::parse(*body, nullptr, false);
  if (!def.is_object()) return info;
  info.custom = true;
  info.printer_columns.clear();
  for (const nlohmann::json& v :
       def.value("spec", nlohmann::json::object()).value("versions", nlohmann::json::array())) {
    if (v.value("name", "") != r.gvr.version) continue;
    for (const nlohmann::json& c : v.value("additionalPrinterColumns", nlohmann::json::array())) {
      info.printer_columns.push_back(PrinterColumn{c.value("name", ""), c.value("type", ""),
                                                   c.value("format", ""), c.value("jsonPath", ""),
                                                   c.value("priority", int32_t{0})});
    }
  }
  return info;
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
// arriving) and events. Returns whether a list is arriving.
bool Received(const SharedIndexInformer& informer, uint64_t* objects, uint64_t* bytes) {
  ReflectorStats s = informer.stats();
  *objects = s.listed_objects + s.listing_objects + s.events;
  *bytes = s.bytes + s.listing_bytes;
  return s.listing_objects > 0;
}

// The terminal's progress line: totals, rate, and each resource's count and
// state ("pods 41200 listing, nodes 12 synced").
std::string ProgressLine(const Informers& informers, std::chrono::steady_clock::time_point start) {
  uint64_t objects = 0, bytes = 0;
  bool synced = true;
  std::string each;
  for (const auto& [name, informer] : informers) {
    uint64_t n, b;
    const bool listing = Received(*informer, &n, &b);
    objects += n;
    bytes += b;
    const bool done = informer->HasSynced();
    synced = synced && done;
    each += (each.empty() ? "" : ", ") + name + " " + std::to_string(n) +
            (done      ? " synced"
             : listing ? " listing"
                       : " waiting");
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::ostringstream out;
  out << (synced ? "synced: " : "syncing: ") << objects << " objects, " << Megabytes(bytes) << ", "
      << static_cast<uint64_t>(objects / std::max(secs, 1e-3)) << " objects/s (" << each << ")";
  return out.str();
}

std::string Summary(const Informers& informers, std::chrono::steady_clock::time_point start) {
  uint64_t objects = 0, bytes = 0, stored = 0;
  for (const auto& [name, informer] : informers) {
    uint64_t n, b;
    Received(*informer, &n, &b);
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
    for (const ApiResource& r : resources) named.push_back(r.gvr.group_resource().String());
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

Status RunSync(const SyncOptions& options, std::ostream& log, std::ostream& progress) {
  if (options.resources.empty())
    return Status::InvalidArgument("name at least one resource to sync, e.g. pods");
  if (options.cache_dir.empty()) return Status::InvalidArgument("--cache DIR is required");
  // Selectors are checked here as the server would, before anything opens.
  if (auto st = LabelSelector::Parse(options.label_selector); !st.ok())
    return st.status().WithContext("-l " + options.label_selector);
  if (auto st = FieldSelector::Parse(options.field_selector); !st.ok())
    return st.status().WithContext("--field-selector " + options.field_selector);
  // Block the signals before any thread starts, so that only sigwait sees them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  KCACHE_ASSIGN_OR_RETURN(RestConfig config, LoadClientConfig(options.kubeconfig));
  RestClientOptions client_options;
  client_options.request_timeout = options.request_timeout;
  KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<RestClient> client,
                          RestClient::Create(config, client_options));
  KCACHE_ASSIGN_OR_RETURN(auto discovery, Discovery::Fetch(*client));
  std::vector<ApiResource> resources;
  for (const std::string& name : options.resources) {
    KCACHE_ASSIGN_OR_RETURN(ApiResource r, discovery->Resolve(name));
    resources.push_back(std::move(r));
  }
  CacheOptions cache_options;
  cache_options.journal = options.journal;
  KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Cache> opened,
                          Cache::Open(options.cache_dir, cache_options));
  std::shared_ptr<Cache> cache = std::move(opened);

  std::mutex log_mu;
  const bool json_log = options.log_format == "json";
  auto say = [&](const std::string& line) {
    std::lock_guard l(log_mu);
    if (options.progress) progress << "\r\033[K" << std::flush;
    if (json_log) {
      log << nlohmann::json{{"time", util::FormatRfc3339(std::chrono::system_clock::now())},
                            {"msg", line}}
                 .dump()
          << std::endl;
    } else {
      log << TimeOfDay() << " " << line << std::endl;
    }
  };
  if (options.disable_compression) config.disable_compression = true;
  InformerFactoryOptions fo;
  fo.namespace_ = options.all_namespaces ? "" : config.namespace_;
  fo.label_selector = options.label_selector;
  fo.field_selector = options.field_selector;
  fo.client = client_options;
  fo.client.parse.drop_managed_fields = options.drop_managed_fields;
  fo.informer.reflector.on_event = [&](const ReflectorEvent& e) {
    say(e.type == ReflectorEvent::Type::kError ? "error: " + e.message : e.message);
  };
  // The first error that retrying cannot end stops the sync.
  std::mutex fatal_mu;
  Status fatal;  // guarded by fatal_mu
  std::atomic<bool> failed{false};
  // The error itself was logged as the reflector's event.
  fo.informer.reflector.watch_error_handler = [&](const Status& st) {
    if (!IsPermanent(st)) return;
    std::lock_guard l(fatal_mu);
    if (fatal.ok()) fatal = st;
    failed = true;
  };
  KCACHE_RETURN_IF_ERROR(CheckCluster(*client, config.server, *cache, resources, say));
  auto factory = InformerFactory::Create(config, cache, fo);
  for (const ApiResource& r : resources) {
    KCACHE_RETURN_IF_ERROR(factory->ForResource(r).status());
    // The factory recorded names and scope; custom resources add their
    // table columns, for offline readers (kcache get).
    if (BuiltInGroup(r.gvr.group)) continue;
    KCACHE_RETURN_IF_ERROR(cache->SetResourceInfo(
        r.gvr.group_resource().String(), DescribeResource(*client, r, ResourceInfoOf(r), say)));
  }
  say("syncing " + std::to_string(resources.size()) + " resource(s) from " + config.server +
      " into " + options.cache_dir);
  KCACHE_RETURN_IF_ERROR(factory->Start());
  std::unique_ptr<http::Server> metrics;
  if (!options.metrics_listen.empty()) {
    InformerFactory* f = factory.get();
    auto started = http::Server::Start(
        options.metrics_listen, [f](const http::Request& req, http::ResponseWriter& w) {
          if (req.path != "/metrics") {
            w.Send(404, {{"Content-Type", "text/plain"}}, "404 page not found\n");
            return;
          }
          w.Send(200, {{"Content-Type", "text/plain; version=0.0.4"}},
                 RenderPrometheus(f->informers()));
        });
    if (!started.ok()) return started.status().WithContext("--metrics-listen");
    metrics = std::move(started).value();
    say("serving metrics on " + metrics->url() + "/metrics");
  }

  const auto started = std::chrono::steady_clock::now();
  std::jthread ticker;
  if (options.progress) {
    ticker = std::jthread([&](std::stop_token stop) {
      while (!stop.stop_requested()) {
        std::this_thread::sleep_for(std::chrono::seconds(1));
        std::lock_guard l(log_mu);
        progress << "\r\033[K" << ProgressLine(factory->informers(), started) << std::flush;
      }
    });
  }

  // Sampled with every turn of the loop below (20 a second).
  MemorySample peak;
  auto sample_memory = [&] {
    const uint64_t resident = util::ResidentBytes();
    if (resident > peak.resident) peak = {resident, cache->Memory()};
  };
  int sig = 0;
  for (;;) {
    sample_memory();
    if (failed) break;
    const bool synced = factory->WaitForCacheSync(std::chrono::milliseconds(0)).ok();
    if (options.until_synced && synced) break;
    timespec poll{0, 50 * 1000 * 1000};
    int got = sigtimedwait(&signals, nullptr, &poll);
    if (got > 0) {
      sig = got;
      break;
    }
  }
  if (ticker.joinable()) {
    ticker.request_stop();
    ticker.join();
  }
  say(failed ? std::string("stopping: the error above does not go away by retrying")
      : sig == 0
          ? std::string("synced: stopping (--until-synced)")
          : std::string("received ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") + ": stopping");
  if (metrics) metrics->Stop();
  factory->Stop();
  say("received " + Megabytes(factory->BytesReceived()) + " of responses over the network" +
      (config.disable_compression ? " (compression disabled)" : ""));
  sample_memory();
  say(DescribeMemory(peak, util::PeakResidentBytes()));
  for (auto& [name, informer] : factory->informers()) {
    const std::string rv = informer->GetIndexer()->LastSyncResourceVersion();
    say(rv.empty()
            ? name + ": stopped with no resume point (the next start lists)"
            : name + ": stopped at resourceVersion " + rv + " (the next start resumes from it)");
  }
  say(Summary(factory->informers(), started));
  std::lock_guard l(fatal_mu);
  return fatal;
}

}  // namespace kcache::tool
