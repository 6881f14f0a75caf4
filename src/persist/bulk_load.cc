// SPDX-License-Identifier: Apache-2.0

#include "persist/bulk_load.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>

#include "persist/cache_dir.h"
#include "persist/db.h"
#include "persist/encoding.h"
#include "persist/rocks_status.h"

namespace kcache::storage {
namespace {

namespace fs = std::filesystem;

// Table files are cut at this size so that compactions after the load work
// on pieces of the usual size.
constexpr uint64_t kFileBytes = uint64_t{256} << 20;

}  // namespace

BulkLoader::BulkLoader(std::string target, std::unique_ptr<NewDbSite> site, CacheOptions options)
    : target_(std::move(target)), site_(std::move(site)), options_(std::move(options)) {}

BulkLoader::~BulkLoader() {
  for (Writer& w : writers_) {
    if (w.file) w.file->Finish().PermitUncheckedError();
  }
}

StatusOr<std::unique_ptr<BulkLoader>> BulkLoader::Create(const std::string& target,
                                                         const CacheOptions& options) {
  StatusOr<std::unique_ptr<NewDbSite>> site = NewDbSite::Prepare(target, "partial");
  if (site.status().code() == StatusCode::kAlreadyExists ||
      site.status().code() == StatusCode::kFailedPrecondition) {
    return Status::AlreadyExists(target + " already exists and is not an empty directory");
  }
  if (!site.ok()) return site.status().WithContext("load " + target);
  std::error_code ec;
  const std::string tables = (*site)->work_dir() + "/tables";
  fs::create_directory(tables, ec);
  if (ec) return Status::IOError("create " + tables + ": " + ec.message());
  CacheOptions o = options;
  o.create_if_missing = true;
  return std::unique_ptr<BulkLoader>(new BulkLoader(target, *std::move(site), std::move(o)));
}

Status BulkLoader::Roll(Family family) {
  Writer& w = writers_[static_cast<int>(family)];
  if (w.file) {
    KCACHE_RETURN_IF_ERROR(FromRocks(w.file->Finish(), "write table file for " + target_));
    w.file.reset();
  }
  const std::string name = FamilyName(family);
  rocksdb::Options o = FamilyOnlyOptions(name, options_);
  w.file = std::make_unique<rocksdb::SstFileWriter>(rocksdb::EnvOptions(), o);
  std::string path =
      site_->work_dir() + "/tables/" + std::to_string(next_file_++) + "-" + name + ".sst";
  KCACHE_RETURN_IF_ERROR(FromRocks(w.file->Open(path), "create " + path));
  w.done.push_back(path);
  return Status::OK();
}

Status BulkLoader::Add(Family family, std::string_view key, std::string_view value) {
  if (family == Family::kMeta && key == kFormatKey) {
    return Status::InvalidArgument("a loaded row may not set the format version");
  }
  if (family == Family::kMeta && key == kKeysKey) sealed_ = true;
  Writer& w = writers_[static_cast<int>(family)];
  if (!w.file || w.file->FileSize() >= kFileBytes) KCACHE_RETURN_IF_ERROR(Roll(family));
  return FromRocks(w.file->Put(rocksdb::Slice(key.data(), key.size()),
                               rocksdb::Slice(value.data(), value.size())),
                   std::string("load a row of ") + FamilyName(family));
}

Status BulkLoader::Finish() {
  for (Writer& w : writers_) {
    if (w.file) {
      KCACHE_RETURN_IF_ERROR(FromRocks(w.file->Finish(), "write table file for " + target_));
      w.file.reset();
    }
  }
  {
    KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Db> db, OpenDb(site_->db_dir(), options_, false));
    std::vector<rocksdb::IngestExternalFileArg> args;
    std::vector<rocksdb::ColumnFamilyHandle*> families = RowFamilies(*db);
    for (int f = 0; f < kFamilies; ++f) {
      if (writers_[f].done.empty()) continue;
      args.push_back(MovedTableFiles(families[f], writers_[f].done));
    }
    if (!args.empty()) {
      KCACHE_RETURN_IF_ERROR(FromRocks(db->Ingest(args), "ingest into " + target_));
    }
    if (sealed_) {
      KCACHE_RETURN_IF_ERROR(
          FromRocks(db->Put(db->meta, kFormatKey, std::to_string(kFormatVersion)),
                    "record the format of " + target_));
    }
  }  // closed: every file is synced
  Status s = site_->Install();
  if (s.code() == StatusCode::kAlreadyExists) {
    return Status::AlreadyExists(target_ + " already exists and is not an empty directory");
  }
  return s.WithContext("load " + target_);
}

}  // namespace kcache::storage
