// SPDX-License-Identifier: Apache-2.0

#include "core/store_errors.h"

#include <string>

namespace kcache {

Status KeyError(const Object& object, const Status& cause) {
  std::string what;
  if (object.has_metadata()) {
    what = object.kind().empty() ? "" : object.kind() + " ";
    what += object.namespace_().empty() ? object.name() : object.namespace_() + "/" + object.name();
  } else {
    constexpr size_t kMaxBytes = 64;
    what = std::string(object.json().substr(0, kMaxBytes));
    if (object.json().size() > kMaxBytes) what += "...";
  }
  return Status(cause.code(),
                "couldn't create key for object " + what + ": " + std::string(cause.message()));
}

}  // namespace kcache

namespace kcache {

Status UnknownIndexError(std::string_view name) {
  return Status::NotFound("Index with name " + std::string(name) + " does not exist");
}

Status IndexFuncError(std::string_view key, std::string_view index, const Status& cause) {
  return Status(cause.code(), "unable to calculate an index entry for key \"" + std::string(key) +
                                  "\" on index \"" + std::string(index) +
                                  "\": " + std::string(cause.message()));
}

Status IndexerConflictError(const std::vector<std::string>& taken) {
  if (taken.empty()) return Status::OK();
  std::string names;
  for (const std::string& n : taken) names += (names.empty() ? "" : ", ") + n;
  return Status::InvalidArgument("indexer conflict: [" + names + "]");
}

}  // namespace kcache
