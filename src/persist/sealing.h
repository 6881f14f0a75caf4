// SPDX-License-Identifier: Apache-2.0

// Sealing a keyspace's stored objects (encryption at rest) and rotating the
// keys that seal them (kcache::Rekey): the writes that change what the
// keyring holds, each crash-safe because every record names the data key
// it was sealed with and the keyring keeps every key a record may name.

#ifndef KCACHE_SRC_PERSIST_SEALING_H_
#define KCACHE_SRC_PERSIST_SEALING_H_

#include <string>

#include "kcache/status.h"
#include "persist/db.h"

namespace kcache::storage {

// Seals keyspace `ks` of writer `db`, whose keyring is unlocked: creates
// the keyring (recording format version 3) if there is none, rewrites
// every plain record sealed, drops the keyspace's journal (which holds its
// objects in the clear), lists the keyspace sealed, and compacts its rows
// so that no live file keeps the plain bytes. A crash midway leaves a
// keyspace of plain and sealed records, all readable, sealed again by the
// next writer that opens it.
Status SealKeyspace(Db& db, const std::string& ks);

// kcache::Rekey of writer `db`.
Status RekeyDb(Db& db, const std::string& new_kek);

}  // namespace kcache::storage

#endif  // KCACHE_SRC_PERSIST_SEALING_H_
