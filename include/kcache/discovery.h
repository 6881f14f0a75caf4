// SPDX-License-Identifier: Apache-2.0

// Discovery: which resources an API server serves, and how kubectl's names
// for them ("pods", "pod", "po", "deployments.apps", "deploy", "Pod",
// "deployments.v1.apps") resolve to a group, version and resource.
//
// Thread-safety: immutable after Fetch(); safe to share across threads.
#ifndef KCACHE_DISCOVERY_H_
#define KCACHE_DISCOVERY_H_

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kcache/api_resource.h"
#include "kcache/export.h"
#include "kcache/rest_client.h"
#include "kcache/status_or.h"

namespace kcache {

class KCACHE_EXPORT Discovery {
 public:
  // Reads /api, /api/v1, /apis and every version of every group.
  // Errors: the first failed request's Status; a group version that fails
  // (an aggregated API that is down) is skipped, as kubectl does.
  static StatusOr<std::shared_ptr<const Discovery>> Fetch(RestClient& client);

  // Builds a Discovery from already decoded resources (tests, snapshots).
  static std::shared_ptr<const Discovery> FromResources(std::vector<ApiResource> resources);

  // Resolves `name` as kubectl does: "resource[.version][.group]" where
  // resource is the plural, singular, short name or kind (any case). The
  // core group wins over others, then groups in the server's order.
  // Errors: NotFound "the server doesn't have a resource type \"x\"".
  StatusOr<ApiResource> Resolve(std::string_view name) const;

  // Every resource, subresources excluded, once per group: in its group's
  // preferred version, or else the first version that serves it.
  const std::vector<ApiResource>& resources() const { return resources_; }

 private:
  std::vector<ApiResource> resources_;
  // Each lower-case name (plural, singular, kind, short name) -> the
  // resources it names, in order: Resolve looks a name up instead of
  // lower-casing every resource's names for each (a sync of a thousand
  // types resolves a thousand names).
  std::unordered_map<std::string, std::vector<size_t>> by_name_;
};

}  // namespace kcache

#endif  // KCACHE_DISCOVERY_H_
