// SPDX-License-Identifier: Apache-2.0

// The options of RestClient's writes: create, update, patch and delete
// (metav1.CreateOptions, UpdateOptions, PatchOptions, DeleteOptions).
//
// Thread-safety: plain values.
#ifndef KCACHE_WRITE_OPTIONS_H_
#define KCACHE_WRITE_OPTIONS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "kcache/export.h"

namespace kcache {

// Options of Create, Update and UpdateStatus. Empty and false are not sent.
struct KCACHE_EXPORT WriteOptions {
  // Who makes the change, recorded in managedFields (fieldManager).
  std::string field_manager{};
  // Validate and answer without storing (dryRun=All).
  bool dry_run = false;
};

// The four patch formats of the API server, by Content-Type.
enum class PatchType {
  kJson,            // application/json-patch+json (RFC 6902)
  kMerge,           // application/merge-patch+json (RFC 7386)
  kStrategicMerge,  // application/strategic-merge-patch+json (built-in types only)
  kApply,           // application/apply-patch+yaml: server-side apply (JSON is valid YAML)
};

struct KCACHE_EXPORT PatchOptions {
  // Required for kApply: the apply's owner of the fields it sets.
  std::string field_manager{};
  // kApply only: take fields another manager owns instead of failing with
  // a 409 Conflict.
  bool force = false;
  bool dry_run = false;
  // Patch a subresource ("status", "scale"); empty for the object.
  std::string subresource{};
};

struct KCACHE_EXPORT DeleteOptions {
  // Seconds before the object is deleted; 0 deletes at once. Unset: the
  // object's default.
  std::optional<int64_t> grace_period_seconds{};
  // "Orphan", "Background" or "Foreground"; empty: the resource's default.
  std::string propagation_policy{};
  // Delete only if the object still has this uid / resourceVersion (else
  // 409 Conflict).
  std::string precondition_uid{};
  std::string precondition_resource_version{};
  bool dry_run = false;
};

}  // namespace kcache

#endif  // KCACHE_WRITE_OPTIONS_H_
