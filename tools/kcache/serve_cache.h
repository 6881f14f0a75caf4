// SPDX-License-Identifier: Apache-2.0

// `kcache serve --cache DIR` (or `--snapshot FILE`): a read-only Kubernetes
// API over a cache, also while `kcache sync` writes it, or over a snapshot
// file read in place. Discovery lists the resources the cache
// holds as recorded at sync time; GET, LIST (selectors, limit and continue,
// resourceVersion semantics) and WATCH (from the change journal, with
// bookmarks and sendInitialEvents) answer as kube-apiserver does; writes
// get 405. docs/serve.md describes what it serves and where it differs.
//
// Thread-safety: Start and Stop from one thread; requests are served
// concurrently.

#ifndef KCACHE_TOOLS_KCACHE_SERVE_CACHE_H_
#define KCACHE_TOOLS_KCACHE_SERVE_CACHE_H_

#include <chrono>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "kcache/status_or.h"
#include "tools/kcache/apiserver/http_server.h"
#include "tools/kcache/apiserver/resource_types.h"

namespace kcache::tool {

struct CacheServeOptions {
  // HOST:PORT (port 0 picks a free one) or unix:PATH (a socket only its
  // owner may use). A host other than a loopback address needs TLS and
  // bearer tokens (see docs/serve.md).
  std::string listen = "127.0.0.1:8080";
  // Serve HTTPS with this certificate chain and private key (PEM files);
  // both or neither.
  std::string tls_cert_file;
  std::string tls_key_file;
  // Serve secrets (core/v1 secrets); otherwise they are left out of
  // discovery and answered 404.
  bool serve_secrets = false;
  // A file of bearer tokens, one per line with what it may read
  // (token_grants.h); when set, every request must carry one of them
  // ("Authorization: Bearer TOKEN") and reads only what its line grants.
  std::string token_file;
  // Connections, timeouts and the write timeout that cuts off a watcher
  // that stopped reading (its `tls` is set from the files above).
  serve::http::ServerOptions http;
  // Watches one client may hold open at once: a token's user, or without
  // tokens an address. One more is answered 429 with Retry-After.
  size_t max_watches_per_client = 500;
  // How often the server catches up with the cache's writer.
  std::chrono::milliseconds refresh_interval{100};
  // How often a quiet watch that allows bookmarks gets one.
  std::chrono::milliseconds bookmark_interval{std::chrono::seconds(60)};
  // A watch without timeoutSeconds ends after this long (the apiserver's
  // --min-request-timeout).
  std::chrono::seconds default_watch_timeout{1800};
  // Called once, on the refresher's thread, when the cache directory was
  // removed or replaced by another cache (Cache::Refresh's Expired): from
  // then on watches end and every request is answered 503.
  std::function<void(const Status&)> on_cache_gone;
};

class CacheServer {
 public:
  // Opens `cache_dir` read-only, or the `snapshot` file (exactly one is
  // set), and listens. InvalidArgument for a non-loopback address without
  // TLS and tokens, an empty token file or unusable TLS files; NotFound for
  // a missing cache or file; Corruption for a damaged snapshot;
  // FailedPrecondition if no keyspace can be served.
  static StatusOr<std::unique_ptr<CacheServer>> Start(const std::string& cache_dir,
                                                      const std::string& snapshot,
                                                      const CacheServeOptions& options);
  ~CacheServer();

  // "http://HOST:PORT", or https.
  std::string url() const;
  // What discovery lists, in keyspace order.
  const std::vector<serve::ResourceType>& types() const;
  // Keyspaces left out, each with the reason ("secrets: --serve-secrets not given").
  const std::vector<std::string>& skipped() const;

  // Ends every watch and connection. Idempotent.
  void Stop();
  // OK, or why nothing is served any more (the cache was removed or
  // replaced).
  Status Gone() const;

  class Impl;

 private:
  explicit CacheServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Serves `cache_dir` or `snapshot` until SIGINT or SIGTERM, reporting to
// `out`.
Status RunServeCache(const std::string& cache_dir, const std::string& snapshot,
                     const CacheServeOptions& options, std::ostream& out);

}  // namespace kcache::tool

#endif  // KCACHE_TOOLS_KCACHE_SERVE_CACHE_H_
