// SPDX-License-Identifier: Apache-2.0

// Keys and records of the storage format (docs/storage-format.md).

#ifndef KCACHE_SRC_PERSIST_ENCODING_H_
#define KCACHE_SRC_PERSIST_ENCODING_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "kcache/cache.h"
#include "kcache/status_or.h"

namespace kcache::storage {

class Keyring;

// 2: the journal column family. A writer upgrades a version 1 cache on
// open. 3: encryption at rest (the meta row "keys", sealed object records
// and journal entries), recorded only by the commit that creates a
// cache's keyring, so that a kcache that cannot open sealed records
// refuses the cache instead of failing on them. Readers take all three.
inline constexpr int kFormatVersion = 3;
// What a writer records in a cache without a keyring.
inline constexpr int kPlainFormatVersion = 2;
// The version of the rows snapshots carry (meta, objects, rindex, index):
// unchanged by version 2, which added only the journal.
inline constexpr int kRowsFormatVersion = 1;
// ... and of the rows of a cache with a keyring (sealed records).
inline constexpr int kSealedRowsFormatVersion = 3;
inline constexpr char kObjectsCF[] = "objects";
inline constexpr char kIndexCF[] = "index";
inline constexpr char kReverseIndexCF[] = "rindex";
inline constexpr char kMetaCF[] = "meta";
inline constexpr char kJournalCF[] = "journal";
inline constexpr char kFormatKey[] = "format";
inline constexpr char kClusterKey[] = "cluster";

// The row families, in the order snapshots carry them (RowFamilies()),
// and the column families that hold them.
enum class Family : uint8_t { kMeta = 0, kObjects = 1, kReverseIndex = 2, kIndex = 3 };
inline constexpr int kFamilies = 4;
const char* FamilyName(Family f);

// (index name, value), as listed in a reverse index record.
using IndexEntry = std::pair<std::string, std::string>;

// InvalidArgument if `s` (named `what`) contains a zero byte.
Status CheckNoZero(std::string_view what, std::string_view s);

// ks + \0 + key: keys of `objects` and `rindex`.
std::string ObjectKey(std::string_view ks, std::string_view key);
// ks + \0.
std::string KeyspacePrefix(std::string_view ks);

// A half-open range of keys [start, limit).
struct KeyRange {
  std::string start;
  std::string limit;
};
// Every key that begins with `prefix`. REQUIRES: `prefix` ends in the \0
// separator, so that raising it to \1 gives the first key past the range.
KeyRange PrefixRange(std::string prefix);
// The object (and reverse index) keys of keyspace `ks`: [ks + \0, ks + \1).
KeyRange KeyspaceRange(std::string_view ks);
// The object keys "<ns>/<name>" of namespace `ns` in keyspace `ks`: from
// "<ns>/" up to "<ns>0" ('0' is the byte after '/').
KeyRange NamespaceRange(std::string_view ks, std::string_view ns);

// ks + \0 + index + \0 [+ value + \0 [+ key]].
std::string IndexPrefix(std::string_view ks, std::string_view index);
std::string IndexValuePrefix(std::string_view ks, std::string_view index, std::string_view value);
std::string IndexKey(std::string_view ks, std::string_view index, std::string_view value,
                     std::string_view key);

// meta keys.
std::string MetaKey(std::string_view kind, std::string_view ks);  // kind + \0 + ks
std::string IndexVersionKey(std::string_view ks, std::string_view index);

// Object record: 0x01 + varint32(len(rv)) + rv + json.
std::string EncodeObject(std::string_view rv, std::string_view json);
// The record without its json: 0x01 + varint32(len(rv)) + rv.
std::string EncodeObjectHeader(std::string_view rv);
void AppendObjectHeader(std::string* out, std::string_view rv);
// Splits a plain record; Corruption if malformed, FailedPrecondition if
// sealed (see OpenObject).
Status DecodeObject(std::string_view record, std::string_view* rv, std::string_view* json);
// Sealed object record (encryption at rest): 0x02 + varint32(len(rv)) + rv
// + the json sealed by the keyring (crypto::Seal's layout), bound to
// ObjectSealContext(ks, key).
std::string EncodeSealedObject(std::string_view rv, std::string_view sealed);
StatusOr<std::string> SealObject(const Keyring& keyring, std::string_view ks, std::string_view key,
                                 std::string_view rv, std::string_view json);
// Whether `record` is a sealed object record (by its version byte).
inline bool IsSealedObject(std::string_view record) { return !record.empty() && record[0] == 0x02; }
// Splits either record; `body` is the json or the sealed json.
Status DecodeObjectRecord(std::string_view record, std::string_view* rv, std::string_view* body,
                          bool* sealed);
// Splits either record, opening a sealed one's json into `buffer` (which
// `json` then views). FailedPrecondition for a sealed record and no
// keyring or a locked one; Corruption for one that is malformed or does not
// open. Every error names the object: "object KEY of keyspace KS".
Status OpenObject(const Keyring* keyring, std::string_view ks, std::string_view key,
                  std::string_view record, std::string_view* rv, std::string_view* json,
                  std::string* buffer);

// Reverse index record: (index + \0 + value + \0)*, `entries` sorted.
std::string EncodeEntries(const std::vector<IndexEntry>& entries);
void AppendEntries(std::string* out, const std::vector<IndexEntry>& entries);
StatusOr<std::vector<IndexEntry>> DecodeEntries(std::string_view record);

// meta "resource\0ks" and "cluster" values: JSON objects. Both have the
// same JSON form in a snapshot's manifest. The FromJson functions throw
// nlohmann::json::exception for a field of the wrong type; the Decode
// functions return Corruption.
nlohmann::json ResourceInfoToJson(const ResourceInfo& info);
ResourceInfo ResourceInfoFromJson(const nlohmann::json& j);
StatusOr<ResourceInfo> DecodeResourceInfo(std::string_view json);
nlohmann::json ClusterInfoToJson(const ClusterInfo& info);
ClusterInfo ClusterInfoFromJson(const nlohmann::json& j);
StatusOr<ClusterInfo> DecodeClusterInfo(std::string_view json);

}  // namespace kcache::storage

#endif  // KCACHE_SRC_PERSIST_ENCODING_H_
