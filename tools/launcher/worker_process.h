// Starting a worker process: fork + exec with the plumbing the daemon relies on.
//
//   - Its own process group (pgid = pid), so a cancel signals the worker and anything it
//     started, and nothing else.
//   - PR_SET_PDEATHSIG(SIGKILL): the kernel kills the worker when the thread that forked
//     it exits, which includes the daemon dying by SIGKILL, so a worker never outlives
//     its daemon. It is the *thread* that counts: SpawnWorker must run on a thread that
//     lives until the worker is reaped (WorkerJob's supervisor thread does both).
//   - stdin from /dev/null; stdout and stderr into one pipe (`output`); the events pipe's
//     write end as fd kWorkerEventsFd (`events` is its read end); every other descriptor
//     of the daemon (sockets, other jobs' pipes) closed at exec.
//   - A clean signal state: the daemon ignores SIGPIPE, and its signal mask or
//     dispositions could otherwise leak into the worker (SIG_IGN and the mask survive
//     exec); the child unblocks every signal and resets SIGPIPE, SIGINT, SIGTERM, ...
// An exec failure is reported through a close-on-exec pipe as an error of SpawnWorker,
// not as a worker that exits 127.
#ifndef TOOLS_LAUNCHER_WORKER_PROCESS_H_
#define TOOLS_LAUNCHER_WORKER_PROCESS_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "oneflow_core/files/file_descriptor.h"

namespace oneflow::launcher {

// The descriptor number of the events pipe in the worker (its --events_fd).
inline constexpr int kWorkerEventsFd = 3;

struct WorkerCommand {
  std::string binary;                   // absolute path, run as is (no shell, no PATH)
  std::vector<std::string> arguments;   // after argv[0]
  std::string working_directory;
};

struct SpawnedWorker {
  pid_t pid = -1;
  FileDescriptor events;  // read end of the events pipe
  FileDescriptor output;  // read end of the worker's stdout + stderr
};

// Starts the worker. UNAVAILABLE/INTERNAL naming the binary and the failing call (exec's
// errno: "No such file or directory", "Permission denied", ...). The caller reaps `pid`.
absl::StatusOr<SpawnedWorker> SpawnWorker(const WorkerCommand& command);

}  // namespace oneflow::launcher

#endif  // TOOLS_LAUNCHER_WORKER_PROCESS_H_
