// SPDX-License-Identifier: Apache-2.0

// RestClient: LIST, WATCH and plain requests against a Kubernetes API server
// over libcurl, with errors as Status (the server's reason and code kept in
// Status::http_error()).
//
// All requests of a client run on one libcurl multi handle driven by one
// thread: concurrent watches share connections, multiplexed over HTTP/2
// when the server offers it (TLS with ALPN).
//
// Thread-safety: a RestClient is thread-safe; share it as a shared_ptr.
#ifndef KCACHE_REST_CLIENT_H_
#define KCACHE_REST_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kcache/export.h"
#include "kcache/list.h"
#include "kcache/object.h"
#include "kcache/pager.h"
#include "kcache/resource.h"
#include "kcache/rest_config.h"
#include "kcache/status_or.h"
#include "kcache/watch.h"
#include "kcache/write_options.h"

namespace kcache {

struct KCACHE_EXPORT RestClientOptions {
  // Sent as User-Agent. Default: "kcache/<version>".
  std::string user_agent{};
  // Limit for a whole non-watch request. Default: 60 s.
  std::chrono::milliseconds request_timeout{60000};
  // Limit for establishing a connection. Default: 10 s.
  std::chrono::milliseconds connect_timeout{10000};
  // How long a token read from a file is used before it is read again
  // (bound service-account tokens rotate). Default: 1 minute, as client-go.
  std::chrono::milliseconds token_file_refresh{60000};
  // An exec credential plugin still running after this long is killed and
  // the request that needed it fails with DeadlineExceeded. Its stdin is
  // not a terminal, so it cannot be waiting for the user. Default: 60 s.
  std::chrono::milliseconds exec_timeout{60000};
  // Non-watch requests answered 429 or 5xx with a Retry-After in whole
  // seconds are retried this many times, waiting as the server asks
  // (capped at max_retry_wait). Default: 10, as client-go.
  int max_retries = 10;
  std::chrono::milliseconds max_retry_wait{30000};
  // A watch event larger than this is an error. Default: 64 MiB.
  size_t max_event_bytes = 64 << 20;
  // A watch that asks for timeoutSeconds fails with DeadlineExceeded this
  // long after them if the server has neither ended it nor been cut off:
  // the client's watchdog for a stalled connection (client-go's deadline
  // is timeoutSeconds itself; the grace lets the server's close come
  // first). A watch without timeoutSeconds has no deadline. Default: 30 s.
  std::chrono::milliseconds watch_deadline_grace{30000};
  // A watch that asks for bookmarks (ListOptions::allow_watch_bookmarks)
  // fails with DeadlineExceeded after this long with nothing received, no
  // event and no bookmark: a stalled stream, noticed long before its
  // deadline. kube-apiserver's watch cache sends such a watch a bookmark
  // about every minute once its resource has an event past the watch's
  // start; a quiet resource's watch is therefore given up and watched again
  // at this period. Zero: no limit. Default: 3 minutes.
  std::chrono::milliseconds watch_idle_timeout{180000};
  // Watch bytes read ahead of the consumer before the transfer pauses.
  // Default: 4 MiB.
  size_t watch_read_ahead_bytes = 4 << 20;
  // Applied to every object decoded from a list or watch.
  ParseOptions parse{};
};

class KCACHE_EXPORT RestClient {
 public:
  // Reads certificate files named by `config` now. Errors name the file.
  static StatusOr<std::shared_ptr<RestClient>> Create(const RestConfig& config,
                                                      const RestClientOptions& options = {});
  virtual ~RestClient() = default;

  // Sends `method` to `path` (from the server's root, with its query) and
  // returns the body of a 2xx answer; otherwise the server's error as a
  // Status (e.g. NotFound, Expired, ResourceExhausted with retry_after).
  // `content_type` of a body: default application/json, or
  // application/merge-patch+json for PATCH.
  virtual StatusOr<std::string> Do(std::string_view method, std::string_view path,
                                   std::string_view body = "",
                                   std::string_view content_type = "") = 0;
  StatusOr<std::string> Get(std::string_view path) { return Do("GET", path); }
  // GETs every path at once, as concurrent requests over the client's
  // connections (streams of one HTTP/2 connection where the server offers
  // it): one round trip for all, not one each. The answers are in the order
  // of `paths`, each as Get(path) would give it. Default: one after another.
  virtual std::vector<StatusOr<std::string>> GetEach(const std::vector<std::string>& paths);

  // Writes and reads of single objects (client-go's typed clients).
  // `resource` names the collection; for a namespaced resource its
  // namespace_ is the object's, or, when empty, Create and Update take the
  // namespace from the object's metadata. Errors are the server's: NotFound,
  // AlreadyExists, Conflict (Status::IsConflict(), a failed
  // resourceVersion or uid precondition, or an apply conflict),
  // InvalidArgument (422 Invalid, with the causes in http_error()).

  // GET of one object.
  virtual StatusOr<ObjectPtr> Get(const ResourceRef& resource, std::string_view name) = 0;
  // POST of `object` (JSON; metadata.name or generateName set). Returns the
  // object as stored.
  virtual StatusOr<ObjectPtr> Create(const ResourceRef& resource, std::string_view object,
                                     const WriteOptions& options = {}) = 0;
  // PUT of `object` (JSON) to its metadata.name. With a
  // metadata.resourceVersion the write happens only if the stored object
  // still has it, else Conflict; without one it overwrites.
  virtual StatusOr<ObjectPtr> Update(const ResourceRef& resource, std::string_view object,
                                     const WriteOptions& options = {}) = 0;
  // PUT to the status subresource: only .status changes.
  virtual StatusOr<ObjectPtr> UpdateStatus(const ResourceRef& resource, std::string_view object,
                                           const WriteOptions& options = {}) = 0;
  // PATCH of object `name` with `patch` in `type`'s format. kApply needs
  // options.field_manager.
  virtual StatusOr<ObjectPtr> Patch(const ResourceRef& resource, std::string_view name,
                                    PatchType type, std::string_view patch,
                                    const PatchOptions& options = {}) = 0;
  // DELETE of object `name`. OK once the server accepted it (an object with
  // finalizers or a grace period is gone later).
  virtual Status Delete(const ResourceRef& resource, std::string_view name,
                        const DeleteOptions& options = {}) = 0;

  // One LIST request (one page when options.limit is set).
  virtual StatusOr<ObjectList> List(const ResourceRef& resource, const ListOptions& options) = 0;

  // Opens a WATCH (watch=true is added). Returns once the server has
  // answered: errors before the stream starts (bad parameters, 401, 403,
  // 404, 429 with retry_after, 5xx) are returned here; errors inside the
  // stream come from WatchStream::Next().
  virtual StatusOr<std::unique_ptr<WatchStream>> Watch(const ResourceRef& resource,
                                                       const ListOptions& options) = 0;

  // A pager over List() for `resource`.
  ListPager Pager(const ResourceRef& resource, ListPagerOptions options = {});

  virtual const RestConfig& config() const = 0;
  // Response body bytes of finished requests as they came over the network:
  // compressed where the server compressed them (see
  // RestConfig::disable_compression). Counted per transport: a client and
  // its WithParseOptions views report the same total.
  virtual uint64_t BytesReceived() const = 0;

  // A client that decodes objects with `parse` and shares everything else
  // with this one: connections, the transport thread, credentials. Used to
  // give each resource its default kind without a connection per resource.
  // A view never asks for compressed responses: with libcurl 7.88 a
  // gzip-encoded HTTP/2 response multiplexed beside an open watch can stall
  // for good.
  virtual std::shared_ptr<RestClient> WithParseOptions(const ParseOptions& parse) = 0;

  // True if every wait of this client's calls (and of its watch streams'
  // Next) lets a waiting reflector share its thread with others: true for
  // the clients Create makes. Default false: a reflector of another client
  // gets a thread of its own.
  virtual bool SharesThreads() const { return false; }
};

// Encodes `options` as a query string (without '?'); `watch` adds watch=true.
KCACHE_EXPORT std::string EncodeListOptions(const ListOptions& options, bool watch);

}  // namespace kcache

#endif  // KCACHE_REST_CLIENT_H_
