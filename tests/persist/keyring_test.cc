// SPDX-License-Identifier: Apache-2.0

// The keyring on its own: what a sealed value opens with, and what each
// derived keyring keeps (the caches that use it: encryption_test.cc).

#include "persist/keyring.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "crypto/aead.h"
#include "testing/status_matchers.h"

namespace kcache::testing {
namespace {

using storage::Keyring;

std::string NewKey() { return crypto::Key::Generate()->bytes(); }

std::shared_ptr<const Keyring> Load(const std::optional<std::string>& row, std::string_view kek) {
  StatusOr<std::shared_ptr<const Keyring>> ring = Keyring::Load(row, kek);
  EXPECT_OK(ring);
  return ring.ok() ? *ring : nullptr;
}

TEST(KeyringTest, NoRowIsAnEmptyKeyringUnlockedByAnyKey) {
  auto ring = Load(std::nullopt, NewKey());
  ASSERT_NE(ring, nullptr);
  EXPECT_TRUE(ring->empty());
  EXPECT_TRUE(ring->unlocked());
  EXPECT_FALSE(ring->Describe().encrypted);
  EXPECT_FALSE(Load(std::nullopt, "")->unlocked());
}

TEST(KeyringTest, ASealedValueOpensOnlyInItsOwnContext) {
  auto ring = *Load(std::nullopt, NewKey())->WithDataKey();
  const std::string context = storage::ObjectSealContext("secrets", "ns/a");
  StatusOr<std::string> sealed_or = ring->Seal("top secret", context);
  ASSERT_OK(sealed_or);
  const std::string sealed = *sealed_or;
  EXPECT_EQ(sealed.find("top secret"), std::string::npos);
  StatusOr<std::string> opened_or = ring->Open(sealed, context, "ns/a");
  ASSERT_OK(opened_or);
  const std::string opened = *opened_or;
  EXPECT_EQ(opened, "top secret");
  // Copied under another name, or damaged: Corruption naming the value.
  EXPECT_THAT(ring->Open(sealed, storage::ObjectSealContext("secrets", "ns/b"), "ns/b"),
              StatusIs(StatusCode::kCorruption, ::testing::HasSubstr("ns/b")));
  std::string damaged = sealed;
  damaged.back() ^= 1;
  EXPECT_THAT(ring->Open(damaged, context, "ns/a"), StatusIs(StatusCode::kCorruption));
}

TEST(KeyringTest, TheStoredRowOpensOnlyWithItsWrappingKey) {
  const std::string kek = NewKey();
  auto ring = *Load(std::nullopt, kek)->WithDataKey();
  ring = ring->WithKeyspace("secrets");
  const std::string context = storage::ObjectSealContext("secrets", "ns/a");
  StatusOr<std::string> sealed_or = ring->Seal("v", context);
  ASSERT_OK(sealed_or);
  const std::string sealed = *sealed_or;
  const std::string row = ring->Encode();

  auto again = Load(row, kek);
  ASSERT_NE(again, nullptr);
  EXPECT_TRUE(again->Sealed("secrets"));
  EXPECT_FALSE(again->Sealed("configmaps"));
  EXPECT_EQ(again->Describe().keyspaces, std::vector<std::string>{"secrets"});
  EXPECT_THAT(again->Open(sealed, context, "ns/a"), IsOk());

  // Without the key the keyring is described, but opens nothing.
  auto locked = Load(row, "");
  ASSERT_NE(locked, nullptr);
  EXPECT_FALSE(locked->unlocked());
  EXPECT_EQ(locked->Describe().key_fingerprint, again->Describe().key_fingerprint);
  EXPECT_THAT(locked->Open(sealed, context, "ns/a"), StatusIs(StatusCode::kFailedPrecondition));
  // Invariant 6 (bad input gets a clear error): another key is refused as
  // the wrong key, not taken for damage; a row that does not parse is.
  EXPECT_THAT(Keyring::Load(row, NewKey()), StatusIs(StatusCode::kFailedPrecondition));
  EXPECT_THAT(Keyring::Load(std::string("not a keyring"), kek), StatusIs(StatusCode::kCorruption));
}

TEST(KeyringTest, RewrappingKeepsTheDataKeysAndOnlyCurrentDropsTheOthers) {
  const std::string kek = NewKey(), next = NewKey();
  auto first = *Load(std::nullopt, kek)->WithDataKey();
  const std::string context = storage::ObjectSealContext("secrets", "ns/a");
  StatusOr<std::string> old_value_or = first->Seal("old", context);
  ASSERT_OK(old_value_or);
  const std::string old_value = *old_value_or;
  auto second = *first->WithDataKey();
  EXPECT_NE(second->current(), first->current());
  StatusOr<std::string> new_value_or = second->Seal("new", context);
  ASSERT_OK(new_value_or);
  const std::string new_value = *new_value_or;
  EXPECT_EQ(*second->Open(old_value, context, "ns/a"), "old");

  // Rewrapped: the same data keys under the new key-encryption key only.
  auto rewrapped = *second->Rewrapped(next);
  const std::string row = rewrapped->Encode();
  EXPECT_THAT(Keyring::Load(row, kek), StatusIs(StatusCode::kFailedPrecondition));
  auto reloaded = Load(row, next);
  ASSERT_NE(reloaded, nullptr);
  EXPECT_EQ(*reloaded->Open(old_value, context, "ns/a"), "old");
  EXPECT_EQ(*reloaded->Open(new_value, context, "ns/a"), "new");

  // OnlyCurrent: a value sealed with a dropped data key is Corruption.
  auto only = reloaded->OnlyCurrent();
  EXPECT_EQ(only->Describe().data_keys, std::vector<uint32_t>{second->current()});
  EXPECT_EQ(*only->Open(new_value, context, "ns/a"), "new");
  EXPECT_THAT(only->Open(old_value, context, "ns/a"), StatusIs(StatusCode::kCorruption));
}

}  // namespace
}  // namespace kcache::testing
