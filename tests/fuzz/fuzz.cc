// SPDX-License-Identifier: Apache-2.0

#include "fuzz/fuzz.h"

#include <unistd.h>

namespace kcache::fuzz {
namespace {

struct InputFile {
  InputFile() {
    const char* tmp = std::getenv("TMPDIR");
    path = std::string(tmp && *tmp ? tmp : "/tmp") + "/kcache-fuzz-XXXXXX";
    int fd = mkstemp(path.data());
    Check(fd >= 0, "mkstemp", path);
    close(fd);
  }
  ~InputFile() { unlink(path.c_str()); }
  std::string path;
};

}  // namespace

const std::string& WriteInputFile(std::string_view bytes) {
  static InputFile file;
  std::FILE* f = std::fopen(file.path.c_str(), "wb");
  Check(f != nullptr, "open the input file", file.path);
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  ok = std::fclose(f) == 0 && ok;
  Check(ok, "write the input file", file.path);
  return file.path;
}

}  // namespace kcache::fuzz
