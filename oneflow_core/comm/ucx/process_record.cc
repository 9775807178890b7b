#include "oneflow_core/comm/ucx/process_record.h"

#include <unistd.h>

#include <fstream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace oneflow {
namespace ucx_backend {
namespace {

std::string FirstLine(const std::string& path) {
  std::ifstream file(path);
  std::string line;
  std::getline(file, line);
  return line;
}

// Processes with the same boot id and pid namespace can see each other's pids: kill(pid, 0)
// then tells whether a peer still runs.
const std::string& ProcessSpace() {
  static const std::string* space = [] {
    char namespace_link[128] = {};
    const ssize_t length =
        readlink("/proc/self/ns/pid", namespace_link, sizeof(namespace_link) - 1);
    return new std::string(absl::StrCat(FirstLine("/proc/sys/kernel/random/boot_id"), "/",
                                        length > 0 ? namespace_link : "unknown"));
  }();
  return *space;
}

// Processes that share a network namespace as well as ProcessSpace() are on one host as
// far as UCX's transports go (process_record.h).
const std::string& NetworkSpace() {
  static const std::string* space = [] {
    char namespace_link[128] = {};
    const ssize_t length = readlink("/proc/self/ns/net", namespace_link, sizeof(namespace_link) - 1);
    return new std::string(length > 0 ? namespace_link : "unknown");
  }();
  return *space;
}

}  // namespace

std::string ProcessRecord() { return absl::StrCat(ProcessSpace(), "\n", getpid(), "\n", NetworkSpace()); }

PeerProcess ReadProcessRecord(const std::string& record) {
  const std::vector<std::string> parts = absl::StrSplit(record, '\n');
  PeerProcess peer;
  int64_t pid = 0;
  if (parts.size() != 3 || parts[0] != ProcessSpace() || !absl::SimpleAtoi(parts[1], &pid) || pid <= 0) return peer;
  peer.visible_pid = pid;
  peer.same_host = parts[2] == NetworkSpace();
  return peer;
}

}  // namespace ucx_backend
}  // namespace oneflow
