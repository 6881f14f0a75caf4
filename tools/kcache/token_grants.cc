// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/token_grants.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace kcache::tool {
namespace {

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= x ^ y;
  }
  return diff == 0;
}

// "pods", "deployments.apps": how a grant names a resource.
std::string GrantName(const serve::ResourceType& t) { return t.group_resource().String(); }

bool IsCoreSecrets(const serve::ResourceType& t) {
  return t.group.empty() && t.resource == "secrets";
}

std::set<std::string> SplitList(std::string_view list) {
  std::set<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string_view::npos) comma = list.size();
    if (comma > start) out.emplace(list.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

}  // namespace

bool TokenGrant::Reads(const serve::ResourceType& t) const {
  if (!namespaces.empty() && !t.namespaced) return false;
  if (resources.count(GrantName(t))) return true;
  return every_resource && !IsCoreSecrets(t);
}

std::optional<serve::Reply> TokenGrant::Check(const serve::ResourceType& t, std::string_view verb,
                                              const std::string& ns,
                                              const std::string& name) const {
  const bool in_scope = namespaces.empty() || (!ns.empty() && namespaces.count(ns));
  if (Reads(t) && in_scope) return std::nullopt;
  // kube-apiserver's words for an RBAC denial (its forbiddenMessage).
  const std::string qualified = GrantName(t);
  std::string message =
      qualified + (name.empty() ? "" : " " + serve::Quote(name)) + " is forbidden: User " +
      serve::Quote(user) + " cannot " + std::string(verb) + " resource " +
      serve::Quote(t.resource) + " in API group " + serve::Quote(t.group) +
      (ns.empty() ? " at the cluster scope" : " in the namespace " + serve::Quote(ns));
  return serve::Reply{403, "Forbidden", std::move(message),
                      serve::Details(name, t.group, t.resource)};
}

StatusOr<std::vector<TokenGrant>> ReadTokenGrants(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("token file " + path + ": cannot be read");
  std::vector<TokenGrant> grants;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string where = "token file " + path + ", line " + std::to_string(number) + ": ";
    std::istringstream fields(line);
    TokenGrant g;
    if (!(fields >> g.token) || g.token[0] == '#') continue;
    g.user = "token-" + std::to_string(number);
    std::set<std::string> seen;
    for (std::string field; fields >> field;) {
      const size_t eq = field.find('=');
      const std::string key = field.substr(0, eq);
      if (eq == std::string::npos || (key != "name" && key != "resources" && key != "namespaces")) {
        return Status::InvalidArgument(
            where + "unknown field " + serve::Quote(field) +
            " (a token may be followed by name=, resources= and namespaces=)");
      }
      if (!seen.insert(key).second) return Status::InvalidArgument(where + key + "= given twice");
      const std::string value = field.substr(eq + 1);
      if (value.empty()) return Status::InvalidArgument(where + key + "= is empty");
      if (key == "name") {
        g.user = value;
      } else if (key == "resources") {
        g.resources = SplitList(value);
        g.every_resource = g.resources.erase("*") > 0;
        if (g.resources.empty() && !g.every_resource)
          return Status::InvalidArgument(where + "resources= names no resource");
      } else {
        g.namespaces = SplitList(value);
        if (g.namespaces.empty())
          return Status::InvalidArgument(where + "namespaces= names no namespace");
      }
    }
    for (const TokenGrant& other : grants) {
      if (other.token == g.token) {
        return Status::InvalidArgument(where + "the token of " + other.user + " again");
      }
    }
    grants.push_back(std::move(g));
  }
  if (grants.empty()) return Status::InvalidArgument("token file " + path + " holds no token");
  return grants;
}

const TokenGrant* FindGrant(const std::vector<TokenGrant>& grants, std::string_view authorization) {
  constexpr std::string_view kBearer = "Bearer ";
  if (authorization.substr(0, kBearer.size()) != kBearer) return nullptr;
  const std::string_view token = authorization.substr(kBearer.size());
  const TokenGrant* found = nullptr;
  for (const TokenGrant& g : grants) {
    if (ConstantTimeEquals(token, g.token) && !found) found = &g;
  }
  return found;
}

}  // namespace kcache::tool
