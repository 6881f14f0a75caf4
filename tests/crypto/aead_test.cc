// SPDX-License-Identifier: Apache-2.0

// AES-256-GCM sealing, key wrapping and the key sources of encryption at
// rest: what opens, what does not, and which error says why.

#include "crypto/aead.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <string>

#include "crypto/key_source.h"
#include "testing/status_matchers.h"
#include "testing/temp_dir.h"
#include "util/base64.h"

namespace kcache::crypto {
namespace {

Key NewKey() {
  StatusOr<Key> key = Key::Generate();
  EXPECT_OK(key);
  return *key;
}

TEST(AeadTest, ASealedValueOpensWithItsKeyAndContextOnly) {
  const Key key = NewKey(), other = NewKey();
  const std::string secret = R"({"kind":"Secret","data":{"password":"aHVudGVyMg=="}})";
  auto sealed = Seal(key, 7, secret, "secrets/ns/db");
  ASSERT_OK(sealed);
  EXPECT_EQ(sealed->size(), secret.size() + kSealOverhead);
  EXPECT_EQ(sealed->find("password"), std::string::npos);
  EXPECT_EQ(*SealedKeyId(*sealed), 7u);
  auto opened = Open(key, *sealed, "secrets/ns/db");
  ASSERT_OK(opened);
  EXPECT_EQ(*opened, secret);
  // Under another key, or another row's context: Corruption, never garbage.
  EXPECT_EQ(Open(other, *sealed, "secrets/ns/db").status().code(), StatusCode::kCorruption);
  EXPECT_EQ(Open(key, *sealed, "secrets/ns/other").status().code(), StatusCode::kCorruption);
  // Each byte altered in turn (the version and key id bytes included).
  for (size_t i = 0; i < sealed->size(); ++i) {
    std::string bad = *sealed;
    bad[i] = static_cast<char>(bad[i] ^ 0x01);
    EXPECT_EQ(Open(key, bad, "secrets/ns/db").status().code(), StatusCode::kCorruption) << i;
  }
  EXPECT_EQ(Open(key, sealed->substr(0, kSealOverhead - 1), "").status().code(),
            StatusCode::kCorruption);
  EXPECT_EQ(SealedKeyId("short").status().code(), StatusCode::kCorruption);
  // An empty value seals and opens too.
  auto empty = Seal(key, 0, "", "");
  ASSERT_OK(empty);
  EXPECT_EQ(*Open(key, *empty, ""), "");
}

TEST(AeadTest, NoncesAndKeysAreFreshEachTime) {
  const Key key = NewKey();
  std::set<std::string> sealed, keys, fingerprints;
  for (int i = 0; i < 100; ++i) {
    sealed.insert(*Seal(key, 1, "same", "same"));
    const Key k = NewKey();
    keys.insert(k.bytes());
    fingerprints.insert(k.Fingerprint());
  }
  EXPECT_EQ(sealed.size(), 100u);
  EXPECT_EQ(keys.size(), 100u);
  EXPECT_EQ(fingerprints.size(), 100u);
  EXPECT_EQ(key.Fingerprint(), Key::FromBytes(key.bytes())->Fingerprint());
  EXPECT_EQ(key.Fingerprint().size(), 16u);
  EXPECT_EQ(Key::FromBytes("short").status().code(), StatusCode::kInvalidArgument);
}

// A wrong key-encryption key is told apart from a damaged data key.
TEST(AeadTest, AWrongKeyIsToldApartFromADamagedDataKey) {
  const Key kek = NewKey(), wrong = NewKey(), data = NewKey();
  auto wrapped = WrapKey(kek, 3, data);
  ASSERT_OK(wrapped);
  auto unwrapped = UnwrapKey(kek, kek.Fingerprint(), 3, *wrapped);
  ASSERT_OK(unwrapped);
  EXPECT_EQ(unwrapped->bytes(), data.bytes());
  auto refused = UnwrapKey(wrong, kek.Fingerprint(), 3, *wrapped);
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition) << refused.status();
  EXPECT_NE(refused.status().message().find("is not the one"), std::string::npos);
  std::string damaged = *wrapped;
  damaged[damaged.size() / 2] ^= 0x40;
  EXPECT_EQ(UnwrapKey(kek, kek.Fingerprint(), 3, damaged).status().code(), StatusCode::kCorruption);
  // Wrapped for one id, it does not open as another.
  EXPECT_EQ(UnwrapKey(kek, kek.Fingerprint(), 4, *wrapped).status().code(),
            StatusCode::kCorruption);
}

TEST(KeySourceTest, AKeyFromAFileAVariableOrACommand) {
  testing::TempDir dir;
  const Key key = NewKey();
  const std::string text = Base64Encode(key.bytes());
  std::ofstream(dir.Sub("key")) << text << "\n";
  KeySource file{.file = dir.Sub("key")};
  EXPECT_EQ(LoadKey(file)->bytes(), key.bytes());

  ::setenv("KCACHE_TEST_KEY", text.c_str(), 1);
  KeySource env{.env = "KCACHE_TEST_KEY"};
  EXPECT_EQ(LoadKey(env)->bytes(), key.bytes());

  KeySource plain{.exec = {"sh", "-c", "echo " + text}};
  EXPECT_EQ(LoadKey(plain)->bytes(), key.bytes());
  KeySource json{.exec = {"sh", "-c", "echo '{\"key\": \"" + text + "\"}'"}};
  EXPECT_EQ(LoadKey(json)->bytes(), key.bytes());
}

TEST(KeySourceTest, EachBadSourceSaysWhatAndWhere) {
  testing::TempDir dir;
  std::ofstream(dir.Sub("short")) << Base64Encode("sixteen bytes...") << "\n";
  std::ofstream(dir.Sub("junk")) << "not base64 at all!\n";
  struct Case {
    KeySource source;
    StatusCode code;
    std::string said;
  };
  ::unsetenv("KCACHE_TEST_UNSET");
  for (const Case& c : {
           Case{{}, StatusCode::kInvalidArgument, "exactly one"},
           Case{{.file = dir.Sub("short"), .env = "X"}, StatusCode::kInvalidArgument, "2 given"},
           Case{{.file = dir.Sub("short")},
                StatusCode::kInvalidArgument,
                "short: 16 bytes; a key is 32"},
           Case{{.file = dir.Sub("junk")}, StatusCode::kInvalidArgument, "junk: not base64"},
           Case{{.file = dir.Sub("absent")}, StatusCode::kNotFound, "absent: cannot be read"},
           Case{{.env = "KCACHE_TEST_UNSET"}, StatusCode::kNotFound, "KCACHE_TEST_UNSET: not set"},
           Case{{.exec = {"sh", "-c", "exit 3"}}, StatusCode::kUnavailable, "exit status 3"},
           Case{{.exec = {"sh", "-c", "echo '{\"token\": 1}'"}},
                StatusCode::kInvalidArgument,
                "without a string \"key\""},
           Case{{.exec = {"/nonexistent/kms-plugin"}}, StatusCode::kNotFound, "cannot run"},
           Case{{.exec = {"sleep", "5"}, .exec_timeout = std::chrono::milliseconds(200)},
                StatusCode::kDeadlineExceeded,
                "killed"},
       }) {
    StatusOr<Key> key = LoadKey(c.source);
    EXPECT_EQ(key.status().code(), c.code) << key.status();
    EXPECT_NE(key.status().message().find(c.said), std::string::npos) << key.status();
  }
}

}  // namespace
}  // namespace kcache::crypto
