// SPDX-License-Identifier: Apache-2.0

#include "persist/db.h"

#include <rocksdb/cache.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/sst_file_reader.h>
#include <rocksdb/table.h>
#include <rocksdb/write_buffer_manager.h>

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>
#include <utility>

#include "persist/cache_dir.h"
#include "persist/encoding.h"
#include "persist/info_log.h"
#include "persist/private_files.h"
#include "persist/rocks_status.h"

namespace kcache::storage {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string>& RequiredFamilies() {
  static const std::vector<std::string> kFamilies = {rocksdb::kDefaultColumnFamilyName, kObjectsCF,
                                                     kIndexCF, kReverseIndexCF, kMetaCF};
  return kFamilies;
}

// Each family switches to a new memtable at its share of the budget. Left
// at RocksDB's default (64 MiB each), the write-buffer manager flushes the
// family with the oldest memtable, often an idle one, and the objects
// family alone grew to twice the whole budget while its last memtable
// was being flushed. Index entries arrive in no key order, so their
// memtables are not made smaller still: each flush of them is merged into
// the whole level below (at 1M pods, a sixteenth cost a quarter more
// compaction).
size_t MemtableBytes(const std::string& name, const CacheOptions& o) {
  if (name == kObjectsCF || name == kJournalCF) return std::max<size_t>(o.memtable_bytes / 4, 1);
  if (name == kIndexCF || name == kReverseIndexCF) return std::max<size_t>(o.memtable_bytes / 8, 1);
  return std::max<size_t>(o.memtable_bytes / 16, 1);
}

rocksdb::ColumnFamilyOptions FamilyOptions(const std::string& name, const CacheOptions& o,
                                           const std::shared_ptr<rocksdb::Cache>& cache) {
  rocksdb::ColumnFamilyOptions cf;
  cf.level_compaction_dynamic_level_bytes = true;
  cf.write_buffer_size = MemtableBytes(name, o);
  rocksdb::BlockBasedTableOptions table;
  table.block_cache = cache;
  // Index and filter blocks live in the block cache (so memory stays within
  // it) and are partitioned: a large table's index is megabytes, which one
  // cache shard cannot hold, and every read would load it whole again.
  table.cache_index_and_filter_blocks = true;
  table.cache_index_and_filter_blocks_with_high_priority = true;
  table.pin_top_level_index_and_filter = true;
  table.pin_l0_filter_and_index_blocks_in_cache = true;
  table.index_type = rocksdb::BlockBasedTableOptions::kTwoLevelIndexSearch;
  table.partition_filters = true;
  table.metadata_block_size = 4096;
  // The label index is only ever scanned by prefix, which whole-key
  // filters cannot answer: building them would cost every flush,
  // compaction and ingestion for nothing.
  if (name != kIndexCF) table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  if (name == kObjectsCF) {
    // 32 KiB blocks compress pods 1.8x faster and 1.6x smaller, but made a
    // point read 30-45% slower (docs/benchmarks-log.md, 2026-11-27).
    table.block_size = 16 * 1024;
    cf.compression = rocksdb::kZSTD;
    cf.bottommost_compression = rocksdb::kZSTD;
    if (o.zstd_dictionary_bytes > 0) {
      cf.compression_opts.max_dict_bytes = static_cast<uint32_t>(o.zstd_dictionary_bytes);
      cf.compression_opts.zstd_max_train_bytes =
          static_cast<uint32_t>(o.zstd_dictionary_bytes * 100);
      // RocksDB buffers a table's blocks to sample them for the dictionary;
      // unbounded, that is whole tables per compaction.
      cf.compression_opts.max_dict_buffer_bytes = o.zstd_dictionary_bytes * 256;
      cf.bottommost_compression_opts = cf.compression_opts;
      cf.bottommost_compression_opts.enabled = true;
    }
  } else {
    cf.compression = rocksdb::kLZ4Compression;
    if (name != kJournalCF) {
      // Flushes are atomic across families (MakeDbOptions), so these small
      // families flush whenever the objects family does, a small table each
      // time, and the label index's tables span its whole key range. Merged
      // into a single bottom level, each compaction would rewrite all of
      // it: levels of small files, and twice RocksDB's L0 trigger, keep the
      // rewrites in proportion to what is written.
      cf.level0_file_num_compaction_trigger = 8;
      cf.max_bytes_for_level_base = size_t{4} << 20;
      cf.target_file_size_base = size_t{1} << 20;
    }
  }
  cf.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  return cf;
}

rocksdb::DBOptions MakeDbOptions(const CacheOptions& o) {
  rocksdb::DBOptions db_options;
  db_options.env = PrivateEnv();
  db_options.max_background_jobs = o.background_jobs;
  db_options.write_buffer_manager = std::make_shared<rocksdb::WriteBufferManager>(o.memtable_bytes);
  db_options.max_open_files = -1;  // required by secondary instances
  db_options.keep_log_file_num = 3;
  // Large relists write without the WAL (RocksIndexer::Write): flushing all
  // families as one keeps what a crash leaves of them a prefix of the
  // writes, in every family alike.
  db_options.atomic_flush = true;
  // One recovery policy for writers and readers (whose replay refuses any
  // damaged record): a log cut short by a crash opens at its last whole
  // record; damage before its end is Corruption, not commits silently
  // dropped from the damage on.
  db_options.wal_recovery_mode = rocksdb::WALRecoveryMode::kTolerateCorruptedTailRecords;
  return db_options;
}

// Threads RocksDB starts per column family to open its table files at
// open (max_file_opening_threads, default 16): one per 32 files, at most 8.
// A small cache opens them on the calling thread, instead of starting and
// ending a hundred threads for a handful of files.
int TableOpeningThreads(const std::string& dir) {
  std::error_code ec;
  size_t tables = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".sst") ++tables;
  }
  return static_cast<int>(std::clamp<size_t>(tables / 32, 1, 8));
}

std::shared_ptr<rocksdb::Cache> MakeBlockCache(const CacheOptions& o) {
  // Shards of at least 4 MiB, so that no block is larger than its shard.
  int shard_bits = 0;
  while (shard_bits < 6 && (o.block_cache_bytes >> (shard_bits + 1)) >= (size_t{4} << 20))
    ++shard_bits;
  return rocksdb::NewLRUCache(o.block_cache_bytes, shard_bits);
}

// Keeps, of RocksDB's messages, the name of the first write-ahead log it
// found damaged ("PATH: dropping N bytes; ..."): a check writes no file in
// the cache, and RocksDB's own error does not name the file.
class DamagedLogFinder final : public rocksdb::Logger {
 public:
  DamagedLogFinder() : rocksdb::Logger(rocksdb::InfoLogLevel::WARN_LEVEL) {}
  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override {
    if (!found_.empty() || std::strstr(format, ": dropping ") == nullptr) return;
    char line[1024];
    std::vsnprintf(line, sizeof line, format, ap);
    const char* end = std::strstr(line, ": dropping ");
    if (end) found_.assign(line, static_cast<size_t>(end - line));
  }
  // The damaged log's path; empty if none was reported.
  const std::string& found() const { return found_; }

 private:
  std::string found_;
};

// The keyspaces with a resume point in the table files of the meta family
// in `dir` that are not among `live`, each with the file it is in.
std::map<std::string, std::string> ResumePointsInUnlistedTables(const std::string& dir,
                                                                const rocksdb::DBOptions& options,
                                                                const std::set<std::string>& live) {
  std::map<std::string, std::string> found;
  const std::string prefix = MetaKey("rv", "");
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() < 4 || name.compare(name.size() - 4, 4, ".sst") != 0 || live.count(name)) {
      continue;
    }
    rocksdb::SstFileReader reader(rocksdb::Options(options, rocksdb::ColumnFamilyOptions()));
    // A file cut short by a crash is what RocksDB deletes at open: no
    // resume point in it was ever committed.
    if (!reader.Open(it->path().string()).ok()) continue;
    auto props = reader.GetTableProperties();
    if (!props || props->column_family_name != kMetaCF) continue;
    std::unique_ptr<rocksdb::Iterator> rows(reader.NewIterator(rocksdb::ReadOptions()));
    for (rows->Seek(prefix); rows->Valid() && rows->key().starts_with(prefix); rows->Next()) {
      found.emplace(rows->key().ToString().substr(prefix.size()), name);
    }
  }
  return found;
}

// Whether another process holds the database's LOCK file (RocksDB locks it
// with fcntl for as long as a writer has it open).
bool HeldByAnotherProcess(const std::string& dir) {
  const int fd = ::open((dir + "/LOCK").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct flock probe = {};
  probe.l_type = F_WRLCK;
  probe.l_whence = SEEK_SET;
  const bool held = ::fcntl(fd, F_GETLK, &probe) == 0 && probe.l_type != F_UNLCK;
  ::close(fd);
  return held;
}

// The directories this process has open for writing (RocksDB's LOCK is
// held by the process, so HeldByAnotherProcess cannot see them).
std::mutex writers_mu;
std::set<std::string>& Writers() {
  static std::set<std::string>* writers = new std::set<std::string>();
  return *writers;
}

std::string Canonical(const std::string& dir) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(dir, ec);
  return ec ? dir : p.string();
}

bool OpenForWriting(const std::string& dir) {
  std::lock_guard l(writers_mu);
  return Writers().count(Canonical(dir)) > 0;
}

// The database's identity, a uuid RocksDB writes at creation; "" if none.
std::string ReadIdentity(const std::string& dir) {
  std::ifstream in(dir + "/IDENTITY");
  std::string id;
  std::getline(in, id);
  return id;
}

// The end of an error about a cache whose MANIFEST lacks what every cache
// has: names the MANIFEST (from CURRENT) and the ways out.
std::string DamagedManifest(const std::string& dir) {
  std::ifstream current(dir + "/CURRENT");
  std::string name;
  std::getline(current, name);
  return " in " + (name.empty() ? std::string("its MANIFEST") : dir + "/" + name) +
         ", which may be damaged or cut short: restore a snapshot (kcache snapshot import) or "
         "sync into a new cache";
}

// Checks a cache's files through a plain read-only instance (which opens no
// table file: its table cache is lazy) before the real open:
//
// - every table file the MANIFEST lists is there with its recorded size. A
//   secondary instance opens with table files missing (its writer may have
//   just deleted them) and then reads as if their rows did not exist. (A
//   damaged file of the right size fails the reads that reach it, with
//   RocksDB's checksums.)
// - no table file that the MANIFEST does not list holds the resume point of
//   a keyspace the database lacks. Resume points are only ever written
//   through the WAL, which RocksDB deletes once the table holding them is in
//   the MANIFEST; a MANIFEST that lost its last records therefore opens as
//   an older, often empty, cache, and a writer's open would delete the
//   evidence with the unlisted files.
//
// A writer's compaction or flush can change the files meanwhile (a table
// listed by the MANIFEST read, deleted before its size is checked); a
// failure is therefore retried before it counts: 3 times, or, beside a live
// writer (`writer_open`), whose compactions can win that race again and
// again on a loaded machine, 20 times (1 s). Real damage stays and fails
// every attempt.
Status CheckFiles(const std::string& dir, rocksdb::DBOptions options,
                  const std::vector<rocksdb::ColumnFamilyDescriptor>& families,
                  const std::string& ctx, bool writer_open) {
  const bool check_unlisted = !writer_open;
  options.max_open_files = 20;  // open table files on demand only
  auto damaged_log = std::make_shared<DamagedLogFinder>();
  options.info_log = damaged_log;  // and write nothing

  std::string problem;
  const int attempts = writer_open ? 20 : 3;
  for (int attempt = 0; attempt < attempts; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    rocksdb::DB* raw = nullptr;
    rocksdb::Status s = rocksdb::DB::OpenForReadOnly(options, dir, families, &handles, &raw);
    if (!s.ok()) {
      const char* why = s.getState();
      problem = why ? why : s.ToString();
      if (s.IsCorruption() && !damaged_log->found().empty()) {
        // Writers and readers alike: a log cut short opens at its last whole
        // record (a crash), damage before its end is refused.
        problem = "write-ahead log " + fs::path(damaged_log->found()).filename().string() +
                  " is damaged before its end (" + problem +
                  "), so the commits logged after the damage cannot be read: restore a "
                  "snapshot (kcache snapshot import) or sync into a new cache";
        break;
      }
      continue;
    }
    std::vector<rocksdb::LiveFileMetaData> files;
    raw->GetLiveFilesMetaData(&files);
    std::set<std::string> recorded;  // keyspaces with a resume point
    {
      const std::string prefix = MetaKey("rv", "");
      std::unique_ptr<rocksdb::Iterator> it(raw->NewIterator(rocksdb::ReadOptions(), handles[4]));
      for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
        recorded.insert(it->key().ToString().substr(prefix.size()));
      }
    }
    for (auto* h : handles) raw->DestroyColumnFamilyHandle(h);
    delete raw;
    problem.clear();
    std::set<std::string> live;
    for (const rocksdb::LiveFileMetaData& f : files) {
      const std::string name = fs::path(f.relative_filename).filename().string();
      live.insert(name);
      std::error_code ec;
      const uintmax_t size = fs::file_size(f.directory + "/" + f.relative_filename, ec);
      if (ec) {
        problem = "table file " + name + " is missing";
      } else if (size != f.size) {
        problem = "table file " + name + " has " + std::to_string(size) + " bytes, not " +
                  std::to_string(f.size);
      }
      if (!problem.empty()) break;
    }
    if (problem.empty() && check_unlisted) {
      for (const auto& [ks, file] : ResumePointsInUnlistedTables(dir, options, live)) {
        if (recorded.count(ks)) continue;
        problem = "keyspace " + ks + " is missing, though table file " + file +
                  " holds its resume point: that file is not listed" + DamagedManifest(dir);
        break;
      }
    }
    if (problem.empty()) return Status::OK();
  }
  return Status::Corruption(ctx + ": " + problem);
}

// Opens the database at `dir` with kcache's column families, checking its
// format version; `create` makes a new one there (with every family and its
// format version) instead.
StatusOr<std::shared_ptr<Db>> OpenFamilies(const std::string& dir, const CacheOptions& o,
                                           bool read_only, bool create) {
  const std::string ctx = "open cache " + dir;
  const bool exists = !create;
  rocksdb::DBOptions db_options = MakeDbOptions(o);
  db_options.create_if_missing = create;
  db_options.max_file_opening_threads = TableOpeningThreads(dir);
  // A writer adds the journal to a version 1 cache (the required families
  // are checked below).
  db_options.create_missing_column_families = !read_only;
  std::shared_ptr<rocksdb::Cache> cache = MakeBlockCache(o);

  bool has_journal = !exists || !read_only;
  bool journal_present = false;
  if (exists) {
    std::vector<std::string> have;
    rocksdb::Status s = rocksdb::DB::ListColumnFamilies(db_options, dir, &have);
    if (!s.ok()) return FromRocks(s, ctx);
    std::set<std::string> present(have.begin(), have.end());
    for (const std::string& name : RequiredFamilies()) {
      if (!present.count(name)) {
        return Status::Corruption(ctx + ": column family '" + name + "' is missing" +
                                  DamagedManifest(dir));
      }
    }
    journal_present = present.count(kJournalCF) > 0;
    has_journal = has_journal || journal_present;
  }
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  for (const std::string& name : RequiredFamilies()) {
    families.emplace_back(name, FamilyOptions(name, o, cache));
  }
  if (has_journal) families.emplace_back(kJournalCF, FamilyOptions(kJournalCF, o, cache));
  if (exists && !read_only && HeldByAnotherProcess(dir)) {
    // Said before any check, which a running writer's files could fail.
    return Status::Busy(ctx + ": the cache is in use by another process (its LOCK file is held)");
  }
  if (exists) {
    std::vector<rocksdb::ColumnFamilyDescriptor> there = families;
    if (!journal_present && has_journal) there.pop_back();  // a writer adds it to version 1
    // Beside a live writer, unlisted tables are its flushes and ingestions
    // in flight; the writer's own open checked them.
    const bool writer_open = read_only && (HeldByAnotherProcess(dir) || OpenForWriting(dir));
    KCACHE_RETURN_IF_ERROR(CheckFiles(dir, db_options, there, ctx, writer_open));
  }

  auto db = std::make_shared<Db>();
  db->dir = dir;
  db->read_only = read_only;
  db->options = o;
  db->write_options.sync = o.sync == SyncMode::kEveryCommit;
  rocksdb::Status s;
  if (read_only) {
    // The secondary instance's own files (its info log): in $TMPDIR, and
    // removed on close or, after a kill, by the next reader.
    const char* tmp = std::getenv("TMPDIR");
    KCACHE_ASSIGN_OR_RETURN(db->secondary_dir,
                            WorkDir::Create(tmp && *tmp ? tmp : "/tmp", "kcache-reader-"));
    KCACHE_ASSIGN_OR_RETURN(db_options.info_log, NewInfoLog(db->secondary_dir->path()));
    struct stat st;
    if (::stat(dir.c_str(), &st) == 0) {
      db->dir_device = st.st_dev;
      db->dir_inode = st.st_ino;
    }
    db->identity = ReadIdentity(dir);
    s = rocksdb::DB::OpenAsSecondary(db_options, dir, db->secondary_dir->path(), families,
                                     &db->handles, &db->db);
    // Opening is a first catch-up, and may miss a log as one can.
    if (s.ok()) s = db->db->TryCatchUpWithPrimary();
  } else {
    auto log = NewInfoLog(dir);
    if (!log.ok()) return log.status().WithContext(ctx);
    db_options.info_log = *std::move(log);
    s = rocksdb::DB::Open(db_options, dir, families, &db->handles, &db->db);
  }
  if (!s.ok()) return FromRocks(s, ctx);
  if (exists && !read_only) MakeFilesPrivate(dir);  // a cache written before files were private
  if (!read_only) {
    std::lock_guard l(writers_mu);
    db->registered_writer = Canonical(dir);
    Writers().insert(db->registered_writer);
  }
  db->objects = db->handles[1];
  db->index = db->handles[2];
  db->rindex = db->handles[3];
  db->meta = db->handles[4];
  if (has_journal) db->journal = db->handles[5];

  std::string format;
  s = db->db->Get(rocksdb::ReadOptions(), db->meta, kFormatKey, &format);
  if (s.IsNotFound()) {
    if (exists) {
      return Status::Corruption(ctx + ": no format version recorded" + DamagedManifest(dir));
    }
    s = db->db->Put(db->write_options, db->meta, kFormatKey, std::to_string(kPlainFormatVersion));
    if (!s.ok()) return FromRocks(s, ctx);
  } else if (!s.ok()) {
    return FromRocks(s, ctx);
  } else {
    int version = std::atoi(format.c_str());
    if (version <= 0) return Status::Corruption(ctx + ": bad format version \"" + format + "\"");
    if (version > kFormatVersion) {
      return Status::Unimplemented(ctx + ": cache format version " + format +
                                   " is newer than this kcache supports (" +
                                   std::to_string(kFormatVersion) + ")");
    }
    if (version < kPlainFormatVersion && !read_only) {
      // Version 1 lacks only the journal, which now exists (empty: each
      // keyspace's window starts at its resume point).
      s = db->db->Put(db->write_options, db->meta, kFormatKey, std::to_string(kPlainFormatVersion));
      if (!s.ok()) return FromRocks(s, ctx);
    }
  }
  KCACHE_RETURN_IF_ERROR(db->ReloadKeyring().WithContext(ctx));
  return db;
}

// Creates a cache at `dir` (absent or empty) atomically: a process killed
// at any instant leaves either no cache or a whole one, with every column
// family and its format version (NewDbSite).
Status CreateCache(const std::string& dir, const CacheOptions& o) {
  const std::string ctx = "create cache " + dir;
  StatusOr<std::unique_ptr<NewDbSite>> site = NewDbSite::Prepare(dir, "creating");
  // Another process created it meanwhile: open theirs.
  if (site.status().code() == StatusCode::kAlreadyExists) return Status::OK();
  if (!site.ok()) return site.status().WithContext(ctx);
  std::error_code ec;
  fs::create_directory((*site)->db_dir(), ec);
  if (ec) return Status::IOError(ctx + ": create " + (*site)->db_dir() + ": " + ec.message());
  {
    KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Db> db,
                            OpenFamilies((*site)->db_dir(), o, false, /*create=*/true));
  }  // closed: flushed and synced
  Status s = (*site)->Install();
  if (s.code() == StatusCode::kAlreadyExists) return Status::OK();
  return s.WithContext(ctx);
}

}  // namespace

Db::~Db() {
  StopIndexMerges();
  if (db) {
    // A clean close flushes the memtables, so that the next open replays no
    // log: a restart after a clean stop takes milliseconds. (After a crash
    // the log is replayed, as it must be.)
    if (!read_only && !writes_stopped_) {
      rocksdb::FlushOptions flush;
      flush.wait = true;
      db->Flush(flush, handles).PermitUncheckedError();
    } else if (writes_stopped_) {
      // No flush on close either: it would switch to a new WAL through the
      // failed writer. The next open replays the WAL.
      db->SetDBOptions({{"avoid_flush_during_shutdown", "true"}}).PermitUncheckedError();
    }
    for (auto* h : handles) db->DestroyColumnFamilyHandle(h);
    db->Close().PermitUncheckedError();
    delete db;
  }
  if (!registered_writer.empty()) {
    std::lock_guard l(writers_mu);
    Writers().erase(registered_writer);
  }
}

Status Db::SameCache() {
  if (!gone_.ok()) return gone_;
  struct stat st;
  std::string what;
  if (::stat(dir.c_str(), &st) != 0) {
    what = "was removed (" + std::string(std::strerror(errno)) + ")";
  } else if (st.st_dev != dir_device || st.st_ino != dir_inode) {
    what = "was removed, and another directory now has its name";
  } else if (const std::string now = ReadIdentity(dir); now != identity) {
    what = now.empty()
               ? "was removed or is being replaced (its IDENTITY file is gone)"
               : "was replaced by another cache (IDENTITY " + now + ", not " + identity + ")";
  } else {
    return Status::OK();
  }
  gone_ = Status::Expired("the cache " + dir + " " + what +
                          " since this reader opened it; reopen it to read the one there now");
  return gone_;
}

int64_t Db::NowMs() const {
  auto now = options.wall_clock ? options.wall_clock() : std::chrono::system_clock::now();
  return std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
}

std::shared_ptr<const Keyring> Db::keyring() const {
  std::lock_guard l(keyring_mu_);
  return keyring_;
}

void Db::set_keyring(std::shared_ptr<const Keyring> keyring) {
  std::lock_guard l(keyring_mu_);
  keyring_ = std::move(keyring);
}

Status Db::ReloadKeyring() {
  std::string row;
  rocksdb::Status s = db->Get(rocksdb::ReadOptions(), meta, kKeysKey, &row);
  if (!s.ok() && !s.IsNotFound()) return FromRocks(s, "read the keyring");
  std::optional<std::string> recorded;
  if (s.ok()) recorded = std::move(row);
  KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<const Keyring> ring,
                          Keyring::Load(recorded, options.encryption.key_encryption_key));
  set_keyring(std::move(ring));
  return Status::OK();
}

std::string Db::NowMillis() const { return std::to_string(NowMs()); }

rocksdb::Status Db::Write(rocksdb::WriteBatch* batch) { return WriteWith(write_options, batch); }

rocksdb::Status Db::WriteUnlogged(rocksdb::WriteBatch* batch) {
  rocksdb::WriteOptions unlogged = write_options;
  unlogged.disableWAL = true;
  unlogged.sync = false;  // nothing to sync: the flush that persists it syncs its tables
  return WriteWith(unlogged, batch);
}

namespace {

// Whether a write or an ingestion that returned `s` left the database as it
// was: success, or a refusal of what was given to it.
bool LeftAsItWas(const rocksdb::Status& s) {
  return s.ok() || s.IsInvalidArgument() || s.IsNotSupported() || s.IsBusy() || s.IsTryAgain();
}

}  // namespace

rocksdb::Status Db::WriteWith(const rocksdb::WriteOptions& options, rocksdb::WriteBatch* batch) {
  if (writes_stopped_) return WriteError();
  rocksdb::Status s;
  {
#if defined(KCACHE_PERSIST_UNDER_TSAN)
    std::lock_guard l(tsan_write_mu_);
#endif
    s = db->Write(options, batch);
  }
  // Errors of the batch itself leave the database as it was.
  return LeftAsItWas(s) ? s : StopWrites(s);
}

rocksdb::Status Db::Ingest(const std::vector<rocksdb::IngestExternalFileArg>& args) {
  if (writes_stopped_) return WriteError();
  rocksdb::Status s;
  {
#if defined(KCACHE_PERSIST_UNDER_TSAN)
    std::lock_guard l(tsan_write_mu_);
#endif
    s = db->IngestExternalFiles(args);
  }
  // Files it refuses leave the database as it was.
  return LeftAsItWas(s) ? s : StopWrites(s);
}

std::unique_ptr<Db::IndexCompactionHold> Db::HoldIndexCompactions() {
  std::lock_guard l(index_holds_mu_);
  if (index_holds_++ == 0) {
    // Failing, it leaves compactions on: slower, not wrong.
    db->SetOptions(index, {{"disable_auto_compactions", "true"}}).PermitUncheckedError();
  }
  return std::unique_ptr<IndexCompactionHold>(new IndexCompactionHold(this));
}

void Db::ReleaseIndexCompactions() {
  std::lock_guard l(index_holds_mu_);
  if (--index_holds_ == 0) {
    // SetOptions changes the running options, then writes them to a new
    // OPTIONS file; only the file can fail, and a cache is opened with
    // kcache's options, not the file's.
    db->SetOptions(index, {{"disable_auto_compactions", "false"}}).PermitUncheckedError();
  }
}

void Db::MergeIndex(std::string start, std::string limit,
                    std::unique_ptr<IndexCompactionHold> hold) {
  std::lock_guard l(merges_mu_);
  if (merges_stopped_) return;  // closing: the hold ends here
  merges_.push_back({std::move(start), std::move(limit), std::move(hold)});
  if (!merger_.joinable()) {
    merger_ = std::thread([this] { RunIndexMerges(); });
    pthread_setname_np(merger_.native_handle(), "kcache-merge");
  }
  merges_cv_.notify_all();
}

void Db::RunIndexMerges() {
  std::unique_lock l(merges_mu_);
  for (;;) {
    merges_cv_.wait(l, [&] { return merges_stopped_ || !merges_.empty(); });
    if (merges_stopped_) return;
    IndexMerge m = std::move(merges_.front());
    merges_.pop_front();
    merging_ = true;
    l.unlock();
    rocksdb::CompactRangeOptions cro;
    cro.exclusive_manual_compaction = false;  // other families' compactions go on
    cro.canceled = &merge_canceled_;
    // One thread merges: RocksDB forms no subcompactions for a compaction
    // from level 0 into an empty output level (Compaction::
    // ShouldFormSubcompactions), which a first list's merge is; its tables
    // cut apart, max_subcompactions 2 and an idle thread gave one all the
    // same (2026-11-28).
    rocksdb::Slice b(m.start), e(m.limit);
    rocksdb::Status s = db->CompactRange(cro, index, &b, &e);
    m.hold.reset();
    l.lock();
    merging_ = false;
    if (!s.ok() && merge_error_.ok() && !merge_canceled_) merge_error_ = s;
    merges_cv_.notify_all();
  }
}

rocksdb::Status Db::WaitForIndexMerges() {
  std::unique_lock l(merges_mu_);
  merges_cv_.wait(l, [&] { return merges_stopped_ || (merges_.empty() && !merging_); });
  return std::exchange(merge_error_, rocksdb::Status::OK());
}

void Db::StopIndexMerges() {
  std::deque<IndexMerge> dropped;  // their holds end outside the lock
  {
    std::lock_guard l(merges_mu_);
    merges_stopped_ = true;
    dropped.swap(merges_);
  }
  merge_canceled_ = true;
  merges_cv_.notify_all();
  if (merger_.joinable()) merger_.join();
}

rocksdb::Status Db::CatchUp() {
  rocksdb::Status s = db->TryCatchUpWithPrimary();
  return s.ok() ? db->TryCatchUpWithPrimary() : s;
}

rocksdb::Status Db::FlushAll() {
  if (writes_stopped_) return WriteError();
  rocksdb::FlushOptions flush;
  flush.wait = true;
  rocksdb::Status s = db->Flush(flush, handles);
  return s.ok() ? s : StopWrites(s);
}

rocksdb::Status Db::StopWrites(const rocksdb::Status& s) {
  std::lock_guard l(write_error_mu_);
  if (!writes_stopped_) {
    write_error_ = rocksdb::Status::IOError(
        "writes to " + dir +
            " stopped after an error; what was committed before it is kept, "
            "and reopening the cache once the cause is fixed goes on from there",
        s.ToString());
    writes_stopped_ = true;
  }
  return write_error_;
}

rocksdb::Status Db::Put(rocksdb::ColumnFamilyHandle* family, std::string_view key,
                        std::string_view value) {
  rocksdb::WriteBatch batch;
  rocksdb::Status s = batch.Put(family, rocksdb::Slice(key.data(), key.size()),
                                rocksdb::Slice(value.data(), value.size()));
  return s.ok() ? Write(&batch) : s;
}

rocksdb::Status Db::WriteError() const {
  std::lock_guard l(write_error_mu_);
  return write_error_;
}

rocksdb::Options FamilyOnlyOptions(const std::string& name, const CacheOptions& o) {
  return rocksdb::Options(MakeDbOptions(o), FamilyOptions(name, o, MakeBlockCache(o)));
}

rocksdb::Options FirstListObjectOptions(const CacheOptions& o) {
  rocksdb::Options options = FamilyOnlyOptions(kObjectsCF, o);
  if (o.fast_first_list) {
    // A table file writer compresses as the bottommost level does.
    options.bottommost_compression = rocksdb::kLZ4Compression;
    options.bottommost_compression_opts.enabled = false;
  }
  return options;
}

rocksdb::IngestExternalFileArg MovedTableFiles(rocksdb::ColumnFamilyHandle* family,
                                               std::vector<std::string> files) {
  rocksdb::IngestExternalFileArg arg;
  arg.column_family = family;
  arg.external_files = std::move(files);
  arg.options.move_files = true;
  return arg;
}

std::vector<rocksdb::ColumnFamilyHandle*> RowFamilies(const Db& db) {
  return {db.meta, db.objects, db.rindex, db.index};
}

rocksdb::Options ObjectsLikeOptions(const CacheOptions& o) {
  return rocksdb::Options(MakeDbOptions(o), FamilyOptions(kObjectsCF, o, MakeBlockCache(o)));
}

StatusOr<std::shared_ptr<Db>> OpenDb(const std::string& dir, const CacheOptions& o,
                                     bool read_only) {
  const std::string ctx = "open cache " + dir;
  std::string why;
  switch (InspectDir(dir, &why)) {
    case DirState::kForeign:
      return Status::FailedPrecondition(ctx + ": " + why);
    case DirState::kAbsent:
    case DirState::kEmpty:
      if (read_only || !o.create_if_missing) return Status::NotFound(ctx + ": no cache there");
      KCACHE_RETURN_IF_ERROR(CreateCache(dir, o));
      break;
    case DirState::kCache:
      if (!read_only) TidyCacheDir(dir);
      break;
  }
  return OpenFamilies(dir, o, read_only, /*create=*/false);
}

DbSnapshot TakeSnapshot(const std::shared_ptr<Db>& db) {
  if (db->read_only) return nullptr;
  return DbSnapshot(db->db->GetSnapshot(),
                    [db](const rocksdb::Snapshot* s) { db->db->ReleaseSnapshot(s); });
}

}  // namespace kcache::storage
