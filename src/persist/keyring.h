// SPDX-License-Identifier: Apache-2.0

// A cache's keyring: the data keys that seal the objects of its sealed
// keyspaces, as stored (wrapped by the key-encryption key) in the meta row
// `keys`, and, when the key-encryption key was given, opened
// (docs/storage-format.md, "Encryption at rest").

#ifndef KCACHE_SRC_PERSIST_KEYRING_H_
#define KCACHE_SRC_PERSIST_KEYRING_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "crypto/aead.h"
#include "kcache/encryption.h"
#include "kcache/status_or.h"

namespace kcache::storage {

inline constexpr char kKeysKey[] = "keys";

// Immutable; thread-safe to share.
class Keyring {
 public:
  // The keyring `row` records (nullopt: none, an empty keyring), opened
  // with `kek` if it is not empty. FailedPrecondition if `kek` is not the
  // key the row's data keys are wrapped with; Corruption for a row that
  // does not parse or a wrapped key that does not open under the right key.
  static StatusOr<std::shared_ptr<const Keyring>> Load(const std::optional<std::string>& row,
                                                       std::string_view kek);

  // A keyring has keys once some keyspace was sealed (or is being sealed).
  bool empty() const { return wrapped_.empty(); }
  // The key-encryption key was given (and is the right one).
  bool unlocked() const { return kek_.has_value(); }
  bool Sealed(std::string_view ks) const { return keyspaces_.count(std::string(ks)) > 0; }

  // The row to store.
  std::string Encode() const;
  EncryptionStatus Describe() const;

  // Derived keyrings (REQUIRES: unlocked()). WithDataKey: a new data key
  // becomes current (the first one, for an empty keyring); WithKeyspace:
  // `ks` is listed sealed; OnlyCurrent: the other data keys go; Rewrapped:
  // every data key is wrapped with `kek` (32 bytes) instead.
  StatusOr<std::shared_ptr<const Keyring>> WithDataKey() const;
  std::shared_ptr<const Keyring> WithKeyspace(std::string_view ks) const;
  std::shared_ptr<const Keyring> OnlyCurrent() const;
  StatusOr<std::shared_ptr<const Keyring>> Rewrapped(std::string_view kek) const;

  uint32_t current() const { return current_; }

  // Seals `plaintext` with the current data key, bound to `context`.
  // REQUIRES: unlocked() and !empty().
  StatusOr<std::string> Seal(std::string_view plaintext, std::string_view context) const;
  // Opens what Seal made with the data key it names. `what` names the value
  // in errors: FailedPrecondition without the key-encryption key;
  // Corruption for an unknown data key or a value that fails
  // authentication.
  StatusOr<std::string> Open(std::string_view sealed, std::string_view context,
                             const std::string& what) const;

 private:
  Keyring() = default;

  std::optional<crypto::Key> kek_;
  std::string kek_fingerprint_;
  uint32_t current_ = 0;
  std::map<uint32_t, std::string> wrapped_;
  std::map<uint32_t, crypto::Key> keys_;  // opened; empty unless unlocked()
  std::set<std::string> keyspaces_;
};

// The contexts sealed values are bound to, so that a value copied under
// another key (or keyspace, or version) does not open: an object record's,
// and a journal entry's.
std::string ObjectSealContext(std::string_view ks, std::string_view key);
std::string JournalSealContext(std::string_view ks, uint64_t rv, std::string_view key);

}  // namespace kcache::storage

#endif  // KCACHE_SRC_PERSIST_KEYRING_H_
