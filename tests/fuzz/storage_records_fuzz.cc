// SPDX-License-Identifier: Apache-2.0

// The storage-format decoders: records as read from RocksDB (objects,
// reverse index entries, resource and cluster meta, the keyring, journal state and
// entries) and a snapshot's parts (manifest, rows, block framing). The
// first byte picks the decoder. Properties: no crash, and what decodes
// encodes to a record that decodes to the same.
#include <zstd.h>

#include "fuzz/fuzz.h"
#include "persist/encoding.h"
#include "persist/journal.h"
#include "persist/keyring.h"
#include "persist/snapshot_format.h"

namespace {

using kcache::fuzz::Check;
namespace storage = kcache::storage;
namespace snapshot = kcache::snapshot;

void Object(std::string_view in) {
  std::string_view rv, json;
  if (!storage::DecodeObject(in, &rv, &json).ok()) return;
  std::string again = storage::EncodeObject(rv, json);
  std::string_view rv2, json2;
  Check(storage::DecodeObject(again, &rv2, &json2).ok() && rv2 == rv && json2 == json,
        "an object record does not round-trip");
}

void Entries(std::string_view in) {
  auto entries = storage::DecodeEntries(in);
  if (!entries.ok()) return;
  auto again = storage::DecodeEntries(storage::EncodeEntries(*entries));
  Check(again.ok() && *again == *entries, "index entries do not round-trip");
}

// The keyring row: what loads (without the key, or with a fixed one)
// encodes to a row that loads the same; a sealed record opened with a
// locked keyring fails cleanly.
void Keyring(std::string_view in) {
  for (const std::string& kek : {std::string(), std::string(32, 'k')}) {
    auto ring = storage::Keyring::Load(std::string(in), kek);
    if (!ring.ok()) continue;
    auto again = storage::Keyring::Load((*ring)->Encode(), "");
    Check(again.ok() && (*again)->Describe().data_keys == (*ring)->Describe().data_keys &&
              (*again)->Describe().keyspaces == (*ring)->Describe().keyspaces,
          "a keyring row does not round-trip");
    std::string_view rv, json;
    std::string buffer;
    Check(!storage::OpenObject(ring->get(), "secrets", "ns/a", in, &rv, &json, &buffer).ok() ||
              json.data() != nullptr,
          "an object opened to nothing");
  }
}

void Meta(std::string_view in) {
  if (auto r = storage::DecodeResourceInfo(in); r.ok()) {
    auto again = storage::DecodeResourceInfo(storage::ResourceInfoToJson(*r).dump());
    Check(again.ok(), "resource meta does not round-trip", again.status().ToString());
  }
  if (auto c = storage::DecodeClusterInfo(in); c.ok()) {
    auto again = storage::DecodeClusterInfo(storage::ClusterInfoToJson(*c).dump());
    Check(again.ok() && again->uid == c->uid && again->server == c->server,
          "cluster meta does not round-trip");
  }
}

void Journal(std::string_view in) {
  if (auto state = storage::DecodeJournalState(in); state.ok()) {
    auto again = storage::DecodeJournalState(storage::EncodeJournalState(*state));
    Check(again.ok() && again->start == state->start && again->events == state->events &&
              again->bytes == state->bytes,
          "a journal state does not round-trip");
  }
  storage::JournalEntry e;
  if (storage::DecodeJournalEntry(in, &e).ok()) {
    std::string again = storage::EncodeJournalEntry(e.type, e.time_ms, e.key, e.previous, e.json);
    storage::JournalEntry e2;
    Check(storage::DecodeJournalEntry(again, &e2).ok() && e2.type == e.type &&
              e2.time_ms == e.time_ms && e2.key == e.key && e2.previous == e.previous &&
              e2.json == e.json,
          "a journal entry does not round-trip");
  }
}

void Manifest(std::string_view in) {
  auto m = snapshot::DecodeManifest(in);
  if (!m.ok()) return;
  auto again = snapshot::DecodeManifest(snapshot::EncodeManifest(*m));
  Check(again.ok() && again->resources.size() == m->resources.size() &&
            again->format_version == m->format_version,
        "a manifest does not round-trip", again.status().ToString());
}

void Rows(std::string_view in) {
  snapshot::RowReader rows(in);
  while (!rows.Done()) {
    storage::Family family;
    std::string_view key, value;
    if (!rows.Next(&family, &key, &value).ok()) return;
  }
}

void Block(std::string_view in) {
  if (in.size() < 16) return;
  uint32_t stored_len, raw_len;
  if (!snapshot::ParseBlockHeader(in.data(), &stored_len, &raw_len).ok()) return;
  static ZSTD_DCtx* dctx = ZSTD_createDCtx();
  snapshot::BlockType type;
  std::string raw;
  (void)snapshot::DecodeBlock(in.data(), in.substr(16, stored_len), dctx, &type, &raw);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view in = kcache::fuzz::Bytes(data + 1, size - 1);
  switch (data[0] % 7) {
    case 0:
      Object(in);
      break;
    case 1:
      Entries(in);
      break;
    case 2:
      Meta(in);
      Keyring(in);
      break;
    case 3:
      Journal(in);
      break;
    case 4:
      Manifest(in);
      break;
    case 5:
      Rows(in);
      break;
    case 6:
      Block(in);
      break;
  }
  return 0;
}
