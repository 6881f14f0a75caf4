// SPDX-License-Identifier: Apache-2.0

// CRC-32C (Castagnoli), the checksum of snapshot blocks.

#ifndef KCACHE_SRC_UTIL_CRC32C_H_
#define KCACHE_SRC_UTIL_CRC32C_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace kcache::util {

// Extends `crc` (the CRC-32C of some bytes) with `data`. Crc32c("") is 0;
// Crc32c("123456789") is 0xe3069283.
uint32_t Crc32cExtend(uint32_t crc, const char* data, size_t n);
inline uint32_t Crc32c(std::string_view s) { return Crc32cExtend(0, s.data(), s.size()); }

}  // namespace kcache::util

#endif  // KCACHE_SRC_UTIL_CRC32C_H_
