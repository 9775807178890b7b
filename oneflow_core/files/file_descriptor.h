// An owning file descriptor: closed on every path out of the scope that holds it. The one
// such type in the tree (files, pipes, sockets, /proc reads; the launcher's pipes included):
// it lives in the bottom layer so that every layer may hold one.
#ifndef ONEFLOW_CORE_FILES_FILE_DESCRIPTOR_H_
#define ONEFLOW_CORE_FILES_FILE_DESCRIPTOR_H_

#include <unistd.h>

#include <utility>

namespace oneflow {

class FileDescriptor {
 public:
  FileDescriptor() = default;
  // Takes ownership of `fd` (negative: holds none).
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  FileDescriptor(FileDescriptor&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  FileDescriptor& operator=(FileDescriptor&& other) noexcept {
    if (this != &other) {
      Reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  ~FileDescriptor() { Reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }

  // Closes now and returns close()'s result, so a caller can report the error close() may
  // carry for buffered writes (the destructor cannot). 0 when none was held.
  int Close() {
    if (fd_ < 0) return 0;
    return close(std::exchange(fd_, -1));
  }

  // Closes now, if one is held, when close()'s result does not matter (a read end, a pipe
  // end handed to a child, the destructor).
  void Reset() {
    if (fd_ >= 0) close(std::exchange(fd_, -1));
  }

 private:

  int fd_ = -1;
};

}  // namespace oneflow

#endif  // ONEFLOW_CORE_FILES_FILE_DESCRIPTOR_H_
