// JSON text from nlohmann's documents, without exceptions.

#ifndef KCACHE_SRC_CORE_JSON_TEXT_H_
#define KCACHE_SRC_CORE_JSON_TEXT_H_

#include <string>

#include <nlohmann/json.hpp>

namespace kcache::json {

// `j` as compact JSON. Never throws: a string that is not UTF-8 (which
// nlohmann's dump() would throw on) has its bad bytes replaced by U+FFFD.
inline std::string Dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace kcache::json

#endif  // KCACHE_SRC_CORE_JSON_TEXT_H_
