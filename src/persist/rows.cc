// SPDX-License-Identifier: Apache-2.0

#include "persist/rows.h"

#include "persist/db.h"
#include "persist/rocks_status.h"

namespace kcache::storage {
namespace {

rocksdb::ColumnFamilyHandle* Handle(const Db& db, Family family) {
  switch (family) {
    case Family::kMeta:
      return db.meta;
    case Family::kObjects:
      return db.objects;
    case Family::kReverseIndex:
      return db.rindex;
    case Family::kIndex:
      return db.index;
  }
  return nullptr;
}

class DbCursor final : public RowCursor {
 public:
  DbCursor(std::shared_ptr<Db> db, DbSnapshot snapshot, Family family, std::string limit)
      : db_(std::move(db)),
        snapshot_(std::move(snapshot)),
        limit_(std::move(limit)),
        upper_(limit_),
        family_(family) {
    rocksdb::ReadOptions ro;
    ro.snapshot = snapshot_.get();
    if (!limit_.empty()) ro.iterate_upper_bound = &upper_;
    it_.reset(db_->db->NewIterator(ro, Handle(*db_, family)));
  }

  void Seek(std::string_view target) override { it_->Seek(rocksdb::Slice(target)); }
  bool Valid() const override { return it_->Valid(); }
  void Next() override { it_->Next(); }
  std::string_view key() const override { return View(it_->key()); }
  std::string_view value() const override { return View(it_->value()); }
  Status status() const override {
    return FromRocks(it_->status(), std::string("read ") + FamilyName(family_));
  }

 private:
  std::shared_ptr<Db> db_;  // outlives it_
  DbSnapshot snapshot_;     // outlives it_
  std::string limit_;
  rocksdb::Slice upper_;
  Family family_;
  std::unique_ptr<rocksdb::Iterator> it_;
};

class DbRowsImpl final : public Rows, public std::enable_shared_from_this<DbRowsImpl> {
 public:
  DbRowsImpl(std::shared_ptr<Db> db, DbSnapshot snapshot)
      : db_(std::move(db)), snapshot_(std::move(snapshot)) {}

  std::unique_ptr<RowCursor> NewCursor(Family family, std::string limit) const override {
    return std::make_unique<DbCursor>(db_, snapshot_, family, std::move(limit));
  }

  StatusOr<std::optional<std::string>> Get(Family family, std::string_view key) const override {
    rocksdb::ReadOptions ro;
    ro.snapshot = snapshot_.get();
    std::string value;
    rocksdb::Status s = db_->db->Get(ro, Handle(*db_, family), rocksdb::Slice(key), &value);
    if (s.IsNotFound()) return std::optional<std::string>();
    if (!s.ok()) return FromRocks(s, std::string("read ") + FamilyName(family));
    return std::optional<std::string>(std::move(value));
  }

  std::shared_ptr<const Rows> Pin() const override {
    if (snapshot_ != nullptr) return shared_from_this();
    // A reader (secondary instance) has no snapshots: its view changes
    // only on Refresh().
    if (db_->read_only) return shared_from_this();
    return std::make_shared<DbRowsImpl>(db_, TakeSnapshot(db_));
  }

  std::shared_ptr<const Keyring> keyring() const override { return db_->keyring(); }

 private:
  const std::shared_ptr<Db> db_;
  const DbSnapshot snapshot_;  // null: the current state
};

}  // namespace

std::shared_ptr<const Rows> DbRows(std::shared_ptr<Db> db) {
  return std::make_shared<DbRowsImpl>(std::move(db), nullptr);
}

}  // namespace kcache::storage
