// SPDX-License-Identifier: Apache-2.0

#include "crypto/key_source.h"

#include <openssl/crypto.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "util/base64.h"
#include "util/subprocess.h"

extern char** environ;

namespace kcache::crypto {
namespace {

StatusOr<Key> Decode(std::string text, const std::string& where) {
  std::optional<std::string> bytes = Base64Decode(text);
  OPENSSL_cleanse(text.data(), text.size());
  if (!bytes) return Status::InvalidArgument(where + ": not base64");
  StatusOr<Key> key = Key::FromBytes(*bytes);
  const size_t size = bytes->size();
  OPENSSL_cleanse(bytes->data(), bytes->size());
  if (!key.ok()) {
    return Status::InvalidArgument(where + ": " + std::to_string(size) +
                                   " bytes; a key is 32 (head -c 32 /dev/urandom | base64)");
  }
  return key;
}

}  // namespace

StatusOr<Key> LoadKey(const KeySource& source) {
  const int given = !source.file.empty() + !source.env.empty() + !source.exec.empty();
  if (given != 1) {
    return Status::InvalidArgument(
        "an encryption key comes from exactly one of a file, an environment variable or a "
        "command; " +
        std::to_string(given) + " given");
  }
  if (!source.file.empty()) {
    const std::string where = "encryption key file " + source.file;
    std::ifstream in(source.file);
    if (!in) return Status::NotFound(where + ": cannot be read");
    std::stringstream text;
    text << in.rdbuf();
    return Decode(text.str(), where);
  }
  if (!source.env.empty()) {
    const std::string where = "encryption key variable " + source.env;
    const char* value = std::getenv(source.env.c_str());
    if (!value || !*value) return Status::NotFound(where + ": not set");
    return Decode(value, where);
  }
  const std::string where = "encryption key command " + source.exec[0];
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  KCACHE_ASSIGN_OR_RETURN(std::string out,
                          RunCapture(source.exec, env, where, source.exec_timeout));
  const size_t first = out.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && out[first] == '{') {
    nlohmann::json doc = nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
    OPENSSL_cleanse(out.data(), out.size());
    if (doc.is_discarded() || !doc.is_object() || !doc.contains("key") || !doc["key"].is_string()) {
      return Status::InvalidArgument(where + ": printed JSON without a string \"key\"");
    }
    return Decode(std::move(doc["key"].get_ref<std::string&>()), where);
  }
  return Decode(std::move(out), where);
}

}  // namespace kcache::crypto

namespace kcache {

StatusOr<std::string> LoadKeyEncryptionKey(const KeySource& source) {
  KCACHE_ASSIGN_OR_RETURN(crypto::Key key, crypto::LoadKey(source));
  return key.bytes();
}

}  // namespace kcache
