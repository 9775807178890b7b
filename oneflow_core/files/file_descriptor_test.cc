#include "oneflow_core/files/file_descriptor.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "gtest/gtest.h"

namespace oneflow {
namespace {

// Whether `fd` names an open descriptor of this process.
bool IsOpen(int fd) { return fcntl(fd, F_GETFD) != -1 || errno != EBADF; }

TEST(FileDescriptorTest, ClosesWhenItsOwnerGoes) {
  int fd = -1;
  {
    const FileDescriptor file(open("/dev/null", O_RDONLY | O_CLOEXEC));
    ASSERT_TRUE(file.valid());
    fd = file.get();
    EXPECT_TRUE(IsOpen(fd));
  }
  EXPECT_FALSE(IsOpen(fd));
}

TEST(FileDescriptorTest, MoveHandsOverOwnership) {
  FileDescriptor first(open("/dev/null", O_RDONLY | O_CLOEXEC));
  const int fd = first.get();
  FileDescriptor second = std::move(first);
  EXPECT_FALSE(first.valid());
  EXPECT_EQ(second.get(), fd);
  first.Reset();  // Holds none: closes nothing.
  EXPECT_TRUE(IsOpen(fd));
  // Assigning over a held descriptor closes the old one.
  FileDescriptor other(open("/dev/null", O_RDONLY | O_CLOEXEC));
  const int other_fd = other.get();
  second = std::move(other);
  EXPECT_FALSE(IsOpen(fd));
  EXPECT_EQ(second.get(), other_fd);
}

TEST(FileDescriptorTest, CloseReportsCloseResultOnce) {
  int pipe_fds[2];
  ASSERT_EQ(pipe2(pipe_fds, O_CLOEXEC), 0);
  FileDescriptor read_end(pipe_fds[0]);
  FileDescriptor write_end(pipe_fds[1]);
  EXPECT_EQ(write_end.Close(), 0);
  EXPECT_FALSE(write_end.valid());
  EXPECT_FALSE(IsOpen(pipe_fds[1]));
  EXPECT_EQ(write_end.Close(), 0);  // None held any more.
  // The read end sees the write end gone: end of file, not a block.
  char byte;
  EXPECT_EQ(read(read_end.get(), &byte, 1), 0);
  // A descriptor that was never open: close() fails and Close() says so.
  FileDescriptor stale(pipe_fds[1]);
  EXPECT_EQ(stale.Close(), -1);
}

}  // namespace
}  // namespace oneflow
