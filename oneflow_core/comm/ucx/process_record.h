// Where a UCX rank's process runs, as its peers read it from "<group>/ucx/process/<rank>"
// (mesh.h): which peers' processes this one can watch (kill(pid, 0): same boot id and pid
// namespace), and which share this host's transports (also the same network namespace:
// the emulated hosts of the benchmarks are network namespaces on one machine that see each
// other's pids but talk over TCP), which picks the group's UCX context (context.h).
#ifndef ONEFLOW_CORE_COMM_UCX_PROCESS_RECORD_H_
#define ONEFLOW_CORE_COMM_UCX_PROCESS_RECORD_H_

#include <cstdint>
#include <string>

namespace oneflow {
namespace ucx_backend {

// This process's record: "<boot id>/<pid namespace>\n<pid>\n<network namespace>".
std::string ProcessRecord();

struct PeerProcess {
  // The peer's pid when this process can see it (same boot id and pid namespace), else 0
  // (also for a malformed record).
  int64_t visible_pid = 0;
  // Visible and in this process's network namespace.
  bool same_host = false;
};
PeerProcess ReadProcessRecord(const std::string& record);

}  // namespace ucx_backend
}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_UCX_PROCESS_RECORD_H_
