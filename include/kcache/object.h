// SPDX-License-Identifier: Apache-2.0

// Object: one immutable Kubernetes object, kept as its JSON bytes with its
// metadata extracted once.
//
// Objects are shared as ObjectPtr (std::shared_ptr<const Object>): what a
// store returns can be kept and read from any thread but never modified.
//
// Thread-safety: immutable after construction; safe to share across threads.

#ifndef KCACHE_OBJECT_H_
#define KCACHE_OBJECT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "kcache/export.h"
#include "kcache/labels.h"
#include "kcache/status_or.h"

namespace kcache {

struct KCACHE_EXPORT OwnerReference {
  std::string api_version{};
  std::string kind{};
  std::string name{};
  std::string uid{};
  bool controller = false;
  bool block_owner_deletion = false;

  friend bool operator==(const OwnerReference&, const OwnerReference&) = default;
};

// The fields of metadata that kcache reads. Absent fields are empty (or 0).
struct KCACHE_EXPORT ObjectMeta {
  std::string name{};
  std::string namespace_{};
  std::string generate_name{};
  std::string uid{};
  std::string resource_version{};
  std::string creation_timestamp{};
  std::string deletion_timestamp{};
  int64_t generation = 0;
  Labels labels{};
  Labels annotations{};
  std::vector<OwnerReference> owner_references{};
};

class Object;
using ObjectPtr = std::shared_ptr<const Object>;

struct KCACHE_EXPORT ParseOptions {
  // Remove metadata.managedFields from the stored bytes. Server-side apply
  // bookkeeping is often a third of a pod's JSON and no controller reads it.
  // The removed bytes are checked for structure only (strings, brackets,
  // UTF-8), not fully validated: they are never stored or read, and a
  // second parse of them would cost a third of the ingest. A RestClient
  // with this set also asks servers to leave them out (the Accept parameter
  // drop=metadata.managedFields of KEP-5958), so that servers that support
  // it send fewer bytes; with others nothing changes.
  // Default: false (keep the bytes as the server sent them).
  bool drop_managed_fields = false;
  // Written into objects that lack a top-level "apiVersion" or "kind": items
  // of built-in list responses omit both, and a cache should hold whole
  // objects. A key that is there, even empty, is kept as it is. Empty:
  // nothing is added. Default: empty.
  std::string default_api_version{};
  std::string default_kind{};
};

class KCACHE_EXPORT Object {
 public:
  // Parses and fully validates `json`, which must be one JSON object, and
  // extracts its metadata without building a document tree. Errors:
  // InvalidArgument "malformed JSON at byte N: ..." for invalid JSON, and
  // "not a JSON object" for a valid non-object. An object without a
  // "metadata" object is accepted; has_metadata() is then false.
  static StatusOr<ObjectPtr> Parse(std::string json, const ParseOptions& options = {});

  // For bytes that Parse accepted before, such as objects read back from a
  // cache (validated when written, checksummed by RocksDB): extracts the same
  // metadata, but validates only the JSON structure and the fields it reads,
  // skipping the rest, and stops once kind, apiVersion and metadata are read
  // (a key repeated after them is not seen). About twice as fast as Parse on
  // a pod. Bytes it cannot walk go through Parse, so errors are Parse's;
  // bytes Parse would refuse in a part it skips are accepted.
  static StatusOr<ObjectPtr> ParseTrusted(std::string_view json);

  Object(const Object&) = delete;
  Object& operator=(const Object&) = delete;

  // The JSON bytes; valid as long as this object lives.
  std::string_view json() const { return json_; }
  size_t byte_size() const { return json_.size(); }

  bool has_metadata() const { return has_metadata_; }
  const ObjectMeta& meta() const { return meta_; }
  const std::string& name() const { return meta_.name; }
  const std::string& namespace_() const { return meta_.namespace_; }
  const std::string& resource_version() const { return meta_.resource_version; }
  const Labels& labels() const { return meta_.labels; }
  const Labels& annotations() const { return meta_.annotations; }
  // Top-level kind and apiVersion; empty when absent (items of built-in
  // list responses carry neither).
  const std::string& kind() const { return kind_; }
  const std::string& api_version() const { return api_version_; }

  // Parses the whole document. Costs a full parse on every call: use meta()
  // where it suffices.
  StatusOr<nlohmann::json> Document() const;

  // The value at a dotted path such as "spec.nodeName" or "metadata.name",
  // as field selectors read it: strings as they are, numbers and booleans in
  // their JSON spelling, null or absent as not found (NotFound). Objects and
  // arrays are InvalidArgument.
  StatusOr<std::string> FieldValue(std::string_view dotted_path) const;

 private:
  friend StatusOr<ObjectPtr> DropManagedFields(ObjectPtr object);
  Object() = default;
  // An empty object and its control block in one allocation.
  static std::shared_ptr<Object> Create();

  std::string json_;
  std::string kind_;
  std::string api_version_;
  bool has_metadata_ = false;
  bool has_managed_fields_ = false;
  ObjectMeta meta_;
};

// A transform applied to each object before it is stored (client-go's
// TransformFunc). It returns the object to store, possibly the same one.
using TransformFunc = std::function<StatusOr<ObjectPtr>(ObjectPtr)>;

// A transform that removes metadata.managedFields, keeping everything else.
KCACHE_EXPORT StatusOr<ObjectPtr> DropManagedFields(ObjectPtr object);

}  // namespace kcache

#endif  // KCACHE_OBJECT_H_
