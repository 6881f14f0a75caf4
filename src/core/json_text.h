// SPDX-License-Identifier: Apache-2.0

// JSON text from nlohmann's documents, and members read from them, without
// exceptions.

#ifndef KCACHE_SRC_CORE_JSON_TEXT_H_
#define KCACHE_SRC_CORE_JSON_TEXT_H_

#include <initializer_list>
#include <string>

#include <nlohmann/json.hpp>

namespace kcache::json {

// `j` as compact JSON. Never throws: a string that is not UTF-8 (which
// nlohmann's dump() would throw on) has its bad bytes replaced by U+FFFD.
inline std::string Dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The member at `path` under `j`, one object key after another, or a null
// value where a key is missing or a value on the way is not an object. A
// const document's operator[] must not be asked for a missing key; this
// may be, and copies nothing.
inline const nlohmann::json& At(const nlohmann::json& j, std::initializer_list<const char*> path) {
  static const nlohmann::json kNull;
  const nlohmann::json* at = &j;
  for (const char* key : path) {
    if (!at->is_object()) return kNull;
    auto it = at->find(key);
    if (it == at->end()) return kNull;
    at = &*it;
  }
  return *at;
}

// `v`'s text if it is a string, else "".
inline std::string String(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : std::string();
}

}  // namespace kcache::json

#endif  // KCACHE_SRC_CORE_JSON_TEXT_H_
