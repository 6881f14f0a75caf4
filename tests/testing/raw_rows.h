// SPDX-License-Identifier: Apache-2.0

// Writes to a closed cache's column families behind kcache's back, as damage
// or a crash would leave them.

#ifndef KCACHE_TESTS_TESTING_RAW_ROWS_H_
#define KCACHE_TESTS_TESTING_RAW_ROWS_H_

#include <optional>
#include <string>

namespace kcache::testing {

// Puts `value` under `key` in column family `family` of the cache at `dir`,
// or with no value deletes the key. The cache must be closed. Fails the
// running test on an error.
void WriteRaw(const std::string& dir, const std::string& family, const std::string& key,
              std::optional<std::string> value);

}  // namespace kcache::testing

#endif  // KCACHE_TESTS_TESTING_RAW_ROWS_H_
