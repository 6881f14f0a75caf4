// SPDX-License-Identifier: Apache-2.0

// A controller built against an installed kcache, in client-go's
// sample-controller shape: every namespace whose labels match a selector
// gets a ConfigMap with the given data, owned by the namespace; one that
// stops matching loses it; a ConfigMap changed by hand is put back. The
// informers live in a kcache Cache: a restart resumes their watches with no
// LIST. Replicas elect a leader over a Lease and only it reconciles; each
// write becomes an Event and is waited for in the cache (read-your-writes).
//   controller --cache DIR [--kubeconfig F | --server URL] [--selector S] [--configmap N]
//     [--data K=V]... [--workers 2] [--reconcile-delay-ms 0] [--lease-duration-ms 15000] ...

#include <kcache/client_flags.h>
#include <kcache/event_recorder.h>
#include <kcache/exit_on_error.h>
#include <kcache/informer_factory.h>
#include <kcache/leader_election.h>
#include <kcache/object_builder.h>
#include <kcache/owner.h>
#include <kcache/signals.h>
#include <kcache/workqueue.h>
#include <signal.h>
#include <unistd.h>

#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <syncstream>
#include <thread>

namespace {

using kcache::ObjectPtr;
using kcache::Status;
using namespace std::chrono_literals;

// --NAME VALUE pairs; --data KEY=VALUE may repeat.
struct Flags {
  kcache::KubeconfigOptions kubeconfig;
  // clang-format off
  std::map<std::string, std::string> values = {{"cache", ""}, {"selector", "kcache.io/config=enabled"},
      {"configmap", "kcache-config"}, {"workers", "2"}, {"reconcile-delay-ms", "0"},
      {"lease-namespace", "default"}, {"lease-duration-ms", "15000"}};
  // clang-format on
  std::map<std::string, std::string> data;
  const std::string& operator[](const std::string& name) const { return values.at(name); }
  int Int(const std::string& name) const { return std::atoi(values.at(name).c_str()); }
};

void Log(const std::string& line) { std::osyncstream(std::cout) << line << std::endl; }

// Reads come from the informers' listers; only writes go to the server.
struct Controller {
  const Flags& flags;
  const std::shared_ptr<kcache::RestClient> client;
  const std::shared_ptr<kcache::SharedIndexInformer> namespaces, configmaps;
  const std::shared_ptr<kcache::EventRecorder> events;
  const std::shared_ptr<kcache::WorkQueue> queue =
      kcache::WorkQueue::Create({.name = "namespaces"});
  std::once_flag first{};

  // Reconciles every cached namespace, then what is queued, until `stop`.
  void Lead(std::stop_token stop) {
    for (const ObjectPtr& ns : namespaces->GetLister().List({}).value_or({}))
      queue->Add(ns->name());
    std::stop_callback end(stop, [this] { queue->ShutDownWithDrain(); });
    Log("running " + std::to_string(flags.Int("workers")) + " workers");
    kcache::RunWorkers(*queue, flags.Int("workers"), [this](const std::string& ns) {
      Status st = Reconcile(ns);
      if (!st.ok()) Log("retrying " + ns + ": " + st.ToString());
      std::call_once(first, [] { Log("first reconcile"); });
      return st;
    });
  }

  // Makes namespace `ns`'s ConfigMap what it should be.
  Status Reconcile(const std::string& ns) {
    const std::string& name = flags["configmap"];
    std::this_thread::sleep_for(std::chrono::milliseconds(flags.Int("reconcile-delay-ms")));
    auto owner = namespaces->GetLister().Get(ns);
    if (!owner.ok() && !owner.status().IsNotFound()) return owner.status();
    // The lister holds matching namespaces only.
    const bool wanted = owner.ok() && (*owner)->meta().deletion_timestamp.empty();
    auto current = configmaps->GetLister().Namespace(ns).Get(name);
    if (!current.ok() && !current.status().IsNotFound()) return current.status();
    const kcache::ResourceRef ref = configmaps->Ref()->InNamespace(ns);
    if (!wanted) {
      // Only a ConfigMap this controller made: one a namespace controls.
      const kcache::OwnerReference* by = current.ok() ? GetControllerOf(**current) : nullptr;
      if (!by || by->kind != "Namespace" || (owner.ok() && by->uid != (*owner)->meta().uid))
        return Status::OK();
      Status st = client->Delete(ref, name, {.precondition_uid = (*current)->meta().uid});
      if (st.ok()) Done(ns, **current, "deleted", "ConfigDeleted", nullptr);
      return st.IsNotFound() ? Status::OK() : st;
    }
    if (!current.ok()) {
      auto cm = kcache::ObjectBuilder("v1", "ConfigMap")
                    .Name(name)
                    .Namespace(ns)
                    .Label("app.kubernetes.io/managed-by", "kcache-example-controller")
                    .Owner(kcache::NewControllerRef(**owner, "v1", "Namespace"))
                    .Set("data", flags.data);
      auto created = client->Create(ref, cm.Json());
      if (created.ok()) Done(ns, **owner, "created", "ConfigCreated", *created);
      return created.status();
    }
    auto doc = (*current)->Document();
    if (!doc.ok()) return doc.status();
    if (doc->value("data", nlohmann::json::object()) == nlohmann::json(flags.data))
      return Status::OK();
    (*doc)["data"] = flags.data;
    // With the resourceVersion read: a concurrent change is a Conflict, retried.
    auto updated = client->Update(ref, doc->dump());
    if (updated.ok()) Done(ns, **owner, "restored", "ConfigRestored", *updated);
    return updated.status();
  }

  // Logs a write, makes it an Event, and waits until the cache holds it (or
  // 10 s): the next reconcile reads its own write.
  void Done(const std::string& ns, const kcache::Object& about, const std::string& what,
            const std::string& reason, const ObjectPtr& written) {
    Log(what + " " + ns + "/" + flags["configmap"]);
    events->Event(about, kcache::EventType::kNormal, reason, what + " " + flags["configmap"]);
    if (written) (void)configmaps->WaitForResourceVersion(written->resource_version(), 10s);
  }
};

Status Run(const Flags& flags, std::stop_token stop) {
  KCACHE_RETURN_IF_ERROR(kcache::LabelSelector::Parse(flags["selector"]).status());
  KCACHE_ASSIGN_OR_RETURN(auto config, kcache::LoadClientConfig(flags.kubeconfig));
  KCACHE_ASSIGN_OR_RETURN(auto cache, kcache::Cache::Open(flags["cache"]));
  auto factory = kcache::InformerFactory::Create(config, cache);
  // Only matching namespaces are cached; one that stops matching leaves the
  // informer's view as a delete.
  KCACHE_ASSIGN_OR_RETURN(
      auto namespaces, factory->ForResource("namespaces", {.label_selector = flags["selector"]}));
  KCACHE_ASSIGN_OR_RETURN(auto configmaps, factory->ForResource("configmaps"));
  KCACHE_ASSIGN_OR_RETURN(auto events, kcache::EventRecorder::Create(
                                           config, {.component = "kcache-example-controller"}));
  KCACHE_ASSIGN_OR_RETURN(auto client, factory->client());
  Controller controller{flags, client, namespaces, configmaps, events};
  const kcache::HandlerOptions changes_only{.start_mode = kcache::StartMode::kChangesOnly};
  // After a restart, only what changed while the controller was down.
  auto by_name = kcache::NewKeyHandler([q = controller.queue](auto&, auto& n) { q->Add(n); });
  auto by_namespace = kcache::NewKeyHandler([q = controller.queue, &flags](auto& ns, auto& n) {
    if (n == flags["configmap"]) q->Add(ns);
  });
  KCACHE_RETURN_IF_ERROR(namespaces->AddEventHandler(by_name, changes_only).status());
  KCACHE_RETURN_IF_ERROR(configmaps->AddEventHandler(by_namespace, changes_only).status());
  KCACHE_RETURN_IF_ERROR(factory->Start());
  KCACHE_RETURN_IF_ERROR(factory->WaitForCacheSync(2min));
  for (const auto& [keyspace, informer] : factory->informers())
    Log("synced " + keyspace + ": " + std::to_string(informer->stats().lists) + " lists");
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  kcache::LeaderElectionConfig election;
  election.lease_namespace = flags["lease-namespace"];
  election.lease_name = "kcache-example-controller";
  election.identity = std::string(host) + "_" + std::to_string(getpid());
  election.lease_duration = std::chrono::milliseconds(flags.Int("lease-duration-ms"));
  election.renew_deadline = election.lease_duration * 2 / 3;  // client-go's 15 s, 10 s, 2 s
  election.retry_period = election.lease_duration * 2 / 15;
  election.release_on_cancel = true;
  election.callbacks.on_started_leading = [&](std::stop_token lead) {
    Log("leading as " + election.identity);
    controller.Lead(lead);
  };
  election.callbacks.on_new_leader = [](const std::string& id) { Log("leader is " + id); };
  KCACHE_ASSIGN_OR_RETURN(auto elector, kcache::LeaderElector::Create(config, election));
  elector->Run(stop);  // returns on a signal, or once the lease is lost
  factory->Stop();     // no handler runs after this; `events` writes what it holds
  if (!stop.stop_requested()) return Status::Aborted("lost the lease " + election.identity);
  Log(std::string("stopping on ") + (kcache::StopSignal() == SIGINT ? "SIGINT" : "SIGTERM"));
  return Status::OK();
}

}  // namespace

int main(int argc, char** argv) {
  std::stop_token stop = kcache::SetupSignalHandler();  // before any thread starts
  Flags flags;
  std::vector<std::string> args(argv + 1, argv + argc);
  KCACHE_ASSIGN_OR_EXIT(flags.kubeconfig, kcache::TakeClientFlags(&args));
  for (size_t i = 0; i + 1 < args.size(); i += 2) {
    const std::string name = args[i].substr(std::min<size_t>(2, args[i].size())), v = args[i + 1];
    if (name == "data" && v.find('=') != std::string::npos) {
      flags.data[v.substr(0, v.find('='))] = v.substr(v.find('=') + 1);
    } else if (args[i].rfind("--", 0) != 0 || !flags.values.count(name)) {
      std::cerr << "error: unknown flag " << args[i] << "\n";
      return 1;
    } else {
      flags.values[name] = v;
    }
  }
  if (args.size() % 2 != 0 || flags["cache"].empty()) {
    std::cerr << "usage: controller --cache DIR [--FLAG VALUE]...\n";
    return 1;
  }
  if (flags.data.empty()) flags.data["greeting"] = "hello";
  KCACHE_EXIT_IF_ERROR(Run(flags, stop));
}
