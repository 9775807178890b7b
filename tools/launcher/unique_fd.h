// A file descriptor closed when its owner goes.
#ifndef TOOLS_LAUNCHER_UNIQUE_FD_H_
#define TOOLS_LAUNCHER_UNIQUE_FD_H_

#include <unistd.h>

#include <utility>

namespace oneflow::launcher {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) {
      Reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { Reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void Reset() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

}  // namespace oneflow::launcher

#endif  // TOOLS_LAUNCHER_UNIQUE_FD_H_
