// SPDX-License-Identifier: Apache-2.0

#include "persist/encoding.h"

#include <nlohmann/json.hpp>

#include <cassert>

#include "persist/keyring.h"
#include "util/coding.h"

namespace kcache::storage {
namespace {

constexpr char kObjectRecordVersion = 0x01;
constexpr char kSealedObjectRecordVersion = 0x02;  // IsSealedObject in encoding.h

using util::GetVarint32;
using util::PutVarint32;

std::string Join(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (std::string_view p : parts) {
    out.append(p);
    out.push_back('\0');
  }
  return out;
}

}  // namespace

const char* FamilyName(Family f) {
  switch (f) {
    case Family::kMeta:
      return kMetaCF;
    case Family::kObjects:
      return kObjectsCF;
    case Family::kReverseIndex:
      return kReverseIndexCF;
    case Family::kIndex:
      return kIndexCF;
  }
  return "?";
}

Status CheckNoZero(std::string_view what, std::string_view s) {
  if (s.find('\0') == std::string_view::npos) return Status::OK();
  return Status::InvalidArgument(std::string(what) +
                                 " contains a zero byte, which kcache cannot store");
}

std::string ObjectKey(std::string_view ks, std::string_view key) {
  std::string out = KeyspacePrefix(ks);
  out.append(key);
  return out;
}

std::string KeyspacePrefix(std::string_view ks) { return Join({ks}); }

KeyRange PrefixRange(std::string prefix) {
  assert(!prefix.empty() && prefix.back() == '\0');
  std::string limit = prefix;
  limit.back() = '\1';
  return {std::move(prefix), std::move(limit)};
}

KeyRange KeyspaceRange(std::string_view ks) { return PrefixRange(KeyspacePrefix(ks)); }

KeyRange NamespaceRange(std::string_view ks, std::string_view ns) {
  std::string start = KeyspacePrefix(ks), limit;
  start.append(ns);
  limit = start;
  start.push_back('/');
  limit.push_back('0');
  return {std::move(start), std::move(limit)};
}

std::string IndexPrefix(std::string_view ks, std::string_view index) { return Join({ks, index}); }

std::string IndexValuePrefix(std::string_view ks, std::string_view index, std::string_view value) {
  return Join({ks, index, value});
}

std::string IndexKey(std::string_view ks, std::string_view index, std::string_view value,
                     std::string_view key) {
  std::string out = Join({ks, index, value});
  out.append(key);
  return out;
}

std::string MetaKey(std::string_view kind, std::string_view ks) {
  std::string out = Join({kind});
  out.append(ks);
  return out;
}

std::string IndexVersionKey(std::string_view ks, std::string_view index) {
  std::string out = Join({"index", ks});
  out.append(index);
  return out;
}

std::string EncodeObjectHeader(std::string_view rv) {
  std::string out;
  AppendObjectHeader(&out, rv);
  return out;
}

void AppendObjectHeader(std::string* out, std::string_view rv) {
  out->push_back(kObjectRecordVersion);
  PutVarint32(out, static_cast<uint32_t>(rv.size()));
  out->append(rv);
}

std::string EncodeObject(std::string_view rv, std::string_view json) {
  std::string out = EncodeObjectHeader(rv);
  out.append(json);
  return out;
}

std::string EncodeSealedObject(std::string_view rv, std::string_view sealed) {
  std::string out;
  out.push_back(kSealedObjectRecordVersion);
  PutVarint32(&out, static_cast<uint32_t>(rv.size()));
  out.append(rv);
  out.append(sealed);
  return out;
}

Status DecodeObjectRecord(std::string_view record, std::string_view* rv, std::string_view* body,
                          bool* sealed) {
  if (record.empty() ||
      (record[0] != kObjectRecordVersion && record[0] != kSealedObjectRecordVersion)) {
    return Status::Corruption("object record has an unknown version byte");
  }
  *sealed = record[0] == kSealedObjectRecordVersion;
  record.remove_prefix(1);
  uint32_t len = 0;
  if (!GetVarint32(&record, &len) || len > record.size()) {
    return Status::Corruption("object record has a bad resourceVersion length");
  }
  *rv = record.substr(0, len);
  *body = record.substr(len);
  return Status::OK();
}

Status DecodeObject(std::string_view record, std::string_view* rv, std::string_view* json) {
  bool sealed = false;
  KCACHE_RETURN_IF_ERROR(DecodeObjectRecord(record, rv, json, &sealed));
  if (sealed) return Status::FailedPrecondition("the object is encrypted at rest");
  return Status::OK();
}

Status OpenObject(const Keyring* keyring, std::string_view ks, std::string_view key,
                  std::string_view record, std::string_view* rv, std::string_view* json,
                  std::string* buffer) {
  bool sealed = false;
  const auto what = [&] {
    return "object " + std::string(key) + " of keyspace " + std::string(ks);
  };
  KCACHE_RETURN_IF_ERROR(DecodeObjectRecord(record, rv, json, &sealed).WithContext(what()));
  if (!sealed) return Status::OK();
  if (!keyring) {
    return Status::FailedPrecondition(what() +
                                      " is encrypted at rest, and no key-encryption key was given");
  }
  KCACHE_ASSIGN_OR_RETURN(*buffer, keyring->Open(*json, ObjectSealContext(ks, key), what()));
  *json = *buffer;
  return Status::OK();
}

StatusOr<std::string> SealObject(const Keyring& keyring, std::string_view ks, std::string_view key,
                                 std::string_view rv, std::string_view json) {
  KCACHE_ASSIGN_OR_RETURN(std::string sealed, keyring.Seal(json, ObjectSealContext(ks, key)));
  return EncodeSealedObject(rv, sealed);
}

std::string EncodeEntries(const std::vector<IndexEntry>& entries) {
  std::string out;
  AppendEntries(&out, entries);
  return out;
}

void AppendEntries(std::string* out, const std::vector<IndexEntry>& entries) {
  for (const auto& [index, value] : entries) {
    out->append(index);
    out->push_back('\0');
    out->append(value);
    out->push_back('\0');
  }
}

StatusOr<std::vector<IndexEntry>> DecodeEntries(std::string_view record) {
  std::vector<IndexEntry> out;
  while (!record.empty()) {
    size_t a = record.find('\0');
    size_t b = a == std::string_view::npos ? a : record.find('\0', a + 1);
    if (b == std::string_view::npos) return Status::Corruption("truncated reverse index record");
    out.emplace_back(std::string(record.substr(0, a)),
                     std::string(record.substr(a + 1, b - a - 1)));
    record.remove_prefix(b + 1);
  }
  return out;
}

nlohmann::json ResourceInfoToJson(const ResourceInfo& info) {
  nlohmann::json j = {{"group", info.group},
                      {"version", info.version},
                      {"resource", info.resource},
                      {"kind", info.kind},
                      {"namespaced", info.namespaced}};
  // Fields added later are written only when set, so that older records
  // and newer ones of the same content read alike.
  if (!info.singular.empty()) j["singular"] = info.singular;
  if (!info.short_names.empty()) j["shortNames"] = info.short_names;
  if (info.custom) j["custom"] = true;
  if (!info.categories.empty()) j["categories"] = info.categories;
  if (info.selection) {
    j["selection"] = {{"namespace", info.selection->namespace_},
                      {"labelSelector", info.selection->label_selector},
                      {"fieldSelector", info.selection->field_selector}};
  }
  for (const PrinterColumn& c : info.printer_columns) {
    nlohmann::json col = {{"name", c.name}, {"type", c.type}, {"jsonPath", c.json_path}};
    if (!c.format.empty()) col["format"] = c.format;
    if (c.priority != 0) col["priority"] = c.priority;
    j["printerColumns"].push_back(std::move(col));
  }
  return j;
}

ResourceInfo ResourceInfoFromJson(const nlohmann::json& j) {
  ResourceInfo r;
  r.group = j.value("group", "");
  r.version = j.value("version", "");
  r.resource = j.value("resource", "");
  r.kind = j.value("kind", "");
  r.namespaced = j.value("namespaced", true);
  r.singular = j.value("singular", "");
  r.custom = j.value("custom", false);
  if (auto it = j.find("shortNames"); it != j.end() && it->is_array()) {
    for (const nlohmann::json& n : *it) {
      if (n.is_string()) r.short_names.push_back(n.get<std::string>());
    }
  }
  if (auto it = j.find("categories"); it != j.end() && it->is_array()) {
    for (const nlohmann::json& n : *it) {
      if (n.is_string()) r.categories.push_back(n.get<std::string>());
    }
  }
  if (auto it = j.find("selection"); it != j.end() && it->is_object()) {
    r.selection = ResourceSelection{it->value("namespace", ""), it->value("labelSelector", ""),
                                    it->value("fieldSelector", "")};
  }
  if (auto it = j.find("printerColumns"); it != j.end() && it->is_array()) {
    for (const nlohmann::json& c : *it) {
      if (!c.is_object()) continue;
      r.printer_columns.push_back(PrinterColumn{c.value("name", ""), c.value("type", ""),
                                                c.value("format", ""), c.value("jsonPath", ""),
                                                c.value("priority", int32_t{0})});
    }
  }
  return r;
}

StatusOr<ResourceInfo> DecodeResourceInfo(std::string_view json) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  if (!j.is_object()) return Status::Corruption("malformed resource record: " + std::string(json));
  try {
    return ResourceInfoFromJson(j);
  } catch (const nlohmann::json::exception& e) {  // a field of the wrong type
    return Status::Corruption("malformed resource record: " + std::string(e.what()));
  }
}

StatusOr<ClusterInfo> DecodeClusterInfo(std::string_view json) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  if (!j.is_object()) return Status::Corruption("malformed cluster record: " + std::string(json));
  try {
    return ClusterInfoFromJson(j);
  } catch (const nlohmann::json::exception& e) {  // a field of the wrong type
    return Status::Corruption("malformed cluster record: " + std::string(e.what()));
  }
}

nlohmann::json ClusterInfoToJson(const ClusterInfo& info) {
  nlohmann::json j = {{"server", info.server}, {"version", info.version}};
  if (!info.uid.empty()) j["uid"] = info.uid;
  return j;
}

ClusterInfo ClusterInfoFromJson(const nlohmann::json& j) {
  return ClusterInfo{j.value("server", ""), j.value("version", ""), j.value("uid", "")};
}

}  // namespace kcache::storage
