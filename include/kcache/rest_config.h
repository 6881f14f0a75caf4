// SPDX-License-Identifier: Apache-2.0

// RestConfig: how to reach and authenticate to an API server, loaded the way
// kubectl loads it: kubeconfig files (merged from KUBECONFIG), in-cluster
// service-account files, or a plain --server URL.
//
// Thread-safety: plain values; the loaders are safe to call from any thread.
#ifndef KCACHE_REST_CONFIG_H_
#define KCACHE_REST_CONFIG_H_

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kcache/export.h"
#include "kcache/status_or.h"

namespace kcache {

// An exec credential plugin (client.authentication.k8s.io ExecCredential),
// run to obtain a token or a client certificate.
struct KCACHE_EXPORT ExecConfig {
  std::string command{};  // resolved against the kubeconfig's directory if it has a '/'
  std::vector<std::string> args{};
  std::vector<std::pair<std::string, std::string>> env{};
  std::string api_version{};  // "client.authentication.k8s.io/v1" or ".../v1beta1"
  std::string install_hint{};
  bool provide_cluster_info = false;
};

struct KCACHE_EXPORT RestConfig {
  // "https://host:port", possibly with a path prefix, or "http://..." (for
  // kubectl proxy).
  std::string server{};
  // Checked against the server certificate instead of the URL's host.
  std::string tls_server_name{};
  bool insecure_skip_tls_verify = false;
  // Certificate authority: PEM bytes, or a file read when the client is created.
  std::string ca_data{};
  std::string ca_file{};
  // Client certificate and key: PEM bytes or files.
  std::string client_cert_data{};
  std::string client_cert_file{};
  std::string client_key_data{};
  std::string client_key_file{};
  // A bearer token, or a file holding one (re-read while the client runs, as
  // bound service-account tokens rotate). The token wins if both are set.
  std::string bearer_token{};
  std::string bearer_token_file{};
  // Basic authentication.
  std::string username{};
  std::string password{};
  std::optional<ExecConfig> exec{};
  // An HTTP(S) proxy URL ("proxy-url"); empty: curl's *_proxy variables apply.
  std::string proxy_url{};
  // Do not ask for gzip-compressed responses (the cluster's
  // "disable-compression", kubectl's --disable-compression). By default
  // LIST and GET ask, and kube-apiserver compresses bodies over 128 KiB:
  // less on the wire for some CPU on both sides. Default: false.
  bool disable_compression = false;
  // The namespace of the context (or of the pod, in-cluster); "" if none.
  std::string namespace_{};
  // Where this configuration came from, for messages, e.g.
  // "kubeconfig /root/.kube/config, context dev". Never holds a secret.
  std::string source{};
};

struct KCACHE_EXPORT KubeconfigOptions {
  // --kubeconfig: one file, not merged. Empty: the files of $KUBECONFIG
  // (':'-separated, merged: the first to set a name wins), else
  // ~/.kube/config.
  std::string path{};
  // --context: the context to use instead of current-context.
  std::string context{};
  // --server, --namespace: override the context's values.
  std::string server{};
  std::string namespace_{};
};

// Loads a kubeconfig. Errors: NotFound if no file exists or the context,
// cluster or user it names is missing; InvalidArgument naming the file,
// line and column for malformed YAML, and naming the entry for bad fields
// (e.g. undecodable base64).
KCACHE_EXPORT StatusOr<RestConfig> LoadKubeconfig(const KubeconfigOptions& options);

struct KCACHE_EXPORT InClusterOptions {
  // The service-account directory. Default: the one kubelet mounts.
  std::string service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
  // The environment to read KUBERNETES_SERVICE_HOST/_PORT and POD_NAMESPACE
  // from; empty map: the process environment.
  std::map<std::string, std::string> env{};
};

// The configuration of a pod: https://$KUBERNETES_SERVICE_HOST:$..._PORT,
// the service-account token file (re-read as it rotates) and CA. Errors:
// NotFound when not running in a cluster (either variable unset).
KCACHE_EXPORT StatusOr<RestConfig> InClusterConfig(const InClusterOptions& options = {});

// The configuration kubectl would use given its flags: with only --server
// and no kubeconfig file, that server as it is; otherwise the kubeconfig (or,
// with none and inside a pod, the in-cluster configuration) with the
// overrides applied.
KCACHE_EXPORT StatusOr<RestConfig> LoadClientConfig(const KubeconfigOptions& options);

}  // namespace kcache

#endif  // KCACHE_REST_CONFIG_H_
