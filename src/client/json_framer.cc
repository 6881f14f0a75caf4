#include "client/json_framer.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace kcache::rest {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Whether any byte of `w` is `c` (exact; the classic zero-byte test).
constexpr uint64_t kOnes = 0x0101010101010101ull;
inline bool HasByte(uint64_t w, char c) {
  uint64_t v = w ^ (kOnes * static_cast<unsigned char>(c));
  return ((v - kOnes) & ~v & (kOnes << 7)) != 0;
}

// The first index at or after `i` whose 8-byte word may hold a quote or a
// backslash: string contents, most of an object's bytes, are skipped a word
// at a time.
size_t SkipPlainString(const char* p, size_t i, size_t n) {
  while (i + 8 <= n) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    if (HasByte(w, '"') || HasByte(w, '\\')) break;
    i += 8;
  }
  return i;
}

}  // namespace

bool JsonFramer::InFrame() const {
  for (size_t i = start_; i < buf_.size(); ++i) {
    if (!IsSpace(buf_[i])) return true;
  }
  return false;
}

void JsonFramer::Compact() {
  // Drop returned bytes once they are half the buffer, so appends stay
  // amortised O(1) and memory tracks the largest frame.
  if (start_ > 0 && start_ * 2 >= buf_.size()) {
    buf_.erase(0, start_);
    consumed_ += start_;
    scan_ -= start_;
    start_ = 0;
  }
}

Status JsonFramer::TooLarge() const {
  return Status::InvalidArgument("watch event at byte " + std::to_string(offset()) + " exceeds " +
                                 std::to_string(max_frame_bytes_) + " bytes");
}

size_t JsonFramer::ScanBytes(const char* p, size_t i, size_t limit) {
  for (; i < limit; ++i) {
    if (escape_) {
      escape_ = false;
      continue;
    }
    if (in_string_) {
      i = SkipPlainString(p, i, limit);
      if (i == limit) break;
    }
    const char c = p[i];
    if (c == '\\') {
      escape_ = true;
    } else if (c == '"') {
      in_string_ = !in_string_;
    } else if (in_string_) {
      continue;
    } else if (c == '{' || c == '[') {
      ++depth_;
    } else if (c == '}' || c == ']') {
      if (--depth_ == 0) return i;
    }
  }
  return kNone;
}

#if defined(__SSE2__)
namespace {

// The 64 bytes of a block, and where they equal a given byte.
class Block {
 public:
  explicit Block(const char* p) {
    for (int j = 0; j < 4; ++j) v_[j] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p) + j);
  }
  // Bit k is set where byte k is `c`.
  uint64_t Eq(char c) const {
    const __m128i needle = _mm_set1_epi8(c);
    uint64_t m = 0;
    for (int j = 0; j < 4; ++j) {
      const auto bits = static_cast<uint16_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v_[j], needle)));
      m |= uint64_t{bits} << (16 * j);
    }
    return m;
  }

 private:
  __m128i v_[4];
};

// Without a popcnt instruction in the baseline target, std::popcount is a
// library call; this is a few arithmetic steps.
int PopCount(uint64_t x) {
  x -= (x >> 1) & 0x5555555555555555ull;
  x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
  x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
  return static_cast<int>((x * 0x0101010101010101ull) >> 56);
}

}  // namespace

size_t JsonFramer::ScanBlock(const char* p) {
  const Block block(p);
  // A backslash escapes the byte after it, which then escapes nothing; runs
  // of backslashes are short, so they are taken one at a time.
  uint64_t escaped = escape_ ? 1 : 0;
  uint64_t escapes = block.Eq('\\') & ~escaped;
  escape_ = false;
  while (escapes != 0) {
    const int k = std::countr_zero(escapes);
    if (k == 63) {
      escape_ = true;  // the next block's first byte
      break;
    }
    escaped |= uint64_t{2} << k;
    escapes &= ~(uint64_t{3} << k);
  }
  const uint64_t quotes = block.Eq('"') & ~escaped;
  // Bit k of `inside` is set when an odd number of quotes lie at or before
  // byte k: a byte that is not a quote is then in a string opened in this
  // block. Bit 63 is the parity of all of them.
  uint64_t inside = quotes;
  for (int shift = 1; shift < 64; shift *= 2) inside ^= inside << shift;
  const bool odd = (inside >> 63) != 0;
  if (in_string_) inside = ~inside;
  in_string_ = in_string_ != odd;
  const uint64_t plain = ~inside & ~escaped;
  const uint64_t open = (block.Eq('{') | block.Eq('[')) & plain;
  const uint64_t close = (block.Eq('}') | block.Eq(']')) & plain;
  if (close == 0) {
    depth_ += PopCount(open);
    return kBlock;
  }
  for (uint64_t both = open | close; both != 0; both &= both - 1) {
    const int k = std::countr_zero(both);
    if (open >> k & 1) {
      ++depth_;
    } else if (--depth_ == 0) {
      return static_cast<size_t>(k);
    }
  }
  return kBlock;
}
#endif

StatusOr<std::optional<std::string>> JsonFramer::Next() {
  if (depth_ == 0) {
    while (start_ < buf_.size() && IsSpace(buf_[start_])) ++start_;
    scan_ = start_;
    if (start_ == buf_.size()) {
      Compact();
      return std::optional<std::string>();
    }
    if (buf_[start_] != '{') {
      return Status::InvalidArgument("malformed watch stream at byte " + std::to_string(offset()) +
                                     ": expected '{', found '" + std::string(1, buf_[start_]) +
                                     "'");
    }
  }
  const char* p = buf_.data();
  const size_t n = buf_.size();
  size_t i = scan_;
  size_t end = kNone;  // the frame's closing brace, once found
  while (i < n && end == kNone) {
    const size_t limit = std::min(n, i + kBlock);
#if defined(__SSE2__)
    if (limit - i == kBlock) {
      if (const size_t at = ScanBlock(p + i); at < kBlock) end = i + at;
      i = limit;
      continue;
    }
#endif
    end = ScanBytes(p, i, limit);
    i = limit;
  }
  if (end != kNone) {
    // The bound holds however the bytes arrived: a frame that came whole
    // in one read is refused as one that came in pieces is.
    if (end + 1 - start_ > max_frame_bytes_) return TooLarge();
    std::string frame(p + start_, end + 1 - start_);
    frame_offset_ = offset();
    start_ = scan_ = end + 1;
    in_string_ = escape_ = false;  // a closing brace is outside any string
    Compact();
    return std::optional<std::string>(std::move(frame));
  }
  scan_ = i;
  if (scan_ - start_ > max_frame_bytes_) return TooLarge();
  Compact();
  return std::optional<std::string>();
}

}  // namespace kcache::rest
