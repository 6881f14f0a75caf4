// SPDX-License-Identifier: Apache-2.0

// The snapshot file format (docs/snapshot-format.md): header, checksummed
// zstd blocks, rows and the manifest's JSON.

#ifndef KCACHE_SRC_PERSIST_SNAPSHOT_FORMAT_H_
#define KCACHE_SRC_PERSIST_SNAPSHOT_FORMAT_H_

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "kcache/snapshot.h"
#include "persist/bulk_load.h"

struct ZSTD_CCtx_s;
struct ZSTD_DCtx_s;

namespace kcache::snapshot {

inline constexpr char kMagic[8] = {'\x89', 'K', 'C', 'S', 'N', 'A', 'P', '\n'};
inline constexpr int kFormatVersion = 1;
inline constexpr size_t kHeaderBytes = 16;
inline constexpr size_t kBlockHeaderBytes = 16;
// Rows are gathered into blocks of about this many raw bytes.
inline constexpr size_t kBlockTarget = size_t{1} << 20;
// No block may hold more (a larger length is corruption, not a reason to
// allocate).
inline constexpr size_t kMaxBlockRaw = size_t{64} << 20;

enum class BlockType : uint8_t { kManifest = 1, kRows = 2, kEnd = 3 };

// Appends one row: family byte, varint32 key length, key, varint32 value
// length, value.
void AppendRow(std::string* out, storage::Family family, std::string_view key,
               std::string_view value);

// Reads rows back from a block's raw bytes.
class RowReader {
 public:
  explicit RowReader(std::string_view raw) : rest_(raw) {}
  bool Done() const { return rest_.empty(); }
  // Corruption (naming the row's offset in the block) if malformed.
  Status Next(storage::Family* family, std::string_view* key, std::string_view* value);

 private:
  std::string_view rest_;
  size_t offset_ = 0;
};

// Reads a block header's lengths; Corruption if out of range.
Status ParseBlockHeader(const char* header, uint32_t* stored_len, uint32_t* raw_len);
// Checks a block's checksum and type and decompresses its `stored` bytes
// into `raw`. `header` is the block's 16-byte header, already parsed.
Status DecodeBlock(const char* header, std::string_view stored, ZSTD_DCtx_s* dctx, BlockType* type,
                   std::string* raw);

// Writes a file: the header, then blocks.
class FileWriter {
 public:
  // Creates `path` (truncating it).
  static StatusOr<std::unique_ptr<FileWriter>> Create(const std::string& path, int zstd_level);
  ~FileWriter();
  Status WriteBlock(BlockType type, std::string_view raw);
  // Flushes and fsyncs, then closes.
  Status Close();
  uint64_t bytes() const { return bytes_; }

 private:
  FileWriter(std::string path, std::FILE* f, int level);
  Status Write(const void* p, size_t n);

  const std::string path_;
  std::FILE* f_;
  const int level_;
  ZSTD_CCtx_s* cctx_;
  std::string stored_;
  uint64_t bytes_ = 0;
};

// Reads a file block by block, checking each block's checksum.
class FileReader {
 public:
  // Reads and checks the header. NotFound, IOError, InvalidArgument (not a
  // snapshot), Unimplemented (a newer format).
  static StatusOr<std::unique_ptr<FileReader>> Open(const std::string& path);
  ~FileReader();
  // The next block's type and raw bytes (valid until the next call).
  // Corruption or "truncated" errors name the block and its byte offset.
  Status Next(BlockType* type, std::string_view* raw);
  // True once the file has no more bytes.
  bool AtEnd();
  int block() const { return block_; }
  uint64_t offset() const { return offset_; }
  // The format version in the file header.
  int version() const { return version_; }
  const std::string& path() const { return path_; }

 private:
  FileReader(std::string path, std::FILE* f);
  Status Where(std::string_view what) const;

  const std::string path_;
  std::FILE* f_;
  ZSTD_DCtx_s* dctx_;
  std::string stored_, raw_;
  uint64_t offset_ = 0;  // of the block being read
  int block_ = 0;        // its number, from 0
  int version_ = 0;
};

using RowFn = std::function<Status(storage::Family, std::string_view key, std::string_view value)>;
// Called before the rows of each rows block: its byte offset, its number
// (the manifest is block 0) and its raw bytes.
using BlockFn = std::function<Status(uint64_t offset, int number, std::string_view raw)>;
// Reads a snapshot from its header to its end block: sets `manifest`, then,
// unless `row` is empty, passes each row to `row` and checks everything
// docs/snapshot-format.md lists under Verification. `block` may be empty.
// Stops at the first error, which names the file and where in it.
struct ReadAllOptions {
  // Required where the rows have a keyring (sealed objects, which are then
  // authenticated): FailedPrecondition without it or for another key.
  std::string key_encryption_key;
  // Every object is parsed, and its resourceVersion compared with its
  // record's (VerifySnapshot).
  bool parse_objects = false;
};
Status ReadAll(const std::string& path, const SnapshotProgressFn& progress,
               SnapshotManifest* manifest, const RowFn& row, const BlockFn& block = {},
               const ReadAllOptions& options = {});

std::string EncodeManifest(const SnapshotManifest& m);
StatusOr<SnapshotManifest> DecodeManifest(std::string_view json);

}  // namespace kcache::snapshot

#endif  // KCACHE_SRC_PERSIST_SNAPSHOT_FORMAT_H_
