// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/snapshot.h"
#include "tools/kcache/progress.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <ostream>
#include <sstream>

#include "kcache/cache.h"
#include "kcache/snapshot.h"
#include "tools/kcache/command.h"
#include "tools/kcache/kubectl/printers.h"
#include "util/rfc3339.h"

namespace kcache::tool {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

std::string SnapshotProgressLine(const SnapshotProgress& p, const char* verb, double seconds) {
  const double rate = p.objects / std::max(seconds, 1e-3);
  std::ostringstream out;
  out << verb << ": " << p.objects << "/" << p.objects_total << " objects, " << std::fixed
      << std::setprecision(1) << p.raw_bytes / 1e6 << " MB of rows, " << p.file_bytes / 1e6
      << " MB of file, " << p.raw_bytes / 1e6 / std::max(seconds, 1e-3) << " MB/s"
      << TimeLeft(static_cast<double>(p.objects_total) - static_cast<double>(p.objects), rate);
  return out.str();
}

namespace {

// Progress on a terminal, at most ten times a second.
SnapshotProgressFn Progress(const SnapshotOptions& options, std::ostream& progress,
                            const char* verb) {
  if (!options.progress) return {};
  auto start = Clock::now();
  auto last = std::make_shared<Clock::time_point>();
  return [&progress, verb, start, last](const SnapshotProgress& p) {
    auto now = Clock::now();
    if (now - *last < std::chrono::milliseconds(100)) return;
    *last = now;
    double secs = std::chrono::duration<double>(now - start).count();
    progress << "\r\033[K" << SnapshotProgressLine(p, verb, secs) << std::flush;
  };
}

void EndProgress(const SnapshotOptions& options, std::ostream& progress) {
  if (options.progress) progress << "\r\033[K" << std::flush;
}

void PrintManifest(const SnapshotManifest& m, std::ostream& out) {
  out << "format " << m.format_version << " (rows in storage format " << m.storage_format
      << "), created " << util::FormatRfc3339(m.created) << "\n";
  if (m.cluster)
    out << "cluster " << m.cluster->server
        << (m.cluster->version.empty() ? "" : " (" + m.cluster->version + ")") << "\n";
  std::vector<std::vector<std::string>> rows = {
      {"RESOURCE", "KIND", "OBJECTS", "RESOURCEVERSION", "INDEXES"}};
  for (const KeyspaceStats& r : m.resources) {
    std::string indexes;
    for (const auto& [name, version] : r.indexes) indexes += (indexes.empty() ? "" : ",") + name;
    rows.push_back({r.name, r.resource ? r.resource->kind : "<unknown>", std::to_string(r.objects),
                    r.relist_in_progress
                        ? "<relist incomplete>"
                        : (r.resource_version.empty() ? "<none>" : r.resource_version),
                    indexes.empty() ? "<none>" : indexes});
  }
  PrintTable(rows, out);
}

// Opens a cache to copy: writable if no sync holds it, else read-only (a
// secondary instance, which sees the cache as of opening).
StatusOr<std::shared_ptr<Cache>> OpenToCopy(const std::string& dir) {
  CacheOptions o;
  o.create_if_missing = false;
  KCACHE_ASSIGN_OR_RETURN(o.encryption.key_encryption_key, GivenKeyEncryptionKey());
  // A cache on a read-only volume (a backup taken from one) is read as a
  // reader does: a writer's open would write its LOG there.
  if (::access(dir.c_str(), W_OK) != 0 && errno != ENOENT) return Cache::OpenReadOnly(dir, o);
  StatusOr<std::shared_ptr<Cache>> cache = Cache::Open(dir, o);
  if (cache.ok() || cache.status().code() != StatusCode::kBusy) return cache;
  return Cache::OpenReadOnly(dir, o);
}

std::string Seconds(Clock::time_point start) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(2)
    << std::chrono::duration<double>(Clock::now() - start).count() << " s";
  return s.str();
}

}  // namespace

Status RunSnapshotCreate(const SnapshotOptions& options, std::ostream& out, std::ostream&) {
  if (options.cache_dir.empty()) return Status::InvalidArgument("--cache DIR is required");
  if (options.target.empty())
    return Status::InvalidArgument(
        "name the directory to create, e.g. kcache snapshot create --cache DIR OUTDIR");
  auto start = Clock::now();
  KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Cache> cache, OpenToCopy(options.cache_dir));
  KCACHE_RETURN_IF_ERROR(cache->Checkpoint(options.target));
  out << "created " << options.target << " from " << options.cache_dir << " in " << Seconds(start)
      << "\n";
  return Status::OK();
}

// The keyspace of core Secrets.
constexpr char kSecrets[] = "secrets";

Status RunSnapshotExport(const SnapshotOptions& options, std::ostream& out,
                         std::ostream& progress) {
  if (options.cache_dir.empty()) return Status::InvalidArgument("--cache DIR is required");
  if (options.target.empty())
    return Status::InvalidArgument(
        "name the file to write, e.g. kcache snapshot export --cache DIR FILE");
  if (options.zstd_level < 1 || options.zstd_level > 19)
    return Status::InvalidArgument("--zstd-level must be between 1 and 19");
  auto start = Clock::now();
  KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Cache> cache, OpenToCopy(options.cache_dir));
  ExportOptions eo;
  eo.zstd_level = options.zstd_level;
  eo.progress = Progress(options, progress, "exporting");
  if (options.exclude_secrets) eo.exclude_keyspaces.push_back(kSecrets);
  StatusOr<SnapshotManifest> m = ExportSnapshot(*cache, options.target, eo);
  // A reader's view that changed as it was read: a fresh one is whole.
  for (int again = 0; again < 3 && m.status().code() == StatusCode::kAborted; ++again) {
    cache.reset();
    KCACHE_ASSIGN_OR_RETURN(cache, OpenToCopy(options.cache_dir));
    m = ExportSnapshot(*cache, options.target, eo);
  }
  EndProgress(options, progress);
  KCACHE_RETURN_IF_ERROR(m.status());
  out << "exported " << options.cache_dir << " to " << options.target << " ("
      << std::filesystem::file_size(options.target) << " bytes) in " << Seconds(start) << "\n";
  PrintManifest(*m, out);
  for (const KeyspaceStats& r : m->resources) {
    if (r.name == kSecrets && r.objects > 0) {
      out << "note: the file holds " << r.objects
          << " Secret(s) in the clear; it is readable by its owner only (mode 0600). "
             "--exclude-secrets leaves them out\n";
    }
  }
  if (options.exclude_secrets) out << "Secrets were left out (--exclude-secrets)\n";
  return Status::OK();
}

Status RunSnapshotImport(const SnapshotOptions& options, std::ostream& out,
                         std::ostream& progress) {
  if (options.cache_dir.empty()) return Status::InvalidArgument("--cache DIR is required");
  if (options.target.empty())
    return Status::InvalidArgument(
        "name the snapshot file, e.g. kcache snapshot import FILE --cache DIR");
  auto start = Clock::now();
  ImportOptions io;
  io.progress = Progress(options, progress, "importing");
  KCACHE_ASSIGN_OR_RETURN(io.cache.encryption.key_encryption_key, GivenKeyEncryptionKey());
  StatusOr<SnapshotManifest> m = ImportSnapshot(options.target, options.cache_dir, io);
  EndProgress(options, progress);
  KCACHE_RETURN_IF_ERROR(m.status());
  out << "imported " << options.target << " into " << options.cache_dir << " in " << Seconds(start)
      << "; kcache sync resumes from its resource versions\n";
  PrintManifest(*m, out);
  return Status::OK();
}

Status RunSnapshotVerify(const SnapshotOptions& options, std::ostream& out,
                         std::ostream& progress) {
  if (options.target.empty())
    return Status::InvalidArgument("name the snapshot file, e.g. kcache snapshot verify FILE");
  auto start = Clock::now();
  KCACHE_ASSIGN_OR_RETURN(std::string key, GivenKeyEncryptionKey());
  StatusOr<SnapshotManifest> m =
      VerifySnapshot(options.target, Progress(options, progress, "verifying"), key);
  EndProgress(options, progress);
  KCACHE_RETURN_IF_ERROR(m.status());
  out << options.target << ": OK (checksums, manifest, row order, indexes, objects) in "
      << Seconds(start) << "\n";
  PrintManifest(*m, out);
  return Status::OK();
}

namespace {

// One run for the four verbs: `verb` picks the flags and the action.
int SnapshotVerb(const Command& self, const std::vector<std::string>& args) {
  const std::string verb = std::string(self.name).substr(9);
  SnapshotOptions o;
  int64_t level = 1;
  cli::FlagSet flags;
  if (verb != "verify") {
    flags.String(
        "cache", '\0', &o.cache_dir,
        verb == "import" ? "the cache directory to create" : "the cache directory to copy");
  }
  KeyFlags(flags);
  if (verb == "export") {
    flags.Int("zstd-level", '\0', &level, "zstd compression level, 1 (fast) to 19 (small)");
    flags.Bool("exclude-secrets", '\0', &o.exclude_secrets,
               "leave Secrets out of the file (its mode is 0600 either way)");
  }
  std::vector<std::string> positional;
  if (int rc = ParseFlags(self, flags, args, &positional); rc >= 0) return rc;
  if (positional.size() > 1) {
    return Fail(Status::InvalidArgument("unexpected argument \"" + positional[1] + "\""),
                self.name);
  }
  if (!positional.empty()) o.target = positional[0];
  o.zstd_level = static_cast<int>(level);
  o.progress = isatty(STDERR_FILENO);
  Status st;
  if (verb == "create") {
    st = RunSnapshotCreate(o, std::cout, std::cerr);
  } else if (verb == "export") {
    st = RunSnapshotExport(o, std::cout, std::cerr);
  } else if (verb == "import") {
    st = RunSnapshotImport(o, std::cout, std::cerr);
  } else {
    st = RunSnapshotVerify(o, std::cout, std::cerr);
  }
  return st.ok() ? 0 : Fail(st, self.name);
}

// `kcache snapshot` alone, or with a verb no row has.
int SnapshotGroup(const Command& self, const std::vector<std::string>& args) {
  if (GroupHelp(self, args)) return 0;
  std::string verbs;
  for (const Command& c : kSnapshotCommands) {
    verbs += (verbs.empty() ? "" : ", ") + std::string(c.name).substr(9);
  }
  if (args.empty()) {
    return Fail(Status::InvalidArgument("name a snapshot command: " + verbs), "snapshot");
  }
  return Fail(Status::InvalidArgument("unknown snapshot command \"" + args[0] +
                                      "\" (available: " + verbs + ")"),
              "snapshot");
}

}  // namespace

const Command kSnapshotCommand = {
    "snapshot",
    "snapshot (create | export | import | verify) ARGS [flags]",
    "consistent copies of a cache: a directory or one portable, checksummed file",
    "Consistent copies of a cache: create (a directory), export (one portable, checksummed "
    "file), import (a new cache from a file; sync resumes from it) and verify (a file's "
    "checksums, manifest and indexes). All of them also while kcache sync writes the cache.",
    "  kcache snapshot export --cache /var/lib/kcache before.kcs\n"
    "  kcache snapshot verify before.kcs\n"
    "  kcache snapshot import before.kcs --cache ./restored\n"
    "  kcache snapshot create --cache /var/lib/kcache ./copy\n",
    SnapshotGroup};

const std::vector<Command> kSnapshotCommands = {
    {"snapshot create", "snapshot create --cache DIR OUTDIR",
     "a consistent copy of a cache as a directory (also while sync runs)",
     "A consistent copy of a cache as a new directory (RocksDB checkpoint: hard links where "
     "the file system allows).",
     "  kcache snapshot create --cache /var/lib/kcache ./copy\n", SnapshotVerb},
    {"snapshot export", "snapshot export --cache DIR FILE [--zstd-level N]",
     "a consistent copy of a cache as one portable, checksummed file",
     "A consistent copy of a cache as one portable file, zstd-compressed and checksummed "
     "block by block (docs/snapshot-format.md).",
     "  kcache snapshot export --cache /var/lib/kcache before.kcs\n"
     "  kcache snapshot export --cache /var/lib/kcache small.kcs --zstd-level 19\n",
     SnapshotVerb},
    {"snapshot import", "snapshot import FILE --cache DIR",
     "a new cache from a snapshot file; sync resumes from it",
     "A new cache from a snapshot file, after checking every block; a sync started on it "
     "resumes from the snapshot's resume points.",
     "  kcache snapshot import before.kcs --cache ./restored\n", SnapshotVerb},
    {"snapshot verify", "snapshot verify FILE",
     "check a snapshot file's checksums, manifest and indexes",
     "Checks a snapshot file's checksums, manifest and indexes without importing it.",
     "  kcache snapshot verify before.kcs\n", SnapshotVerb},
};

}  // namespace kcache::tool
