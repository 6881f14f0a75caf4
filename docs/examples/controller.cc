// A controller built against an installed kcache: every namespace whose
// labels match a selector gets a ConfigMap with the given data, owned by the
// namespace (so it goes when the namespace goes); a namespace that stops
// matching loses it; a ConfigMap changed by hand is put back.
//
//   controller [--kubeconfig FILE | --server URL] --cache DIR
//              [--selector kcache.io/config=enabled] [--configmap kcache-config]
//              [--data KEY=VALUE]... [--workers 2] [--reconcile-delay-ms 0]
//
// The shape is client-go's sample-controller: informers on two resources,
// handlers that queue namespace names, workers that reconcile one name at a
// time from the listers and write through the factory's client, retrying
// conflicts with backoff. The informers live in a kcache Cache: a restart
// resumes their watches with no LIST, hears only what changed while it was
// down (kChangesOnly) and makes one pass over the cached namespaces to
// finish what the previous run left undone. SIGINT or SIGTERM stop it after
// the work in progress.

#include <kcache/cache.h>
#include <kcache/client_flags.h>
#include <kcache/exit_on_error.h>
#include <kcache/informer_factory.h>
#include <kcache/label_selector.h>
#include <kcache/object_builder.h>
#include <kcache/owner.h>
#include <kcache/rest_config.h>
#include <kcache/signals.h>
#include <kcache/workqueue.h>
#include <signal.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace {

using kcache::ObjectPtr;
using kcache::Status;

struct Flags {
  kcache::KubeconfigOptions kubeconfig;
  std::string cache_dir;
  std::string selector = "kcache.io/config=enabled";
  std::string configmap = "kcache-config";
  std::map<std::string, std::string> data;
  int workers = 2;
  std::chrono::milliseconds reconcile_delay{0};  // to watch it work, and to test kills mid-work
};

std::mutex log_mu;
void Log(const std::string& line) {
  std::lock_guard l(log_mu);
  std::cout << line << std::endl;
}

class Controller {
 public:
  Controller(Flags flags, kcache::LabelSelector selector,
             std::shared_ptr<kcache::RestClient> client, kcache::Lister namespaces,
             kcache::Lister configmaps)
      : flags_(std::move(flags)),
        selector_(std::move(selector)),
        client_(std::move(client)),
        namespaces_(std::move(namespaces)),
        configmaps_(std::move(configmaps)),
        queue_(kcache::WorkQueue::Create(QueueOptions())) {}

  std::shared_ptr<kcache::WorkQueue> queue() const { return queue_; }

  static kcache::WorkQueueOptions QueueOptions() {
    kcache::WorkQueueOptions o;
    o.name = "namespaces";  // the default rate limiter: 5 ms doubling, 10 qps overall
    return o;
  }

  // Runs one worker until the queue shuts down.
  void Work() {
    while (auto ns = queue_->Get()) {
      Status st = Reconcile(*ns);
      if (st.ok()) {
        queue_->Forget(*ns);
      } else {
        Log("retrying " + *ns + " (" + std::to_string(queue_->NumRequeues(*ns) + 1) +
            "): " + st.ToString());
        queue_->AddRateLimited(*ns);
      }
      queue_->Done(*ns);
      std::call_once(first_, [] { Log("first reconcile"); });
    }
  }

 private:
  // Makes namespace `ns`'s ConfigMap what it should be. Reads come from the
  // listers (the local cache); only writes go to the server.
  Status Reconcile(const std::string& ns) {
    std::this_thread::sleep_for(flags_.reconcile_delay);
    auto owner = namespaces_.Get(ns);
    if (!owner.ok() && !owner.status().IsNotFound()) return owner.status();
    bool wanted = owner.ok() && (*owner)->meta().deletion_timestamp.empty() &&
                  selector_.Matches((*owner)->labels());
    auto current = configmaps_.Namespace(ns).Get(flags_.configmap);
    if (!current.ok() && !current.status().IsNotFound()) return current.status();
    const kcache::ResourceRef ref = kcache::builtin::ConfigMaps(ns);

    if (!wanted) {
      if (!current.ok() || !Controls(*current, owner.ok() ? (*owner)->meta().uid : "")) {
        return Status::OK();
      }
      kcache::DeleteOptions only_that_one;  // not a newer object of the same name
      only_that_one.precondition_uid = (*current)->meta().uid;
      Status st = client_->Delete(ref, flags_.configmap, only_that_one);
      if (st.IsNotFound()) return Status::OK();
      if (st.ok()) Log("deleted " + ns + "/" + flags_.configmap);
      return st;
    }
    if (!current.ok()) {
      auto cm = kcache::ObjectBuilder("v1", "ConfigMap")
                    .Name(flags_.configmap)
                    .Namespace(ns)
                    .Label("app.kubernetes.io/managed-by", "kcache-example-controller")
                    .Owner(kcache::NewControllerRef(**owner, "v1", "Namespace"))
                    .Set("data", flags_.data);
      auto created = client_->Create(ref, cm.Json());
      if (created.ok()) Log("created " + ns + "/" + flags_.configmap);
      // AlreadyExists: the lister has not seen it yet; the retry will.
      return created.status();
    }
    auto doc = (*current)->Document();
    if (!doc.ok()) return doc.status();
    nlohmann::json want = flags_.data;
    if (doc->value("data", nlohmann::json::object()) == want) return Status::OK();
    (*doc)["data"] = want;
    // Carries the resourceVersion read: a concurrent change is a Conflict,
    // retried from the lister's newer copy.
    auto updated = client_->Update(ref, doc->dump());
    if (updated.ok()) Log("restored " + ns + "/" + flags_.configmap);
    return updated.status();
  }

  // True if `cm` is controlled by the namespace with `uid` (or, when the
  // namespace is gone, by any namespace: its deletion takes it anyway).
  static bool Controls(const ObjectPtr& cm, const std::string& uid) {
    const kcache::OwnerReference* ref = kcache::GetControllerOf(*cm);
    return ref && ref->kind == "Namespace" && (uid.empty() || ref->uid == uid);
  }

  const Flags flags_;
  const kcache::LabelSelector selector_;
  const std::shared_ptr<kcache::RestClient> client_;
  const kcache::Lister namespaces_;
  const kcache::Lister configmaps_;
  const std::shared_ptr<kcache::WorkQueue> queue_;
  std::once_flag first_;
};

Status Run(const Flags& flags, std::stop_token stop) {
  KCACHE_ASSIGN_OR_RETURN(auto selector, kcache::LabelSelector::Parse(flags.selector));
  KCACHE_ASSIGN_OR_RETURN(auto config, kcache::LoadClientConfig(flags.kubeconfig));
  KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<kcache::Cache> cache,
                          kcache::Cache::Open(flags.cache_dir));
  auto factory = kcache::InformerFactory::Create(config, cache);
  KCACHE_ASSIGN_OR_RETURN(auto namespaces, factory->ForResource("namespaces"));
  KCACHE_ASSIGN_OR_RETURN(auto configmaps, factory->ForResource("configmaps"));
  KCACHE_ASSIGN_OR_RETURN(auto client, factory->client());
  // Shared with the handlers: it must outlive them, and does, because
  // factory->Stop() below ends every handler call first.
  auto controller = std::make_shared<Controller>(flags, selector, client, namespaces->GetLister(),
                                                 configmaps->GetLister());
  auto queue = controller->queue();

  auto on_namespace = std::make_shared<kcache::ResourceEventHandlerFuncs>();
  on_namespace->add = [queue](const ObjectPtr& ns, bool) { queue->Add(ns->name()); };
  on_namespace->update = [queue](const ObjectPtr&, const ObjectPtr& ns) { queue->Add(ns->name()); };
  on_namespace->del = [queue](const kcache::DeletedObject& d) {
    if (auto n = kcache::DeletionHandlingObjectToName(d); n.ok()) queue->Add(n->name);
  };
  auto on_configmap = std::make_shared<kcache::ResourceEventHandlerFuncs>();
  const std::string name = flags.configmap;
  auto enqueue_owner = [queue, name](const ObjectPtr& cm) {
    if (cm->name() == name) queue->Add(cm->namespace_());
  };
  on_configmap->add = [enqueue_owner](const ObjectPtr& cm, bool) { enqueue_owner(cm); };
  on_configmap->update = [enqueue_owner](const ObjectPtr&, const ObjectPtr& cm) {
    enqueue_owner(cm);
  };
  on_configmap->del = [queue, name](const kcache::DeletedObject& d) {
    auto n = kcache::DeletionHandlingObjectToName(d);  // tombstones too
    if (n.ok() && n->name == name) queue->Add(n->namespace_);
  };
  // After a restart, only what changed while the controller was down.
  kcache::HandlerOptions changes_only;
  changes_only.start_mode = kcache::StartMode::kChangesOnly;
  KCACHE_RETURN_IF_ERROR(namespaces->AddEventHandler(on_namespace, changes_only).status());
  KCACHE_RETURN_IF_ERROR(configmaps->AddEventHandler(on_configmap, changes_only).status());

  KCACHE_RETURN_IF_ERROR(factory->Start());
  KCACHE_RETURN_IF_ERROR(factory->WaitForCacheSync(std::chrono::minutes(2)));
  for (const auto& [keyspace, informer] : factory->informers()) {
    kcache::ReflectorStats s = informer->stats();
    Log("synced " + keyspace + ": " + std::to_string(s.lists) + " lists, " +
        std::to_string(s.probes) + " probes, resourceVersion " +
        informer->LastSyncResourceVersion());
  }
  // One pass over the cached namespaces: the work a killed run left queued.
  KCACHE_ASSIGN_OR_RETURN(auto matching, namespaces->GetLister().List(selector));
  for (const ObjectPtr& ns : matching) queue->Add(ns->name());

  std::vector<std::thread> workers;
  for (int i = 0; i < flags.workers; ++i)
    workers.emplace_back([controller] { controller->Work(); });
  Log("running " + std::to_string(flags.workers) + " workers");

  std::mutex wait_mu;
  std::condition_variable_any until_stopped;
  std::unique_lock wait(wait_mu);
  until_stopped.wait(wait, stop, [] { return false; });
  Log(std::string("stopping on ") + (kcache::StopSignal() == SIGINT ? "SIGINT" : "SIGTERM"));
  factory->Stop();             // no handler runs after this: nothing more is queued
  queue->ShutDownWithDrain();  // the reconciles in progress finish
  for (auto& w : workers) w.join();
  return Status::OK();
}

}  // namespace

int main(int argc, char** argv) {
  // Before any thread starts: SIGINT and SIGTERM then stop Run().
  std::stop_token stop = kcache::SetupSignalHandler();
  Flags flags;
  std::vector<std::string> args(argv + 1, argv + argc);
  KCACHE_ASSIGN_OR_EXIT(flags.kubeconfig, kcache::TakeClientFlags(&args));
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (i + 1 >= args.size()) {
      std::cerr << "error: " << a << " needs a value\n";
      return 1;
    }
    const std::string& v = args[++i];
    if (a == "--cache") {
      flags.cache_dir = v;
    } else if (a == "--selector") {
      flags.selector = v;
    } else if (a == "--configmap") {
      flags.configmap = v;
    } else if (a == "--data" && v.find('=') != std::string::npos) {
      flags.data[v.substr(0, v.find('='))] = v.substr(v.find('=') + 1);
    } else if (a == "--workers") {
      flags.workers = std::max(1, std::atoi(v.c_str()));
    } else if (a == "--reconcile-delay-ms") {
      flags.reconcile_delay = std::chrono::milliseconds(std::atoi(v.c_str()));
    } else {
      std::cerr << "error: unknown flag " << a << " " << v << "\n";
      return 1;
    }
  }
  if (flags.cache_dir.empty()) {
    std::cerr << "usage: controller [--kubeconfig FILE | --server URL] --cache DIR "
                 "[--selector SEL] [--configmap NAME] [--data KEY=VALUE]... [--workers N]\n";
    return 1;
  }
  if (flags.data.empty()) flags.data["greeting"] = "hello";
  KCACHE_EXIT_IF_ERROR(Run(flags, stop));
  return 0;
}
