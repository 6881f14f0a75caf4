// SPDX-License-Identifier: Apache-2.0

#include "client/json_framer.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <immintrin.h>
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
  if (carried_) return true;
  for (size_t i = start_; i < buf_.size(); ++i) {
    if (!IsSpace(buf_[i])) return true;
  }
  return false;
}

void JsonFramer::Compact() {
  // Drop returned bytes once they are half the buffer, so appends stay
  // amortised O(1) and memory tracks the largest frame. Called before the
  // buffer grows (the frame returned last lives in it until then), not by
  // Next: there, with most of a read's frames yet to return, it would move
  // them all, half a read per read.
  if (start_ > 0 && start_ * 2 >= buf_.size()) {
    buf_.erase(0, start_);
    consumed_ += start_;
    scan_ -= start_;
    start_ = 0;
  }
}

Status JsonFramer::TooLarge(uint64_t at) const {
  return Status::InvalidArgument("watch event at byte " + std::to_string(at) + " exceeds " +
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

// Where in a block of 64 bytes (bit k for byte k) the bytes that frame JSON
// are. '{' and '[' differ only in bit 5 (0x7b, 0x5b), as do '}' and ']', so
// one comparison of the bytes with that bit set finds both.
struct Masks {
  uint64_t backslash, quote, open, close;
};

// The baseline of x86-64.
struct Sse2 {
  static uint64_t Eq(const __m128i (&v)[4], char c) {
    const __m128i needle = _mm_set1_epi8(c);
    uint64_t m = 0;
    for (int j = 0; j < 4; ++j) {
      const auto bits = static_cast<uint16_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v[j], needle)));
      m |= uint64_t{bits} << (16 * j);
    }
    return m;
  }
  static Masks Load(const char* p) {
    __m128i v[4], folded[4];
    for (int j = 0; j < 4; ++j) {
      v[j] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p) + j);
      folded[j] = _mm_or_si128(v[j], _mm_set1_epi8(0x20));
    }
    return {Eq(v, '\\'), Eq(v, '"'), Eq(folded, '{'), Eq(folded, '}')};
  }
  // Bit k of the result is the parity of bits 0..k of x.
  static uint64_t PrefixXor(uint64_t x) {
    for (int shift = 1; shift < 64; shift *= 2) x ^= x << shift;
    return x;
  }
  // Without a popcnt instruction in the baseline, std::popcount is a
  // library call; this is a few arithmetic steps.
  static int PopCount(uint64_t x) {
    x -= (x >> 1) & 0x5555555555555555ull;
    x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
    return static_cast<int>((x * 0x0101010101010101ull) >> 56);
  }
};

#if defined(__x86_64__) && defined(__GNUC__)
#define KCACHE_FRAMER_AVX2 1
#define KCACHE_AVX2_TARGET __attribute__((target("avx2,pclmul,popcnt,bmi")))

// Haswell (2013) and later: two registers a block, and the prefix parity in
// one carry-less multiplication by all ones.
struct Avx2 {
  KCACHE_AVX2_TARGET static uint64_t Eq(__m256i lo, __m256i hi, char c) {
    const __m256i needle = _mm256_set1_epi8(c);
    const auto l = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(lo, needle)));
    const auto h = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(hi, needle)));
    return uint64_t{l} | uint64_t{h} << 32;
  }
  KCACHE_AVX2_TARGET static Masks Load(const char* p) {
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p) + 1);
    const __m256i bit5 = _mm256_set1_epi8(0x20);
    const __m256i flo = _mm256_or_si256(lo, bit5), fhi = _mm256_or_si256(hi, bit5);
    return {Eq(lo, hi, '\\'), Eq(lo, hi, '"'), Eq(flo, fhi, '{'), Eq(flo, fhi, '}')};
  }
  KCACHE_AVX2_TARGET static uint64_t PrefixXor(uint64_t x) {
    const __m128i product =
        _mm_clmulepi64_si128(_mm_set_epi64x(0, static_cast<int64_t>(x)), _mm_set1_epi8(-1), 0);
    return static_cast<uint64_t>(_mm_cvtsi128_si64(product));
  }
  KCACHE_AVX2_TARGET static int PopCount(uint64_t x) { return __builtin_popcountll(x); }
};

bool HasAvx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("pclmul") &&
         __builtin_cpu_supports("popcnt") && __builtin_cpu_supports("bmi");
}
#endif

}  // namespace

template <class Isa>
size_t JsonFramer::ScanBlock(const char* p) {
  const Masks m = Isa::Load(p);
  // A backslash escapes the byte after it, which then escapes nothing; runs
  // of backslashes are short, so they are taken one at a time.
  uint64_t escaped = escape_ ? 1 : 0;
  uint64_t escapes = m.backslash & ~escaped;
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
  const uint64_t quotes = m.quote & ~escaped;
  // Bit k of `inside` is set when an odd number of quotes lie at or before
  // byte k: a byte that is not a quote is then in a string opened in this
  // block. Bit 63 is the parity of all of them.
  uint64_t inside = Isa::PrefixXor(quotes);
  const bool odd = (inside >> 63) != 0;
  if (in_string_) inside = ~inside;
  in_string_ = in_string_ != odd;
  const uint64_t plain = ~inside & ~escaped;
  const uint64_t open = m.open & plain;
  const uint64_t close = m.close & plain;
  if (close == 0) {
    depth_ += Isa::PopCount(open);
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

size_t JsonFramer::ScanBlockSse2(const char* p) { return ScanBlock<Sse2>(p); }

#if KCACHE_FRAMER_AVX2
// Flattened, so that the scan and its helpers compile for this target.
KCACHE_AVX2_TARGET __attribute__((flatten)) size_t JsonFramer::ScanBlockAvx2(const char* p) {
  return ScanBlock<Avx2>(p);
}
#else
size_t JsonFramer::ScanBlockAvx2(const char* p) { return ScanBlock<Sse2>(p); }
#endif
#endif

namespace {

JsonFramer::Scan Resolve(JsonFramer::Scan scan) {
#if !defined(__SSE2__)
  return JsonFramer::Scan::kBytes;
#else
#if KCACHE_FRAMER_AVX2
  static const bool avx2 = HasAvx2();
#else
  constexpr bool avx2 = false;
#endif
  if (scan == JsonFramer::Scan::kWidest && !avx2) return JsonFramer::Scan::kSse2;
  return scan;
#endif
}

}  // namespace

JsonFramer::JsonFramer(size_t max_frame_bytes, Scan scan)
    : max_frame_bytes_(max_frame_bytes), scan_with_(Resolve(scan)) {}

size_t JsonFramer::ScanFrame(const char* p, size_t i, size_t n) {
  size_t end = kNone;
  while (i < n && end == kNone) {
    const size_t limit = std::min(n, i + kBlock);
#if defined(__SSE2__)
    if (limit - i == kBlock && scan_with_ != Scan::kBytes) {
      const size_t at = scan_with_ == Scan::kWidest ? ScanBlockAvx2(p + i) : ScanBlockSse2(p + i);
      if (at < kBlock) end = i + at;
      i = limit;
      continue;
    }
#endif
    end = ScanBytes(p, i, limit);
    i = limit;
  }
  // A closing bracket is outside any string; a block scan went on past it.
  if (end != kNone) in_string_ = escape_ = false;
  return end;
}

void JsonFramer::Append(std::string* bytes) {
  const bool scanned = !carried_ && scan_ == buf_.size();
  if (scanned && start_ == buf_.size()) {  // nothing pending
    consumed_ += buf_.size();
    buf_.swap(*bytes);
    start_ = scan_ = 0;
  } else if (scanned && depth_ > 0) {  // a frame begun: look for its end
    const size_t end = ScanFrame(bytes->data(), 0, bytes->size());
    if (end == kNone) {
      Compact();
      buf_.append(*bytes);
      scan_ = buf_.size();
    } else {
      carry_.assign(buf_, start_).append(*bytes, 0, end + 1);
      carry_offset_ = consumed_ + start_;
      carried_ = true;
      consumed_ += buf_.size();
      buf_.swap(*bytes);
      start_ = scan_ = end + 1;
    }
  } else {
    Append(std::string_view(*bytes));
  }
  bytes->clear();
}

StatusOr<std::optional<std::string_view>> JsonFramer::Next() {
  if (carried_) {
    carried_ = false;
    if (carry_.size() > max_frame_bytes_) return TooLarge(carry_offset_);
    frame_offset_ = carry_offset_;
    return std::optional<std::string_view>(carry_);
  }
  if (depth_ == 0) {
    while (start_ < buf_.size() && IsSpace(buf_[start_])) ++start_;
    scan_ = start_;
    if (start_ == buf_.size()) return std::optional<std::string_view>();
    if (buf_[start_] != '{') {
      return Status::InvalidArgument("malformed watch stream at byte " + std::to_string(offset()) +
                                     ": expected '{', found '" + std::string(1, buf_[start_]) +
                                     "'");
    }
  }
  const char* p = buf_.data();
  const size_t end = ScanFrame(p, scan_, buf_.size());
  if (end != kNone) {
    // The bound holds however the bytes arrived: a frame that came whole
    // in one read is refused as one that came in pieces is.
    if (end + 1 - start_ > max_frame_bytes_) return TooLarge(offset());
    std::string_view frame(p + start_, end + 1 - start_);
    frame_offset_ = offset();
    start_ = scan_ = end + 1;
    return std::optional<std::string_view>(frame);
  }
  scan_ = buf_.size();
  if (scan_ - start_ > max_frame_bytes_) return TooLarge(offset());
  return std::optional<std::string_view>();
}

}  // namespace kcache::rest
