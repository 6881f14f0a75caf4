// SPDX-License-Identifier: Apache-2.0

#include "kcache/informer_factory.h"

#include <pthread.h>

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/json_text.h"
#include "exec/fiber.h"

namespace kcache {

InformerFactory::InformerFactory(RestConfig config, std::shared_ptr<RestClient> client,
                                 std::shared_ptr<Cache> cache, InformerFactoryOptions options)
    : config_(std::move(config)),
      cache_(std::move(cache)),
      options_(std::move(options)),
      client_(std::move(client)),
      discovery_(options_.discovery) {}

InformerFactory::~InformerFactory() { Stop(); }

struct InformerFactory::Follower {
  AllResourcesOptions options;
  std::mutex mu;
  std::condition_variable cv;
  bool poked = false;  // guarded by mu: a CustomResourceDefinition changed
  bool stop = false;   // guarded by mu
  // Keyspaces of deleted CustomResourceDefinitions, to remove once
  // discovery no longer lists them, and when each was deleted: one still
  // listed a minute later (a definition made again at once) is forgotten.
  // Guarded by mu.
  std::map<std::string, std::chrono::steady_clock::time_point> deleted;
  // The rest is the follower's own (its thread, or ForAllResources before
  // the thread starts).
  std::map<std::string, ApiResource> managed;  // keyspace: what select accepted
  std::set<std::string> missed;                // managed, missing from the last discovery
  std::thread thread;
};

std::unique_ptr<InformerFactory> InformerFactory::Create(RestConfig config,
                                                         std::shared_ptr<Cache> cache,
                                                         InformerFactoryOptions options) {
  return std::unique_ptr<InformerFactory>(
      new InformerFactory(std::move(config), nullptr, std::move(cache), std::move(options)));
}

std::unique_ptr<InformerFactory> InformerFactory::Create(std::shared_ptr<RestClient> client,
                                                         std::shared_ptr<Cache> cache,
                                                         InformerFactoryOptions options) {
  RestConfig config = client->config();
  return std::unique_ptr<InformerFactory>(new InformerFactory(
      std::move(config), std::move(client), std::move(cache), std::move(options)));
}

StatusOr<std::shared_ptr<RestClient>> InformerFactory::ClientLocked() {
  if (!client_) {
    KCACHE_ASSIGN_OR_RETURN(client_, RestClient::Create(config_, options_.client));
  }
  return client_;
}

StatusOr<std::shared_ptr<RestClient>> InformerFactory::client() {
  std::lock_guard l(mu_);
  return ClientLocked();
}

StatusOr<std::shared_ptr<const Discovery>> InformerFactory::discovery() {
  std::lock_guard l(mu_);
  if (!discovery_) {
    KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<RestClient> c, ClientLocked());
    KCACHE_ASSIGN_OR_RETURN(discovery_, Discovery::Fetch(*c));
  }
  return discovery_;
}

StatusOr<std::string> KubeSystemUid(RestClient& client) {
  KCACHE_ASSIGN_OR_RETURN(std::string body, client.Get("/api/v1/namespaces/kube-system"));
  nlohmann::json ns = nlohmann::json::parse(body, nullptr, false);
  if (!ns.is_object() || !ns["metadata"].is_object() || !ns["metadata"]["uid"].is_string())
    return std::string();
  return ns["metadata"]["uid"].get<std::string>();
}

ResourceInfo ResourceInfoOf(const ApiResource& resource) { return ResourceInfo(resource); }

StatusOr<std::shared_ptr<SharedIndexInformer>> InformerFactory::ForResource(std::string_view name) {
  KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<const Discovery> d, discovery());
  KCACHE_ASSIGN_OR_RETURN(ApiResource resource, d->Resolve(name));
  return Make(resource, nullptr);
}

StatusOr<std::shared_ptr<SharedIndexInformer>> InformerFactory::ForResource(
    const ApiResource& resource) {
  return Make(resource, nullptr);
}

StatusOr<std::shared_ptr<SharedIndexInformer>> InformerFactory::ForResource(
    std::string_view name, const ForResourceOptions& options) {
  KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<const Discovery> d, discovery());
  KCACHE_ASSIGN_OR_RETURN(ApiResource resource, d->Resolve(name));
  return Make(resource, &options);
}

StatusOr<std::shared_ptr<SharedIndexInformer>> InformerFactory::ForResource(
    const ApiResource& resource, const ForResourceOptions& options) {
  return Make(resource, &options);
}

namespace {

// Asks one question for many askers: those that come while it is being
// asked share the answer, and an answer (not an error) is given again for
// `reuse` after it came. The reflectors of a factory ask the cluster's
// identity at their start and after every outage: 300 of them starting, or
// coming back from one outage, together cost one request, not 300.
class SharedQuestion {
 public:
  SharedQuestion(std::function<StatusOr<std::string>()> ask, std::shared_ptr<Clock> clock,
                 Clock::Duration reuse)
      : ask_(std::move(ask)), clock_(std::move(clock)), reuse_(reuse) {}

  StatusOr<std::string> Ask() {
    std::unique_lock l(mu_);
    if (answer_ && clock_->Now() - answered_at_ < reuse_) return *answer_;
    if (asking_) {
      const uint64_t round = rounds_;
      cv_.wait(l, [&] { return rounds_ != round; });
      return last_;
    }
    asking_ = true;
    l.unlock();
    StatusOr<std::string> got = ask_();
    l.lock();
    asking_ = false;
    ++rounds_;
    last_ = got;
    if (got.ok()) {
      answer_ = *got;
      answered_at_ = clock_->Now();
    }
    cv_.notify_all();
    return got;
  }

 private:
  const std::function<StatusOr<std::string>()> ask_;
  const std::shared_ptr<Clock> clock_;
  const Clock::Duration reuse_;
  std::mutex mu_;
  exec::CondVar cv_;                   // askers on fibers give their carriers away
  bool asking_ = false;                // guarded by mu_
  uint64_t rounds_ = 0;                // guarded by mu_: questions answered
  StatusOr<std::string> last_{""};     // guarded by mu_: the last round's answer
  std::optional<std::string> answer_;  // guarded by mu_: the last success
  Clock::TimePoint answered_at_;       // guarded by mu_
};

// The probes of many resumes as a few requests: an asker gets the answer of
// a probe sent at or after `since` (when its reflector started), made with
// the own probe of whoever asked first, so that 300 reflectors starting
// together cost one LIST with limit=1, not 300. When that probe fails, each
// probes its own.
class SharedProbe {
 public:
  explicit SharedProbe(std::shared_ptr<Clock> clock) : clock_(std::move(clock)) {}

  StatusOr<ProbeAnswer> Ask(const std::function<StatusOr<std::string>()>& own,
                            Clock::TimePoint since) {
    std::unique_lock l(mu_);
    for (;;) {
      if (answered_ && sent_ >= since) {
        if (last_.ok()) return ProbeAnswer{*last_, false};
        break;
      }
      if (!asking_) {
        asking_ = true;
        answered_ = false;
        sent_ = clock_->Now();
        l.unlock();
        StatusOr<std::string> got = own();
        l.lock();
        asking_ = false;
        answered_ = true;
        last_ = got;
        l.unlock();
        cv_.notify_all();
        if (!got.ok()) return got.status();
        return ProbeAnswer{*std::move(got), true};
      }
      cv_.wait(l, [&] { return !asking_; });
    }
    l.unlock();
    KCACHE_ASSIGN_OR_RETURN(std::string rv, own());
    return ProbeAnswer{std::move(rv), true};
  }

 private:
  const std::shared_ptr<Clock> clock_;
  std::mutex mu_;
  exec::CondVar cv_;                // askers on fibers give their carriers away
  bool asking_ = false;             // guarded by mu_
  bool answered_ = false;           // guarded by mu_: last_ answers the probe sent at sent_
  Clock::TimePoint sent_;           // guarded by mu_
  StatusOr<std::string> last_{""};  // guarded by mu_
};

std::string Describe(const ResourceSelection& s) {
  std::string d = s.namespace_.empty() ? "all namespaces" : "namespace " + s.namespace_;
  d += s.label_selector.empty() ? ", no label selector" : ", -l " + s.label_selector;
  if (!s.field_selector.empty()) d += ", --field-selector " + s.field_selector;
  return d;
}

}  // namespace

namespace {

// The keyspace an informer of `resource` with `options` fills, and the
// selection it lists (`want`: the factory's, before `options`).
StatusOr<std::string> KeyspaceOf(const ApiResource& resource, const ForResourceOptions* options,
                                 ResourceSelection* want) {
  std::string name = resource.group_resource().String();
  if (options) {
    for (char c : options->name) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
        return Status::InvalidArgument("informer name \"" + options->name + "\" of " + name +
                                       ": only letters, digits, '-', '_' and '.' may be used");
      }
    }
    if (!options->name.empty()) name += "#" + options->name;
    if (options->namespace_) want->namespace_ = *options->namespace_;
    if (options->label_selector) want->label_selector = *options->label_selector;
    if (options->field_selector) want->field_selector = *options->field_selector;
  }
  if (!resource.namespaced) want->namespace_.clear();
  return name;
}

// An on_event that records `info`'s selection in keyspace `name` once the
// reflector has listed it (the keyspace held `held`'s objects until then),
// and passes every event on to `user`. A failed record is reported, and
// costs one more list on the next start.
std::function<void(const ReflectorEvent&)> RecordSelectionWhenListed(
    std::shared_ptr<Cache> cache, const std::string& name, const ResourceInfo& info,
    const ResourceSelection& held, std::function<void(const ReflectorEvent&)> user) {
  return [cache = std::move(cache), name, info, user = std::move(user),
          why = " (listed with " + Describe(held) + " before, now " + Describe(*info.selection) +
                ": listed again, not resumed)",
          recorded = false](const ReflectorEvent& e) mutable {
    if (e.type != ReflectorEvent::Type::kListed || recorded) {
      if (user) user(e);
      return;
    }
    // Only the selection changes: others may have added to the record
    // since (kcache sync: a custom resource's columns).
    ResourceInfo now = info;
    if (StatusOr<std::optional<ResourceInfo>> record = cache->GetResourceInfo(name);
        record.ok() && *record) {
      now = **record;
      now.selection = info.selection;
    }
    Status st = cache->SetResourceInfo(name, now);
    recorded = st.ok();
    if (!user) return;
    user(ReflectorEvent{e.type, e.message + why});
    if (!st.ok()) {
      user(ReflectorEvent{ReflectorEvent::Type::kError,
                          name + ": recording its selection: " + st.ToString()});
    }
  };
}

}  // namespace

Status InformerFactory::ShareLocked(ReflectorOptions* r, const std::shared_ptr<RestClient>& base) {
  if (!r->streaming_support) {
    if (!streaming_support_) streaming_support_ = StreamingSupport::Create();
    r->streaming_support = streaming_support_;
  }
  if (!r->shared_probe) {
    if (!shared_probe_) {
      auto probe = std::make_shared<SharedProbe>(options_.informer.clock ? options_.informer.clock
                                                                         : Clock::Real());
      shared_probe_ = [probe](const std::function<StatusOr<std::string>()>& own,
                              Clock::TimePoint since) { return probe->Ask(own, since); };
    }
    r->shared_probe = shared_probe_;
  }
  if (!options_.check_cluster_identity) return Status::OK();
  if (!recorded_identity_) {
    KCACHE_ASSIGN_OR_RETURN(std::optional<ClusterInfo> cluster, cache_->GetClusterInfo());
    recorded_identity_ = cluster ? cluster->uid : "";
  }
  if (r->sink_identity.empty()) r->sink_identity = *recorded_identity_;
  if (!r->server_identity) {
    if (!server_identity_) {
      // An answer is reused for a second: a cluster is not replaced at
      // its address faster than that, and after an outage every
      // reflector asks within it.
      auto question = std::make_shared<SharedQuestion>(
          [base]() { return KubeSystemUid(*base); },
          options_.informer.clock ? options_.informer.clock : Clock::Real(),
          std::chrono::seconds(1));
      server_identity_ = [question]() { return question->Ask(); };
    }
    r->server_identity = server_identity_;
  }
  // Reflector threads end in Stop(), which the destructor calls: `this`
  // outlives every call.
  r->on_event = [this, user = r->on_event](const ReflectorEvent& e) {
    if (user) user(e);
    if (e.type == ReflectorEvent::Type::kSynced || e.type == ReflectorEvent::Type::kListed)
      RecordIdentity();
  };
  return Status::OK();
}

StatusOr<std::shared_ptr<SharedIndexInformer>> InformerFactory::Make(
    const ApiResource& resource, const ForResourceOptions* options) {
  ResourceSelection want{options_.namespace_, options_.label_selector, options_.field_selector};
  KCACHE_ASSIGN_OR_RETURN(const std::string name, KeyspaceOf(resource, options, &want));
  std::lock_guard l(mu_);
  if (stopped_)
    return Status::FailedPrecondition("informer factory stopped: no informer for " + name);
  if (auto it = informers_.find(name); it != informers_.end()) {
    if (options && selections_.at(name) != want) {
      return Status::InvalidArgument(
          "the informer " + name + " exists with " + Describe(selections_.at(name)) + ", not " +
          Describe(want) + ": give this one a name of its own (ForResourceOptions::name)");
    }
    return it->second;
  }
  if (!resource.Supports("list") || !resource.Supports("watch")) {
    return Status::InvalidArgument("resource " + name + " does not support list and watch");
  }
  KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<RestClient> base, ClientLocked());
  // Same connection and thread; only the decoding defaults differ.
  ParseOptions parse = options_.client.parse;
  parse.default_kind = resource.kind;
  parse.default_api_version = resource.api_version();
  std::shared_ptr<RestClient> client = base->WithParseOptions(parse);
  KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Indexer> indexer,
                          cache_->OpenKeyspace(name, options_.keyspace));
  // The selection the keyspace's objects were listed with, if recorded.
  KCACHE_ASSIGN_OR_RETURN(std::optional<ResourceInfo> recorded, cache_->GetResourceInfo(name));
  std::optional<ResourceSelection> held;
  if (recorded) held = recorded->selection;
  const bool reselect = held && *held != want;
  // Offline readers (kcache get, tree, snapshots) learn kinds and scopes
  // here. A new selection is recorded only once listed (below).
  ResourceInfo info(resource);
  info.selection = reselect ? held : want;
  if (recorded) {
    // What others added to the record is kept (kcache sync: a custom
    // resource's columns).
    info.custom = recorded->custom;
    info.printer_columns = recorded->printer_columns;
  }
  KCACHE_RETURN_IF_ERROR(cache_->SetResourceInfo(name, info));  // a no-op when unchanged
  info.selection = want;
  auto lw = NewListWatch(std::move(client), resource.Ref(want.namespace_), want.label_selector,
                         want.field_selector);
  InformerOptions io = options_.informer;
  // Watch events of another kind are skipped, as client-go's typed
  // informers do.
  io.reflector.expected_api_version = parse.default_api_version;
  io.reflector.expected_kind = resource.kind;
  KCACHE_RETURN_IF_ERROR(ShareLocked(&io.reflector, base));
  if (reselect) {
    // The keyspace holds another selection's objects: list, and record the
    // new selection once the list is committed.
    io.reflector.resume = false;
    io.reflector.on_event =
        RecordSelectionWhenListed(cache_, name, info, *held, std::move(io.reflector.on_event));
  }
  auto informer = SharedIndexInformer::Create(std::move(lw), std::move(indexer), std::move(io));
  if (started_) KCACHE_RETURN_IF_ERROR(informer->Start());
  informers_[name] = informer;
  selections_[name] = want;
  return informer;
}

Status InformerFactory::ForAllResources(AllResourcesOptions options) {
  KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<const Discovery> first, discovery());
  auto follower = std::make_shared<Follower>();
  follower->options = std::move(options);
  {
    std::lock_guard l(mu_);
    if (stopped_) return Status::FailedPrecondition("informer factory stopped: ForAllResources");
    if (follower_) return Status::FailedPrecondition("ForAllResources was called already");
    follower_ = follower;
  }
  KCACHE_RETURN_IF_ERROR(FollowPass(*first, /*first=*/true));
  // A changed CustomResourceDefinition is a new resource, or one gone, or
  // one established: discovery is read again.
  if (StatusOr<ApiResource> crds = first->Resolve("customresourcedefinitions.apiextensions.k8s.io");
      crds.ok() && crds->Supports("list") && crds->Supports("watch")) {
    KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<SharedIndexInformer> informer, ForResource(*crds));
    // The keyspace a definition serves: "plural.group".
    auto served = [](const ObjectPtr& crd) -> std::string {
      if (!crd) return "";
      const nlohmann::json o = nlohmann::json::parse(crd->json(), nullptr, false);
      const std::string group = json::String(json::At(o, {"spec", "group"}));
      const std::string plural = json::String(json::At(o, {"spec", "names", "plural"}));
      if (group.empty() || plural.empty()) return std::string();
      return plural + "." + group;
    };
    auto poke = [follower, served](const ObjectPtr& deleted) {
      {
        std::lock_guard l(follower->mu);
        follower->poked = true;
        if (std::string name = served(deleted); !name.empty()) {
          follower->deleted.emplace(name, std::chrono::steady_clock::now());
        }
      }
      follower->cv.notify_all();
    };
    // Definitions already served when discovery was read are no news; one
    // made between that read and the informer's first list is.
    std::set<std::string> known;
    for (const ApiResource& r : first->resources()) known.insert(r.group_resource().String());
    auto handler = std::make_shared<ResourceEventHandlerFuncs>();
    handler->add = [poke, served, known = std::move(known)](const ObjectPtr& o, bool initial) {
      if (!initial || !known.count(served(o))) poke(nullptr);
    };
    handler->update = [poke](const ObjectPtr&, const ObjectPtr&) { poke(nullptr); };
    handler->del = [poke](const DeletedObject& d) {
      const auto* tombstone = std::get_if<DeletedFinalStateUnknown>(&d);
      poke(tombstone ? tombstone->obj : std::get<ObjectPtr>(d));
    };
    HandlerOptions ho;
    ho.resync_period = std::chrono::milliseconds(0);
    ho.name = "all-resources";
    KCACHE_RETURN_IF_ERROR(informer->AddEventHandler(std::move(handler), ho).status());
  }
  std::lock_guard l(mu_);
  if (stopped_) return Status::FailedPrecondition("informer factory stopped: ForAllResources");
  follower->thread = std::thread([this] { FollowLoop(); });
  pthread_setname_np(follower->thread.native_handle(), "kcache-discover");
  return Status::OK();
}

Status InformerFactory::FollowPass(const Discovery& discovery, bool first) {
  std::shared_ptr<Follower> f;
  {
    std::lock_guard l(mu_);
    f = follower_;
  }
  const AllResourcesOptions& o = f->options;
  std::set<std::string> listed;
  for (const ApiResource& r : discovery.resources()) {
    if (!r.Supports("list") || !r.Supports("watch")) continue;
    const std::string name = r.group_resource().String();
    listed.insert(name);
    if (f->managed.count(name) || (o.select && !o.select(discovery, r))) continue;
    StatusOr<std::shared_ptr<SharedIndexInformer>> made = ForResource(r);
    if (!made.ok()) {
      if (first) return made.status();
      if (o.on_change) o.on_change(r, true, made.status());
      continue;
    }
    f->managed.emplace(name, r);
    if (!first && o.on_change) o.on_change(r, true, Status::OK());
  }
  std::set<std::string> deleted;
  {
    // A definition deleted is news for a type this follows, and only until
    // discovery has dropped it (or a minute has passed): the follower
    // looks each second while one is pending.
    std::lock_guard l(f->mu);
    const auto stale = std::chrono::steady_clock::now() - std::chrono::minutes(1);
    for (auto it = f->deleted.begin(); it != f->deleted.end();) {
      if (!f->managed.count(it->first) || it->second < stale) {
        it = f->deleted.erase(it);
      } else {
        deleted.insert(it->first);
        ++it;
      }
    }
  }
  for (auto it = f->managed.begin(); it != f->managed.end();) {
    const std::string& name = it->first;
    if (listed.count(name)) {
      f->missed.erase(name);
      ++it;
      continue;
    }
    const bool crd_deleted = deleted.count(name) > 0;
    if (!crd_deleted && f->missed.insert(name).second) {
      ++it;  // missing once: perhaps an aggregated API unavailable for now
      continue;
    }
    if (crd_deleted) {
      // The server deleted the objects before their definition: let the
      // informer apply those deletions first.
      std::shared_ptr<SharedIndexInformer> informer;
      {
        std::lock_guard l(mu_);
        if (auto i = informers_.find(name); i != informers_.end()) informer = i->second;
      }
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (informer && std::chrono::steady_clock::now() < give_up) {
        StatusOr<size_t> left = informer->GetIndexer()->Size();
        if (!left.ok() || *left == 0) break;
        std::unique_lock l(f->mu);
        if (f->cv.wait_for(l, std::chrono::milliseconds(100), [&] { return f->stop; })) break;
      }
      std::lock_guard l(f->mu);
      f->deleted.erase(name);
    }
    (void)Remove(name);
    if (o.on_change) o.on_change(it->second, false, Status::OK());
    f->missed.erase(name);
    it = f->managed.erase(it);
  }
  return Status::OK();
}

void InformerFactory::FollowLoop() {
  std::shared_ptr<Follower> f;
  std::shared_ptr<RestClient> client;
  {
    std::lock_guard l(mu_);
    f = follower_;
    client = client_;
  }
  auto next = std::chrono::steady_clock::now() + f->options.rediscover_interval;
  for (;;) {
    {
      std::unique_lock l(f->mu);
      // A deleted definition is looked for again each second until
      // discovery drops it.
      const auto wake =
          f->deleted.empty()
              ? next
              : std::min(next, std::chrono::steady_clock::now() + std::chrono::seconds(1));
      f->cv.wait_until(l, wake, [&] { return f->stop || f->poked; });
      if (f->stop) return;
      if (f->poked) {
        // A burst of changes (many definitions applied at once) makes one
        // pass.
        f->cv.wait_for(l, std::chrono::milliseconds(200), [&] { return f->stop; });
        if (f->stop) return;
      }
      f->poked = false;
    }
    next = std::chrono::steady_clock::now() + f->options.rediscover_interval;
    StatusOr<std::shared_ptr<const Discovery>> fresh = Discovery::Fetch(*client);
    if (!fresh.ok()) {
      if (f->options.on_change) f->options.on_change(ApiResource(), false, fresh.status());
      continue;
    }
    {
      std::lock_guard l(mu_);
      if (stopped_) return;
      discovery_ = *fresh;
    }
    (void)FollowPass(**fresh, /*first=*/false);
  }
}

Status InformerFactory::Remove(std::string_view name) {
  std::shared_ptr<SharedIndexInformer> informer;
  {
    std::lock_guard l(mu_);
    auto it = informers_.find(std::string(name));
    if (it == informers_.end()) {
      return Status::NotFound("no informer of keyspace " + std::string(name));
    }
    informer = std::move(it->second);
    informers_.erase(it);
    selections_.erase(std::string(name));
  }
  // Outside mu_: Stop() waits for handlers, which may call into the factory.
  informer->Stop();
  return Status::OK();
}

Status InformerFactory::Start() {
  std::lock_guard l(mu_);
  if (stopped_) return Status::FailedPrecondition("informer factory stopped: cannot start");
  started_ = true;
  for (auto& [name, informer] : informers_) {
    if (!informer->HasStarted()) KCACHE_RETURN_IF_ERROR(informer->Start());
  }
  return Status::OK();
}

Status InformerFactory::WaitForCacheSync(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string not_synced;
  for (auto& [name, informer] : informers()) {
    // Asked without a wait first: a wait, even of zero, is a system call,
    // and a caller polling a thousand informers would make a thousand.
    if (informer->HasSynced()) continue;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() > 0 && informer->WaitForSync(left)) continue;
    if (informer->IsStopped())
      return Status::Cancelled("informer " + name + " stopped before it synced");
    not_synced += (not_synced.empty() ? "" : ", ") + name;
  }
  if (not_synced.empty()) return Status::OK();
  return Status::DeadlineExceeded("informers not synced after " + std::to_string(timeout.count()) +
                                  " ms: " + not_synced);
}

void InformerFactory::Stop() {
  std::shared_ptr<Follower> follower;
  {
    std::lock_guard l(mu_);
    stopped_ = true;
    follower = follower_;
  }
  if (follower) {
    {
      std::lock_guard l(follower->mu);
      follower->stop = true;
    }
    follower->cv.notify_all();
    if (follower->thread.joinable() && follower->thread.get_id() != std::this_thread::get_id()) {
      follower->thread.join();
    }
  }
  // Outside mu_: Stop() waits for handlers, which may call into the factory.
  for (auto& [name, informer] : informers()) informer->Stop();
}

// An informer that listed holds the cluster its reflector listed from; one
// that resumed holds what the cache held. Once all hold one cluster, and it
// is not the one recorded, it is recorded: a process killed before then
// finds the old identity, and its informers list again.
void InformerFactory::RecordIdentity() {
  std::unique_lock record_lock(record_mu_);
  std::string recorded;
  std::shared_ptr<SharedIndexInformer> unsynced;  // the one that stopped the last look
  {
    std::lock_guard l(mu_);
    recorded = recorded_identity_.value_or("");
    if (auto it = informers_.find(unsynced_); it != informers_.end()) unsynced = it->second;
  }
  // Every informer calls this as it lists: while the one that stopped the
  // last look has not synced, there is nothing to record, and the informers
  // need not be walked (at 1,000 types the walks cost a fifth of a first
  // sync's CPU).
  if (unsynced && !unsynced->HasSynced()) return;
  unsynced_.clear();
  std::string held;
  for (const auto& [name, informer] : informers()) {
    if (!informer->HasSynced()) {
      unsynced_ = name;
      return;
    }
    ReflectorStats r = informer->stats();
    // A resumed store of a cache with no identity recorded is trusted.
    std::string id = r.lists > 0 || recorded.empty() ? r.server_identity : recorded;
    if (id.empty() || (!held.empty() && id != held)) return;
    held = std::move(id);
  }
  if (held.empty() || held == recorded) return;
  std::string message =
      "the cache holds the cluster whose kube-system namespace has uid " + held +
      (recorded.empty() ? std::string() : " alone now (it had " + recorded + ")") +
      ": recording it";
  ReflectorEvent::Type type = ReflectorEvent::Type::kSynced;
  StatusOr<std::optional<ClusterInfo>> info = cache_->GetClusterInfo();
  Status st = info.status();
  if (st.ok()) {
    ClusterInfo record = info->value_or(ClusterInfo{config_.server, "", ""});
    record.uid = held;
    st = cache_->SetClusterInfo(record);
  }
  if (st.ok()) {
    std::lock_guard l(mu_);
    recorded_identity_ = held;
  } else {
    // Tried again at the next list; until then a restart lists again.
    type = ReflectorEvent::Type::kError;
    message += " failed: " + st.ToString();
  }
  record_lock.unlock();
  if (options_.informer.reflector.on_event)
    options_.informer.reflector.on_event(ReflectorEvent{type, std::move(message)});
}

uint64_t InformerFactory::BytesReceived() const {
  std::lock_guard l(mu_);
  return client_ ? client_->BytesReceived() : 0;
}

std::map<std::string, std::shared_ptr<SharedIndexInformer>> InformerFactory::informers() const {
  std::lock_guard l(mu_);
  return informers_;
}

}  // namespace kcache
