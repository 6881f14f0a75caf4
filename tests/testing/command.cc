// SPDX-License-Identifier: Apache-2.0

#include "testing/command.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include <gtest/gtest.h>

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

Background StartCommand(const std::string& command) {
  Background b;
  int fds[2];
  if (pipe(fds) != 0) return b;
  b.pid = fork();
  if (b.pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    execl("/bin/sh", "sh", "-c", ("exec " + command).c_str(), nullptr);
    _exit(127);
  }
  close(fds[1]);
  if (b.pid < 0) {
    close(fds[0]);
    return b;
  }
  b.out = fds[0];
  return b;
}

std::string ReadLines(int fd, int lines) {
  std::string out;
  char c;
  while (std::count(out.begin(), out.end(), '\n') < lines && read(fd, &c, 1) == 1) out += c;
  return out;
}

std::string Drain(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

int Stop(Background& b, int sig) {
  if (b.pid <= 0) return -1;
  kill(b.pid, sig);
  int status = 0;
  waitpid(b.pid, &status, 0);
  if (b.out >= 0) Drain(b.out);
  b.pid = -1;
  b.out = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

CommandResult MakeServingCertificate(const std::string& cert, const std::string& key) {
  return RunCommand(
      "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=kcache-serve -addext "
      "subjectAltName=IP:127.0.0.1 -keyout " +
      key + " -out " + cert + " 2>&1");
}

std::string KcacheBin() {
  const char* bin = std::getenv("KCACHE_BIN");
  if (!bin) ADD_FAILURE() << "KCACHE_BIN is not set";
  return bin ? bin : "false";
}

std::string ServeProcess::listen() const {
  const std::string scheme = "http://";
  return url.rfind(scheme, 0) == 0 ? url.substr(scheme.size()) : url;
}

ServeProcess& ServeProcess::operator=(ServeProcess&& other) noexcept {
  if (this != &other) {
    if (process.pid > 0) Stop(process, SIGTERM);
    process = std::exchange(other.process, Background{});
    banner = std::move(other.banner);
    url = std::move(other.url);
  }
  return *this;
}

ServeProcess::~ServeProcess() {
  if (process.pid > 0) Stop(process, SIGTERM);
}

ServeProcess StartServe(const std::string& args) {
  ServeProcess s{StartCommand(KcacheBin() + " serve " + args), "", ""};
  EXPECT_GT(s.process.pid, 0) << args;
  if (s.process.pid <= 0) return s;
  // Up to the "serving on" line: a cache's banner lists what is not served
  // between its first line and that one.
  for (int i = 0; i < 64 && s.banner.find("serving on ") == std::string::npos; ++i) {
    std::string line = ReadLines(s.process.out, 1);
    if (line.empty()) break;
    s.banner += line;
  }
  size_t at = s.banner.find("serving on ");
  EXPECT_NE(at, std::string::npos) << s.banner;
  if (at != std::string::npos) at += std::string_view("serving on ").size();
  if (at != std::string::npos) s.url = s.banner.substr(at, s.banner.find_first_of(" \n", at) - at);
  return s;
}

}  // namespace kcache::testing
