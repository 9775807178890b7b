#include "tools/launcher/signal_watcher.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace oneflow::launcher {
namespace {

// The write end of the current watcher's pipe, for the handler (lock-free, so safe to
// read in a signal handler); -1 when there is none.
std::atomic<int> g_signal_pipe{-1};

void WriteSignalToPipe(int signal) {
  const int saved_errno = errno;
  const int fd = g_signal_pipe.load();
  if (fd >= 0) {
    const unsigned char byte = static_cast<unsigned char>(signal);
    ssize_t ignored = write(fd, &byte, 1);
    (void)ignored;
  }
  errno = saved_errno;
}

}  // namespace

SignalWatcher::SignalWatcher(std::vector<int> signals, std::function<void(int)> on_signal)
    : signals_(std::move(signals)), on_signal_(std::move(on_signal)) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) == 0) {
    read_fd_ = FileDescriptor(fds[0]);
    write_fd_ = FileDescriptor(fds[1]);
    // A full pipe must not block the handler (the signal is then dropped: there are
    // already plenty queued).
    fcntl(write_fd_.get(), F_SETFL, fcntl(write_fd_.get(), F_GETFL) | O_NONBLOCK);
  }
  g_signal_pipe.store(write_fd_.get());
  struct sigaction action;
  std::memset(&action, 0, sizeof(action));
  action.sa_handler = &WriteSignalToPipe;
  action.sa_flags = SA_RESTART;  // Other threads' system calls go on undisturbed.
  sigemptyset(&action.sa_mask);
  previous_.resize(signals_.size());
  for (size_t i = 0; i < signals_.size(); ++i) sigaction(signals_[i], &action, &previous_[i]);
  thread_ = std::thread([this] {
    while (!stop_.load()) {
      // Short polls so the destructor need not wake the thread.
      struct pollfd poll_fd = {read_fd_.get(), POLLIN, 0};
      if (poll(&poll_fd, 1, 100) <= 0) continue;
      unsigned char byte;
      if (read(read_fd_.get(), &byte, 1) == 1) on_signal_(byte);
    }
  });
}

SignalWatcher::~SignalWatcher() {
  for (size_t i = 0; i < signals_.size(); ++i) sigaction(signals_[i], &previous_[i], nullptr);
  g_signal_pipe.store(-1);
  stop_.store(true);
  thread_.join();  // The pipe's ends close after it (members).
}

}  // namespace oneflow::launcher
