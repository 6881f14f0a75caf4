// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/scratch_dir.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace kcache::tool {

StatusOr<std::unique_ptr<ScratchDir>> ScratchDir::Create(const std::string& prefix,
                                                         const std::string& dir) {
  if (!dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return Status::IOError("create " + dir + ": " + ec.message());
    return std::unique_ptr<ScratchDir>(new ScratchDir(dir, false));
  }
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + prefix + "-XXXXXX";
  if (!mkdtemp(tmpl.data()))
    return Status::IOError("create a directory " + tmpl + ": " + std::strerror(errno));
  return std::unique_ptr<ScratchDir>(new ScratchDir(tmpl, true));
}

ScratchDir::~ScratchDir() {
  if (!remove_) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace kcache::tool
