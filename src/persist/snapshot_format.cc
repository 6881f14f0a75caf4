// SPDX-License-Identifier: Apache-2.0

#include "persist/snapshot_format.h"

#include <fcntl.h>
#include <unistd.h>
#include <zstd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <utility>

#include "persist/encoding.h"
#include "util/coding.h"
#include "util/crc32c.h"
#include "util/rfc3339.h"

namespace kcache::snapshot {
namespace {

using util::GetFixed32;
using util::GetVarint32;
using util::PutFixed32;
using util::PutVarint32;

std::string ErrnoText() { return std::strerror(errno); }

}  // namespace

void AppendRow(std::string* out, storage::Family family, std::string_view key,
               std::string_view value) {
  out->push_back(static_cast<char>(family));
  PutVarint32(out, static_cast<uint32_t>(key.size()));
  out->append(key);
  PutVarint32(out, static_cast<uint32_t>(value.size()));
  out->append(value);
}

Status RowReader::Next(storage::Family* family, std::string_view* key, std::string_view* value) {
  const size_t start = offset_;
  std::string_view in = rest_;
  auto bad = [&](const char* what) {
    return Status::Corruption("row at byte " + std::to_string(start) + " of the block: " + what);
  };
  uint8_t f = static_cast<uint8_t>(in.front());
  in.remove_prefix(1);
  if (f >= storage::kFamilies) return bad("unknown column family");
  uint32_t n;
  if (!GetVarint32(&in, &n) || n > in.size()) return bad("bad key length");
  *key = in.substr(0, n);
  in.remove_prefix(n);
  if (!GetVarint32(&in, &n) || n > in.size()) return bad("bad value length");
  *value = in.substr(0, n);
  in.remove_prefix(n);
  *family = static_cast<storage::Family>(f);
  offset_ += rest_.size() - in.size();
  rest_ = in;
  return Status::OK();
}

FileWriter::FileWriter(std::string path, std::FILE* f, int level)
    : path_(std::move(path)), f_(f), level_(level), cctx_(ZSTD_createCCtx()) {}

FileWriter::~FileWriter() {
  if (f_) std::fclose(f_);
  ZSTD_freeCCtx(cctx_);
}

StatusOr<std::unique_ptr<FileWriter>> FileWriter::Create(const std::string& path, int zstd_level) {
  // 0600: a snapshot holds what the cache holds, Secrets included.
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status::IOError("create " + path + ": " + ErrnoText());
  std::FILE* f = ::fdopen(fd, "wb");
  if (!f) {
    Status st = Status::IOError("create " + path + ": " + ErrnoText());
    ::close(fd);
    return st;
  }
  std::setvbuf(f, nullptr, _IOFBF, size_t{1} << 20);
  std::unique_ptr<FileWriter> w(new FileWriter(path, f, zstd_level));
  char header[kHeaderBytes];
  std::memcpy(header, kMagic, 8);
  PutFixed32(header + 8, kFormatVersion);
  PutFixed32(header + 12, util::Crc32c(std::string_view(header, 12)));
  KCACHE_RETURN_IF_ERROR(w->Write(header, sizeof(header)));
  return w;
}

Status FileWriter::Write(const void* p, size_t n) {
  if (std::fwrite(p, 1, n, f_) != n) return Status::IOError("write " + path_ + ": " + ErrnoText());
  bytes_ += n;
  return Status::OK();
}

Status FileWriter::WriteBlock(BlockType type, std::string_view raw) {
  if (raw.size() > kMaxBlockRaw) return Status::Internal("snapshot block too large");
  stored_.resize(ZSTD_compressBound(raw.size()));
  size_t n =
      ZSTD_compressCCtx(cctx_, stored_.data(), stored_.size(), raw.data(), raw.size(), level_);
  if (ZSTD_isError(n)) return Status::Internal(std::string("zstd: ") + ZSTD_getErrorName(n));
  char header[kBlockHeaderBytes] = {};
  header[0] = static_cast<char>(type);
  PutFixed32(header + 4, static_cast<uint32_t>(n));
  PutFixed32(header + 8, static_cast<uint32_t>(raw.size()));
  uint32_t crc = util::Crc32cExtend(util::Crc32c(std::string_view(header, 12)), stored_.data(), n);
  PutFixed32(header + 12, crc);
  KCACHE_RETURN_IF_ERROR(Write(header, sizeof(header)));
  return Write(stored_.data(), n);
}

Status FileWriter::Close() {
  std::FILE* f = f_;
  f_ = nullptr;
  bool ok = std::fflush(f) == 0 && fsync(fileno(f)) == 0;
  std::string err = ok ? "" : ErrnoText();
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    err = ErrnoText();
  }
  return ok ? Status::OK() : Status::IOError("write " + path_ + ": " + err);
}

FileReader::FileReader(std::string path, std::FILE* f)
    : path_(std::move(path)), f_(f), dctx_(ZSTD_createDCtx()) {}

FileReader::~FileReader() {
  std::fclose(f_);
  ZSTD_freeDCtx(dctx_);
}

StatusOr<std::unique_ptr<FileReader>> FileReader::Open(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    if (errno == ENOENT) return Status::NotFound("open " + path + ": no such file");
    return Status::IOError("open " + path + ": " + ErrnoText());
  }
  std::setvbuf(f, nullptr, _IOFBF, size_t{1} << 20);
  std::unique_ptr<FileReader> r(new FileReader(path, f));
  char header[kHeaderBytes];
  size_t got = std::fread(header, 1, sizeof(header), f);
  if (got < 8 || std::memcmp(header, kMagic, 8) != 0) {
    return Status::InvalidArgument(
        path + " is not a kcache snapshot (it does not start with the snapshot magic bytes)");
  }
  if (got < sizeof(header)) return Status::Corruption(path + ": truncated in the file header");
  if (GetFixed32(header + 12) != util::Crc32c(std::string_view(header, 12))) {
    return Status::Corruption(path + ": the file header's checksum does not match");
  }
  uint32_t version = GetFixed32(header + 8);
  if (version > static_cast<uint32_t>(kFormatVersion)) {
    return Status::Unimplemented(path + ": snapshot format version " + std::to_string(version) +
                                 " is newer than this kcache supports (" +
                                 std::to_string(kFormatVersion) + ")");
  }
  if (version == 0) return Status::Corruption(path + ": snapshot format version 0");
  r->offset_ = sizeof(header);
  r->version_ = static_cast<int>(version);
  return r;
}

Status FileReader::Where(std::string_view what) const {
  return Status::Corruption(path_ + ": block " + std::to_string(block_) + " at byte " +
                            std::to_string(offset_) + ": " + std::string(what));
}

bool FileReader::AtEnd() {
  int c = std::fgetc(f_);
  if (c == EOF) return true;
  std::ungetc(c, f_);
  return false;
}

Status ParseBlockHeader(const char* header, uint32_t* stored_len, uint32_t* raw_len) {
  *stored_len = GetFixed32(header + 4);
  *raw_len = GetFixed32(header + 8);
  if (*raw_len > kMaxBlockRaw || *stored_len > ZSTD_compressBound(kMaxBlockRaw)) {
    return Status::Corruption("block lengths out of range (stored " + std::to_string(*stored_len) +
                              ", raw " + std::to_string(*raw_len) + ")");
  }
  return Status::OK();
}

Status DecodeBlock(const char* header, std::string_view stored, ZSTD_DCtx_s* dctx, BlockType* type,
                   std::string* raw) {
  uint32_t crc =
      util::Crc32cExtend(util::Crc32c(std::string_view(header, 12)), stored.data(), stored.size());
  if (crc != GetFixed32(header + 12))
    return Status::Corruption("checksum mismatch (the file is corrupt)");
  uint8_t t = static_cast<uint8_t>(header[0]);
  if (t < 1 || t > 3 || header[1] || header[2] || header[3])
    return Status::Corruption("unknown block type");
  const uint32_t size = GetFixed32(header + 8);
  raw->resize(size);
  size_t n = ZSTD_decompressDCtx(dctx, raw->data(), raw->size(), stored.data(), stored.size());
  if (ZSTD_isError(n)) return Status::Corruption(std::string("zstd: ") + ZSTD_getErrorName(n));
  if (n != size) {
    return Status::Corruption("decompressed to " + std::to_string(n) + " bytes, not " +
                              std::to_string(size));
  }
  *type = static_cast<BlockType>(t);
  return Status::OK();
}

Status FileReader::Next(BlockType* type, std::string_view* raw) {
  char header[kBlockHeaderBytes];
  size_t got = std::fread(header, 1, sizeof(header), f_);
  if (got != sizeof(header)) {
    if (std::ferror(f_)) return Status::IOError("read " + path_ + ": " + ErrnoText());
    return Where("the file is truncated (it ends inside a block header, before the end block)");
  }
  uint32_t stored, size;
  if (Status st = ParseBlockHeader(header, &stored, &size); !st.ok()) return Where(st.message());
  stored_.resize(stored);
  got = std::fread(stored_.data(), 1, stored, f_);
  if (got != stored) {
    if (std::ferror(f_)) return Status::IOError("read " + path_ + ": " + ErrnoText());
    return Where("the file is truncated (the block should have " + std::to_string(stored) +
                 " bytes, " + std::to_string(got) + " remain)");
  }
  if (Status st = DecodeBlock(header, stored_, dctx_, type, &raw_); !st.ok())
    return Where(st.message());
  *raw = raw_;
  ++block_;
  offset_ += sizeof(header) + stored;
  return Status::OK();
}

std::string EncodeManifest(const SnapshotManifest& m) {
  nlohmann::json j;
  j["formatVersion"] = m.format_version;
  j["storageFormat"] = m.storage_format;
  j["created"] = util::FormatRfc3339(m.created);
  if (m.cluster) j["cluster"] = storage::ClusterInfoToJson(*m.cluster);
  j["resources"] = nlohmann::json::array();
  for (const KeyspaceStats& r : m.resources) {
    nlohmann::json e = {{"keyspace", r.name},
                        {"objects", r.objects},
                        {"resourceVersion", r.resource_version},
                        {"relistInProgress", r.relist_in_progress}};
    if (r.last_sync) e["lastSync"] = util::FormatRfc3339(*r.last_sync);
    if (r.resource) {
      e["resource"] = storage::ResourceInfoToJson(*r.resource);
    }
    e["indexes"] = nlohmann::json::object();
    for (const auto& [name, version] : r.indexes) e["indexes"][name] = version;
    j["resources"].push_back(std::move(e));
  }
  return j.dump();
}

namespace {

// An integer field that fits T. nlohmann's get<T> casts a float or an
// out-of-range number, undefined behaviour for a float: both are malformed.
template <typename T>
T IntegerField(const nlohmann::json& j, const char* key) {
  const nlohmann::json& v = j.at(key);
  if (v.is_number_unsigned() && std::in_range<T>(v.get<uint64_t>())) {
    return static_cast<T>(v.get<uint64_t>());
  }
  if (v.is_number_integer() && !v.is_number_unsigned() && std::in_range<T>(v.get<int64_t>())) {
    return static_cast<T>(v.get<int64_t>());
  }
  throw nlohmann::json::type_error::create(
      302, std::string("\"") + key + "\" is not an integer in range", &v);
}

}  // namespace

StatusOr<SnapshotManifest> DecodeManifest(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  auto bad = [](const std::string& what) {
    return Status::Corruption("malformed manifest: " + what);
  };
  if (!j.is_object()) return bad("not a JSON object");
  SnapshotManifest m;
  try {
    m.format_version = IntegerField<int>(j, "formatVersion");
    m.storage_format = IntegerField<int>(j, "storageFormat");
    auto created = util::ParseRfc3339(j.at("created").get<std::string>());
    if (!created) return bad("bad creation time");
    m.created = *created;
    if (j.contains("cluster")) {
      if (!j["cluster"].is_object()) return bad("\"cluster\" is not an object");
      m.cluster = storage::ClusterInfoFromJson(j["cluster"]);
    }
    for (const nlohmann::json& e : j.at("resources")) {
      KeyspaceStats r;
      r.name = e.at("keyspace").get<std::string>();
      r.objects = IntegerField<uint64_t>(e, "objects");
      r.resource_version = e.at("resourceVersion").get<std::string>();
      r.relist_in_progress = e.value("relistInProgress", false);
      if (e.contains("lastSync"))
        r.last_sync = util::ParseRfc3339(e["lastSync"].get<std::string>());
      if (e.contains("resource")) {
        r.resource = storage::ResourceInfoFromJson(e["resource"]);
      }
      if (e.contains("indexes")) {
        for (const auto& [name, version] : e["indexes"].items())
          r.indexes.emplace_back(name, version.get<std::string>());
      }
      m.resources.push_back(std::move(r));
    }
  } catch (const nlohmann::json::exception& e) {
    return bad(e.what());
  }
  for (size_t i = 1; i < m.resources.size(); ++i) {
    if (!(m.resources[i - 1].name < m.resources[i].name))
      return bad("keyspaces are not sorted and unique");
  }
  return m;
}

}  // namespace kcache::snapshot
