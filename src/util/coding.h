// SPDX-License-Identifier: Apache-2.0

// Byte encodings shared by the storage and snapshot formats: unsigned
// LEB128 varints (as RocksDB and protobuf write them), little-endian
// fixed-width integers and big-endian ones for keys.

#ifndef KCACHE_SRC_UTIL_CODING_H_
#define KCACHE_SRC_UTIL_CODING_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace kcache::util {

// One varint writer and reader for both widths.
template <typename T>
void PutVarint(std::string* out, T v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// Reads a varint from the front of `in` and removes it. False if `in` ends
// inside it or it is longer than the type allows (five bytes for 32 bits,
// ten for 64).
template <typename T>
bool GetVarint(std::string_view* in, T* v) {
  T result = 0;
  for (unsigned shift = 0; shift < sizeof(T) * 8 && !in->empty(); shift += 7) {
    T byte = static_cast<unsigned char>(in->front());
    in->remove_prefix(1);
    result |= (byte & 0x7f) << shift;
    if (!(byte & 0x80)) {
      *v = result;
      return true;
    }
  }
  return false;
}

inline void PutVarint32(std::string* out, uint32_t v) { PutVarint(out, v); }
inline bool GetVarint32(std::string_view* in, uint32_t* v) { return GetVarint(in, v); }
inline void PutVarint64(std::string* out, uint64_t v) { PutVarint(out, v); }
inline bool GetVarint64(std::string_view* in, uint64_t* v) { return GetVarint(in, v); }

// Big-endian, so that encoded numbers sort bytewise in numeric order.
inline void PutBigEndian64(std::string* out, uint64_t v) {
  for (int i = 7; i >= 0; --i) out->push_back(static_cast<char>(v >> (8 * i)));
}

inline uint64_t GetBigEndian64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

inline void PutFixed32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>(v >> (8 * i));
}

inline uint32_t GetFixed32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t{static_cast<unsigned char>(p[i])} << (8 * i);
  return v;
}

}  // namespace kcache::util

#endif  // KCACHE_SRC_UTIL_CODING_H_
