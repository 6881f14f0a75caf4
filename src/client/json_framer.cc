#include "client/json_framer.h"

#include <cstring>

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
  size_t n = buf_.size();
  size_t i = scan_;
  for (; i < n; ++i) {
    char c = p[i];
    if (in_string_) {
      if (!escape_) {
        i = SkipPlainString(p, i, n);
        if (i == n) break;
      }
      c = p[i];
      if (escape_) {
        escape_ = false;
      } else if (c == '\\') {
        escape_ = true;
      } else if (c == '"') {
        in_string_ = false;
      }
      continue;
    }
    if (c == '"') {
      in_string_ = true;
    } else if (c == '{' || c == '[') {
      ++depth_;
    } else if (c == '}' || c == ']') {
      if (--depth_ == 0) {
        // The bound holds however the bytes arrived: a frame that came
        // whole in one read is refused as one that came in pieces is.
        if (i + 1 - start_ > max_frame_bytes_) return TooLarge();
        std::string frame(p + start_, i + 1 - start_);
        frame_offset_ = offset();
        start_ = scan_ = i + 1;
        Compact();
        return std::optional<std::string>(std::move(frame));
      }
    }
  }
  scan_ = i;
  if (scan_ - start_ > max_frame_bytes_) return TooLarge();
  Compact();
  return std::optional<std::string>();
}

}  // namespace kcache::rest
