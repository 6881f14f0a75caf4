// SPDX-License-Identifier: Apache-2.0

#include "persist/info_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <mutex>
#include <thread>

namespace kcache::storage {
namespace {

class InfoLog final : public rocksdb::Logger {
 public:
  InfoLog(std::string path, int fd, size_t size, size_t max_bytes)
      : rocksdb::Logger(rocksdb::InfoLogLevel::INFO_LEVEL),
        path_(std::move(path)),
        fd_(fd),
        size_(size),
        max_bytes_(max_bytes) {}
  ~InfoLog() override {
    if (fd_ >= 0) ::close(fd_);
  }

  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override {
    // "2026/11/24-15:40:23.832123 140737 " and the message, as RocksDB's.
    timeval now;
    gettimeofday(&now, nullptr);
    tm t;
    localtime_r(&now.tv_sec, &t);
    char prefix[64];
    int n =
        std::snprintf(prefix, sizeof prefix, "%04d/%02d/%02d-%02d:%02d:%02d.%06ld %llx ",
                      t.tm_year + 1900, t.tm_mon + 1, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec,
                      static_cast<long>(now.tv_usec), static_cast<unsigned long long>(gettid()));
    std::string line(prefix, static_cast<size_t>(std::max(n, 0)));
    va_list copy;
    va_copy(copy, ap);
    char buf[512];
    int m = std::vsnprintf(buf, sizeof buf, format, copy);
    va_end(copy);
    if (m < 0) return;
    if (static_cast<size_t>(m) < sizeof buf) {
      line.append(buf, static_cast<size_t>(m));
    } else {
      std::string big(static_cast<size_t>(m) + 1, '\0');
      std::vsnprintf(big.data(), big.size(), format, ap);
      big.pop_back();
      line += big;
    }
    if (line.back() != '\n') line += '\n';
    std::lock_guard l(mu_);
    if (size_ + line.size() > max_bytes_) Rotate();
    if (fd_ < 0) return;
    ssize_t w = ::write(fd_, line.data(), line.size());
    if (w > 0) size_ += static_cast<size_t>(w);  // a failed line is dropped
  }

  size_t GetLogFileSize() const override {
    std::lock_guard l(mu_);
    return size_;
  }

 private:
  void Rotate() {
    const std::string old = path_ + ".old";
    if (std::rename(path_.c_str(), old.c_str()) != 0) return;  // keep appending
    int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0) return;
    ::close(fd_);
    fd_ = fd;
    size_ = 0;
  }

  const std::string path_;
  mutable std::mutex mu_;
  int fd_;       // guarded by mu_
  size_t size_;  // guarded by mu_
  const size_t max_bytes_;
};

}  // namespace

StatusOr<std::shared_ptr<rocksdb::Logger>> NewInfoLog(const std::string& dir, size_t max_bytes) {
  const std::string path = dir + "/LOG";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return Status::IOError("open " + path + ": " + std::strerror(errno));
  struct stat st;
  size_t size = ::fstat(fd, &st) == 0 ? static_cast<size_t>(st.st_size) : 0;
  return std::shared_ptr<rocksdb::Logger>(std::make_shared<InfoLog>(path, fd, size, max_bytes));
}

}  // namespace kcache::storage
