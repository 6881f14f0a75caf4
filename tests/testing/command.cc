#include "testing/command.h"

#include <sys/wait.h>

#include <cstdio>

namespace kcache::testing {

CommandResult RunCommand(const std::string& command) {
  FILE* p = popen(command.c_str(), "r");
  if (!p) return {-1, "popen failed"};
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace kcache::testing
