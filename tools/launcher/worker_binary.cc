#include "tools/launcher/worker_binary.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace oneflow::launcher {
namespace {

bool IsExecutableFile(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) && access(path.c_str(), X_OK) == 0;
}

std::string RealPath(const std::string& path) {
  char resolved[PATH_MAX];
  return realpath(path.c_str(), resolved) == nullptr ? path : std::string(resolved);
}

}  // namespace

absl::StatusOr<std::string> FindWorkerBinary(const std::string& flag_value) {
  if (!flag_value.empty()) {
    if (!IsExecutableFile(flag_value)) {
      return absl::NotFoundError(absl::StrCat("--worker_binary='", flag_value, "' is not an executable file"));
    }
    return RealPath(flag_value);
  }
  char self[PATH_MAX];
  const ssize_t length = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (length <= 0) {
    return absl::NotFoundError(absl::StrCat("cannot find the daemon's own binary (/proc/self/exe: ",
                                            std::strerror(errno), "); pass --worker_binary"));
  }
  const std::string exe(self, static_cast<size_t>(length));
  const std::string directory = exe.substr(0, exe.rfind('/'));
  const std::vector<std::string> candidates = {absl::StrCat(directory, "/oneflow_worker"),
                                               absl::StrCat(directory, "/../worker/oneflow_worker")};
  for (const std::string& candidate : candidates) {
    if (IsExecutableFile(candidate)) return RealPath(candidate);
  }
  return absl::NotFoundError(absl::StrCat("no worker binary: looked for ", absl::StrJoin(candidates, " and "),
                                          "; build //tools/worker:oneflow_worker or pass --worker_binary"));
}

}  // namespace oneflow::launcher
