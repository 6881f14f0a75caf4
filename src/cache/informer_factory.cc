#include "kcache/informer_factory.h"

namespace kcache {

InformerFactory::InformerFactory(RestConfig config, std::shared_ptr<Cache> cache,
                                 InformerFactoryOptions options)
    : config_(std::move(config)), cache_(std::move(cache)), options_(std::move(options)) {}

InformerFactory::~InformerFactory() { Shutdown(); }

std::unique_ptr<InformerFactory> InformerFactory::Create(RestConfig config,
                                                         std::shared_ptr<Cache> cache,
                                                         InformerFactoryOptions options) {
  return std::unique_ptr<InformerFactory>(
      new InformerFactory(std::move(config), std::move(cache), std::move(options)));
}

StatusOr<std::shared_ptr<SharedIndexInformer>> InformerFactory::ForResource(
    const ApiResource& resource) {
  const std::string name = resource.gvr.group_resource().String();
  std::lock_guard l(mu_);
  if (auto it = informers_.find(name); it != informers_.end()) return it->second;
  if (!resource.Supports("list") || !resource.Supports("watch")) {
    return Status::InvalidArgument("resource " + name + " does not support list and watch");
  }
  RestClientOptions co = options_.client;
  co.parse.default_kind = resource.kind;
  co.parse.default_api_version = resource.gvr.group.empty()
                                     ? resource.gvr.version
                                     : resource.gvr.group + "/" + resource.gvr.version;
  KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<RestClient> client, RestClient::Create(config_, co));
  clients_.push_back(client);
  KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Indexer> indexer,
                          cache_->OpenKeyspace(name, options_.keyspace));
  // Offline readers (kcache get, tree, snapshots) learn kinds and scopes here.
  KCACHE_RETURN_IF_ERROR(cache_->SetResourceInfo(
      name, ResourceInfo{resource.gvr.group, resource.gvr.version, resource.gvr.resource,
                         resource.kind, resource.namespaced}));
  auto lw = NewListWatch(std::move(client), resource.Ref(options_.namespace_),
                         options_.label_selector, options_.field_selector);
  InformerOptions io = options_.informer;
  // Watch events of another kind are skipped, as client-go's typed
  // informers do.
  io.reflector.expected_api_version = co.parse.default_api_version;
  io.reflector.expected_kind = resource.kind;
  auto informer = SharedIndexInformer::Create(std::move(lw), std::move(indexer), std::move(io));
  if (started_) KCACHE_RETURN_IF_ERROR(informer->Start());
  informers_[name] = informer;
  return informer;
}

Status InformerFactory::Start() {
  std::lock_guard l(mu_);
  started_ = true;
  for (auto& [name, informer] : informers_) {
    if (!informer->HasStarted()) KCACHE_RETURN_IF_ERROR(informer->Start());
  }
  return Status::OK();
}

bool InformerFactory::WaitForCacheSync(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (auto& [name, informer] : informers()) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (!informer->WaitForSync(std::max(left, std::chrono::milliseconds(0)))) return false;
  }
  return true;
}

void InformerFactory::Shutdown() {
  for (auto& [name, informer] : informers()) informer->Stop();
}

uint64_t InformerFactory::BytesReceived() const {
  std::lock_guard l(mu_);
  uint64_t n = 0;
  for (const auto& c : clients_) n += c->BytesReceived();
  return n;
}

std::map<std::string, std::shared_ptr<SharedIndexInformer>> InformerFactory::informers() const {
  std::lock_guard l(mu_);
  return informers_;
}

}  // namespace kcache
