// SPDX-License-Identifier: Apache-2.0

// resourceVersions read as numbers, in the few places the code must: the
// "caught up" check, the change journal's keys and the servers of `kcache
// serve`. resourceVersions are opaque to kcache everywhere else.

#ifndef KCACHE_SRC_CORE_RESOURCE_VERSION_H_
#define KCACHE_SRC_CORE_RESOURCE_VERSION_H_

#include <cstdint>
#include <optional>
#include <string_view>

namespace kcache {

// A resourceVersion as kube-apiserver reads one it issued (etcd's revision,
// strconv.ParseUint): decimal digits only that fit 64 bits; "007" is 7.
// nullopt for "", signs, other characters and overflow.
std::optional<uint64_t> ParseResourceVersion(std::string_view rv);

// The same, where the text must also be the number's own spelling ("0",
// "42"; not "042"), as it must where the number is spelled again to find
// the text (the change journal's keys).
std::optional<uint64_t> ParseCanonicalResourceVersion(std::string_view rv);

// Compares two resourceVersions as arbitrary-size decimal integers (the
// ordering Kubernetes documents for kube-apiserver since 1.35): -1, 0 or 1.
// nullopt if either is not a plain decimal integer: such servers' versions
// are opaque, and callers fall back to not comparing.
std::optional<int> CompareResourceVersions(std::string_view a, std::string_view b);

}  // namespace kcache

#endif  // KCACHE_SRC_CORE_RESOURCE_VERSION_H_
