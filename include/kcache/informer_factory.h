// SPDX-License-Identifier: Apache-2.0

// InformerFactory: the shared informers of one process over one cache
// directory (client-go's SharedInformerFactory), one per resource, each in
// its own keyspace of the Cache, all on one RestClient: one connection to
// the server (HTTP/2) and one transport thread however many resources.
//
// Lifetimes: handlers run on the handler pool's threads from Start() until
// Stop().
// Stop() returns once no handler runs and none will, so anything handlers
// use may be destroyed after it; the destructor calls Stop(). Informers,
// listers and the client stay valid after the factory is gone (they hold
// what they need), but stopped: destruction order is free.
//
// Thread-safety: safe for concurrent use.
#ifndef KCACHE_INFORMER_FACTORY_H_
#define KCACHE_INFORMER_FACTORY_H_

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "kcache/cache.h"
#include "kcache/discovery.h"
#include "kcache/export.h"
#include "kcache/informer.h"
#include "kcache/rest_client.h"
#include "kcache/rest_config.h"

namespace kcache {

struct KCACHE_EXPORT InformerFactoryOptions {
  // The namespace every namespaced informer watches. Default: "" (all).
  std::string namespace_{};
  // Selectors sent with every list and watch. Default: none.
  std::string label_selector{};
  std::string field_selector{};
  // Options of each informer (and its reflector).
  InformerOptions informer{};
  // Options of each keyspace.
  KeyspaceOptions keyspace{};
  // Options of the factory's REST client when it makes one (Create with a
  // RestConfig); `parse` applies in both cases. Objects also get their
  // resource's kind and apiVersion if the server left them out (list items).
  RestClientOptions client{};
  // Resume the cache only from the cluster it was synced from. A cluster's
  // identity is the uid of its kube-system namespace (KubeSystemUid), kept
  // in the cache's ClusterInfo. Another cluster at the same address (one
  // rebuilt, or a kubeconfig pointed elsewhere) has resourceVersions of
  // another history, and a watch from one may even succeed: each informer
  // then lists from "" instead of resuming (ReflectorOptions::sink_identity),
  // and asks again after every outage (server_identity). The identity is
  // recorded once every informer of the factory holds that cluster's state;
  // that is reported to the informers' on_event as a kSynced event. A
  // server whose kube-system namespace cannot be read is not checked. Turn
  // off for a server that is not a whole cluster. Default: true.
  bool check_cluster_identity = true;
  // The server's resources as the caller fetched them (Discovery::Fetch):
  // the factory's discovery() starts from it instead of asking the server.
  // Default: null (fetched on first use).
  std::shared_ptr<const Discovery> discovery{};
};

// What one informer lists and watches where the factory's defaults do not
// fit (controller-runtime's per-object cache options): a namespace and
// selectors of its own, and a name that sets it apart from other informers
// of the same resource.
//
// A keyspace records the selection its objects were listed with. An
// informer whose selection is not the one recorded (the program changed
// its selector) lists that keyspace again from the server instead of
// resuming: objects no longer selected are deleted, unchanged ones are not
// rewritten, other keyspaces keep their resume points. The new selection
// is recorded once that list is committed; a process stopped before then
// lists again on its next start.
struct KCACHE_EXPORT ForResourceOptions {
  // The informer's keyspace is "<group resource>#<name>" ("configmaps#owned")
  // and "<group resource>" for "". Letters, digits, '-', '_' and '.' only.
  // Default: "".
  std::string name{};
  // Replace the factory's namespace and selectors where set (an empty
  // string: all namespaces, or no selector). Default: the factory's.
  std::optional<std::string> namespace_{};
  std::optional<std::string> label_selector{};
  std::optional<std::string> field_selector{};
};

// The uid of the server's kube-system namespace: a cluster's identity. ""
// if the namespace has none. Errors: the request's (403 without the right
// to read it, 404 on a server without it).
KCACHE_EXPORT StatusOr<std::string> KubeSystemUid(RestClient& client);

// What ForResource records about `resource` in the cache for offline
// readers: its names and scope without its verbs.
// Deprecated: use ResourceInfo(resource) (cache.h); this goes in the release
// after 0.1.0.
KCACHE_EXPORT ResourceInfo ResourceInfoOf(const ApiResource& resource);

// What InformerFactory::ForAllResources syncs and how it follows the
// server's resources as they come and go.
struct KCACHE_EXPORT AllResourcesOptions {
  // Whether to sync `resource` (one the server can list and watch), given
  // the discovery it was found in. Null: every one. Called on the caller's
  // thread at first, then on the follower's.
  std::function<bool(const Discovery&, const ApiResource&)> select{};
  // Discovery is read again this often (aggregated APIs come and go with no
  // CustomResourceDefinition to say so), and soon after any
  // CustomResourceDefinition changes. Default: 5 minutes.
  std::chrono::milliseconds rediscover_interval{std::chrono::minutes(5)};
  // Told, on the follower's thread, of each informer added (`added`) or
  // removed after the first discovery, and of a discovery that failed
  // (`error`, the others empty). Null: nothing is told.
  std::function<void(const ApiResource& resource, bool added, const Status& error)> on_change{};
};

class KCACHE_EXPORT InformerFactory {
 public:
  // A factory whose client is made from `config` on first use (errors, such
  // as an unreadable certificate file, come from ForResource and client()).
  static std::unique_ptr<InformerFactory> Create(RestConfig config, std::shared_ptr<Cache> cache,
                                                 InformerFactoryOptions options = {});
  // A factory over `client` (not null), which the caller may share (for
  // writes, on the same connection). Of options.client only `parse` is used.
  static std::unique_ptr<InformerFactory> Create(std::shared_ptr<RestClient> client,
                                                 std::shared_ptr<Cache> cache,
                                                 InformerFactoryOptions options = {});
  ~InformerFactory();
  InformerFactory(const InformerFactory&) = delete;
  InformerFactory& operator=(const InformerFactory&) = delete;

  // The informer of the resource kubectl would call `name` ("pods", "po",
  // "deploy", "deployments.apps", "widgets.example.com"), resolved by the
  // factory's Discovery. Created on first use with the factory's namespace
  // and selectors, in keyspace GroupResource::String(), which it then
  // returns whatever options made it; started by Start(), or at once if the factory
  // has started already. Errors: NotFound for an unknown name,
  // InvalidArgument if it cannot be listed and watched, FailedPrecondition
  // after Stop().
  StatusOr<std::shared_ptr<SharedIndexInformer>> ForResource(std::string_view name);
  // The same for a resource already resolved.
  StatusOr<std::shared_ptr<SharedIndexInformer>> ForResource(const ApiResource& resource);
  // The informer of `name` with options of its own, created on first use in
  // its own keyspace (ForResourceOptions::name). InvalidArgument if the
  // informer of that keyspace exists with another selection, or for a bad
  // name; otherwise the errors of ForResource(name).
  StatusOr<std::shared_ptr<SharedIndexInformer>> ForResource(std::string_view name,
                                                             const ForResourceOptions& options);
  StatusOr<std::shared_ptr<SharedIndexInformer>> ForResource(const ApiResource& resource,
                                                             const ForResourceOptions& options);

  // An informer for every resource the server can list and watch that
  // options.select accepts (as `kubectl api-resources --verbs=list,watch`
  // lists them), made as ForResource(resource) makes one, and so on while
  // the factory runs. A resource that appears (a CustomResourceDefinition
  // established, an aggregated API registered) gets an informer, started if
  // the factory has started. A resource that disappears has its informer
  // stopped and removed (Remove): at once when discovery no longer lists
  // it and its CustomResourceDefinition was deleted (the server deleted its
  // objects first; the informer is given up to 10 s to apply those
  // deletions), and when two discoveries in a row miss it otherwise (an
  // aggregated API briefly unavailable keeps its informer). Its keyspace
  // stays in the cache as last synced. CustomResourceDefinitions are
  // followed with the factory's informer of them (keyspace
  // customresourcedefinitions.apiextensions.k8s.io), when the server serves
  // them; a thread of the factory's (kcache-discover) reads discovery again.
  // Once per factory: FailedPrecondition on a second call or after Stop();
  // the first discovery's and ForResource's errors.
  Status ForAllResources(AllResourcesOptions options = {});

  // Stops the informer of keyspace `name` and forgets it: informers() and
  // WaitForCacheSync no longer count it, and ForResource makes a new one.
  // Its keyspace stays in the cache. NotFound if there is none.
  Status Remove(std::string_view name);

  // The factory's client; made on first use when created from a RestConfig.
  StatusOr<std::shared_ptr<RestClient>> client();
  // The server's resources, fetched once on first use (also by
  // ForResource(name)).
  StatusOr<std::shared_ptr<const Discovery>> discovery();

  // Starts every informer not started yet. FailedPrecondition after Stop().
  Status Start();
  // Waits until every informer has synced. Errors: DeadlineExceeded after
  // `timeout`, naming the informers that have not synced; Cancelled if the
  // factory stopped.
  Status WaitForCacheSync(std::chrono::milliseconds timeout);
  // Stops every informer and waits for their threads: once it returns no
  // handler runs, and notifications not yet delivered are dropped
  // (SharedIndexInformer::Stop). Idempotent; later ForResource and Start
  // fail.
  // (client-go's Shutdown.)
  void Stop();

  // The informers by keyspace name ("pods", "configmaps#owned").
  std::map<std::string, std::shared_ptr<SharedIndexInformer>> informers() const;
  // Response bytes the factory's client received over the network
  // (RestClient::BytesReceived); 0 before the client is made.
  uint64_t BytesReceived() const;

 private:
  InformerFactory(RestConfig config, std::shared_ptr<RestClient> client,
                  std::shared_ptr<Cache> cache, InformerFactoryOptions options);
  StatusOr<std::shared_ptr<RestClient>> ClientLocked();
  // ForResource's work; `options` null: the factory's selection, and the
  // informer of the keyspace whatever its selection if it exists.
  StatusOr<std::shared_ptr<SharedIndexInformer>> Make(const ApiResource& resource,
                                                      const ForResourceOptions* options);
  // Gives `r` what the factory's reflectors share (streaming support, the
  // resume probe, the cluster's identity) where its options set none.
  Status ShareLocked(ReflectorOptions* r, const std::shared_ptr<RestClient>& base);
  // Records the cluster identity the informers hold, once they all hold
  // the same one (check_cluster_identity).
  void RecordIdentity();
  // ForAllResources' follower: one pass over `discovery` (informers made
  // for new resources, removed for gone ones) and the loop that reads
  // discovery again.
  struct Follower;
  Status FollowPass(const Discovery& discovery, bool first);
  void FollowLoop();

  const RestConfig config_;
  const std::shared_ptr<Cache> cache_;
  const InformerFactoryOptions options_;
  mutable std::mutex mu_;
  std::shared_ptr<RestClient> client_;                                     // guarded by mu_
  std::shared_ptr<const Discovery> discovery_;                             // guarded by mu_
  std::map<std::string, std::shared_ptr<SharedIndexInformer>> informers_;  // guarded by mu_
  std::map<std::string, ResourceSelection> selections_;                    // guarded by mu_
  bool started_ = false;                                                   // guarded by mu_
  bool stopped_ = false;                                                   // guarded by mu_
  // The identity recorded in the cache; unset until the first informer.
  std::optional<std::string> recorded_identity_;  // guarded by mu_
  // Every reflector's server_identity: one request for all that ask at once.
  std::function<StatusOr<std::string>()> server_identity_;  // guarded by mu_
  // Every reflector's shared_probe: one LIST with limit=1 for all that
  // resume at once.
  std::function<StatusOr<ProbeAnswer>(const std::function<StatusOr<std::string>()>&,
                                      Clock::TimePoint)>
      shared_probe_;  // guarded by mu_
  // Every reflector's streaming_support: a server that refuses streaming
  // lists is asked once.
  std::shared_ptr<StreamingSupport> streaming_support_;  // guarded by mu_
  std::mutex record_mu_;  // one RecordIdentity at a time; taken before mu_
  // An informer not synced at RecordIdentity's last look; guarded by record_mu_.
  std::string unsynced_;
  std::shared_ptr<Follower> follower_;  // set once by ForAllResources; guarded by mu_
};

}  // namespace kcache

#endif  // KCACHE_INFORMER_FACTORY_H_
