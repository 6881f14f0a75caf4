// SPDX-License-Identifier: Apache-2.0

// kcache rekey: rotates the keys of a cache's encrypted resources without a
// relist (kcache::Rekey): a new data key seals every encrypted object, and,
// given a new key-encryption key, the data key is wrapped with it instead.

#include <iostream>
#include <string>
#include <vector>

#include "kcache/cache.h"
#include "kcache/encryption.h"
#include "tools/kcache/command.h"

namespace kcache::tool {
namespace {

std::string Join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

Status RunRekey(const std::string& cache_dir, const KeySource& next, std::ostream& out) {
  if (cache_dir.empty()) return Status::InvalidArgument("--cache DIR is required");
  CacheOptions o;
  o.create_if_missing = false;
  KCACHE_ASSIGN_OR_RETURN(o.encryption.key_encryption_key, GivenKeyEncryptionKey());
  if (o.encryption.key_encryption_key.empty()) {
    return Status::InvalidArgument(
        "rekey needs the cache's key-encryption key: --encryption-key-file, "
        "--encryption-key-env or --encryption-key-exec");
  }
  std::string next_key;
  if (!next.file.empty() || !next.env.empty()) {
    KCACHE_ASSIGN_OR_RETURN(next_key, LoadKeyEncryptionKey(next));
  }
  KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Cache> cache, Cache::Open(cache_dir, o));
  KCACHE_RETURN_IF_ERROR(Rekey(*cache, next_key));
  KCACHE_ASSIGN_OR_RETURN(EncryptionStatus s, GetEncryptionStatus(*cache));
  out << "rekeyed " << cache_dir << ": data key " << s.current_data_key << " seals "
      << (s.keyspaces.empty() ? "no resource yet" : Join(s.keyspaces)) << "; wrapped with key "
      << s.key_fingerprint << (next_key.empty() ? "" : " (the new key)") << "\n";
  return Status::OK();
}

int RekeyMain(const Command& self, const std::vector<std::string>& args) {
  std::string cache_dir;
  KeySource next;
  cli::FlagSet flags;
  flags.String("cache", '\0', &cache_dir, "the cache directory");
  KeyFlags(flags);
  flags.String("new-encryption-key-file", '\0', &next.file,
               "wrap the data key with the key in this file from now on");
  flags.String("new-encryption-key-env", '\0', &next.env,
               "wrap the data key with the key in this environment variable from now on");
  if (int rc = ParseFlagsOnly(self, flags, args); rc >= 0) return rc;
  if (Status st = RunRekey(cache_dir, next, std::cout); !st.ok()) return Fail(st, self.name);
  return 0;
}

}  // namespace

const Command kRekeyCommand = {
    "rekey",
    "rekey --cache DIR --encryption-key-file F [--new-encryption-key-file F2]",
    "rotate the keys of a cache's encrypted resources, without a relist",
    "Seals every encrypted object of the cache with a new data key, drops the older data "
    "keys and compacts the files, so that nothing under an older key remains in them. With "
    "--new-encryption-key-file (or --new-encryption-key-env), the data key is wrapped with "
    "the new key-encryption key, and the cache opens with that key only. Run it while no "
    "kcache sync writes the cache; one cut short is finished by running it again (with the "
    "new key, once the new wrapping was recorded).",
    "  # A new data key\n"
    "  kcache rekey --cache ./cache --encryption-key-file key\n"
    "\n"
    "  # A new key-encryption key too\n"
    "  kcache rekey --cache ./cache --encryption-key-file key --new-encryption-key-file next\n",
    RekeyMain};

}  // namespace kcache::tool
