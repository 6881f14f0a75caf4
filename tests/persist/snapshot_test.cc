// SPDX-License-Identifier: Apache-2.0

// Snapshot files and checkpoints: round trips, a point in time while a
// writer runs, and every way a file can be damaged.
#include "kcache/snapshot.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include <sys/stat.h>

#include "kcache/cache.h"
#include "persist/encoding.h"
#include "persist/snapshot_format.h"
#include "testing/objects.h"
#include "testing/raw_rows.h"
#include "testing/status_matchers.h"
#include "testing/temp_dir.h"
#include "util/crc32c.h"

namespace kcache {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::Pod;

using testing::ByNode;
using testing::ByNodeOptions;

// A cache with namespaced pods (labels, a custom index) and cluster-scoped
// nodes, with resource and cluster records.
void Fill(const std::string& dir, int pods) {
  auto cache = Cache::Open(dir);
  ASSERT_OK(cache) << cache.status();
  auto ks = (*cache)->OpenKeyspace("pods", ByNodeOptions());
  ASSERT_OK(ks) << ks.status();
  Transaction txn;
  for (int i = 0; i < pods; ++i) {
    txn.Add(Pod("p" + std::to_string(i), "ns-" + std::to_string(i % 3), std::to_string(i + 1),
                {{"app", "a" + std::to_string(i % 5)}}, {{"node", "n" + std::to_string(i % 7)}}));
  }
  txn.resource_version = "1000";
  ASSERT_OK((*ks)->Commit(txn, nullptr));
  auto nodes = (*cache)->OpenKeyspace("nodes");
  ASSERT_OK(nodes);
  ASSERT_OK((*nodes)->Add(Pod("n1", "", "7")));
  ASSERT_OK((*cache)->SetResourceInfo(
      "pods", ResourceInfo({.version = "v1", .resource = "pods", .kind = "Pod"})));
  ASSERT_OK((*cache)->SetResourceInfo(
      "nodes",
      ResourceInfo({.version = "v1", .resource = "nodes", .kind = "Node", .namespaced = false})));
  ASSERT_OK((*cache)->SetClusterInfo({"https://10.0.0.1:6443", "v1.20.2", "5f1c-uid"}));
}

// name -> resourceVersion of every object of every keyspace. Read through
// a reader, which leaves the indexes as they are.
std::map<std::string, std::string> Contents(Cache& writer) {
  std::map<std::string, std::string> out;
  auto reader = Cache::OpenReadOnly(writer.dir());
  EXPECT_OK(reader) << reader.status();
  Cache& cache = **reader;
  auto names = cache.ListKeyspaces();
  EXPECT_OK(names);
  for (const std::string& ks : *names) {
    auto store = cache.OpenKeyspace(ks);
    EXPECT_OK(store) << store.status();
    for (auto it = (*store)->NewIterator(); it->Valid(); it->Next()) {
      out[ks + " " + it->key()] = it->object()->resource_version();
    }
  }
  return out;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

class SnapshotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Fill(dir_.Sub("cache"), 5000);
    auto cache = Cache::Open(dir_.Sub("cache"));
    ASSERT_OK(cache);
    want_ = Contents(**cache);
    auto m = ExportSnapshot(**cache, file());
    ASSERT_OK(m) << m.status();
    manifest_ = *m;
  }
  std::string file() const { return dir_.Sub("cache.kcs"); }
  // The directory holds nothing but what the test made: no partial import.
  void ExpectNoTraceOf(const std::string& target) {
    EXPECT_FALSE(fs::exists(target)) << target;
    for (const auto& e : fs::directory_iterator(dir_.path())) {
      EXPECT_THAT(e.path().filename().string(), ::testing::Not(HasSubstr(".partial-"))) << e.path();
    }
  }

  testing::TempDir dir_;
  std::map<std::string, std::string> want_;
  SnapshotManifest manifest_;
};

TEST_F(SnapshotTest, ManifestDescribesTheCache) {
  EXPECT_EQ(manifest_.format_version, 1);
  EXPECT_EQ(manifest_.storage_format, 1);
  ASSERT_TRUE(manifest_.cluster.has_value());
  EXPECT_EQ(manifest_.cluster->server, "https://10.0.0.1:6443");
  EXPECT_EQ(manifest_.cluster->version, "v1.20.2");
  EXPECT_EQ(manifest_.cluster->uid, "5f1c-uid");
  ASSERT_EQ(manifest_.resources.size(), 2u);
  const KeyspaceStats& nodes = manifest_.resources[0];
  const KeyspaceStats& pods = manifest_.resources[1];
  EXPECT_EQ(nodes.name, "nodes");
  EXPECT_EQ(nodes.objects, 1u);
  ASSERT_TRUE(nodes.resource.has_value());
  EXPECT_FALSE(nodes.resource->namespaced);
  EXPECT_EQ(pods.name, "pods");
  EXPECT_EQ(pods.objects, 5000u);
  EXPECT_EQ(pods.resource_version, "1000");
  EXPECT_TRUE(pods.last_sync.has_value());
  EXPECT_EQ(pods.resource->kind, "Pod");
  EXPECT_THAT(pods.indexes,
              ::testing::Contains(std::pair<std::string, std::string>("by-node", "by-node@1")));
  auto read = ReadSnapshotManifest(file());
  ASSERT_OK(read) << read.status();
  EXPECT_EQ(read->resources.size(), 2u);
  EXPECT_EQ(
      std::chrono::duration_cast<std::chrono::milliseconds>(read->created.time_since_epoch()),
      std::chrono::duration_cast<std::chrono::milliseconds>(manifest_.created.time_since_epoch()));
}

// Found by storage_records_fuzz: a number that is not an integer in range
// (a float, or too large) was cast, undefined behaviour; it is a malformed
// manifest now.
TEST(SnapshotManifestTest, IntegersOutOfRangeAreMalformed) {
  const std::string ok =
      R"({"formatVersion":1,"storageFormat":1,"created":"2026-01-01T00:00:00Z","resources":[]})";
  ASSERT_TRUE(snapshot::DecodeManifest(ok).ok()) << snapshot::DecodeManifest(ok).status();
  for (const char* version : {"1.5e125", "2.5", "4294967296", "-1e300"}) {
    std::string text = ok;
    text.replace(text.find(":1,"), 3, std::string(":") + version + ",");
    StatusOr<SnapshotManifest> m = snapshot::DecodeManifest(text);
    ASSERT_FALSE(m.ok()) << text;
    EXPECT_TRUE(m.status().IsCorruption()) << m.status();
  }
  std::string objects = R"({"formatVersion":1,"storageFormat":1,"created":"2026-01-01T00:00:00Z",)"
                        R"("resources":[{"keyspace":"pods","objects":-3,"resourceVersion":"5"}]})";
  EXPECT_TRUE(snapshot::DecodeManifest(objects).status().IsCorruption());
}

TEST_F(SnapshotTest, ImportGivesTheSameCacheWithItsResumePointsAndIndexes) {
  auto verified = VerifySnapshot(file());
  ASSERT_OK(verified) << verified.status();
  std::vector<SnapshotProgress> seen;
  ImportOptions io;
  io.progress = [&](const SnapshotProgress& p) { seen.push_back(p); };
  auto m = ImportSnapshot(file(), dir_.Sub("restored"), io);
  ASSERT_OK(m) << m.status();
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back().objects, 5001u);
  EXPECT_EQ(seen.back().objects_total, 5001u);

  auto cache = Cache::Open(dir_.Sub("restored"), {.create_if_missing = false});
  ASSERT_OK(cache) << cache.status();
  EXPECT_OK((*cache)->Verify());
  EXPECT_EQ(Contents(**cache), want_);
  auto stats = (*cache)->Stats("pods");
  ASSERT_OK(stats);
  EXPECT_EQ(stats->objects, 5000u);
  EXPECT_EQ(stats->resource_version, "1000");
  EXPECT_EQ(stats->resource->kind, "Pod");
  auto cluster = (*cache)->GetClusterInfo();
  ASSERT_TRUE(cluster.ok() && cluster->has_value());
  EXPECT_EQ((*cluster)->version, "v1.20.2");
  EXPECT_EQ((*cluster)->uid, "5f1c-uid");
  // The custom index came across as entries: no rebuild needed to query it
  // when the keyspace opens with the same version.
  auto pods = (*cache)->OpenKeyspace("pods", ByNodeOptions());
  ASSERT_OK(pods);
  EXPECT_EQ((*pods)->LastSyncResourceVersion(), "1000");
  auto on_n3 = (*pods)->ByIndex("by-node", "n3");
  ASSERT_OK(on_n3);
  EXPECT_EQ(on_n3->size(), 714u);  // i % 7 == 3 for i < 5000
  auto labelled = (*pods)->IndexKeys(kLabelIndex, "app=a2");
  ASSERT_OK(labelled);
  EXPECT_EQ(labelled->size(), 1000u);
  // And the restored cache takes writes.
  EXPECT_OK((*pods)->Add(Pod("new", "ns-0", "1001")));
}

TEST_F(SnapshotTest, ReadOnlyCachesAreQueriedByRecordedIndexes) {
  ASSERT_OK(ImportSnapshot(file(), dir_.Sub("restored")));
  auto cache = Cache::OpenReadOnly(dir_.Sub("restored"));
  ASSERT_OK(cache);
  auto pods = (*cache)->OpenKeyspace("pods");  // no index functions given
  ASSERT_OK(pods);
  auto on_n3 = (*pods)->IndexKeys("by-node", "n3");
  ASSERT_OK(on_n3) << on_n3.status();
  EXPECT_EQ(on_n3->size(), 714u);
  auto computed = (*pods)->Index("by-node", *Pod("x", "ns-0"));
  EXPECT_EQ(computed.status().code(), StatusCode::kFailedPrecondition);
}

TEST_F(SnapshotTest, ImportRefusesANonEmptyTargetAndLeavesItAlone) {
  fs::create_directories(dir_.Sub("busy"));
  WriteFile(dir_.Sub("busy/keep"), "x");
  auto m = ImportSnapshot(file(), dir_.Sub("busy"));
  EXPECT_EQ(m.status().code(), StatusCode::kAlreadyExists) << m.status();
  EXPECT_EQ(ReadFile(dir_.Sub("busy/keep")), "x");
  fs::create_directories(dir_.Sub("empty"));
  EXPECT_OK(ImportSnapshot(file(), dir_.Sub("empty")));
}

// Every way of damaging the file gives a clear error and no cache.
TEST_F(SnapshotTest, DamagedFilesAreRefusedWithTheirPlaceAndLeaveNoCache) {
  const std::string good = ReadFile(file());
  ASSERT_GT(good.size(), 4096u);
  struct Case {
    std::string name;
    std::string bytes;
    StatusCode code;
    std::string message;
  };
  std::string flipped_rows = good;
  flipped_rows[good.size() / 2] ^= 0x40;
  std::string flipped_manifest = good;
  flipped_manifest[snapshot::kHeaderBytes + snapshot::kBlockHeaderBytes + 3] ^= 0x01;
  std::string flipped_length = good;
  flipped_length[snapshot::kHeaderBytes + 9] ^= 0x7f;
  std::string newer = good;
  newer[8] = 2;  // version 2, checksum fixed below
  {
    uint32_t crc = util::Crc32c(newer.substr(0, 12));
    for (int i = 0; i < 4; ++i) newer[12 + i] = static_cast<char>(crc >> (8 * i));
  }
  std::vector<Case> cases = {
      {"empty", "", StatusCode::kInvalidArgument, "is not a kcache snapshot"},
      {"text", "hello, world\n", StatusCode::kInvalidArgument, "is not a kcache snapshot"},
      {"header only", good.substr(0, 12), StatusCode::kCorruption, "truncated in the file header"},
      {"newer", newer, StatusCode::kUnimplemented, "snapshot format version 2 is newer"},
      {"cut in a block header", good.substr(0, snapshot::kHeaderBytes + 5), StatusCode::kCorruption,
       "block 0 at byte 16: the file is truncated"},
      {"cut in the rows", good.substr(0, good.size() / 2), StatusCode::kCorruption,
       "the file is truncated"},
      {"cut before the end block", good.substr(0, good.size() - 20), StatusCode::kCorruption,
       "truncated"},
      {"flipped row byte", flipped_rows, StatusCode::kCorruption, "checksum mismatch"},
      {"flipped manifest byte", flipped_manifest, StatusCode::kCorruption,
       "block 0 at byte 16: checksum mismatch"},
      {"bad length", flipped_length, StatusCode::kCorruption, "block 0 at byte 16"},
      {"trailing bytes", good + "x", StatusCode::kCorruption, "bytes follow the end block"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = dir_.Sub("bad.kcs");
    WriteFile(path, c.bytes);
    auto v = VerifySnapshot(path);
    EXPECT_EQ(v.status().code(), c.code) << v.status();
    EXPECT_THAT(std::string(v.status().message()), HasSubstr(c.message));
    auto i = ImportSnapshot(path, dir_.Sub("target"));
    EXPECT_EQ(i.status().code(), c.code) << i.status();
    ExpectNoTraceOf(dir_.Sub("target"));
    // Read in place: refused at open with the same error.
    auto o = OpenSnapshot(path);
    EXPECT_EQ(o.status().code(), c.code) << o.status();
    EXPECT_THAT(std::string(o.status().message()), HasSubstr(c.message));
  }
  // A file cut anywhere is refused: every prefix at ~200 offsets across it.
  const size_t stride = std::max<size_t>(1, good.size() / 200);
  for (size_t n = 0; n < good.size(); n += stride) {
    SCOPED_TRACE("cut to " + std::to_string(n) + " bytes");
    const std::string path = dir_.Sub("cut.kcs");
    WriteFile(path, good.substr(0, n));
    auto v = VerifySnapshot(path);
    ASSERT_FALSE(v.ok());
    EXPECT_TRUE(v.status().code() == StatusCode::kCorruption ||
                v.status().code() == StatusCode::kInvalidArgument)
        << v.status();
  }
  auto missing = VerifySnapshot(dir_.Sub("absent.kcs"));
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(OpenSnapshot(dir_.Sub("absent.kcs")).status().code(), StatusCode::kNotFound);
}

// Files whose blocks are intact but whose content disagrees with itself:
// written with the format's own writer, so only the content is wrong.
class CraftedSnapshotTest : public ::testing::Test {
 protected:
  // One keyspace "pods" with `objects` rows; the manifest says `claimed`.
  std::string Write(int objects, int claimed, bool drop_index_entry, bool unsorted = false) {
    const std::string path = dir_.Sub("crafted.kcs");
    auto w = snapshot::FileWriter::Create(path, 1);
    EXPECT_OK(w);
    SnapshotManifest m;
    m.format_version = manifest_format_;
    m.storage_format = 1;
    m.created = std::chrono::system_clock::now();
    KeyspaceStats ks;
    ks.name = "pods";
    ks.objects = claimed;
    ks.resource_version = "9";
    m.resources.push_back(ks);
    EXPECT_OK((*w)->WriteBlock(snapshot::BlockType::kManifest, snapshot::EncodeManifest(m)));
    std::string rows;
    using storage::Family;
    snapshot::AppendRow(&rows, Family::kMeta, storage::MetaKey("count", "pods"),
                        std::to_string(objects));
    snapshot::AppendRow(&rows, Family::kMeta, storage::MetaKey("rv", "pods"), "9");
    std::vector<std::string> keys;
    for (int i = 0; i < objects; ++i) keys.push_back("ns/p" + std::to_string(i));
    std::sort(keys.begin(), keys.end());
    if (unsorted) std::swap(keys[0], keys[1]);
    for (const std::string& k : keys) {
      std::string json =
          R"({"kind":"Pod","apiVersion":"v1","metadata":{"namespace":"ns","name":")" + k.substr(3) +
          R"(","resourceVersion":"1"}})";
      if (k == keys[0] && !first_json_.empty()) json = first_json_;
      snapshot::AppendRow(&rows, Family::kObjects, storage::ObjectKey("pods", k),
                          storage::EncodeObject("1", json));
    }
    for (const std::string& k : keys) {
      snapshot::AppendRow(&rows, Family::kReverseIndex, storage::ObjectKey("pods", k),
                          storage::EncodeEntries({{"kcache.io/labels", "app=x"}}));
    }
    for (size_t i = drop_index_entry ? 1 : 0; i < keys.size(); ++i) {
      snapshot::AppendRow(&rows, Family::kIndex,
                          storage::IndexKey("pods", "kcache.io/labels", "app=x", keys[i]), "");
    }
    EXPECT_OK((*w)->WriteBlock(snapshot::BlockType::kRows, rows));
    int rows_n = 2 + 3 * objects - (drop_index_entry ? 1 : 0);
    EXPECT_OK((*w)->WriteBlock(snapshot::BlockType::kEnd,
                               "{\"blocks\":2,\"rows\":" + std::to_string(rows_n) +
                                   ",\"rawBytes\":" + std::to_string(rows.size()) + "}"));
    EXPECT_OK((*w)->Close());
    return path;
  }
  testing::TempDir dir_;
  int manifest_format_ = 1;
  std::string first_json_;  // the first object's JSON, if set
};

TEST_F(CraftedSnapshotTest, AConsistentFileImports) {
  auto m = ImportSnapshot(Write(10, 10, false), dir_.Sub("ok"));
  ASSERT_OK(m) << m.status();
  auto cache = Cache::Open(dir_.Sub("ok"));
  ASSERT_OK(cache);
  EXPECT_OK((*cache)->Verify());
}

TEST_F(CraftedSnapshotTest, ManifestCountsMustMatchTheRows) {
  auto v = VerifySnapshot(Write(10, 11, false));
  EXPECT_EQ(v.status().code(), StatusCode::kCorruption);
  EXPECT_THAT(std::string(v.status().message()),
              HasSubstr("keyspace pods: the manifest says 11 objects, the file has 10"));
}

TEST_F(CraftedSnapshotTest, IndexEntriesMustMatchTheReverseRecords) {
  const std::string path = Write(10, 10, true);
  auto v = VerifySnapshot(path);
  EXPECT_EQ(v.status().code(), StatusCode::kCorruption);
  EXPECT_THAT(std::string(v.status().message()),
              HasSubstr("index entries do not match the reverse index records"));
  EXPECT_FALSE(ImportSnapshot(path, dir_.Sub("target")).ok());
  EXPECT_FALSE(fs::exists(dir_.Sub("target")));
  // Storage invariant 3 (indexes agree with objects) is checked before a
  // file is read in place too.
  EXPECT_EQ(OpenSnapshot(path).status().code(), StatusCode::kCorruption);
}

// verify parses every object: checksums protect bytes, not their meaning.
TEST_F(CraftedSnapshotTest, VerifyParsesEveryObject) {
  first_json_ = "not json";
  auto v = VerifySnapshot(Write(10, 10, false));
  EXPECT_EQ(v.status().code(), StatusCode::kCorruption);
  EXPECT_THAT(std::string(v.status().message()), HasSubstr("block 1 at byte"));
  EXPECT_THAT(std::string(v.status().message()), HasSubstr("object ns/p0 of pods: "));
  first_json_ =
      R"({"kind":"Pod","apiVersion":"v1","metadata":{"name":"p0","resourceVersion":"7"}})";
  v = VerifySnapshot(Write(10, 10, false));
  EXPECT_EQ(v.status().code(), StatusCode::kCorruption);
  EXPECT_THAT(std::string(v.status().message()),
              HasSubstr("object ns/p0 of pods: its resourceVersion is \"7\", its record's \"1\""));
}

// The manifest's formatVersion must be the header's: a file that claims a
// version it is not written in is refused by every reader.
TEST_F(CraftedSnapshotTest, ManifestFormatVersionMustMatchTheHeader) {
  manifest_format_ = 2;
  const std::string path = Write(10, 10, false);
  for (auto st : {VerifySnapshot(path).status(), ImportSnapshot(path, dir_.Sub("t")).status(),
                  OpenSnapshot(path).status()}) {
    EXPECT_EQ(st.code(), StatusCode::kCorruption) << st;
    EXPECT_THAT(std::string(st.message()),
                HasSubstr("the manifest says formatVersion 2, the file header 1"));
  }
}

TEST_F(CraftedSnapshotTest, RowsMustBeInOrder) {
  auto v = VerifySnapshot(Write(10, 10, false, true));
  EXPECT_EQ(v.status().code(), StatusCode::kCorruption);
  EXPECT_THAT(std::string(v.status().message()), HasSubstr("rows out of order"));
}

// Invariant 1 (a commit is atomic, the resume point moves with its objects)
// holds for exports taken while a writer commits: the snapshot is the cache
// exactly as of one commit.
TEST(SnapshotPointInTimeTest, ExportWhileCommittingIsOneCommitsState) {
  testing::TempDir dir;
  auto cache = Cache::Open(dir.Sub("cache"));
  ASSERT_OK(cache);
  auto ks = (*cache)->OpenKeyspace("pods");
  ASSERT_OK(ks);
  // Commit n adds pod n with resourceVersion n: the state at resume point R
  // is exactly pods 1..R.
  std::atomic<bool> stop{false};
  std::atomic<int> committed{0};
  std::thread writer([&] {
    for (int n = 1; !stop; ++n) {
      Transaction txn;
      txn.Add(Pod("p" + std::to_string(n), "ns", std::to_string(n)));
      if (!(*ks)->Commit(txn, nullptr).ok()) return;
      committed = n;
    }
  });
  while (committed < 200) std::this_thread::yield();
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(round);
    // From the writer's own handle (a RocksDB snapshot) and from a reader
    // (a secondary instance's view).
    const std::string own = dir.Sub("own" + std::to_string(round) + ".kcs");
    ASSERT_OK(ExportSnapshot(**cache, own));
    // A reader's export that finds its view changed while it read (a
    // secondary instance can still miss commits of a log deleted under two
    // flushes) gives no file and Aborted; the caller opens the reader again,
    // as kcache snapshot export does.
    const std::string theirs = dir.Sub("reader" + std::to_string(round) + ".kcs");
    Status exported = Status::Aborted("not tried");
    for (int attempt = 0; attempt < 5 && exported.code() == StatusCode::kAborted; ++attempt) {
      auto reader = Cache::OpenReadOnly(dir.Sub("cache"));
      ASSERT_OK(reader);
      exported = ExportSnapshot(**reader, theirs).status();
      if (exported.code() == StatusCode::kAborted) {
        EXPECT_THAT(std::string(exported.message()), HasSubstr("read it again"));
        EXPECT_FALSE(std::filesystem::exists(theirs)) << "no file from an aborted export";
      }
    }
    ASSERT_OK(exported);
    for (const std::string& file : {own, theirs}) {
      const std::string target = file + ".cache";
      auto m = ImportSnapshot(file, target);
      ASSERT_OK(m) << m.status();
      auto restored = Cache::Open(target);
      ASSERT_OK(restored);
      EXPECT_OK((*restored)->Verify());
      auto pods = (*restored)->OpenKeyspace("pods");
      ASSERT_OK(pods);
      int rv = std::stoi((*pods)->LastSyncResourceVersion());
      EXPECT_GE(rv, 200);
      EXPECT_EQ(*(*pods)->Size(), static_cast<size_t>(rv));
      EXPECT_EQ(m->resources[0].objects, static_cast<uint64_t>(rv));
      auto last = (*pods)->GetByKey("ns/p" + std::to_string(rv));
      ASSERT_OK(last);
      EXPECT_NE(*last, nullptr);
    }
  }
  stop = true;
  writer.join();
}

// A checkpoint directory opens as a cache: from a writable cache (RocksDB's
// checkpoint) and from a reader while the writer holds the cache (a copy).
TEST(CheckpointTest, WritableAndReadOnlyCachesCheckpointToAnOpenableDirectory) {
  testing::TempDir dir;
  Fill(dir.Sub("cache"), 500);
  auto cache = Cache::Open(dir.Sub("cache"));
  ASSERT_OK(cache);
  auto want = Contents(**cache);
  ASSERT_OK((*cache)->Checkpoint(dir.Sub("own")));
  auto reader = Cache::OpenReadOnly(dir.Sub("cache"));
  ASSERT_OK(reader);
  ASSERT_OK((*reader)->Checkpoint(dir.Sub("copy")));
  EXPECT_FALSE((*reader)->Checkpoint(dir.Sub("copy")).ok()) << "the target exists";
  for (const char* name : {"own", "copy"}) {
    SCOPED_TRACE(name);
    auto c = Cache::Open(dir.Sub(name), {.create_if_missing = false});
    ASSERT_OK(c) << c.status();
    EXPECT_OK((*c)->Verify());
    EXPECT_EQ(Contents(**c), want);
    auto stats = (*c)->Stats("pods");
    ASSERT_OK(stats);
    EXPECT_EQ(stats->resource_version, "1000");
  }
}

fs::perms Mode(const std::string& path) { return fs::status(path).permissions() & fs::perms::mask; }

// A cache, its copies and its snapshot files are the owner's only, whatever
// the umask: the directories 0700, every file in them 0600 (RocksDB's own
// default is 0644: storage::PrivateEnv), a snapshot file 0600. A cache may
// hold Secrets.
TEST(FileModesTest, CachesAndSnapshotsAreTheOwnersOnly) {
  testing::TempDir dir;
  const mode_t umask_was = ::umask(0);
  Fill(dir.Sub("cache"), 50);
  EXPECT_EQ(Mode(dir.Sub("cache")), fs::perms::owner_all);
  {
    auto cache = Cache::Open(dir.Sub("cache"));
    ASSERT_OK(cache);
    ASSERT_OK((*cache)->Checkpoint(dir.Sub("copy")));
    EXPECT_EQ(Mode(dir.Sub("copy")), fs::perms::owner_all);
    ASSERT_OK(ExportSnapshot(**cache, dir.Sub("cache.kcs")));
    EXPECT_EQ(Mode(dir.Sub("cache.kcs")), fs::perms::owner_read | fs::perms::owner_write);
    ASSERT_OK(ImportSnapshot(dir.Sub("cache.kcs"), dir.Sub("imported")));
    EXPECT_EQ(Mode(dir.Sub("imported")), fs::perms::owner_all);
  }
  ::umask(umask_was);
  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir.path())) {
    files += e.is_regular_file() ? 1 : 0;
    EXPECT_EQ(Mode(e.path().string()) & (fs::perms::group_all | fs::perms::others_all),
              fs::perms::none)
        << e.path();
  }
  EXPECT_GT(files, 20);
}

// ExportOptions::exclude_keyspaces (kcache snapshot export --exclude-secrets)
// leaves a keyspace out whole: no objects, index rows or meta records, and
// the file verifies and imports.
// Invariant 3 as an export reads it: a cache whose objects do not match
// their count gives no file (its own verify would refuse it). A writer's
// cache is read through one RocksDB snapshot, so that is damage
// (Corruption); a reader's view can lag its writer by a deleted table file,
// so the reader is told to read again (Aborted).
TEST(ExportCountsTest, ObjectsThatDoNotMatchTheirCountGiveNoFile) {
  testing::TempDir dir;
  Fill(dir.Sub("cache"), 50);
  testing::WriteRaw(dir.Sub("cache"), storage::kObjectsCF, storage::ObjectKey("pods", "ns-1/p7"),
                    std::nullopt);
  {
    auto cache = Cache::Open(dir.Sub("cache"));
    ASSERT_OK(cache);
    auto m = ExportSnapshot(**cache, dir.Sub("out.kcs"));
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.status().code(), StatusCode::kCorruption) << m.status();
    EXPECT_THAT(std::string(m.status().message()),
                HasSubstr("keyspace pods counts 50 objects, and 49 were read"));
  }
  auto reader = Cache::OpenReadOnly(dir.Sub("cache"));
  ASSERT_OK(reader);
  auto m = ExportSnapshot(**reader, dir.Sub("out.kcs"));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kAborted) << m.status();
  EXPECT_FALSE(fs::exists(dir.Sub("out.kcs")));
  for (const auto& e : fs::directory_iterator(dir.path())) {
    EXPECT_THAT(e.path().filename().string(), ::testing::Not(HasSubstr(".partial-"))) << e.path();
  }
}

TEST(ExcludeKeyspacesTest, AnExcludedKeyspaceLeavesNoRowInTheFile) {
  testing::TempDir dir;
  Fill(dir.Sub("cache"), 50);
  {
    auto cache = Cache::Open(dir.Sub("cache"));
    ASSERT_OK(cache);
    auto secrets = (*cache)->OpenKeyspace("secrets", ByNodeOptions());
    ASSERT_OK(secrets);
    Transaction txn;
    txn.Add(Pod("token", "ns-0", "5", {{"app", "a"}}, {{"node", "n1"}}));
    txn.resource_version = "900";
    ASSERT_OK((*secrets)->Commit(txn, nullptr));
    ASSERT_OK((*cache)->SetResourceInfo(
        "secrets", ResourceInfo({.version = "v1", .resource = "secrets", .kind = "Secret"})));
  }
  auto cache = Cache::Open(dir.Sub("cache"));
  ASSERT_OK(cache);
  auto all = ExportSnapshot(**cache, dir.Sub("all.kcs"));
  ASSERT_OK(all) << all.status();
  ASSERT_EQ(all->resources.size(), 3u);
  ExportOptions options;
  options.exclude_keyspaces = {"secrets"};
  auto some = ExportSnapshot(**cache, dir.Sub("some.kcs"), options);
  ASSERT_OK(some) << some.status();
  ASSERT_EQ(some->resources.size(), 2u);
  for (const KeyspaceStats& r : some->resources) EXPECT_NE(r.name, "secrets");
  // Verification checks every row against the manifest: a row of the
  // excluded keyspace would be "rows of keyspace secrets, which the
  // manifest does not list".
  auto verified = VerifySnapshot(dir.Sub("some.kcs"));
  ASSERT_OK(verified) << verified.status();
  SnapshotManifest read;
  int rows = 0;
  ASSERT_OK(snapshot::ReadAll(dir.Sub("some.kcs"), {}, &read,
                              [&](storage::Family, std::string_view key, std::string_view) {
                                ++rows;
                                EXPECT_EQ(key.find("secrets"), std::string_view::npos) << key;
                                return Status::OK();
                              }));
  EXPECT_GT(rows, 100);
  ASSERT_OK(ImportSnapshot(dir.Sub("some.kcs"), dir.Sub("imported")));
  auto imported = Cache::Open(dir.Sub("imported"), {.create_if_missing = false});
  ASSERT_OK(imported);
  auto keyspaces = (*imported)->ListKeyspaces();
  ASSERT_OK(keyspaces);
  EXPECT_EQ(*keyspaces, (std::vector<std::string>{"nodes", "pods"}));
  EXPECT_OK((*imported)->Verify());
}

}  // namespace
}  // namespace kcache
