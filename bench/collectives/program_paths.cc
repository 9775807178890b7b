#include "bench/collectives/program_paths.h"

#include <unistd.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace oneflow {
namespace bench {

std::optional<std::string> SelfPath() {
  char path[4096];
  const ssize_t length = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (length <= 0) return std::nullopt;
  return std::string(path, length);
}

std::optional<std::string> FindOnPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  const std::string directories = path != nullptr ? path : "";
  size_t begin = 0;
  while (begin <= directories.size()) {
    size_t end = directories.find(':', begin);
    if (end == std::string::npos) end = directories.size();
    const std::string candidate = absl::StrCat(directories.substr(begin, end - begin), "/", program);
    if (end > begin && access(candidate.c_str(), X_OK) == 0) return candidate;
    begin = end + 1;
  }
  return std::nullopt;
}

}  // namespace bench
}  // namespace oneflow
