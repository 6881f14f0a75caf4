// SPDX-License-Identifier: Apache-2.0

// A directory for work files: one the caller names (created if missing and
// kept), or a new one under $TMPDIR (default /tmp) that is removed, with
// everything in it, when the ScratchDir is destroyed.
//
// Thread-safety: immutable after Create; destroy it after every user of the
// directory (an open Cache in it, say) is gone.

#ifndef KCACHE_TOOLS_KCACHE_SCRATCH_DIR_H_
#define KCACHE_TOOLS_KCACHE_SCRATCH_DIR_H_

#include <memory>
#include <string>

#include "kcache/status_or.h"

namespace kcache::tool {

class ScratchDir {
 public:
  // `dir` empty: a new directory named `prefix` + "-XXXXXX" under $TMPDIR.
  static StatusOr<std::unique_ptr<ScratchDir>> Create(const std::string& prefix,
                                                      const std::string& dir = "");
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  ScratchDir(std::string path, bool remove) : path_(std::move(path)), remove_(remove) {}

  const std::string path_;
  const bool remove_;
};

}  // namespace kcache::tool

#endif  // KCACHE_TOOLS_KCACHE_SCRATCH_DIR_H_
