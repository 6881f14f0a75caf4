// SPDX-License-Identifier: Apache-2.0

// Loading kubeconfig files (client-go's clientcmd), in-cluster config, and
// choosing between them as kubectl does.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "kcache/rest_config.h"
#include "util/base64.h"
#include "util/strings.h"

namespace kcache {
namespace {

namespace fs = std::filesystem;

// One named entry (cluster, user or context) and the file it came from.
struct Entry {
  YAML::Node node;
  std::string file;
};

struct Merged {
  std::map<std::string, Entry> clusters, users, contexts;
  std::string current_context;
  std::string current_context_file;
  std::vector<std::string> files;
};

std::string Where(const std::string& file, const YAML::Mark& mark) {
  if (mark.is_null()) return "kubeconfig " + file;
  return "kubeconfig " + file + ":" + std::to_string(mark.line + 1) + ":" +
         std::to_string(mark.column + 1);
}

// Reads the scalar `key` of `map` into `*out`; absent or null leaves it.
Status Scalar(const YAML::Node& map, const char* key, const std::string& file, std::string* out) {
  YAML::Node v = map[key];
  if (!v || v.IsNull()) return Status::OK();
  if (!v.IsScalar())
    return Status::InvalidArgument(Where(file, v.Mark()) + ": " + key + " must be a string");
  *out = v.Scalar();
  return Status::OK();
}

Status Bool(const YAML::Node& map, const char* key, const std::string& file, bool* out) {
  YAML::Node v = map[key];
  if (!v || v.IsNull()) return Status::OK();
  if (!v.IsScalar() || !YAML::convert<bool>::decode(v, *out)) {
    return Status::InvalidArgument(Where(file, v.Mark()) + ": " + key + " must be true or false");
  }
  return Status::OK();
}

// Decodes base64 `key`; the value itself is never quoted (it may be a key).
Status Base64(const YAML::Node& map, const char* key, const std::string& file, std::string* out) {
  std::string text;
  KCACHE_RETURN_IF_ERROR(Scalar(map, key, file, &text));
  if (text.empty()) return Status::OK();
  auto decoded = Base64Decode(text);
  if (!decoded) {
    return Status::InvalidArgument(Where(file, map[key].Mark()) + ": " + key +
                                   " is not valid base64");
  }
  *out = std::move(*decoded);
  return Status::OK();
}

// Relative paths in a kubeconfig are relative to the file's directory.
std::string Resolve(const std::string& path, const std::string& file) {
  if (path.empty() || fs::path(path).is_absolute()) return path;
  return (fs::path(file).parent_path() / path).lexically_normal().string();
}

Status AddNamed(const YAML::Node& doc, const char* list, const char* inner, const std::string& file,
                std::map<std::string, Entry>* out) {
  YAML::Node seq = doc[list];
  if (!seq || seq.IsNull()) return Status::OK();
  if (!seq.IsSequence())
    return Status::InvalidArgument(Where(file, seq.Mark()) + ": " + list + " must be a list");
  for (const YAML::Node& item : seq) {
    if (!item.IsMap())
      return Status::InvalidArgument(Where(file, item.Mark()) + ": " + list +
                                     " entries must be maps");
    std::string name;
    KCACHE_RETURN_IF_ERROR(Scalar(item, "name", file, &name));
    if (name.empty())
      return Status::InvalidArgument(Where(file, item.Mark()) + ": " + list +
                                     " entry without a name");
    YAML::Node body = item[inner];
    if (body && !body.IsNull() && !body.IsMap()) {
      return Status::InvalidArgument(Where(file, body.Mark()) + ": " + inner + " must be a map");
    }
    out->emplace(name, Entry{body ? body : YAML::Node(YAML::NodeType::Map), file});  // first wins
  }
  return Status::OK();
}

Status LoadFile(const std::string& file, Merged* m) {
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec)) {
    return Status::InvalidArgument("kubeconfig " + file + ": is a directory, not a file");
  }
  std::ifstream in(file);
  if (!in) return Status::NotFound("kubeconfig " + file + ": cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::IOError("kubeconfig " + file + ": read failed");
  YAML::Node doc;
  try {
    doc = YAML::Load(text.str());
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(Where(file, e.mark) + ": " + e.msg);
  }
  m->files.push_back(file);
  if (!doc || doc.IsNull()) return Status::OK();  // an empty file adds nothing
  if (!doc.IsMap())
    return Status::InvalidArgument(Where(file, doc.Mark()) + ": not a kubeconfig map");
  try {
    KCACHE_RETURN_IF_ERROR(AddNamed(doc, "clusters", "cluster", file, &m->clusters));
    KCACHE_RETURN_IF_ERROR(AddNamed(doc, "users", "user", file, &m->users));
    KCACHE_RETURN_IF_ERROR(AddNamed(doc, "contexts", "context", file, &m->contexts));
    if (m->current_context.empty()) {
      KCACHE_RETURN_IF_ERROR(Scalar(doc, "current-context", file, &m->current_context));
      if (!m->current_context.empty()) m->current_context_file = file;
    }
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(Where(file, e.mark) + ": " + e.msg);
  }
  return Status::OK();
}

Status ReadCluster(const Entry& e, RestConfig* c) {
  const std::string& f = e.file;
  KCACHE_RETURN_IF_ERROR(Scalar(e.node, "server", f, &c->server));
  KCACHE_RETURN_IF_ERROR(Scalar(e.node, "tls-server-name", f, &c->tls_server_name));
  KCACHE_RETURN_IF_ERROR(Bool(e.node, "insecure-skip-tls-verify", f, &c->insecure_skip_tls_verify));
  KCACHE_RETURN_IF_ERROR(Bool(e.node, "disable-compression", f, &c->disable_compression));
  KCACHE_RETURN_IF_ERROR(Scalar(e.node, "certificate-authority", f, &c->ca_file));
  c->ca_file = Resolve(c->ca_file, f);
  KCACHE_RETURN_IF_ERROR(Base64(e.node, "certificate-authority-data", f, &c->ca_data));
  KCACHE_RETURN_IF_ERROR(Scalar(e.node, "proxy-url", f, &c->proxy_url));
  return Status::OK();
}

Status ReadExec(const YAML::Node& n, const std::string& f, ExecConfig* x) {
  KCACHE_RETURN_IF_ERROR(Scalar(n, "command", f, &x->command));
  if (x->command.find('/') != std::string::npos) x->command = Resolve(x->command, f);
  KCACHE_RETURN_IF_ERROR(Scalar(n, "apiVersion", f, &x->api_version));
  KCACHE_RETURN_IF_ERROR(Scalar(n, "installHint", f, &x->install_hint));
  KCACHE_RETURN_IF_ERROR(Bool(n, "provideClusterInfo", f, &x->provide_cluster_info));
  if (YAML::Node args = n["args"]; args && !args.IsNull()) {
    if (!args.IsSequence())
      return Status::InvalidArgument(Where(f, args.Mark()) + ": exec args must be a list");
    for (const auto& a : args) {
      if (!a.IsScalar())
        return Status::InvalidArgument(Where(f, a.Mark()) + ": exec args must be strings");
      x->args.push_back(a.Scalar());
    }
  }
  if (YAML::Node env = n["env"]; env && !env.IsNull()) {
    if (!env.IsSequence())
      return Status::InvalidArgument(Where(f, env.Mark()) + ": exec env must be a list");
    for (const auto& v : env) {
      std::string name, value;
      KCACHE_RETURN_IF_ERROR(Scalar(v, "name", f, &name));
      KCACHE_RETURN_IF_ERROR(Scalar(v, "value", f, &value));
      x->env.emplace_back(name, value);
    }
  }
  if (x->command.empty())
    return Status::InvalidArgument(Where(f, n.Mark()) + ": exec needs a command");
  if (x->api_version.empty())
    return Status::InvalidArgument(Where(f, n.Mark()) + ": exec needs an apiVersion");
  return Status::OK();
}

Status ReadUser(const Entry& e, RestConfig* c) {
  const std::string& f = e.file;
  KCACHE_RETURN_IF_ERROR(Scalar(e.node, "token", f, &c->bearer_token));
  KCACHE_RETURN_IF_ERROR(Scalar(e.node, "tokenFile", f, &c->bearer_token_file));
  c->bearer_token_file = Resolve(c->bearer_token_file, f);
  KCACHE_RETURN_IF_ERROR(Scalar(e.node, "client-certificate", f, &c->client_cert_file));
  c->client_cert_file = Resolve(c->client_cert_file, f);
  KCACHE_RETURN_IF_ERROR(Base64(e.node, "client-certificate-data", f, &c->client_cert_data));
  KCACHE_RETURN_IF_ERROR(Scalar(e.node, "client-key", f, &c->client_key_file));
  c->client_key_file = Resolve(c->client_key_file, f);
  KCACHE_RETURN_IF_ERROR(Base64(e.node, "client-key-data", f, &c->client_key_data));
  KCACHE_RETURN_IF_ERROR(Scalar(e.node, "username", f, &c->username));
  KCACHE_RETURN_IF_ERROR(Scalar(e.node, "password", f, &c->password));
  if (YAML::Node exec = e.node["exec"]; exec && !exec.IsNull()) {
    if (!exec.IsMap())
      return Status::InvalidArgument(Where(f, exec.Mark()) + ": exec must be a map");
    ExecConfig x;
    KCACHE_RETURN_IF_ERROR(ReadExec(exec, f, &x));
    c->exec = std::move(x);
  }
  if (YAML::Node ap = e.node["auth-provider"]; ap && !ap.IsNull()) {
    return Status::Unimplemented(Where(f, ap.Mark()) +
                                 ": auth-provider plugins are not supported; use an exec plugin");
  }
  return Status::OK();
}

std::vector<std::string> KubeconfigFiles(const std::string& explicit_path) {
  if (!explicit_path.empty()) return {explicit_path};
  std::vector<std::string> files;
  if (const char* env = std::getenv("KUBECONFIG"); env && *env) {
    std::string_view list(env);
    while (!list.empty()) {
      size_t colon = list.find(':');
      std::string one(list.substr(0, colon));
      list = colon == std::string_view::npos ? std::string_view() : list.substr(colon + 1);
      if (one.empty()) continue;
      bool seen = false;
      for (const auto& f : files) seen |= f == one;
      if (!seen) files.push_back(one);
    }
    return files;
  }
  if (const char* home = std::getenv("HOME"); home && *home) {
    files.push_back(std::string(home) + "/.kube/config");
  }
  return files;
}

bool AnyExists(const std::vector<std::string>& files) {
  for (const auto& f : files) {
    std::error_code ec;
    if (fs::exists(f, ec)) return true;
  }
  return false;
}

std::string Env(const InClusterOptions& o, const char* name) {
  if (!o.env.empty()) {
    auto it = o.env.find(name);
    return it == o.env.end() ? "" : it->second;
  }
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

StatusOr<RestConfig> LoadKubeconfig(const KubeconfigOptions& options) {
  std::vector<std::string> files = KubeconfigFiles(options.path);
  Merged m;
  for (const auto& f : files) {
    Status st = LoadFile(f, &m);
    // With KUBECONFIG, files that do not exist are skipped, as kubectl does;
    // an explicit --kubeconfig must exist.
    if (st.IsNotFound() && options.path.empty()) continue;
    KCACHE_RETURN_IF_ERROR(st);
  }
  if (m.files.empty()) {
    return Status::NotFound(files.empty() ? "no kubeconfig: set KUBECONFIG or HOME"
                                          : "no kubeconfig file found (looked for " + files[0] +
                                                (files.size() > 1 ? " and others)" : ")"));
  }
  std::string where = "kubeconfig " + m.files[0];
  for (size_t i = 1; i < m.files.size(); ++i) where += "," + m.files[i];
  std::string context_name = options.context.empty() ? m.current_context : options.context;
  RestConfig c;
  std::string cluster_name, user_name;
  if (context_name.empty()) {
    if (options.server.empty()) {
      return Status::NotFound(where + ": no current-context is set; pass --context or --server");
    }
  } else {
    auto ctx = m.contexts.find(context_name);
    if (ctx == m.contexts.end()) {
      return Status::NotFound(where + ": context \"" + context_name + "\" does not exist");
    }
    KCACHE_RETURN_IF_ERROR(Scalar(ctx->second.node, "cluster", ctx->second.file, &cluster_name));
    KCACHE_RETURN_IF_ERROR(Scalar(ctx->second.node, "user", ctx->second.file, &user_name));
    KCACHE_RETURN_IF_ERROR(Scalar(ctx->second.node, "namespace", ctx->second.file, &c.namespace_));
  }
  if (!cluster_name.empty()) {
    auto cl = m.clusters.find(cluster_name);
    if (cl == m.clusters.end()) {
      return Status::NotFound(where + ": cluster \"" + cluster_name + "\" of context \"" +
                              context_name + "\" does not exist");
    }
    KCACHE_RETURN_IF_ERROR(ReadCluster(cl->second, &c));
  }
  if (!user_name.empty()) {
    auto u = m.users.find(user_name);
    if (u == m.users.end()) {
      return Status::NotFound(where + ": user \"" + user_name + "\" of context \"" + context_name +
                              "\" does not exist");
    }
    KCACHE_RETURN_IF_ERROR(ReadUser(u->second, &c));
  }
  if (!options.server.empty()) c.server = options.server;
  if (!options.namespace_.empty()) c.namespace_ = options.namespace_;
  if (c.server.empty()) {
    return Status::InvalidArgument(where + ": cluster \"" + cluster_name + "\" has no server");
  }
  c.source = where + (context_name.empty() ? "" : ", context " + context_name);
  return c;
}

StatusOr<RestConfig> InClusterConfig(const InClusterOptions& options) {
  std::string host = Env(options, "KUBERNETES_SERVICE_HOST");
  std::string port = Env(options, "KUBERNETES_SERVICE_PORT");
  if (host.empty() || port.empty()) {
    return Status::NotFound(
        "not running in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be "
        "set");
  }
  RestConfig c;
  bool ipv6 = host.find(':') != std::string::npos;
  c.server = "https://" + (ipv6 ? "[" + host + "]" : host) + ":" + port;
  const std::string& dir = options.service_account_dir;
  c.bearer_token_file = dir + "/token";
  std::error_code ec;
  if (!fs::exists(c.bearer_token_file, ec)) {
    return Status::NotFound("in-cluster config: " + c.bearer_token_file + " does not exist");
  }
  if (fs::exists(dir + "/ca.crt", ec)) c.ca_file = dir + "/ca.crt";
  c.namespace_ = Env(options, "POD_NAMESPACE");
  if (c.namespace_.empty()) {
    std::ifstream in(dir + "/namespace");
    std::string ns;
    if (in && std::getline(in, ns)) c.namespace_ = std::string(TrimSpace(ns));
  }
  if (c.namespace_.empty()) c.namespace_ = "default";
  c.source = "in-cluster service account " + dir;
  return c;
}

StatusOr<RestConfig> LoadClientConfig(const KubeconfigOptions& options) {
  std::vector<std::string> files = KubeconfigFiles(options.path);
  if (options.path.empty() && !AnyExists(files)) {
    if (!options.server.empty()) {
      RestConfig c;
      c.server = options.server;
      c.namespace_ = options.namespace_;
      c.source = "--server " + options.server;
      return c;
    }
    auto in_cluster = InClusterConfig();
    if (in_cluster.ok()) {
      if (!options.namespace_.empty()) in_cluster->namespace_ = options.namespace_;
      return in_cluster;
    }
    if (!in_cluster.status().IsNotFound()) return in_cluster.status();
    return Status::NotFound(
        "no configuration: pass --kubeconfig or --server, set KUBECONFIG, create ~/.kube/config, "
        "or run in a pod");
  }
  return LoadKubeconfig(options);
}

}  // namespace kcache
