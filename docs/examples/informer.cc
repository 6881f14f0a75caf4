// SPDX-License-Identifier: Apache-2.0

// An informer over a persistent cache, built against an installed kcache:
//
//   informer --server URL --cache DIR [--resource pods]
//
// Mirrors one resource into DIR, prints the objects its handler was told
// about and what a Lister reads back, then stops. Run it twice: the second
// run resumes from DIR (no LIST) and its kChangesOnly handler hears only
// what changed in between.

#include <kcache/cache.h>
#include <kcache/informer_factory.h>
#include <kcache/lister.h>
#include <kcache/rest_config.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

namespace {

kcache::Status Run(const std::string& server, const std::string& dir, const std::string& name) {
  kcache::KubeconfigOptions flags;  // as kubectl's --kubeconfig, --context, --server
  flags.server = server;
  KCACHE_ASSIGN_OR_RETURN(auto config, kcache::LoadClientConfig(flags));
  KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<kcache::Cache> cache, kcache::Cache::Open(dir));
  auto factory = kcache::InformerFactory::Create(config, cache);
  KCACHE_ASSIGN_OR_RETURN(auto informer, factory->ForResource(name));

  // Handlers run on the informer's threads, one queue per handler, until
  // the factory stops; what they use must outlive that (a shared_ptr).
  auto added = std::make_shared<std::atomic<int>>(0);
  auto handler = std::make_shared<kcache::ResourceEventHandlerFuncs>();
  handler->add = [added](const kcache::ObjectPtr&, bool) { (*added)++; };
  kcache::HandlerOptions options;
  options.start_mode = kcache::StartMode::kChangesOnly;  // after a restart: what changed only
  KCACHE_ASSIGN_OR_RETURN(auto registration, informer->AddEventHandler(handler, options));

  KCACHE_RETURN_IF_ERROR(factory->Start());  // resumes from the cache: no LIST
  KCACHE_RETURN_IF_ERROR(factory->WaitForCacheSync(std::chrono::seconds(30)));
  for (int i = 0; i < 3000 && !registration->HasSynced(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }

  KCACHE_ASSIGN_OR_RETURN(auto all,
                          informer->GetLister().List(kcache::LabelSelector::Everything()));
  std::cout << "resource: " << name << "\n"
            << "handler adds: " << added->load() << "\n"
            << "lister objects: " << all.size() << "\n"
            << "resume point: " << informer->LastSyncResourceVersion() << "\n";
  factory->Stop();  // also done by its destructor
  return kcache::Status::OK();
}

}  // namespace

int main(int argc, char** argv) {
  std::string server, dir, resource = "pods";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--server"))
      server = argv[i + 1];
    else if (!std::strcmp(argv[i], "--cache"))
      dir = argv[i + 1];
    else if (!std::strcmp(argv[i], "--resource"))
      resource = argv[i + 1];
  }
  if (server.empty() || dir.empty()) {
    std::cerr << "usage: informer --server URL --cache DIR [--resource NAME]\n";
    return 2;
  }
  kcache::Status st = Run(server, dir, resource);
  if (!st.ok()) {
    std::cerr << "error: " << st << "\n";
    return 1;
  }
  return 0;
}
