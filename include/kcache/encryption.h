// SPDX-License-Identifier: Apache-2.0

// Encryption at rest: the objects of chosen keyspaces (by default
// `secrets`) are stored sealed with AES-256-GCM under a data key; data keys
// are stored wrapped by a key-encryption key that is never stored with the
// cache (a file, an environment variable or a command such as a KMS's
// plugin gives it). Resource versions, keys (namespace/name) and index
// entries (labels, namespaces) stay readable; object bytes, in the objects
// and in the change journal, do not. The format is in
// docs/storage-format.md, the threat model in docs/security.md.
//
// Thread-safety: plain values and functions; Rekey takes the cache's writer.

#ifndef KCACHE_ENCRYPTION_H_
#define KCACHE_ENCRYPTION_H_

#include <chrono>
#include <string>
#include <vector>

#include "kcache/export.h"
#include "kcache/status_or.h"

namespace kcache {

class Cache;

// Where a key-encryption key comes from: exactly one of `file`, `env` and
// `exec`. Each gives 32 bytes in base64 (whitespace ignored), as
// Kubernetes' EncryptionConfiguration writes keys:
// `head -c 32 /dev/urandom | base64` makes one.
struct KCACHE_EXPORT KeySource {
  std::string file{};  // a file holding the key
  std::string env{};   // the name of an environment variable holding it
  // A command (argv) that prints the key, or a JSON object {"key": "BASE64"};
  // it runs with this process's environment and is killed after
  // `exec_timeout`.
  std::vector<std::string> exec{};
  std::chrono::milliseconds exec_timeout{std::chrono::seconds(10)};
};

// The 32 key bytes `source` gives. InvalidArgument, naming the source, for
// anything but exactly one source or text that is not base64 of 32 bytes;
// NotFound for a missing file or variable; the command's error (NotFound,
// Unavailable, DeadlineExceeded) for one that cannot run, fails or hangs.
KCACHE_EXPORT StatusOr<std::string> LoadKeyEncryptionKey(const KeySource& source);

// CacheOptions::encryption.
struct KCACHE_EXPORT EncryptionOptions {
  // The key-encryption key: 32 bytes (LoadKeyEncryptionKey), or empty for
  // none. Without it a cache reads and writes plain keyspaces as before; a
  // read of a sealed object is FailedPrecondition, and so is opening a
  // sealed keyspace for writing (its writes would be stored in the clear).
  // A key other than the one the cache's data keys are wrapped with is
  // FailedPrecondition at open, told apart from damage (Corruption).
  // Default: empty.
  std::string key_encryption_key{};
  // The keyspaces a writer given a key seals. A keyspace stays sealed once
  // it is, whatever later writers list. Opening a plain keyspace that is
  // listed here seals the objects it already holds (and drops its journal,
  // which held them in the clear) before the open returns. Default:
  // {"secrets"}.
  std::vector<std::string> keyspaces = {"secrets"};
};

// Rotates a cache's keys without a relist: a new data key seals every
// object of every sealed keyspace, their journals are dropped (their
// windows restart at the resume points), the older data keys are removed,
// and the files are compacted so that no live file holds bytes under them.
// With `new_key_encryption_key` (32 bytes) the data key is wrapped with it
// instead, and the cache then opens only with the new key. Crash-safe: a
// rekey cut short leaves every object readable under the key it was opened
// with (or, once the new wrapping is recorded, the new one) and is finished
// by running it again. `cache` must be open for writing, with its current
// key-encryption key, and with no keyspace open (FailedPrecondition).
KCACHE_EXPORT Status Rekey(Cache& cache, const std::string& new_key_encryption_key = "");

// What Rekey and an open of a sealed cache can say about its keys.
struct KCACHE_EXPORT EncryptionStatus {
  bool encrypted = false;                // the cache has a keyring
  std::string key_fingerprint{};         // the wrapping key's (hex, 16 digits)
  uint32_t current_data_key = 0;         // the id new objects are sealed with
  std::vector<uint32_t> data_keys{};     // every id the keyring holds
  std::vector<std::string> keyspaces{};  // sealed keyspaces, sorted
};
// The cache's keyring as recorded (readable without the key).
KCACHE_EXPORT StatusOr<EncryptionStatus> GetEncryptionStatus(const Cache& cache);

}  // namespace kcache

#endif  // KCACHE_ENCRYPTION_H_
