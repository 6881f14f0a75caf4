// SPDX-License-Identifier: Apache-2.0

// Credentials: what each request carries to authenticate, from a RestConfig:
// a bearer token (fixed, from a file re-read as it rotates, or from an exec
// plugin), basic auth, and client certificates (files, bytes, or exec).
//
// Thread-safety: thread-safe.
#ifndef KCACHE_SRC_CLIENT_CREDENTIALS_H_
#define KCACHE_SRC_CLIENT_CREDENTIALS_H_

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "client/transport.h"
#include "kcache/rest_config.h"
#include "kcache/status_or.h"

namespace kcache::rest {

class Credentials {
 public:
  // Reads the CA and client certificate files now (errors name the file).
  // `connect_to` is TlsSettings::connect_to, for tls-server-name.
  static StatusOr<std::unique_ptr<Credentials>> Create(const RestConfig& config,
                                                       std::chrono::milliseconds token_file_refresh,
                                                       std::chrono::milliseconds exec_timeout,
                                                       std::string connect_to);

  // Adds the Authorization header for the next request to `headers` and
  // returns the TLS settings to use. May read the token file or run the exec
  // plugin. Errors name the file or plugin, never a secret.
  Status Apply(std::vector<std::string>* headers, std::shared_ptr<const TlsSettings>* tls);

  // After a 401: the next Apply re-reads the token file and re-runs the
  // exec plugin. Returns true if that could change the credentials.
  bool Invalidate();

 private:
  Credentials() = default;
  Status RunExec();  // REQUIRES: mu_ held

  RestConfig config_;
  std::chrono::milliseconds token_file_refresh_{0};
  std::chrono::milliseconds exec_timeout_{0};
  std::shared_ptr<const TlsSettings> base_tls_;

  std::mutex mu_;
  std::string file_token_;
  std::chrono::steady_clock::time_point file_token_read_{};
  bool file_token_valid_ = false;
  std::string exec_token_;
  std::shared_ptr<const TlsSettings> exec_tls_;
  std::chrono::system_clock::time_point exec_expiry_{};
  bool exec_valid_ = false;
};

}  // namespace kcache::rest

#endif  // KCACHE_SRC_CLIENT_CREDENTIALS_H_
