// SPDX-License-Identifier: Apache-2.0

#include "crypto/aead.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <memory>
#include <utility>

namespace kcache::crypto {
namespace {

constexpr unsigned char kVersion = 1;
constexpr size_t kNonceBytes = 12;
constexpr size_t kTagBytes = 16;
constexpr size_t kHeaderBytes = 1 + 4 + kNonceBytes;

using CipherContext = std::unique_ptr<EVP_CIPHER_CTX, void (*)(EVP_CIPHER_CTX*)>;

CipherContext NewContext() { return CipherContext(EVP_CIPHER_CTX_new(), EVP_CIPHER_CTX_free); }

const unsigned char* Bytes(std::string_view s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}

unsigned char* Bytes(std::string& s) { return reinterpret_cast<unsigned char*>(s.data()); }

std::string WrapContext(uint32_t id) { return "kcache data key " + std::to_string(id); }

}  // namespace

StatusOr<Key> Key::FromBytes(std::string_view bytes) {
  if (bytes.size() != kKeyBytes) {
    return Status::InvalidArgument("a key is " + std::to_string(kKeyBytes) + " bytes, not " +
                                   std::to_string(bytes.size()));
  }
  return Key(std::string(bytes));
}

StatusOr<Key> Key::Generate() {
  std::string bytes(kKeyBytes, '\0');
  if (RAND_bytes(Bytes(bytes), static_cast<int>(bytes.size())) != 1) {
    return Status::Internal("the system's random source gave no key");
  }
  return Key(std::move(bytes));
}

Key::~Key() { OPENSSL_cleanse(bytes_.data(), bytes_.size()); }

std::string Key::Fingerprint() const {
  static constexpr std::string_view kLabel = "kcache key fingerprint v1";
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), bytes_.data(), static_cast<int>(bytes_.size()), Bytes(kLabel), kLabel.size(),
       mac, &len);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < 8 && i < len; ++i) {
    out += kHex[mac[i] >> 4];
    out += kHex[mac[i] & 15];
  }
  return out;
}

StatusOr<std::string> Seal(const Key& key, uint32_t key_id, std::string_view plaintext,
                           std::string_view context) {
  std::string out(kHeaderBytes + plaintext.size() + kTagBytes, '\0');
  out[0] = static_cast<char>(kVersion);
  for (int i = 0; i < 4; ++i) out[1 + i] = static_cast<char>(key_id >> (24 - 8 * i));
  unsigned char* nonce = Bytes(out) + 5;
  if (RAND_bytes(nonce, kNonceBytes) != 1) return Status::Internal("no random nonce");
  CipherContext ctx = NewContext();
  int n = 0;
  if (!ctx ||
      EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, Bytes(key.bytes()), nonce) != 1 ||
      EVP_EncryptUpdate(ctx.get(), nullptr, &n, Bytes(out), 5) != 1 ||
      EVP_EncryptUpdate(ctx.get(), nullptr, &n, Bytes(context), static_cast<int>(context.size())) !=
          1 ||
      EVP_EncryptUpdate(ctx.get(), Bytes(out) + kHeaderBytes, &n, Bytes(plaintext),
                        static_cast<int>(plaintext.size())) != 1 ||
      EVP_EncryptFinal_ex(ctx.get(), Bytes(out) + kHeaderBytes + n, &n) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, kTagBytes,
                          Bytes(out) + kHeaderBytes + plaintext.size()) != 1) {
    return Status::Internal("AES-256-GCM encryption failed");
  }
  return out;
}

StatusOr<uint32_t> SealedKeyId(std::string_view sealed) {
  if (sealed.size() < kSealOverhead) {
    return Status::Corruption("an encrypted value of " + std::to_string(sealed.size()) +
                              " bytes is shorter than its header and tag");
  }
  if (static_cast<unsigned char>(sealed[0]) != kVersion) {
    return Status::Corruption("an encrypted value of version " +
                              std::to_string(static_cast<unsigned char>(sealed[0])) +
                              ", which this build does not read");
  }
  uint32_t id = 0;
  for (int i = 0; i < 4; ++i) id = (id << 8) | static_cast<unsigned char>(sealed[1 + i]);
  return id;
}

StatusOr<std::string> Open(const Key& key, std::string_view sealed, std::string_view context) {
  KCACHE_RETURN_IF_ERROR(SealedKeyId(sealed).status());
  const unsigned char* nonce = Bytes(sealed) + 5;
  const size_t length = sealed.size() - kSealOverhead;
  std::string out(length, '\0');
  // The tag is read from a copy: OpenSSL's control call takes a mutable
  // pointer.
  std::string tag(sealed.substr(kHeaderBytes + length));
  CipherContext ctx = NewContext();
  int n = 0;
  if (!ctx ||
      EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, Bytes(key.bytes()), nonce) != 1 ||
      EVP_DecryptUpdate(ctx.get(), nullptr, &n, Bytes(sealed), 5) != 1 ||
      EVP_DecryptUpdate(ctx.get(), nullptr, &n, Bytes(context), static_cast<int>(context.size())) !=
          1 ||
      EVP_DecryptUpdate(ctx.get(), Bytes(out), &n, Bytes(sealed) + kHeaderBytes,
                        static_cast<int>(length)) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, kTagBytes, Bytes(tag)) != 1) {
    return Status::Internal("AES-256-GCM decryption failed");
  }
  if (EVP_DecryptFinal_ex(ctx.get(), Bytes(out) + n, &n) != 1) {
    OPENSSL_cleanse(out.data(), out.size());
    return Status::Corruption("an encrypted value fails authentication (damaged or altered)");
  }
  return out;
}

StatusOr<std::string> WrapKey(const Key& kek, uint32_t id, const Key& data_key) {
  return Seal(kek, id, data_key.bytes(), WrapContext(id));
}

StatusOr<Key> UnwrapKey(const Key& kek, std::string_view kek_fingerprint, uint32_t id,
                        std::string_view wrapped) {
  if (kek.Fingerprint() != kek_fingerprint) {
    return Status::FailedPrecondition("the encryption key given (fingerprint " + kek.Fingerprint() +
                                      ") is not the one these data keys were wrapped with (" +
                                      std::string(kek_fingerprint) + ")");
  }
  StatusOr<std::string> bytes = Open(kek, wrapped, WrapContext(id));
  if (!bytes.ok()) {
    return Status::Corruption("data key " + std::to_string(id) +
                              " is damaged: " + std::string(bytes.status().message()));
  }
  StatusOr<Key> key = Key::FromBytes(*bytes);
  OPENSSL_cleanse(bytes->data(), bytes->size());
  if (!key.ok())
    return Status::Corruption("data key " + std::to_string(id) + ": " +
                              std::string(key.status().message()));
  return key;
}

}  // namespace kcache::crypto
