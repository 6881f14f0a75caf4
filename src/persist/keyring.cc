// SPDX-License-Identifier: Apache-2.0

#include "persist/keyring.h"

#include <openssl/crypto.h>
#include <zstd.h>

#include <nlohmann/json.hpp>

#include "core/json_text.h"
#include "util/base64.h"
#include "util/coding.h"

namespace kcache::storage {
namespace {

// A sealed payload's first byte: how the plaintext follows.
constexpr char kRaw = 0x00;
constexpr char kZstd = 0x01;
constexpr int kZstdLevel = 1;
// No object is larger: the API server's limit on a request is 3 MiB.
constexpr unsigned long long kMaxObject = 1ull << 30;

// One zstd context per thread, reused: making one per object costs more
// than compressing a small object.
ZSTD_CCtx* ThreadCCtx() {
  thread_local std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)> ctx(ZSTD_createCCtx(),
                                                                      ZSTD_freeCCtx);
  return ctx.get();
}
ZSTD_DCtx* ThreadDCtx() {
  thread_local std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> ctx(ZSTD_createDCtx(),
                                                                      ZSTD_freeDCtx);
  return ctx.get();
}

Status BadRow(const std::string& why) {
  return Status::Corruption("the keyring (meta row \"keys\") " + why);
}

}  // namespace

std::string ObjectSealContext(std::string_view ks, std::string_view key) {
  std::string out = "object";
  out.push_back('\0');
  out.append(ks);
  out.push_back('\0');
  out.append(key);
  return out;
}

std::string JournalSealContext(std::string_view ks, uint64_t rv, std::string_view key) {
  std::string out = "journal";
  out.push_back('\0');
  out.append(ks);
  out.push_back('\0');
  util::PutBigEndian64(&out, rv);
  out.append(key);
  return out;
}

StatusOr<std::shared_ptr<const Keyring>> Keyring::Load(const std::optional<std::string>& row,
                                                       std::string_view kek) {
  auto ring = std::shared_ptr<Keyring>(new Keyring());
  if (!kek.empty()) {
    KCACHE_ASSIGN_OR_RETURN(crypto::Key k, crypto::Key::FromBytes(kek));
    ring->kek_ = std::move(k);
  }
  if (!row) return std::shared_ptr<const Keyring>(std::move(ring));
  nlohmann::json doc = nlohmann::json::parse(*row, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return BadRow("is not a JSON object");
  auto field = [&](const char* name, nlohmann::json::value_t type) -> const nlohmann::json* {
    auto it = doc.find(name);
    if (it == doc.end() || it->type() != type) return nullptr;
    return &*it;
  };
  const nlohmann::json* fp = field("kek", nlohmann::json::value_t::string);
  const nlohmann::json* current = field("current", nlohmann::json::value_t::number_unsigned);
  const nlohmann::json* keys = field("keys", nlohmann::json::value_t::object);
  const nlohmann::json* keyspaces = field("keyspaces", nlohmann::json::value_t::array);
  if (!fp || !current || !keys || !keyspaces) {
    return BadRow("lacks one of \"kek\", \"current\", \"keys\" and \"keyspaces\"");
  }
  ring->kek_fingerprint_ = fp->get<std::string>();
  ring->current_ = current->get<uint32_t>();
  for (const auto& [id_text, wrapped] : keys->items()) {
    char* end = nullptr;
    unsigned long id = std::strtoul(id_text.c_str(), &end, 10);
    if (id_text.empty() || *end || id == 0 || id > UINT32_MAX || !wrapped.is_string()) {
      return BadRow("has a bad data key entry \"" + id_text + "\"");
    }
    std::optional<std::string> bytes = Base64Decode(wrapped.get<std::string>());
    if (!bytes) return BadRow("has data key " + id_text + " not in base64");
    ring->wrapped_[static_cast<uint32_t>(id)] = std::move(*bytes);
  }
  if (!ring->wrapped_.count(ring->current_)) {
    return BadRow("names current data key " + std::to_string(ring->current_) +
                  ", which it does not hold");
  }
  for (const auto& ks : *keyspaces) {
    if (!ks.is_string()) return BadRow("lists a keyspace that is not a string");
    ring->keyspaces_.insert(ks.get<std::string>());
  }
  if (ring->kek_) {
    for (const auto& [id, wrapped] : ring->wrapped_) {
      KCACHE_ASSIGN_OR_RETURN(crypto::Key key,
                              crypto::UnwrapKey(*ring->kek_, ring->kek_fingerprint_, id, wrapped));
      ring->keys_.emplace(id, std::move(key));
    }
  }
  return std::shared_ptr<const Keyring>(std::move(ring));
}

std::string Keyring::Encode() const {
  nlohmann::json keys = nlohmann::json::object();
  for (const auto& [id, wrapped] : wrapped_) keys[std::to_string(id)] = Base64Encode(wrapped);
  nlohmann::json doc = {{"kek", kek_fingerprint_},
                        {"current", current_},
                        {"keys", std::move(keys)},
                        {"keyspaces", keyspaces_}};
  return json::Dump(doc);
}

EncryptionStatus Keyring::Describe() const {
  EncryptionStatus s;
  s.encrypted = !empty();
  s.key_fingerprint = kek_fingerprint_;
  s.current_data_key = current_;
  for (const auto& [id, w] : wrapped_) s.data_keys.push_back(id);
  s.keyspaces.assign(keyspaces_.begin(), keyspaces_.end());
  return s;
}

StatusOr<std::shared_ptr<const Keyring>> Keyring::WithDataKey() const {
  if (!kek_) return Status::FailedPrecondition("no key-encryption key was given");
  auto ring = std::make_shared<Keyring>(*this);
  const uint32_t id = wrapped_.empty() ? 1 : wrapped_.rbegin()->first + 1;
  KCACHE_ASSIGN_OR_RETURN(crypto::Key key, crypto::Key::Generate());
  KCACHE_ASSIGN_OR_RETURN(std::string wrapped, crypto::WrapKey(*kek_, id, key));
  ring->kek_fingerprint_ = kek_->Fingerprint();
  ring->wrapped_[id] = std::move(wrapped);
  ring->keys_.emplace(id, std::move(key));
  ring->current_ = id;
  return std::shared_ptr<const Keyring>(std::move(ring));
}

std::shared_ptr<const Keyring> Keyring::WithKeyspace(std::string_view ks) const {
  auto ring = std::make_shared<Keyring>(*this);
  ring->keyspaces_.insert(std::string(ks));
  return ring;
}

std::shared_ptr<const Keyring> Keyring::OnlyCurrent() const {
  auto ring = std::make_shared<Keyring>(*this);
  std::erase_if(ring->wrapped_, [&](const auto& e) { return e.first != current_; });
  std::erase_if(ring->keys_, [&](const auto& e) { return e.first != current_; });
  return ring;
}

StatusOr<std::shared_ptr<const Keyring>> Keyring::Rewrapped(std::string_view kek) const {
  if (!kek_) return Status::FailedPrecondition("no key-encryption key was given");
  KCACHE_ASSIGN_OR_RETURN(crypto::Key k, crypto::Key::FromBytes(kek));
  auto ring = std::make_shared<Keyring>(*this);
  for (const auto& [id, key] : keys_) {
    KCACHE_ASSIGN_OR_RETURN(ring->wrapped_[id], crypto::WrapKey(k, id, key));
  }
  ring->kek_fingerprint_ = k.Fingerprint();
  ring->kek_ = std::move(k);
  return std::shared_ptr<const Keyring>(std::move(ring));
}

StatusOr<std::string> Keyring::Seal(std::string_view plaintext, std::string_view context) const {
  auto key = keys_.find(current_);
  if (key == keys_.end()) return Status::FailedPrecondition("no data key to seal with");
  // Compressed first: sealed bytes do not compress, so the tables' block
  // compression gets nothing from them.
  std::string payload(1 + ZSTD_compressBound(plaintext.size()), '\0');
  const size_t n = ZSTD_compressCCtx(ThreadCCtx(), payload.data() + 1, payload.size() - 1,
                                     plaintext.data(), plaintext.size(), kZstdLevel);
  if (!ZSTD_isError(n) && n < plaintext.size()) {
    payload[0] = kZstd;
    payload.resize(1 + n);
  } else {
    payload.assign(1, kRaw);
    payload.append(plaintext);
  }
  StatusOr<std::string> sealed = crypto::Seal(key->second, current_, payload, context);
  OPENSSL_cleanse(payload.data(), payload.size());
  return sealed;
}

StatusOr<std::string> Keyring::Open(std::string_view sealed, std::string_view context,
                                    const std::string& what) const {
  StatusOr<uint32_t> id = crypto::SealedKeyId(sealed);
  if (!id.ok()) return Status::Corruption(what + ": " + std::string(id.status().message()));
  if (!kek_) {
    return Status::FailedPrecondition(what +
                                      " is encrypted at rest, and no key-encryption key was given");
  }
  auto key = keys_.find(*id);
  if (key == keys_.end()) {
    return Status::Corruption(what + ": sealed with data key " + std::to_string(*id) +
                              ", which the cache's keyring does not hold");
  }
  StatusOr<std::string> payload = crypto::Open(key->second, sealed, context);
  if (!payload.ok()) {
    return Status::Corruption(what + ": " + std::string(payload.status().message()));
  }
  if (!payload->empty() && (*payload)[0] == kRaw) return payload->substr(1);
  if (payload->empty() || (*payload)[0] != kZstd) {
    return Status::Corruption(what + ": unknown payload encoding");
  }
  const char* frame = payload->data() + 1;
  const size_t frame_size = payload->size() - 1;
  const unsigned long long size = ZSTD_getFrameContentSize(frame, frame_size);
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN || size > kMaxObject) {
    return Status::Corruption(what + ": a compressed payload without a valid size");
  }
  std::string out(size, '\0');
  const size_t n = ZSTD_decompressDCtx(ThreadDCtx(), out.data(), out.size(), frame, frame_size);
  OPENSSL_cleanse(payload->data(), payload->size());
  if (ZSTD_isError(n) || n != size) {
    return Status::Corruption(what + ": a compressed payload does not decompress");
  }
  return out;
}

}  // namespace kcache::storage
