// SPDX-License-Identifier: Apache-2.0

#include "client/credentials.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "util/base64.h"
#include "util/strings.h"
#include "util/subprocess.h"

extern char** environ;

namespace kcache::rest {
namespace {

StatusOr<std::string> ReadFile(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::NotFound(std::string(what) + " " + path + ": " + std::strerror(errno));
  }
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// "2026-11-22T10:00:00Z" (RFC 3339 as Kubernetes writes it).
bool ParseTimestamp(const std::string& text, std::chrono::system_clock::time_point* out) {
  std::tm tm{};
  const char* end = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (!end) return false;
  time_t t = timegm(&tm);
  // system_clock counts nanoseconds and ends in 2262: later is "never".
  auto max = std::chrono::system_clock::time_point::max();
  *out = t >= std::chrono::system_clock::to_time_t(max) ? max
                                                        : std::chrono::system_clock::from_time_t(t);
  return true;
}

}  // namespace

StatusOr<std::unique_ptr<Credentials>> Credentials::Create(
    const RestConfig& config, std::chrono::milliseconds token_file_refresh,
    std::chrono::milliseconds exec_timeout, std::string connect_to) {
  std::unique_ptr<Credentials> c(new Credentials());
  c->config_ = config;
  c->token_file_refresh_ = token_file_refresh;
  c->exec_timeout_ = exec_timeout;
  auto tls = std::make_shared<TlsSettings>();
  tls->insecure_skip_verify = config.insecure_skip_tls_verify;
  tls->ca_pem = config.ca_data;
  if (tls->ca_pem.empty() && !config.ca_file.empty()) {
    KCACHE_ASSIGN_OR_RETURN(tls->ca_pem, ReadFile(config.ca_file, "certificate-authority"));
  }
  tls->client_cert_pem = config.client_cert_data;
  if (tls->client_cert_pem.empty() && !config.client_cert_file.empty()) {
    KCACHE_ASSIGN_OR_RETURN(tls->client_cert_pem,
                            ReadFile(config.client_cert_file, "client-certificate"));
  }
  tls->client_key_pem = config.client_key_data;
  if (tls->client_key_pem.empty() && !config.client_key_file.empty()) {
    KCACHE_ASSIGN_OR_RETURN(tls->client_key_pem, ReadFile(config.client_key_file, "client-key"));
  }
  if (tls->client_cert_pem.empty() != tls->client_key_pem.empty()) {
    return Status::InvalidArgument(config.source +
                                   ": a client certificate needs both a certificate and a key");
  }
  tls->connect_to = std::move(connect_to);
  c->base_tls_ = std::move(tls);
  if (!config.bearer_token_file.empty() && config.bearer_token.empty()) {
    // Read now so that a missing file fails here; the first request uses it.
    KCACHE_ASSIGN_OR_RETURN(std::string token, ReadFile(config.bearer_token_file, "tokenFile"));
    c->file_token_ = std::string(TrimSpace(token));
    c->file_token_read_ = std::chrono::steady_clock::now();
    c->file_token_valid_ = true;
  }
  return c;
}

Status Credentials::RunExec() {
  const ExecConfig& x = *config_.exec;
  std::string what = "exec credential plugin " + x.command;
  std::vector<std::string> argv{x.command};
  argv.insert(argv.end(), x.args.begin(), x.args.end());
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  for (const auto& [k, v] : x.env) env.push_back(k + "=" + v);
  nlohmann::json info = {{"apiVersion", x.api_version},
                         {"kind", "ExecCredential"},
                         {"spec", {{"interactive", false}}}};
  if (x.provide_cluster_info) {
    nlohmann::json cluster = {{"server", config_.server}};
    if (!config_.tls_server_name.empty()) cluster["tls-server-name"] = config_.tls_server_name;
    if (config_.insecure_skip_tls_verify) cluster["insecure-skip-tls-verify"] = true;
    if (!base_tls_->ca_pem.empty())
      cluster["certificate-authority-data"] = Base64Encode(base_tls_->ca_pem);
    info["spec"]["cluster"] = cluster;
  }
  env.push_back("KUBERNETES_EXEC_INFO=" + info.dump());
  auto out = RunCapture(argv, env, what, exec_timeout_);
  if (!out.ok()) {
    if (!x.install_hint.empty() && out.status().IsNotFound()) {
      return out.status().WithContext(x.install_hint);
    }
    return out.status();
  }
  nlohmann::json cred = nlohmann::json::parse(*out, nullptr, /*allow_exceptions=*/false);
  if (!cred.is_object() || cred.value("kind", "") != "ExecCredential") {
    return Status::InvalidArgument(what + ": output is not an ExecCredential in JSON");
  }
  if (cred.value("apiVersion", "") != x.api_version) {
    return Status::InvalidArgument(what + ": output has apiVersion \"" +
                                   cred.value("apiVersion", "") + "\", want \"" + x.api_version +
                                   "\"");
  }
  auto status = cred.find("status");
  if (status == cred.end() || !status->is_object()) {
    return Status::InvalidArgument(what + ": ExecCredential has no status");
  }
  std::string token = status->value("token", "");
  std::string cert = status->value("clientCertificateData", "");
  std::string key = status->value("clientKeyData", "");
  if (token.empty() && (cert.empty() || key.empty())) {
    return Status::InvalidArgument(
        what + ": ExecCredential status has neither a token nor a client certificate and key");
  }
  exec_expiry_ = std::chrono::system_clock::time_point::max();
  if (std::string exp = status->value("expirationTimestamp", ""); !exp.empty()) {
    if (!ParseTimestamp(exp, &exec_expiry_)) {
      return Status::InvalidArgument(what + ": bad expirationTimestamp \"" + exp + "\"");
    }
  }
  exec_token_ = token;
  exec_tls_ = base_tls_;
  if (!cert.empty()) {
    auto tls = std::make_shared<TlsSettings>(*base_tls_);
    tls->client_cert_pem = cert;
    tls->client_key_pem = key;
    exec_tls_ = std::move(tls);
  }
  exec_valid_ = true;
  return Status::OK();
}

Status Credentials::Apply(std::vector<std::string>* headers,
                          std::shared_ptr<const TlsSettings>* tls) {
  std::lock_guard<std::mutex> lock(mu_);
  *tls = base_tls_;
  std::string token = config_.bearer_token;
  if (token.empty() && !config_.bearer_token_file.empty()) {
    auto now = std::chrono::steady_clock::now();
    if (!file_token_valid_ || now - file_token_read_ >= token_file_refresh_) {
      auto text = ReadFile(config_.bearer_token_file, "tokenFile");
      if (!text.ok()) {
        // A rotation in progress may briefly remove the file: keep the last
        // token if there is one (client-go's cached token source does too).
        if (!file_token_valid_) return text.status();
      } else {
        file_token_ = std::string(TrimSpace(*text));
        file_token_valid_ = true;
        file_token_read_ = now;
      }
    }
    token = file_token_;
  }
  if (token.empty() && config_.exec) {
    if (!exec_valid_ || std::chrono::system_clock::now() >= exec_expiry_) {
      KCACHE_RETURN_IF_ERROR(RunExec());
    }
    token = exec_token_;
    *tls = exec_tls_;
  }
  if (!token.empty()) {
    headers->push_back("Authorization: Bearer " + token);
  } else if (!config_.username.empty() || !config_.password.empty()) {
    headers->push_back("Authorization: Basic " +
                       Base64Encode(config_.username + ":" + config_.password));
  }
  return Status::OK();
}

bool Credentials::Invalidate() {
  std::lock_guard<std::mutex> lock(mu_);
  bool changed = false;
  if (config_.bearer_token.empty() && !config_.bearer_token_file.empty()) {
    file_token_read_ = {};
    changed = true;
  }
  if (config_.bearer_token.empty() && config_.exec) {
    exec_valid_ = false;
    changed = true;
  }
  return changed;
}

}  // namespace kcache::rest
