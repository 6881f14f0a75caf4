// Ordering resourceVersions, where the code must (the "caught up" check).
// resourceVersions are opaque to kcache everywhere else.

#ifndef KCACHE_SRC_CACHE_RESOURCE_VERSION_H_
#define KCACHE_SRC_CACHE_RESOURCE_VERSION_H_

#include <optional>
#include <string_view>

namespace kcache {

// Compares two resourceVersions as arbitrary-size decimal integers (the
// ordering Kubernetes documents for kube-apiserver since 1.35): -1, 0 or 1.
// nullopt if either is not a plain decimal integer: such servers' versions
// are opaque, and callers fall back to not comparing.
std::optional<int> CompareResourceVersions(std::string_view a, std::string_view b);

}  // namespace kcache

#endif  // KCACHE_SRC_CACHE_RESOURCE_VERSION_H_
