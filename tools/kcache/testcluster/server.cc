// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/testcluster/server.h"

#include <chrono>
#include <cstdio>
#include <ostream>

#include "tools/kcache/apiserver/foreground.h"

namespace kcache::serve {

StatusOr<std::unique_ptr<Server>> Server::Start(const ServeOptions& options) {
  if (options.history < 1) return Status::InvalidArgument("--history must be at least 1");
  if (options.list_history != 0 && options.list_history < options.history)
    return Status::InvalidArgument("--list-history must be 0 or at least --history");
  const int64_t list_history = options.list_history ? options.list_history : 2 * options.history;
  for (int64_t v : {options.cluster.pods, options.cluster.namespaces, options.cluster.nodes,
                    options.churn.creates, options.churn.updates, options.churn.relabels,
                    options.churn.deletes}) {
    if (v < 0) return Status::InvalidArgument("sizes and churn rates must not be negative");
  }
  std::unique_ptr<Server> s(new Server());
  s->state_ =
      std::make_unique<ClusterState>(BuiltinResourceTypes(), static_cast<size_t>(options.history),
                                     static_cast<size_t>(list_history));
  KCACHE_RETURN_IF_ERROR(LoadSyntheticCluster(*s->state_, options.cluster));
  s->api_ = std::make_unique<Api>(s->state_.get(), options.api);
  Api* api = s->api_.get();
  KCACHE_ASSIGN_OR_RETURN(
      s->http_, serve::http::Server::Start(options.listen, [api](const serve::http::Request& req,
                                                                 serve::http::ResponseWriter& w) {
        api->Handle(req, w);
      }));
  api->set_address(s->http_->url().substr(std::string_view("http://").size()));
  s->churn_ = std::make_unique<Churn>(s->state_.get(), options.cluster, options.churn);
  s->churn_->Start();
  return s;
}

Server::~Server() { Stop(); }

void Server::Stop() {
  if (churn_) churn_->Stop();
  if (state_) state_->Shutdown();  // wakes the watches
  if (http_) http_->Stop();
}

Status RunServe(const ServeOptions& options, std::ostream& out) {
  StopSignals signals;
  auto started = std::chrono::steady_clock::now();
  StatusOr<std::unique_ptr<Server>> server = Server::Start(options);
  if (!server.ok()) return server.status();
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ClusterState& st = (*server)->state();
  size_t objects = 0;
  for (size_t t = 0; t < st.types().size(); ++t) objects += st.size(static_cast<int>(t));
  char line[256];
  std::snprintf(line, sizeof line,
                "kcache serve: %zu objects (%lld pods) at resourceVersion %llu, loaded in %.2f s\n",
                objects, static_cast<long long>(options.cluster.pods),
                static_cast<unsigned long long>(st.current_rv()), seconds);
  out << line;
  out << ServingLine((*server)->url());
  out.flush();
  const char* sig = signals.Wait();
  out << "kcache serve: " << sig << ", stopping\n";
  out.flush();
  (*server)->Stop();
  return Status::OK();
}

}  // namespace kcache::serve
