// Where a key-encryption key comes from: a file, an environment variable or
// a command (a KMS's plugin), so that the key need not be stored with what it
// protects.

#ifndef KCACHE_SRC_CRYPTO_KEY_SOURCE_H_
#define KCACHE_SRC_CRYPTO_KEY_SOURCE_H_

#include <chrono>
#include <string>
#include <vector>

#include "crypto/aead.h"
#include "kcache/status_or.h"

namespace kcache::crypto {

// Exactly one of `file`, `env` and `exec` is set. Each gives 32 bytes in
// base64 (whitespace ignored), as Kubernetes' EncryptionConfiguration writes
// keys: `head -c 32 /dev/urandom | base64` makes one.
struct KeySource {
  std::string file;  // a file holding the key
  std::string env;   // the name of an environment variable holding it
  // A command (argv) that prints the key, or a JSON object {"key": "BASE64"};
  // it runs with this process's environment and is killed after
  // `exec_timeout`.
  std::vector<std::string> exec;
  std::chrono::milliseconds exec_timeout{std::chrono::seconds(10)};
};

// The key `source` names. InvalidArgument, naming the source, for anything
// but exactly one source or text that is not base64 of 32 bytes; NotFound for
// a missing file or variable; the command's error (NotFound, Unavailable,
// DeadlineExceeded) for one that cannot run, fails or hangs.
StatusOr<Key> LoadKey(const KeySource& source);

}  // namespace kcache::crypto

#endif  // KCACHE_SRC_CRYPTO_KEY_SOURCE_H_
