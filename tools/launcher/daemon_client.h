// What every client of the daemons shares (`oneflow launch`, `status`, `list`,
// `cancel`): the --nodes list turned into stubs, the name of a node in messages, how a
// failed call to a node's daemon is worded, and how a device's progress is printed. One
// place, so that a wrong token, an unreachable daemon or a TLS mismatch reads the same
// whichever command met it:
//
//   node 1 (10.0.0.2:5001) is unreachable: failed to connect to all addresses; ...
//   node 0 (10.0.0.1:5001) refused the job: Launcher.Submit: wrong token; every call ...
#ifndef TOOLS_LAUNCHER_DAEMON_CLIENT_H_
#define TOOLS_LAUNCHER_DAEMON_CLIENT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpcpp/support/status.h"
#include "proto/launcher.grpc.pb.h"
#include "proto/plan.pb.h"

namespace oneflow::launcher {

// One --nodes entry: node `rank` is the rank-th entry.
struct DaemonNode {
  int64_t rank = 0;
  std::string address;  // As written: host:port.
  std::string host;     // Its host part.
  std::unique_ptr<proto::Launcher::Stub> stub;
};

// A stub per --nodes entry, in order: plaintext when `tls_ca_file` is empty, TLS trusting
// it otherwise (MakeChannel). INVALID_ARGUMENT for an empty list, an entry that is not
// host:port, port 0, or a daemon listed twice; the CA file's errors. Connects lazily:
// an unreachable daemon shows up at the first call.
absl::StatusOr<std::vector<DaemonNode>> ConnectToDaemons(const std::vector<std::string>& nodes,
                                                         const std::string& tls_ca_file);

// "node 1 (10.0.0.2:5001)".
std::string NodeName(int64_t rank, absl::string_view address);

// A call to node `rank`'s daemon that failed before it did anything, in the words every
// client uses: "NODE is unreachable: MESSAGE" when the daemon could not be reached
// (UNAVAILABLE: down, wrong address, TLS against plaintext or an untrusted certificate),
// "NODE refused WHAT: MESSAGE" otherwise (a wrong token, a refused request). `what` is
// what was asked, e.g. "the job".
std::string DescribeFailedCall(int64_t rank, absl::string_view address, const grpc::Status& status,
                               absl::string_view what);

// "device 2 (1:0): last completed collective 5 (3 iterations)"; the "(node:device)" id
// only when `plan` is given and holds the device.
std::string DeviceProgressText(const proto::DeviceProgress& device, const proto::Plan* plan = nullptr);

// A job state as people read it: "pending", "running", "finished", "failed", "cancelled".
std::string JobStateName(proto::JobStatus::State state);

}  // namespace oneflow::launcher

#endif  // TOOLS_LAUNCHER_DAEMON_CLIENT_H_
