// Turns SIGINT/SIGTERM into a call on an ordinary thread, so that what a signal starts
// (cancelling jobs, RPCs, logging) never runs inside a signal handler.
//
// The self-pipe trick: the handler only write()s the signal's number to a pipe (which is
// async-signal-safe), and a watcher thread reads the pipe and calls `on_signal`. Unlike
// blocking the signals for a sigwait thread, this works whichever threads exist already
// (libraries such as OpenBLAS start theirs when they load, with the signals unblocked).
// One watcher per process at a time; the handlers are installed by the constructor and
// the previous dispositions restored by the destructor.
#ifndef TOOLS_LAUNCHER_SIGNAL_WATCHER_H_
#define TOOLS_LAUNCHER_SIGNAL_WATCHER_H_

#include <signal.h>

#include <atomic>
#include <functional>
#include <thread>
#include <vector>

#include "oneflow_core/files/file_descriptor.h"

namespace oneflow::launcher {

class SignalWatcher {
 public:
  // `on_signal` runs on the watcher thread, once per signal received.
  SignalWatcher(std::vector<int> signals, std::function<void(int signal)> on_signal);
  ~SignalWatcher();
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

 private:
  std::vector<int> signals_;
  std::vector<struct sigaction> previous_;
  std::function<void(int)> on_signal_;
  FileDescriptor read_fd_;
  FileDescriptor write_fd_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace oneflow::launcher

#endif  // TOOLS_LAUNCHER_SIGNAL_WATCHER_H_
