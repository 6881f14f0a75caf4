// SPDX-License-Identifier: Apache-2.0

// Shared by the fuzz targets. Each target defines LLVMFuzzerTestOneInput and
// is linked either with libFuzzer (tools/dev/fuzz, a clang build) or with
// replay_main.cc, which runs it over its corpus as a regression test.
#ifndef KCACHE_TESTS_FUZZ_FUZZ_H_
#define KCACHE_TESTS_FUZZ_FUZZ_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace kcache::fuzz {

inline std::string_view Bytes(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// A property every input must keep; a broken one aborts, so that libFuzzer
// saves the input as a crash.
inline void Check(bool ok, std::string_view what, std::string_view detail = {}) {
  if (ok) return;
  std::string text =
      "fuzz property broken: " + std::string(what) + "\n" + std::string(detail) + "\n";
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::abort();
}

// A file holding the current input, for the loaders that read files: one
// per process, in $TMPDIR, removed at exit.
const std::string& WriteInputFile(std::string_view bytes);

}  // namespace kcache::fuzz

#endif  // KCACHE_TESTS_FUZZ_FUZZ_H_
