// SPDX-License-Identifier: Apache-2.0

// The bearer tokens of `kcache serve --cache` and what each may read: the
// token file's format (docs/serve.md), the lookup of a request's token, and
// the 403 a request outside its grant gets, worded as kube-apiserver's RBAC
// words it.

#ifndef KCACHE_TOOLS_KCACHE_TOKEN_GRANTS_H_
#define KCACHE_TOOLS_KCACHE_TOKEN_GRANTS_H_

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "kcache/status_or.h"
#include "tools/kcache/apiserver/api_reply.h"
#include "tools/kcache/apiserver/resource_types.h"

namespace kcache::tool {

// One token and what it may read. Immutable once read.
struct TokenGrant {
  std::string token;
  // Names the token in 403 messages and the server's log: `name=` or
  // "token-LINE".
  std::string user;
  // `resources=`: "pods", "deployments.apps" (RESOURCE.GROUP); "*" is every
  // resource but Secrets, which only a grant that names "secrets" reads.
  bool every_resource = true;
  std::set<std::string> resources;
  // `namespaces=`: only objects of these namespaces, and no cluster-scoped
  // resource; empty: every namespace and cluster-scoped resources.
  std::set<std::string> namespaces;

  // Whether the grant reads `t` in some namespace (discovery lists it).
  bool Reads(const serve::ResourceType& t) const;
  // Whether it may `verb` ("get", "list", "watch") `t` in `ns` ("": all
  // namespaces, or a cluster-scoped resource); if not, the 403 to answer.
  std::optional<serve::Reply> Check(const serve::ResourceType& t, std::string_view verb,
                                    const std::string& ns, const std::string& name) const;
};

// Reads a token file: one token per line with optional fields after it,
// separated by spaces,
//   TOKEN [name=NAME] [resources=R1,R2,...] [namespaces=N1,N2,...]
// '#' starts a comment line; blank lines are skipped. InvalidArgument,
// naming the file and line, for an unknown or repeated field, an empty
// list, a repeated token or a file with no token; NotFound for a file that
// cannot be read.
StatusOr<std::vector<TokenGrant>> ReadTokenGrants(const std::string& path);

// The grant whose token `authorization` ("Bearer TOKEN") carries, or null.
// Every token is compared in constant time, so that timing tells nothing of
// how much of one matched.
const TokenGrant* FindGrant(const std::vector<TokenGrant>& grants, std::string_view authorization);

}  // namespace kcache::tool

#endif  // KCACHE_TOOLS_KCACHE_TOKEN_GRANTS_H_
