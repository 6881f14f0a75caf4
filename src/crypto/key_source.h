// SPDX-License-Identifier: Apache-2.0

// Where a key-encryption key comes from: a file, an environment variable or
// a command (a KMS's plugin), so that the key need not be stored with what it
// protects.

#ifndef KCACHE_SRC_CRYPTO_KEY_SOURCE_H_
#define KCACHE_SRC_CRYPTO_KEY_SOURCE_H_

#include <chrono>
#include <string>
#include <vector>

#include "crypto/aead.h"
#include "kcache/encryption.h"
#include "kcache/status_or.h"

namespace kcache::crypto {

// kcache::KeySource (include/kcache/encryption.h).
using KeySource = ::kcache::KeySource;

// The key `source` names. InvalidArgument, naming the source, for anything
// but exactly one source or text that is not base64 of 32 bytes; NotFound for
// a missing file or variable; the command's error (NotFound, Unavailable,
// DeadlineExceeded) for one that cannot run, fails or hangs.
StatusOr<Key> LoadKey(const KeySource& source);

}  // namespace kcache::crypto

#endif  // KCACHE_SRC_CRYPTO_KEY_SOURCE_H_
