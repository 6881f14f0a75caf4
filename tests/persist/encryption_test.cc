// SPDX-License-Identifier: Apache-2.0

// Encryption at rest (include/kcache/encryption.h): sealed keyspaces keep
// no object bytes in the clear, in their records, their journal or the
// files; they read back whole with the key and fail clearly without it or
// with another; damage is told apart from a wrong key; plain keyspaces are
// sealed on open, keys rotate without a relist, and snapshots carry the
// sealed rows and the wrapped keys.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <random>
#include <thread>

#include "crypto/aead.h"
#include "kcache/cache.h"
#include "kcache/encryption.h"
#include "kcache/snapshot.h"
#include "persist/db.h"
#include "persist/encoding.h"
#include "persist/journal.h"
#include "persist/rocks_status.h"
#include "testing/objects.h"
#include "testing/status_matchers.h"
#include "testing/temp_dir.h"

namespace kcache::testing {
namespace {

using ::testing::HasSubstr;

// What must never be stored in the clear: a Secret's data.
constexpr char kSecretValue[] = "dG9wLXNlY3JldC1wYXNzd29yZC0xMjM0NQ==";
// A ConfigMap's data, stored plainly: the control that shows the file scan
// finds what is there.
constexpr char kPlainValue[] = "plain-configmap-value-6789";

std::string NewKey() { return crypto::Key::Generate()->bytes(); }

ObjectPtr Secret(const std::string& name, const std::string& rv, const std::string& value) {
  return MakeObject(R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":")" + name +
                    R"(","namespace":"ns","resourceVersion":")" + rv +
                    R"(","labels":{"app":"web"}},"data":{"password":")" + value + R"("}})");
}

ObjectPtr ConfigMap(const std::string& name, const std::string& rv) {
  return MakeObject(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name +
                    R"(","namespace":"ns","resourceVersion":")" + rv + R"("},"data":{"v":")" +
                    kPlainValue + R"("}})");
}

CacheOptions WithKey(const std::string& key) {
  CacheOptions o;
  o.encryption.key_encryption_key = key;
  return o;
}

// Whether any file under `dir` holds `needle` (the WAL holds every recent
// write uncompressed).
bool AnyFileHolds(const std::string& dir, const std::string& needle) {
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (bytes.find(needle) != std::string::npos) return true;
  }
  return false;
}

// The stored record of `key` in keyspace `ks`, as bytes.
std::string RawRecord(const Cache& cache, const std::string& ks, const std::string& key) {
  const std::shared_ptr<storage::Db>& db = storage::DbOf(cache);
  std::string value;
  rocksdb::Status s = db->db->Get({}, db->objects, storage::ObjectKey(ks, key), &value);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return value;
}

// Writes three secrets (one updated, so the journal holds a previous
// object) and a config map.
void WriteObjects(Cache& cache) {
  auto secrets = cache.OpenKeyspace("secrets");
  ASSERT_OK(secrets) << secrets.status();
  auto maps = cache.OpenKeyspace("configmaps");
  ASSERT_OK(maps) << maps.status();
  Transaction txn;
  txn.Add(Secret("a", "10", kSecretValue));
  txn.Add(Secret("b", "11", kSecretValue));
  ASSERT_OK((*secrets)->Commit(txn, nullptr));
  ASSERT_OK((*secrets)->Update(Secret("a", "12", kSecretValue)));
  ASSERT_OK((*secrets)->Replace({Secret("a", "12", kSecretValue), Secret("b", "11", kSecretValue),
                                 Secret("c", "13", kSecretValue)},
                                "13"));
  ASSERT_OK((*secrets)->Update(Secret("c", "14", kSecretValue)));
  ASSERT_OK((*maps)->Add(ConfigMap("m", "20")));
}

TEST(EncryptionTest, ASealedKeyspaceKeepsNoObjectBytesInTheClear) {
  TempDir dir;
  const std::string key = NewKey();
  auto cache = Cache::Open(dir.path(), WithKey(key));
  ASSERT_OK(cache) << cache.status();
  WriteObjects(**cache);
  // Records are sealed (version 2) and hold neither the value nor the
  // kind; the config map's is plain.
  std::string record = RawRecord(**cache, "secrets", "ns/a");
  EXPECT_EQ(record[0], 0x02);
  EXPECT_EQ(record.find(kSecretValue), std::string::npos);
  EXPECT_EQ(record.find("Secret"), std::string::npos);
  EXPECT_NE(RawRecord(**cache, "configmaps", "ns/m").find(kPlainValue), std::string::npos);
  // No file holds the secret's bytes: not the WAL, the tables or the
  // journal. The control shows the scan finds what is in the clear (in
  // the WAL, which holds every write uncompressed until a flush).
  EXPECT_TRUE(AnyFileHolds(dir.path(), kPlainValue));
  EXPECT_FALSE(AnyFileHolds(dir.path(), kSecretValue));
  ASSERT_OK((*cache)->Compact());
  EXPECT_FALSE(AnyFileHolds(dir.path(), kSecretValue));
}

TEST(EncryptionTest, AFirstListIngestedIntoAnEmptySealedKeyspaceIsSealed) {
  TempDir dir;
  CacheOptions o = WithKey(NewKey());
  o.memtable_bytes = size_t{1} << 20;  // segments of a quarter MiB: ingested table files
  auto cache = Cache::Open(dir.path(), o);
  ASSERT_OK(cache) << cache.status();
  auto secrets = (*cache)->OpenKeyspace("secrets");
  ASSERT_OK(secrets) << secrets.status();
  std::vector<ObjectPtr> listed;
  const std::string padding(1000, 'x');
  for (int i = 0; i < 3000; ++i) {
    listed.push_back(
        Secret("s" + std::to_string(i), std::to_string(i + 1), kSecretValue + padding));
  }
  auto done = (*secrets)->Replace(listed, "5000");
  ASSERT_OK(done) << done.status();
  EXPECT_EQ(*(*secrets)->Size(), 3000u);
  for (const char* k : {"ns/s0", "ns/s1500", "ns/s2999"}) {
    EXPECT_EQ(RawRecord(**cache, "secrets", k)[0], 0x02) << k;
  }
  auto got = (*secrets)->GetByKey("ns/s1500");
  ASSERT_OK(got) << got.status();
  EXPECT_THAT((*got)->json(), HasSubstr(kSecretValue));
  secrets->reset();
  EXPECT_OK((*cache)->Verify());
  ASSERT_OK((*cache)->Compact());
  EXPECT_FALSE(AnyFileHolds(dir.path(), kSecretValue));
}

TEST(EncryptionTest, WithTheKeyEverythingReadsBackWhole) {
  TempDir dir;
  const std::string key = NewKey();
  {
    auto cache = Cache::Open(dir.path(), WithKey(key));
    ASSERT_OK(cache) << cache.status();
    WriteObjects(**cache);
  }
  auto cache = Cache::Open(dir.path(), WithKey(key));
  ASSERT_OK(cache) << cache.status();
  auto secrets = (*cache)->OpenKeyspace("secrets");
  ASSERT_OK(secrets) << secrets.status();
  auto a = (*secrets)->GetByKey("ns/a");
  ASSERT_OK(a) << a.status();
  ASSERT_TRUE(*a);
  EXPECT_EQ((*a)->resource_version(), "12");
  EXPECT_THAT((*a)->json(), HasSubstr(kSecretValue));
  auto by_label = (*secrets)->ByIndex("kcache.io/labels", "app=web");
  ASSERT_OK(by_label) << by_label.status();
  EXPECT_EQ(by_label->size(), 3u);
  auto journal = (*cache)->ReadJournal("secrets", "13", 10);
  ASSERT_OK(journal) << journal.status();
  ASSERT_EQ(journal->events.size(), 1u);
  EXPECT_THAT(journal->events[0].object->json(), HasSubstr(kSecretValue));
  ASSERT_TRUE(journal->events[0].previous);
  EXPECT_EQ(journal->events[0].previous->resource_version(), "13");
  EXPECT_OK((*cache)->Verify());
  // Invariant 3: a relist that lists the same objects rewrites none of
  // them, sealed as they are (the compare opens them).
  auto relisted =
      (*secrets)->Replace({Secret("a", "12", kSecretValue), Secret("b", "11", kSecretValue),
                           Secret("c", "14", kSecretValue)},
                          "15");
  ASSERT_OK(relisted) << relisted.status();
  EXPECT_EQ(relisted->unchanged, 3u);
  // Readers beside the writer read with the key too.
  auto reader = Cache::OpenReadOnly(dir.path(), WithKey(key));
  ASSERT_OK(reader) << reader.status();
  auto read = (*reader)->OpenKeyspace("secrets");
  ASSERT_OK(read) << read.status();
  EXPECT_EQ(read.value()->List()->size(), 3u);
  auto status = GetEncryptionStatus(**cache);
  ASSERT_OK(status) << status.status();
  EXPECT_TRUE(status->encrypted);
  EXPECT_EQ(status->keyspaces, std::vector<std::string>{"secrets"});
  EXPECT_EQ(status->key_fingerprint, crypto::Key::FromBytes(key)->Fingerprint());
}

// Invariant 6: a missing or wrong key is a clear error that loses nothing.
TEST(EncryptionTest, WithoutTheKeyOrWithAnotherReadsFailClearlyAndPlainKeyspacesStillRead) {
  TempDir dir;
  const std::string key = NewKey();
  {
    auto cache = Cache::Open(dir.path(), WithKey(key));
    ASSERT_OK(cache) << cache.status();
    WriteObjects(**cache);
  }
  {  // No key: plain keyspaces read; sealed objects and journal entries fail.
    auto reader = Cache::OpenReadOnly(dir.path());
    ASSERT_OK(reader) << reader.status();
    auto maps = (*reader)->OpenKeyspace("configmaps");
    ASSERT_OK(maps) << maps.status();
    EXPECT_EQ(maps.value()->List()->size(), 1u);
    auto secrets = (*reader)->OpenKeyspace("secrets");
    ASSERT_OK(secrets) << secrets.status();  // counts and keys are not secret
    EXPECT_EQ(*secrets.value()->Size(), 3u);
    auto a = secrets.value()->GetByKey("ns/a");
    EXPECT_EQ(a.status().code(), StatusCode::kFailedPrecondition) << a.status();
    EXPECT_THAT(std::string(a.status().message()),
                HasSubstr("object ns/a of keyspace secrets is encrypted at rest, and no "
                          "key-encryption key was given"));
    auto list = secrets.value()->List();
    EXPECT_EQ(list.status().code(), StatusCode::kFailedPrecondition) << list.status();
    auto journal = (*reader)->ReadJournal("secrets", "13", 10);
    EXPECT_EQ(journal.status().code(), StatusCode::kFailedPrecondition) << journal.status();
  }
  {  // No key, writing: refused, or its writes would be stored in the clear.
    auto writer = Cache::Open(dir.path());
    ASSERT_OK(writer) << writer.status();
    auto secrets = (*writer)->OpenKeyspace("secrets");
    EXPECT_EQ(secrets.status().code(), StatusCode::kFailedPrecondition) << secrets.status();
    EXPECT_THAT(std::string(secrets.status().message()),
                HasSubstr("keyspace secrets is encrypted at rest"));
    EXPECT_OK((*writer)->OpenKeyspace("configmaps"));
  }
  // Another key: told at open, apart from damage.
  auto wrong = Cache::Open(dir.path(), WithKey(NewKey()));
  EXPECT_EQ(wrong.status().code(), StatusCode::kFailedPrecondition) << wrong.status();
  EXPECT_THAT(std::string(wrong.status().message()), HasSubstr("is not the one"));
  auto wrong_reader = Cache::OpenReadOnly(dir.path(), WithKey(NewKey()));
  EXPECT_EQ(wrong_reader.status().code(), StatusCode::kFailedPrecondition) << wrong_reader.status();
}

// Invariant 6: damage is named as damage, never read as data.
TEST(EncryptionTest, DamageOrARecordMovedToAnotherKeyIsCorruption) {
  TempDir dir;
  const std::string key = NewKey();
  auto cache = Cache::Open(dir.path(), WithKey(key));
  ASSERT_OK(cache) << cache.status();
  WriteObjects(**cache);
  const std::shared_ptr<storage::Db>& db = storage::DbOf(**cache);
  std::string a = RawRecord(**cache, "secrets", "ns/a");
  std::string flipped = a;
  flipped[flipped.size() - 20] ^= 1;
  // Behind kcache's back: ns/b gets ns/a's record whole, ns/a a flipped bit.
  ASSERT_TRUE(db->db->Put({}, db->objects, storage::ObjectKey("secrets", "ns/b"), a).ok());
  ASSERT_TRUE(db->db->Put({}, db->objects, storage::ObjectKey("secrets", "ns/a"), flipped).ok());
  auto secrets = (*cache)->OpenKeyspace("secrets");
  ASSERT_OK(secrets) << secrets.status();
  for (const char* k : {"ns/a", "ns/b"}) {
    auto got = (*secrets)->GetByKey(k);
    EXPECT_EQ(got.status().code(), StatusCode::kCorruption) << k << ": " << got.status();
    EXPECT_THAT(std::string(got.status().message()), HasSubstr("fails authentication")) << k;
  }
  EXPECT_EQ((*cache)->Verify().code(), StatusCode::kCorruption);
}

TEST(EncryptionTest, APlainKeyspaceIsSealedWhenAWriterWithTheKeyOpensIt) {
  TempDir dir;
  {  // Written before encryption: in the clear.
    auto cache = Cache::Open(dir.path());
    ASSERT_OK(cache) << cache.status();
    WriteObjects(**cache);
    EXPECT_EQ(RawRecord(**cache, "secrets", "ns/a")[0], 0x01);
    auto journal = (*cache)->ReadJournal("secrets", "13", 10);
    ASSERT_OK(journal);
    EXPECT_EQ(journal->events.size(), 1u);
  }
  const std::string key = NewKey();
  auto cache = Cache::Open(dir.path(), WithKey(key));
  ASSERT_OK(cache) << cache.status();
  auto secrets = (*cache)->OpenKeyspace("secrets");
  ASSERT_OK(secrets) << secrets.status();
  for (const char* k : {"ns/a", "ns/b", "ns/c"}) {
    EXPECT_EQ(RawRecord(**cache, "secrets", k)[0], 0x02) << k;
  }
  EXPECT_EQ((*secrets)->LastSyncResourceVersion(), "14");
  EXPECT_EQ((*secrets)->List()->size(), 3u);
  // The journal held the objects in the clear: it is gone, its window
  // restarts at the resume point.
  auto journal = (*cache)->ReadJournal("secrets", "13", 10);
  EXPECT_TRUE(journal.status().IsExpired()) << journal.status();
  std::string format;
  const std::shared_ptr<storage::Db>& db = storage::DbOf(**cache);
  ASSERT_TRUE(db->db->Get({}, db->meta, storage::kFormatKey, &format).ok());
  EXPECT_EQ(format, "3");
  secrets->reset();
  ASSERT_OK((*cache)->Compact());
  EXPECT_FALSE(AnyFileHolds(dir.path(), kSecretValue));
}

TEST(EncryptionTest, RekeyRotatesTheDataKeyAndTheWrappingKeyWithoutARelist) {
  TempDir dir;
  const std::string key = NewKey(), next = NewKey();
  {
    auto cache = Cache::Open(dir.path(), WithKey(key));
    ASSERT_OK(cache) << cache.status();
    WriteObjects(**cache);
    // Refused while a keyspace is open.
    auto open = (*cache)->OpenKeyspace("configmaps");
    ASSERT_OK(open);
    EXPECT_EQ(Rekey(**cache).code(), StatusCode::kFailedPrecondition);
  }
  {
    auto cache = Cache::Open(dir.path(), WithKey(key));
    ASSERT_OK(cache) << cache.status();
    ASSERT_OK(Rekey(**cache));
    auto status = GetEncryptionStatus(**cache);
    EXPECT_EQ(status->current_data_key, 2u);
    EXPECT_EQ(status->data_keys, std::vector<uint32_t>{2});
    const std::string record = RawRecord(**cache, "secrets", "ns/a");
    EXPECT_EQ(*crypto::SealedKeyId(std::string_view(record).substr(1 + 1 + 2)), 2u);
    ASSERT_OK(Rekey(**cache, next));
  }
  auto old = Cache::Open(dir.path(), WithKey(key));
  EXPECT_EQ(old.status().code(), StatusCode::kFailedPrecondition) << old.status();
  auto cache = Cache::Open(dir.path(), WithKey(next));
  ASSERT_OK(cache) << cache.status();
  EXPECT_EQ(GetEncryptionStatus(**cache)->current_data_key, 3u);
  auto secrets = (*cache)->OpenKeyspace("secrets");
  ASSERT_OK(secrets) << secrets.status();
  EXPECT_EQ((*secrets)->LastSyncResourceVersion(), "14");
  auto a = (*secrets)->GetByKey("ns/a");
  ASSERT_OK(a) << a.status();
  EXPECT_THAT((*a)->json(), HasSubstr(kSecretValue));
}

// Invariant 1 (a crash at any instant) for key rotation and for sealing a
// plain keyspace: a process killed at any instant of either leaves a cache
// that passes Verify and whose every object reads with the key it was
// opened with, and running again finishes the job.
TEST(EncryptionTest, SigkillDuringSealingOrRekeyLosesNoObjectAndRunningAgainFinishes) {
  TempDir dir;
  const std::string key = NewKey();
  constexpr int kSecrets = 20000;
  {  // Plain first: the first rounds kill the sealing of a keyspace.
    auto cache = Cache::Open(dir.path());
    ASSERT_OK(cache) << cache.status();
    auto secrets = (*cache)->OpenKeyspace("secrets");
    ASSERT_OK(secrets) << secrets.status();
    std::vector<ObjectPtr> listed;
    for (int i = 0; i < kSecrets; ++i) {
      listed.push_back(Secret("s" + std::to_string(i), std::to_string(i + 1), kSecretValue));
    }
    ASSERT_OK((*secrets)->Replace(listed, std::to_string(kSecrets)));
  }
  std::mt19937_64 rng(20261127);
  int killed = 0;
  for (int round = 0; round < 8; ++round) {
    const bool sealing = round < 2;
    pid_t child = fork();
    if (child == 0) {
      auto cache = Cache::Open(dir.path(), WithKey(key));
      if (!cache.ok()) _exit(2);
      if (sealing) {
        _exit((*cache)->OpenKeyspace("secrets").ok() ? 0 : 2);
      }
      _exit(Rekey(**cache).ok() ? 0 : 2);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + rng() % 400));
    kill(child, SIGKILL);
    int wstatus = 0;
    waitpid(child, &wstatus, 0);
    if (WIFSIGNALED(wstatus)) ++killed;
    if (WIFEXITED(wstatus)) {
      ASSERT_EQ(WEXITSTATUS(wstatus), 0) << "round " << round;
    }
    auto cache = Cache::Open(dir.path(), WithKey(key));
    ASSERT_OK(cache) << "round " << round << ": " << cache.status();
    ASSERT_OK((*cache)->Verify()) << "round " << round;
    auto secrets = (*cache)->OpenKeyspace("secrets");
    ASSERT_OK(secrets) << "round " << round << ": " << secrets.status();
    auto all = (*secrets)->List();
    ASSERT_OK(all) << "round " << round << ": " << all.status();
    ASSERT_EQ(all->size(), size_t{kSecrets}) << "round " << round;
    EXPECT_THAT(all->back()->json(), HasSubstr(kSecretValue));
  }
  std::cout << "cut short: " << killed << " of 8 rounds\n";
  EXPECT_GT(killed, 0) << "no round was cut short: the test proves nothing";
  // Once more, uncut: one data key remains and seals every object.
  auto cache = Cache::Open(dir.path(), WithKey(key));
  ASSERT_OK(cache) << cache.status();
  ASSERT_OK(Rekey(**cache));
  auto status = GetEncryptionStatus(**cache);
  ASSERT_OK(status);
  ASSERT_EQ(status->data_keys.size(), 1u);
  const std::shared_ptr<storage::Db>& db = storage::DbOf(**cache);
  std::unique_ptr<rocksdb::Iterator> it(db->db->NewIterator({}, db->objects));
  int sealed = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    std::string_view rv, body;
    bool is_sealed = false;
    ASSERT_OK(storage::DecodeObjectRecord(storage::View(it->value()), &rv, &body, &is_sealed));
    ASSERT_TRUE(is_sealed);
    ASSERT_EQ(*crypto::SealedKeyId(body), status->current_data_key);
    ++sealed;
  }
  EXPECT_EQ(sealed, kSecrets);
}

TEST(EncryptionTest, SnapshotsCarrySealedRowsAndAreUselessWithoutTheKey) {
  TempDir dir;
  const std::string key = NewKey();
  const std::string file = dir.Sub("snap.kcs");
  {
    auto cache = Cache::Open(dir.Sub("cache"), WithKey(key));
    ASSERT_OK(cache) << cache.status();
    WriteObjects(**cache);
    auto m = ExportSnapshot(**cache, file);
    ASSERT_OK(m) << m.status();
    EXPECT_EQ(m->storage_format, 3);
    // Left out, the secrets take the keyring with them.
    auto without =
        ExportSnapshot(**cache, dir.Sub("plain.kcs"), {.exclude_keyspaces = {"secrets"}});
    ASSERT_OK(without) << without.status();
    EXPECT_EQ(without->storage_format, 1);
  }
  {
    std::ifstream in(file, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(bytes.find(kSecretValue), std::string::npos);
  }
  EXPECT_OK(VerifySnapshot(dir.Sub("plain.kcs")));
  auto no_key = VerifySnapshot(file);
  EXPECT_EQ(no_key.status().code(), StatusCode::kFailedPrecondition) << no_key.status();
  EXPECT_THAT(std::string(no_key.status().message()), HasSubstr("no key-encryption key"));
  EXPECT_EQ(VerifySnapshot(file, {}, NewKey()).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_OK(VerifySnapshot(file, {}, key));
  EXPECT_EQ(OpenSnapshot(file).status().code(), StatusCode::kFailedPrecondition);
  auto opened = OpenSnapshot(file, {.key_encryption_key = key});
  ASSERT_OK(opened) << opened.status();
  auto secrets = (*opened)->OpenKeyspace("secrets");
  ASSERT_OK(secrets) << secrets.status();
  auto a = (*secrets)->GetByKey("ns/a");
  ASSERT_OK(a) << a.status();
  EXPECT_THAT((*a)->json(), HasSubstr(kSecretValue));

  auto refused = ImportSnapshot(file, dir.Sub("no-key"));
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition) << refused.status();
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("no-key")));
  ImportOptions io;
  io.cache.encryption.key_encryption_key = key;
  ASSERT_OK(ImportSnapshot(file, dir.Sub("imported"), io));
  EXPECT_EQ(Cache::Open(dir.Sub("imported"), WithKey(NewKey())).status().code(),
            StatusCode::kFailedPrecondition);
  auto imported = Cache::Open(dir.Sub("imported"), WithKey(key));
  ASSERT_OK(imported) << imported.status();
  EXPECT_OK((*imported)->Verify());
  auto got = (*imported)->OpenKeyspace("secrets");
  ASSERT_OK(got) << got.status();
  EXPECT_EQ(got.value()->List()->size(), 3u);
}

}  // namespace
}  // namespace kcache::testing
