// Which program the daemon runs as the worker. Only the daemon's own configuration
// decides (--worker_binary, or the binary installed next to it); a Submit request never
// names a command.
#ifndef TOOLS_LAUNCHER_WORKER_BINARY_H_
#define TOOLS_LAUNCHER_WORKER_BINARY_H_

#include <string>

#include "absl/status/statusor.h"

namespace oneflow::launcher {

// The absolute path of the worker binary:
//   `flag_value` when given (it must be an executable file; errors name --worker_binary);
//   otherwise `oneflow_worker` in the daemon's own directory (an installation), then
//   `<that directory>/../worker/oneflow_worker` (bazel-bin/tools/launcher/oneflowd next to
//   bazel-bin/tools/worker/oneflow_worker). NOT_FOUND listing the places looked at.
absl::StatusOr<std::string> FindWorkerBinary(const std::string& flag_value);

}  // namespace oneflow::launcher

#endif  // TOOLS_LAUNCHER_WORKER_BINARY_H_
