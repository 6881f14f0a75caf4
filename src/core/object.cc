// SPDX-License-Identifier: Apache-2.0

#include "kcache/object.h"

#define SIMDJSON_EXCEPTIONS 0  // an unchecked result is a compile error, not a throw
#include <simdjson.h>

#include <nlohmann/json.hpp>

#include "core/json_error.h"

namespace kcache {
namespace {

namespace dom = simdjson::dom;
namespace ondemand = simdjson::ondemand;

// One parser per thread: its buffers grow to the largest object seen and are
// reused, so parsing allocates nothing per object once warm.
dom::parser& ThreadDomParser() {
  thread_local dom::parser parser;
  return parser;
}

// Copies `s` into a buffer of exactly its size plus simdjson's padding
// (reserve() on a full string would double its capacity instead).
void Repad(std::string* s) {
  std::string padded;
  padded.reserve(s->size() + simdjson::SIMDJSON_PADDING);
  padded.append(*s);
  *s = std::move(padded);
}

void EnsurePadding(std::string* s) {
  if (s->capacity() < s->size() + simdjson::SIMDJSON_PADDING) Repad(s);
}

// Parses `json` with simdjson's validating parser; on failure, names the
// byte where it went wrong.
Status ParseDom(const std::string& json, dom::element* root) {
  bool padded = json.capacity() >= json.size() + simdjson::SIMDJSON_PADDING;
  auto err =
      ThreadDomParser().parse(json.data(), json.size(), /*realloc_if_needed=*/!padded).get(*root);
  if (!err) return Status::OK();
  Status located = json::DescribeJsonError(json);
  if (!located.ok()) return located;
  // Both parsers disagree only on limits (depth, size): report simdjson's.
  return Status::InvalidArgument(std::string("malformed JSON: ") + simdjson::error_message(err));
}

Status TypeError(std::string_view path, std::string_view want) {
  return Status::InvalidArgument(std::string(path) + ": expected " + std::string(want));
}

Status GetString(dom::element e, std::string_view path, std::string* out) {
  std::string_view v;
  if (e.get_string().get(v)) {
    if (e.is_null()) return Status::OK();  // null reads as absent
    return TypeError(path, "a string");
  }
  out->assign(v);
  return Status::OK();
}

Status GetStringMap(dom::element e, std::string_view path, Labels* out) {
  if (e.is_null()) return Status::OK();
  dom::object obj;
  if (e.get_object().get(obj)) return TypeError(path, "an object of strings");
  for (auto [key, value] : obj) {
    std::string_view v;
    if (value.get_string().get(v)) {
      return TypeError(std::string(path) + "." + std::string(key), "a string");
    }
    // The API server writes map keys sorted: each goes at the end.
    out->emplace_hint(out->end(), std::string(key), std::string(v));
  }
  return Status::OK();
}

Status GetOwnerReferences(dom::element e, std::vector<OwnerReference>* out) {
  if (e.is_null()) return Status::OK();
  dom::array arr;
  if (e.get_array().get(arr)) return TypeError("metadata.ownerReferences", "an array");
  for (dom::element item : arr) {
    dom::object ref;
    if (item.get_object().get(ref)) return TypeError("metadata.ownerReferences[]", "an object");
    OwnerReference r;
    for (auto [key, value] : ref) {
      Status st;
      if (key == "apiVersion") {
        st = GetString(value, "metadata.ownerReferences[].apiVersion", &r.api_version);
      } else if (key == "kind") {
        st = GetString(value, "metadata.ownerReferences[].kind", &r.kind);
      } else if (key == "name") {
        st = GetString(value, "metadata.ownerReferences[].name", &r.name);
      } else if (key == "uid") {
        st = GetString(value, "metadata.ownerReferences[].uid", &r.uid);
      } else if (key == "controller") {
        r.controller = value.is_bool() && value.get_bool().value_unsafe();
      } else if (key == "blockOwnerDeletion") {
        r.block_owner_deletion = value.is_bool() && value.get_bool().value_unsafe();
      }
      KCACHE_RETURN_IF_ERROR(st);
    }
    out->push_back(std::move(r));
  }
  return Status::OK();
}

// The string fields of metadata, read the same way.
struct StringField {
  std::string_view key;
  std::string_view path;  // for errors
  std::string ObjectMeta::*member;
};
constexpr StringField kStringFields[] = {
    {"name", "metadata.name", &ObjectMeta::name},
    {"namespace", "metadata.namespace", &ObjectMeta::namespace_},
    {"generateName", "metadata.generateName", &ObjectMeta::generate_name},
    {"uid", "metadata.uid", &ObjectMeta::uid},
    {"resourceVersion", "metadata.resourceVersion", &ObjectMeta::resource_version},
    {"creationTimestamp", "metadata.creationTimestamp", &ObjectMeta::creation_timestamp},
    {"deletionTimestamp", "metadata.deletionTimestamp", &ObjectMeta::deletion_timestamp},
};

Status ExtractMeta(dom::object meta, ObjectMeta* out, bool* has_managed_fields) {
  for (auto [key, value] : meta) {
    const StringField* field = nullptr;
    for (const StringField& f : kStringFields) {
      if (key == f.key) field = &f;
    }
    if (field) {
      KCACHE_RETURN_IF_ERROR(GetString(value, field->path, &(out->*field->member)));
    } else if (key == "generation") {
      int64_t g = 0;
      if (!value.is_null() && value.get_int64().get(g)) {
        return TypeError("metadata.generation", "an integer");
      }
      out->generation = g;
    } else if (key == "labels") {
      KCACHE_RETURN_IF_ERROR(GetStringMap(value, "metadata.labels", &out->labels));
    } else if (key == "annotations") {
      KCACHE_RETURN_IF_ERROR(GetStringMap(value, "metadata.annotations", &out->annotations));
    } else if (key == "ownerReferences") {
      KCACHE_RETURN_IF_ERROR(GetOwnerReferences(value, &out->owner_references));
    } else if (key == "managedFields") {
      *has_managed_fields = true;
    }
  }
  return Status::OK();
}

// The metadata walk of ParseTrusted, with the on-demand parser: it reads
// the fields it extracts and skips the rest without validating it. Any
// error (a wrong type included) returns false, and the caller falls back to
// the validating parse, which describes it.
using OnDemandValue = ondemand::value;

bool OnDemandString(OnDemandValue v, std::string* out) {
  bool is_null = false;
  if (!v.is_null().get(is_null) && is_null) return true;  // null reads as absent
  std::string_view s;
  if (v.get_string().get(s)) return false;
  out->assign(s);
  return true;
}

bool OnDemandStringMap(OnDemandValue v, Labels* out) {
  bool is_null = false;
  if (!v.is_null().get(is_null) && is_null) return true;
  ondemand::object obj;
  if (v.get_object().get(obj)) return false;
  for (auto field : obj) {
    std::string_view key, value;
    if (field.unescaped_key().get(key)) return false;
    std::string k(key);  // the value's unescaping may reuse the key's buffer
    if (field.value().get_string().get(value)) return false;
    out->emplace_hint(out->end(), std::move(k), std::string(value));  // sorted, as above
  }
  return true;
}

bool OnDemandOwnerReferences(OnDemandValue v, std::vector<OwnerReference>* out) {
  bool is_null = false;
  if (!v.is_null().get(is_null) && is_null) return true;
  ondemand::array arr;
  if (v.get_array().get(arr)) return false;
  for (auto item : arr) {
    ondemand::object ref;
    if (item.get_object().get(ref)) return false;
    OwnerReference r;
    for (auto field : ref) {
      std::string_view key;
      OnDemandValue value;
      if (field.unescaped_key().get(key) || field.value().get(value)) return false;
      bool ok = true;
      if (key == "apiVersion") {
        ok = OnDemandString(value, &r.api_version);
      } else if (key == "kind") {
        ok = OnDemandString(value, &r.kind);
      } else if (key == "name") {
        ok = OnDemandString(value, &r.name);
      } else if (key == "uid") {
        ok = OnDemandString(value, &r.uid);
      } else if (key == "controller" || key == "blockOwnerDeletion") {
        bool b = false;
        // As Parse: anything but true reads as false.
        (key == "controller" ? r.controller : r.block_owner_deletion) =
            !value.get_bool().get(b) && b;
      }
      if (!ok) return false;
    }
    out->push_back(std::move(r));
  }
  return true;
}

bool OnDemandMeta(ondemand::object meta, ObjectMeta* out, bool* has_managed_fields) {
  for (auto field : meta) {
    std::string_view key;
    OnDemandValue value;
    if (field.unescaped_key().get(key) || field.value().get(value)) return false;
    const StringField* string_field = nullptr;
    for (const StringField& f : kStringFields) {
      if (key == f.key) string_field = &f;
    }
    bool ok = true;
    if (string_field) {
      ok = OnDemandString(value, &(out->*string_field->member));
    } else if (key == "generation") {
      bool is_null = false;
      if (value.is_null().get(is_null) || !is_null) ok = !value.get_int64().get(out->generation);
    } else if (key == "labels") {
      ok = OnDemandStringMap(value, &out->labels);
    } else if (key == "annotations") {
      ok = OnDemandStringMap(value, &out->annotations);
    } else if (key == "ownerReferences") {
      ok = OnDemandOwnerReferences(value, &out->owner_references);
    } else if (key == "managedFields") {
      *has_managed_fields = true;
    }
    if (!ok) return false;
  }
  return true;
}

// Cuts `"managedFields": [...]` and one adjacent comma out of the top-level
// metadata object. Leaves `json` unchanged if it has none or does not parse
// (the validating parse that follows reports the error).
void RemoveManagedFields(std::string* json) {
  EnsurePadding(json);
  thread_local ondemand::parser parser;
  ondemand::document doc;
  if (parser.iterate(json->data(), json->size(), json->capacity()).get(doc)) return;
  ondemand::object top;
  if (doc.get_object().get(top)) return;
  const char* base = json->data();
  size_t begin = 0, end = 0;
  for (auto field : top) {
    ondemand::raw_json_string key;
    if (field.key().get(key)) return;
    if (!(key == "metadata")) continue;
    ondemand::object meta;
    if (field.value().get_object().get(meta)) return;
    for (auto mfield : meta) {
      ondemand::raw_json_string mkey;
      if (mfield.key().get(mkey)) return;
      if (!(mkey == "managedFields")) continue;
      ondemand::value value;
      if (mfield.value().get(value)) return;
      std::string_view raw;
      ondemand::array arr;
      if (value.get_array().get(arr) || arr.raw_json().get(raw)) return;
      begin = static_cast<size_t>(mkey.raw() - 1 - base);  // opening quote
      end = static_cast<size_t>(raw.data() + raw.size() - base);
      break;
    }
    break;
  }
  if (end == 0) return;
  const std::string& s = *json;
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  size_t after = end;
  while (after < s.size() && is_space(s[after])) ++after;
  if (after < s.size() && s[after] == ',') {
    end = after + 1;  // drop the comma that follows
  } else {
    size_t before = begin;
    while (before > 0 && is_space(s[before - 1])) --before;
    if (before > 0 && s[before - 1] == ',') begin = before - 1;  // last member
  }
  json->erase(begin, end - begin);
}

// Inserts `"name":"value",` right after the opening brace of the object in
// `json` (already validated). `value` must need no escaping.
void InsertTopLevelString(std::string* json, std::string_view name, std::string_view value) {
  size_t brace = json->find('{');
  size_t next = json->find_first_not_of(" \t\r\n", brace + 1);
  bool empty = next != std::string::npos && (*json)[next] == '}';
  std::string member = "\"";
  member.append(name).append("\":\"").append(value).append("\"");
  if (!empty) member += ',';
  json->insert(brace + 1, member);
}

bool NeedsNoEscaping(std::string_view s) {
  for (char c : s) {
    if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) return false;
  }
  return true;
}

}  // namespace

std::shared_ptr<Object> Object::Create() {
  struct Made final : Object {};  // has Create's access to the private constructor
  return std::make_shared<Made>();
}

StatusOr<ObjectPtr> Object::Parse(std::string json, const ParseOptions& options) {
  if (options.drop_managed_fields) RemoveManagedFields(&json);
  EnsurePadding(&json);
  dom::element root;
  KCACHE_RETURN_IF_ERROR(ParseDom(json, &root));
  dom::object top;
  if (root.get_object().get(top)) return Status::InvalidArgument("not a JSON object");

  std::shared_ptr<Object> obj = Create();
  // The defaults fill what is absent, not what is there and empty: a
  // second key of the same name would make the stored bytes say otherwise.
  bool has_kind = false, has_api_version = false;
  for (auto [key, value] : top) {
    Status st;
    if (key == "kind") {
      has_kind = true;
      st = GetString(value, "kind", &obj->kind_);
    } else if (key == "apiVersion") {
      has_api_version = true;
      st = GetString(value, "apiVersion", &obj->api_version_);
    } else if (key == "metadata") {
      dom::object meta;
      if (value.get_object().get(meta)) {
        if (value.is_null()) continue;
        return TypeError("metadata", "an object");
      }
      obj->has_metadata_ = true;
      st = ExtractMeta(meta, &obj->meta_, &obj->has_managed_fields_);
    }
    KCACHE_RETURN_IF_ERROR(st);
  }
  if (!has_kind && !options.default_kind.empty() && NeedsNoEscaping(options.default_kind)) {
    InsertTopLevelString(&json, "kind", options.default_kind);
    obj->kind_ = options.default_kind;
  }
  if (!has_api_version && !options.default_api_version.empty() &&
      NeedsNoEscaping(options.default_api_version)) {
    InsertTopLevelString(&json, "apiVersion", options.default_api_version);
    obj->api_version_ = options.default_api_version;
  }
  EnsurePadding(&json);  // an insertion may have taken the padding
  // Keep simdjson's padding (64 bytes) so later reads parse in place, and
  // give back any larger surplus (left by dropping managedFields, or by a
  // caller's oversized buffer).
  if (json.capacity() > json.size() + 2 * simdjson::SIMDJSON_PADDING) Repad(&json);
  obj->json_ = std::move(json);
  return ObjectPtr(std::move(obj));
}

StatusOr<ObjectPtr> Object::ParseTrusted(std::string_view json) {
  std::string bytes;
  bytes.reserve(json.size() + simdjson::SIMDJSON_PADDING);
  bytes.append(json);
  thread_local ondemand::parser parser;
  ondemand::document doc;
  ondemand::object top;
  std::shared_ptr<Object> obj = Create();
  bool ok = !parser.iterate(bytes.data(), bytes.size(), bytes.capacity()).get(doc) &&
            !doc.get_object().get(top);
  if (ok) {
    // The API server writes kind, apiVersion and metadata first (built-in
    // types in that order, custom resources with sorted keys), so the walk
    // usually ends before spec and status, the bulk of the bytes.
    enum : unsigned { kKind = 1, kApiVersion = 2, kMetadata = 4, kAll = 7 };
    unsigned seen = 0;
    for (auto field : top) {
      std::string_view key;
      OnDemandValue value;
      if (field.unescaped_key().get(key) || field.value().get(value)) {
        ok = false;
      } else if (key == "kind") {
        ok = OnDemandString(value, &obj->kind_);
        seen |= kKind;
      } else if (key == "apiVersion") {
        ok = OnDemandString(value, &obj->api_version_);
        seen |= kApiVersion;
      } else if (key == "metadata") {
        seen |= kMetadata;
        bool is_null = false;
        if (!value.is_null().get(is_null) && is_null) continue;
        ondemand::object meta;
        ok = !value.get_object().get(meta) &&
             OnDemandMeta(meta, &obj->meta_, &obj->has_managed_fields_);
        obj->has_metadata_ = true;
      }
      if (!ok || seen == kAll) break;
    }
  }
  // Bytes that do not walk cleanly take the validating parse, whose errors
  // say what and where.
  if (!ok) return Parse(std::string(json));
  obj->json_ = std::move(bytes);
  return ObjectPtr(std::move(obj));
}

StatusOr<nlohmann::json> Object::Document() const {
  nlohmann::json doc = nlohmann::json::parse(json_, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return json::DescribeJsonError(json_);
  return doc;
}

StatusOr<std::string> Object::FieldValue(std::string_view dotted_path) const {
  dom::element e;
  KCACHE_RETURN_IF_ERROR(ParseDom(json_, &e));  // Parse() left the padding in place
  std::string_view rest = dotted_path;
  while (true) {
    size_t dot = rest.find('.');
    std::string_view part = rest.substr(0, dot);
    dom::element next;
    if (!e.is_object() || e.get_object().value_unsafe().at_key(part).get(next)) {
      return Status::NotFound("field " + std::string(dotted_path) + " not found");
    }
    e = next;
    if (dot == std::string_view::npos) break;
    rest.remove_prefix(dot + 1);
  }
  switch (e.type()) {
    case dom::element_type::STRING:
      return std::string(e.get_string().value_unsafe());
    case dom::element_type::NULL_VALUE:
      return Status::NotFound("field " + std::string(dotted_path) + " is null");
    case dom::element_type::OBJECT:
    case dom::element_type::ARRAY:
      return Status::InvalidArgument("field " + std::string(dotted_path) +
                                     " is not a scalar and cannot be selected on");
    default:
      return simdjson::minify(e);
  }
}

StatusOr<ObjectPtr> DropManagedFields(ObjectPtr object) {
  if (!object || !object->has_managed_fields_) return object;
  return Object::Parse(std::string(object->json()), ParseOptions{.drop_managed_fields = true});
}

}  // namespace kcache
