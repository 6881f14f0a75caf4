// SPDX-License-Identifier: Apache-2.0

// Rows: the sorted rows of a cache's families (meta, objects, rindex,
// index), read through one interface whether they live in a RocksDB
// database or in a snapshot file, so that both answer a keyspace's reads
// with the same code (StoredIndexer).

#ifndef KCACHE_SRC_PERSIST_ROWS_H_
#define KCACHE_SRC_PERSIST_ROWS_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "kcache/status_or.h"
#include "persist/encoding.h"

namespace kcache::storage {

struct Db;
class Keyring;

// Walks the rows of one family in ascending bytewise key order.
class RowCursor {
 public:
  virtual ~RowCursor() = default;
  // Positions at the first row at or after `target`.
  virtual void Seek(std::string_view target) = 0;
  virtual bool Valid() const = 0;
  // REQUIRES: Valid().
  virtual void Next() = 0;
  // Valid until the next Seek() or Next().
  virtual std::string_view key() const = 0;
  virtual std::string_view value() const = 0;
  // Not OK if reading failed; Valid() is then false.
  virtual Status status() const = 0;
};

// Thread-safety: safe for concurrent use; a cursor is used by one thread.
class Rows {
 public:
  virtual ~Rows() = default;
  // The rows of `family` below `limit` (empty: all).
  virtual std::unique_ptr<RowCursor> NewCursor(Family family, std::string limit) const = 0;
  // The value of `key`; nullopt if there is no such row.
  virtual StatusOr<std::optional<std::string>> Get(Family family, std::string_view key) const = 0;
  // A view that does not change while it lives, for reads that must agree
  // with each other (an index walk and the objects it looks up).
  virtual std::shared_ptr<const Rows> Pin() const = 0;
  // The keyring that opens sealed object records (never null).
  virtual std::shared_ptr<const Keyring> keyring() const = 0;
};

// The rows of a RocksDB cache, current at each read (a read-only cache:
// as of its last Refresh()).
std::shared_ptr<const Rows> DbRows(std::shared_ptr<Db> db);

}  // namespace kcache::storage

#endif  // KCACHE_SRC_PERSIST_ROWS_H_
