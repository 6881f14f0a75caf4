// SPDX-License-Identifier: Apache-2.0

#include "client/decode.h"

#define SIMDJSON_EXCEPTIONS 0  // an unchecked result is a compile error, not a throw
#include <simdjson.h>

#include "client/http_error.h"
#include "core/json_error.h"

namespace kcache::rest {
namespace {

namespace ondemand = simdjson::ondemand;

// Pads `json` for simdjson and starts iterating it as one JSON object.
// Returns false if it is not one. One parser per thread serves both
// decoders: neither calls the other while iterating.
bool IterateTopObject(std::string* json, ondemand::document* doc, ondemand::object* top) {
  if (json->capacity() < json->size() + simdjson::SIMDJSON_PADDING) {
    json->reserve(json->size() + simdjson::SIMDJSON_PADDING);
  }
  thread_local ondemand::parser parser;
  return !parser.iterate(json->data(), json->size(), json->capacity()).get(*doc) &&
         !doc->get_object().get(*top);
}

// The error for a document the on-demand parser gave up on: the validating
// parser locates the first bad byte.
// Offsets count from `base_offset`, the document's place in its stream.
Status Malformed(std::string_view what, const std::string& doc, uint64_t base_offset) {
  Status st = json::DescribeJsonError(doc, base_offset);
  if (st.ok()) {
    st =
        Status::InvalidArgument("unexpected JSON structure at byte " + std::to_string(base_offset));
  }
  return st.WithContext(what);
}

}  // namespace

StatusOr<ObjectList> DecodeList(std::string body, const ParseOptions& options) {
  ondemand::document doc;
  ondemand::object top;
  ObjectList list;
  ParseOptions item_options = options;
  std::vector<std::string_view> items;
  auto fail = [&]() { return Malformed("list response", body, 0); };
  if (!IterateTopObject(&body, &doc, &top)) return fail();
  for (auto field : top) {
    std::string_view key;
    if (field.unescaped_key().get(key)) return fail();
    ondemand::value value;
    if (field.value().get(value)) return fail();
    if (key == "kind") {
      std::string_view kind;
      if (value.get_string().get(kind)) return fail();
      if (kind.size() > 4 && kind.ends_with("List")) {
        item_options.default_kind = std::string(kind.substr(0, kind.size() - 4));
      }
    } else if (key == "apiVersion") {
      std::string_view v;
      if (value.get_string().get(v)) return fail();
      item_options.default_api_version = std::string(v);
    } else if (key == "metadata") {
      ondemand::object meta;
      if (value.get_object().get(meta)) return fail();
      for (auto m : meta) {
        std::string_view mkey;
        if (m.unescaped_key().get(mkey)) return fail();
        std::string_view s;
        if (mkey == "resourceVersion") {
          if (m.value().get_string().get(s)) return fail();
          list.resource_version = std::string(s);
        } else if (mkey == "continue") {
          if (m.value().get_string().get(s)) return fail();
          list.continue_token = std::string(s);
        } else if (mkey == "remainingItemCount") {
          int64_t n;
          if (m.value().get_int64().get(n)) return fail();
          list.remaining_item_count = n;
        }
      }
    } else if (key == "items") {
      bool null = false;  // is_null() throws unless its error is taken
      if (value.is_null().get(null)) return fail();
      if (null) continue;
      ondemand::array arr;
      if (value.get_array().get(arr)) return fail();
      for (auto item : arr) {
        ondemand::object obj;
        std::string_view raw;
        if (item.get_object().get(obj) || obj.raw_json().get(raw)) return fail();
        items.push_back(raw);
      }
    }
  }
  // Items are parsed after the walk so that kind and apiVersion, which may
  // follow "items", are known.
  list.items.reserve(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    auto obj = Object::Parse(std::string(items[i]), item_options);
    if (!obj.ok()) {
      return obj.status().WithContext("list response: item " + std::to_string(i));
    }
    list.items.push_back(*std::move(obj));
  }
  return list;
}

namespace {

// The wire spelling of an event type; nullopt for ERROR and unknown types.
std::optional<WatchEventType> EventType(std::string_view type) {
  for (WatchEventType t : {WatchEventType::kAdded, WatchEventType::kModified,
                           WatchEventType::kDeleted, WatchEventType::kBookmark}) {
    if (type == WatchEventTypeName(t)) return t;
  }
  return std::nullopt;
}

// API servers write every event as {"type":"T","object":{...}}. Such a frame
// is split without parsing it first: the object's own parse validates what
// lies between, and anything else (other spellings, errors) takes the
// general path, which describes it.
std::optional<WatchEvent> DecodeCommonEvent(std::string_view f, const ParseOptions& options) {
  constexpr std::string_view kTypePrefix = "{\"type\":\"";
  constexpr std::string_view kObjectKey = "\",\"object\":";
  if (!f.starts_with(kTypePrefix) || !f.ends_with('}')) return std::nullopt;
  size_t type_end = f.find('"', kTypePrefix.size());
  if (type_end == std::string_view::npos) return std::nullopt;
  std::string_view type = f.substr(kTypePrefix.size(), type_end - kTypePrefix.size());
  WatchEvent event;
  std::optional<WatchEventType> t = EventType(type);
  if (!t) return std::nullopt;
  event.type = *t;
  if (f.compare(type_end, kObjectKey.size(), kObjectKey) != 0) return std::nullopt;
  std::string_view raw = f.substr(type_end + kObjectKey.size());
  raw.remove_suffix(1);
  if (!raw.starts_with('{') || !raw.ends_with('}')) return std::nullopt;
  std::string json;
  json.reserve(raw.size() + simdjson::SIMDJSON_PADDING);  // parsed in place
  json.append(raw);
  StatusOr<ObjectPtr> obj = Object::Parse(std::move(json), options);
  if (!obj.ok()) return std::nullopt;
  event.object = *std::move(obj);
  return event;
}

}  // namespace

StatusOr<WatchEvent> DecodeWatchEvent(std::string_view bytes, uint64_t stream_offset,
                                      const ParseOptions& options, std::string_view what) {
  if (std::optional<WatchEvent> common = DecodeCommonEvent(bytes, options)) {
    return *std::move(common);
  }
  std::string frame(bytes);  // padded and parsed in place below
  ondemand::document doc;
  ondemand::object top;
  std::string_view type, raw;
  auto fail = [&]() {
    return Malformed(std::string(what) + ": watch event", frame, stream_offset);
  };
  if (!IterateTopObject(&frame, &doc, &top)) return fail();
  for (auto field : top) {
    std::string_view key;
    if (field.unescaped_key().get(key)) return fail();
    if (key == "type") {
      if (field.value().get_string().get(type)) return fail();
    } else if (key == "object") {
      ondemand::object obj;
      if (field.value().get_object().get(obj) || obj.raw_json().get(raw)) return fail();
    }
  }
  std::string at =
      std::string(what) + ": watch event at stream byte " + std::to_string(stream_offset);
  if (type.empty()) return Status::InvalidArgument(at + " has no type");
  if (type == "ERROR") return StatusFromErrorEvent(raw, what);
  WatchEvent event;
  std::optional<WatchEventType> t = EventType(type);
  if (!t) {
    return Status::InvalidArgument(at + ": got invalid watch event type: " + std::string(type));
  }
  event.type = *t;
  if (raw.empty())
    return Status::InvalidArgument(at + " (" + std::string(type) + ") has no object");
  // The on-demand parser's raw text runs on to the next structural byte.
  while (raw.back() == ' ' || raw.back() == '\n' || raw.back() == '\t' || raw.back() == '\r') {
    raw.remove_suffix(1);
  }
  auto obj = Object::Parse(std::string(raw), options);
  if (!obj.ok()) {
    // Say where in the stream, not where in the object, the error is.
    Status located = json::DescribeJsonError(raw, stream_offset + (raw.data() - frame.data()));
    return (located.ok() ? obj.status() : located).WithContext(what);
  }
  event.object = *std::move(obj);
  return event;
}

}  // namespace kcache::rest
