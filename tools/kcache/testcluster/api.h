// SPDX-License-Identifier: Apache-2.0

// Api: the HTTP face of `kcache serve`. Answers discovery, OpenAPI v3
// (operations only), list, watch (objects or Table rows), get, create,
// update, patch (merge, JSON, strategic merge, server-side apply) and
// delete for the types of a ClusterState the way
// kube-apiserver does (paths, query parameters, Status errors, list and
// watch semantics), and injects the configured faults.
//
// Thread-safety: thread-safe; Handle runs on many connections at once.

#ifndef KCACHE_TOOLS_KCACHE_TESTCLUSTER_API_H_
#define KCACHE_TOOLS_KCACHE_TESTCLUSTER_API_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "tools/kcache/apiserver/api_reply.h"
#include "tools/kcache/apiserver/http_server.h"
#include "tools/kcache/apiserver/tables.h"
#include "tools/kcache/kubectl/tables.h"
#include "tools/kcache/testcluster/cluster_state.h"
#include "tools/kcache/testcluster/faults.h"
#include "tools/kcache/testcluster/state_source.h"

namespace kcache::serve {

struct Target;
struct Query;

struct ApiOptions {
  // How often a quiet watch that allows bookmarks gets one. The apiserver
  // sends them about once a minute.
  std::chrono::milliseconds bookmark_interval{std::chrono::seconds(60)};
  // A watch without timeoutSeconds ends after this long (the apiserver's
  // --min-request-timeout).
  std::chrono::seconds default_watch_timeout{1800};
  Faults faults;
};

class Api {
 public:
  Api(ClusterState* state, ApiOptions options);

  void Handle(const serve::http::Request& req, serve::http::ResponseWriter& w);

  // "HOST:PORT" reported by /api.
  void set_address(std::string address) { address_ = std::move(address); }

  // Prometheus text: requests by verb and resource, faults injected, watches open.
  std::string Metrics() const;

 private:
  // Routing leads to a resource's verbs: list and watch (the front end of
  // api_serve.h, with request `n`'s faults), get, create, update, delete.
  void HandleResource(const serve::http::Request& req, const Target& t,
                      serve::http::ResponseWriter& w);
  // `drop_managed_fields`: the request's Accept asked for objects without
  // metadata.managedFields.
  // `tables`: rows of a Table, not objects (null: objects).
  void List(const Target& t, const Query& q, uint64_t n, bool drop_managed_fields,
            const TableWriter* tables, serve::http::ResponseWriter& w);
  void Watch(const Target& t, const Query& q, uint64_t n, bool drop_managed_fields,
             const TableWriter* tables, serve::http::ResponseWriter& w);
  void Get(const Target& t, const Output& out, serve::http::ResponseWriter& w);
  void Create(const serve::http::Request& req, const Target& t, serve::http::ResponseWriter& w);
  void Update(const serve::http::Request& req, const Target& t, serve::http::ResponseWriter& w);
  void Delete(const serve::http::Request& req, const Target& t, serve::http::ResponseWriter& w);
  void Patch(const serve::http::Request& req, const Target& t, serve::http::ResponseWriter& w);
  // The printer of type `type`; null if none could be made.
  const tool::TableSpec* TableOf(int type) const;
  // GET /openapi/v3 and /openapi/v3/GROUP-VERSION (nullopt: no such one).
  std::string OpenApiRoot() const;
  std::optional<std::string> OpenApiDocument(const std::string& group_version) const;
  void Count(const std::string& verb, const std::string& resource);
  void NoteFault(const char* kind);
  // Throttles, slows or fails request `n` as the faults say; true if it
  // answered the request.
  bool InjectRequestFault(uint64_t n, bool watch, serve::http::ResponseWriter& w);

  ClusterState* const state_;
  StateSource source_;
  const ApiOptions options_;
  std::vector<std::optional<tool::TableSpec>> tables_;  // by type
  std::string address_;
  std::atomic<uint64_t> requests_{0};
  std::atomic<int64_t> watches_open_{0};
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, uint64_t> counts_;  // (verb, resource)
  std::map<std::string, uint64_t> list_items_;                      // by resource
  std::map<std::string, uint64_t> watch_lists_;                     // by resource
  std::map<std::string, uint64_t> faults_injected_;
};

}  // namespace kcache::serve

#endif  // KCACHE_TOOLS_KCACHE_TESTCLUSTER_API_H_
