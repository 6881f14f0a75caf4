// SPDX-License-Identifier: Apache-2.0

// JsonFramer: splits a byte stream into top-level JSON objects, whatever the
// boundaries at which the bytes arrive. A watch response is a sequence of
// JSON objects separated by optional whitespace (protocol.md 4.3).
//
// Thread-safety: not thread-safe; one framer per stream.
#ifndef KCACHE_SRC_CLIENT_JSON_FRAMER_H_
#define KCACHE_SRC_CLIENT_JSON_FRAMER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kcache/status_or.h"

namespace kcache::rest {

class JsonFramer {
 public:
  // How blocks of 64 bytes are scanned: kWidest takes AVX2 and carry-less
  // multiplication where the CPU has them, else SSE2; the others are for
  // tests, which compare them. All give the same frames.
  enum class Scan { kWidest, kSse2, kBytes };

  // `max_frame_bytes` bounds the memory one frame may take.
  explicit JsonFramer(size_t max_frame_bytes, Scan scan = Scan::kWidest);

  // Invalidates the frame Next() returned last.
  void Append(std::string_view bytes) {
    Compact();
    buf_.append(bytes);
  }
  // The same, taking `*bytes` as it is: `*bytes` is left empty, with a
  // buffer to reuse. Once Next() has returned nullopt, only the bytes of a
  // frame begun before them are copied (into a frame of its own), not
  // `*bytes` as the overload above copies them.
  void Append(std::string* bytes);

  // Returns the next complete object, or nullopt when more bytes are needed.
  // The frame's bytes stay valid until the next call of Append or Next.
  // Errors (InvalidArgument) name the stream offset: a byte that cannot
  // start an object, or a frame larger than the bound. After an error the
  // framer must not be used again.
  StatusOr<std::optional<std::string_view>> Next();

  // True when bytes of an unfinished frame are buffered (a stream that ends
  // now was cut in the middle of an event).
  bool InFrame() const;

  // Offset in the stream of the first buffered byte.
  uint64_t offset() const { return carried_ ? carry_offset_ : consumed_ + start_; }

  // Offset in the stream of the frame Next() returned last.
  uint64_t frame_offset() const { return frame_offset_; }

 private:
  // Bytes scanned as one block (two AVX2 or four SSE2 registers).
  static constexpr size_t kBlock = 64;
  static constexpr size_t kNone = static_cast<size_t>(-1);

  void Compact();
  Status TooLarge(uint64_t at) const;
  // Scans p[i, n) on from the state; returns the index of the bracket that
  // closes the frame (the state then outside any), else kNone.
  size_t ScanFrame(const char* p, size_t i, size_t n);
  // Advances the state over p[i, limit) one byte at a time; returns the
  // index of the bracket that closes the frame, else kNone.
  size_t ScanBytes(const char* p, size_t i, size_t limit);
  // The same over the kBlock bytes at `p`, all at once: the offset of the
  // closing bracket in them, else kBlock. `Isa` loads the block and
  // computes prefix parities (json_framer.cc).
  template <class Isa>
  size_t ScanBlock(const char* p);
  size_t ScanBlockSse2(const char* p);
  size_t ScanBlockAvx2(const char* p);

  const size_t max_frame_bytes_;
  const Scan scan_with_;  // kWidest resolved to what the CPU has
  std::string buf_;
  size_t start_ = 0;       // first byte of the current frame (or of whitespace)
  size_t scan_ = 0;        // next byte to scan, >= start_
  uint64_t consumed_ = 0;  // stream bytes dropped from the front of buf_
  uint64_t frame_offset_ = 0;
  // A frame that began in the buffer before the one Append(std::string*)
  // took and ended in it, made whole; Next() returns it first.
  std::string carry_;
  uint64_t carry_offset_ = 0;
  bool carried_ = false;  // carry_ is yet to be returned
  int depth_ = 0;
  bool in_string_ = false;
  bool escape_ = false;  // the next byte is escaped (in a string or not)
};

}  // namespace kcache::rest

#endif  // KCACHE_SRC_CLIENT_JSON_FRAMER_H_
