// SPDX-License-Identifier: Apache-2.0

// AES-256-GCM sealing of values, and the keys that seal them: the parts that
// encryption at rest is built from (docs/security.md). OpenSSL's libcrypto
// does the cryptography; nothing here is hand-written crypto.

#ifndef KCACHE_SRC_CRYPTO_AEAD_H_
#define KCACHE_SRC_CRYPTO_AEAD_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "kcache/status_or.h"

namespace kcache::crypto {

inline constexpr size_t kKeyBytes = 32;
// What Seal adds to a value: version, key id, nonce and tag.
inline constexpr size_t kSealOverhead = 1 + 4 + 12 + 16;

// A 256-bit AES key. Immutable; thread-safe to share. Its bytes are wiped
// when it is destroyed.
class Key {
 public:
  // InvalidArgument unless `bytes` is kKeyBytes long.
  static StatusOr<Key> FromBytes(std::string_view bytes);
  // A new key from the system's random source.
  static StatusOr<Key> Generate();

  Key(const Key&) = default;
  Key& operator=(const Key&) = default;
  ~Key();

  const std::string& bytes() const { return bytes_; }
  // 8 bytes, in hex, that tell this key from another without revealing it
  // (HMAC-SHA256 of a fixed label under the key). Stored beside what a key
  // encrypts, so that a wrong key is told apart from damaged data.
  std::string Fingerprint() const;

 private:
  explicit Key(std::string bytes) : bytes_(std::move(bytes)) {}
  std::string bytes_;
};

// Seals `plaintext` under `key`, named `key_id`: version (1 byte), key id
// (4, big-endian), nonce (12, random), ciphertext, GCM tag (16). The version
// and key id are authenticated with the ciphertext, and so is `context`,
// which is not stored: Open must be given the same one, so a sealed value
// copied under another name does not open.
StatusOr<std::string> Seal(const Key& key, uint32_t key_id, std::string_view plaintext,
                           std::string_view context);

// The id of the key that sealed `sealed`; Corruption if it is not a sealed
// value of a version this build reads.
StatusOr<uint32_t> SealedKeyId(std::string_view sealed);

// Opens what Seal made. Corruption if it fails authentication: damaged,
// altered, given another context, or sealed under another key.
StatusOr<std::string> Open(const Key& key, std::string_view sealed, std::string_view context);

// A data key sealed under a key-encryption key (`kek`), and opened again.
// Unwrap says FailedPrecondition when `kek` is not the key whose Fingerprint
// was recorded (`kek_fingerprint`) with the wrapped keys, and Corruption when
// it is and the wrapped key still does not open.
StatusOr<std::string> WrapKey(const Key& kek, uint32_t id, const Key& data_key);
StatusOr<Key> UnwrapKey(const Key& kek, std::string_view kek_fingerprint, uint32_t id,
                        std::string_view wrapped);

}  // namespace kcache::crypto

#endif  // KCACHE_SRC_CRYPTO_AEAD_H_
