// SPDX-License-Identifier: Apache-2.0

// Request bodies in Kubernetes' protobuf encoding
// (application/vnd.kubernetes.protobuf), which kubectl's imperative
// commands send for built-in kinds: the four bytes "k8s\0", then a
// runtime.Unknown whose typeMeta names the kind and whose raw field holds
// the object's message (proto/). kcache serve's synthetic cluster reads
// them as the JSON the same object would have been sent as.

#ifndef KCACHE_TOOLS_KCACHE_TESTCLUSTER_PROTOBUF_BODY_H_
#define KCACHE_TOOLS_KCACHE_TESTCLUSTER_PROTOBUF_BODY_H_

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kcache/status_or.h"

namespace kcache::serve {

inline constexpr std::string_view kProtobufMediaType = "application/vnd.kubernetes.protobuf";

// The kinds ProtobufToJson reads, as "apiVersion kind" ("v1 ConfigMap").
const std::vector<std::string>& ProtobufKinds();

// The object `body` holds, as its JSON (apiVersion and kind from the
// envelope first; fields Go's encoding/json would omit as empty are
// omitted; times as RFC 3339; bytes as base64). InvalidArgument, saying
// what is wrong, for a body that is not the encoding; Unimplemented for a
// kind not in ProtobufKinds().
StatusOr<nlohmann::ordered_json> ProtobufToJson(std::string_view body);

}  // namespace kcache::serve

#endif  // KCACHE_TOOLS_KCACHE_TESTCLUSTER_PROTOBUF_BODY_H_
