// InformerFactory: the shared informers of one process over one cache
// directory (client-go's SharedInformerFactory), one per resource, each in
// its own keyspace of the Cache.
//
// Thread-safety: safe for concurrent use.
#ifndef KCACHE_INFORMER_FACTORY_H_
#define KCACHE_INFORMER_FACTORY_H_

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kcache/cache.h"
#include "kcache/discovery.h"
#include "kcache/export.h"
#include "kcache/informer.h"
#include "kcache/rest_client.h"
#include "kcache/rest_config.h"

namespace kcache {

struct KCACHE_EXPORT InformerFactoryOptions {
  // The namespace every namespaced informer watches. Default: "" (all).
  std::string namespace_;
  // Selectors sent with every list and watch. Default: none.
  std::string label_selector;
  std::string field_selector;
  // Options of each informer (and its reflector).
  InformerOptions informer;
  // Options of each keyspace.
  KeyspaceOptions keyspace;
  // Options of each informer's REST client. Objects get the resource's
  // kind and apiVersion if the server left them out (list items).
  RestClientOptions client;
};

class KCACHE_EXPORT InformerFactory {
 public:
  static std::unique_ptr<InformerFactory> Create(RestConfig config, std::shared_ptr<Cache> cache,
                                                 InformerFactoryOptions options = {});
  ~InformerFactory();

  // The informer of `resource` (keyspace GroupResource::String(), e.g.
  // "pods", "deployments.apps"), created on first use. Started by Start(),
  // or at once if the factory has started already.
  StatusOr<std::shared_ptr<SharedIndexInformer>> ForResource(const ApiResource& resource);

  // Starts every informer not started yet.
  Status Start();
  // Waits until every informer has synced, or the timeout. True if all did.
  bool WaitForCacheSync(std::chrono::milliseconds timeout);
  // Stops every informer and waits for their threads.
  void Shutdown();

  // The informers by keyspace name.
  std::map<std::string, std::shared_ptr<SharedIndexInformer>> informers() const;
  // Response bytes its informers' clients received over the network
  // (RestClient::BytesReceived, summed).
  uint64_t BytesReceived() const;

 private:
  InformerFactory(RestConfig config, std::shared_ptr<Cache> cache, InformerFactoryOptions options);

  const RestConfig config_;
  const std::shared_ptr<Cache> cache_;
  const InformerFactoryOptions options_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<SharedIndexInformer>> informers_;  // guarded by mu_
  std::vector<std::shared_ptr<RestClient>> clients_;                       // guarded by mu_
  bool started_ = false;                                                   // guarded by mu_
};

}  // namespace kcache

#endif  // KCACHE_INFORMER_FACTORY_H_
