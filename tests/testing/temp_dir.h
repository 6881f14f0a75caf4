// SPDX-License-Identifier: Apache-2.0

// A fresh directory under $TMPDIR (or /tmp), removed with its contents when
// the object goes away.

#ifndef KCACHE_TESTS_TESTING_TEMP_DIR_H_
#define KCACHE_TESTS_TESTING_TEMP_DIR_H_

#include <string>

namespace kcache::testing {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // path() + "/" + name
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace kcache::testing

#endif  // KCACHE_TESTS_TESTING_TEMP_DIR_H_
