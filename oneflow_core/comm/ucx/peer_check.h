// How often a UCX rank looks for its peers' failures (Mesh::CheckPeers): a read of the
// group's "failed" key and of its departures counter in the job's store, then kill(pid, 0)
// per peer on this host.
//
// Why the interval follows the cost of a check: under `oneflow launch` the store is the
// rendezvous daemon of node 0, and a check is two gRPC round trips made by the
// communication thread, in the middle of a wait or at the end of a small all-reduce
// (exchange.h). On the 2-core machine at load 5-14 one check took 1.2-1.5 ms on average
// (200-350 ms of store reads per worker in a 30-iteration run of the demo's plan, 140-390
// checks, against a step of 30-50 ms), most of it waiting for a time slice for the daemon's
// and the worker's gRPC threads. At a fixed 5 ms that is a quarter of a communication
// thread's time; on a quiet machine a check takes about 0.1 ms and 5 ms costs 2%. So the
// next check comes kCheckCostMultiple times the last check's duration later: the checks
// take at most about 1/kCheckCostMultiple of the thread's time, and a failure record is
// seen within max(5 ms, that) of being written, never more than kLongestCheckInterval.
//
// And only a wait that has lasted kCheckAfterWaiting looks (UcxExchange::WaitFor): a
// failed peer keeps a wait waiting, while a short wait ends by itself, and most waits of a
// training step are short (the peer's side of a ring step, a peer finishing its backward).
// Checking in those too, the demo's plan launched on the 2-core machine kept node 0's
// daemon at 31-34 ms of CPU per second serving the reads, and its communication threads
// spent 14-15 ms a second in gRPC, in the middle of waits whose message could arrive
// meanwhile; with this, 19-22 and 0-0.4 ms (perf, docs/benchmarks.md, "Session 42"). A
// failure is still seen within kCheckAfterWaiting plus the interval of its being written.
#ifndef ONEFLOW_CORE_COMM_UCX_PEER_CHECK_H_
#define ONEFLOW_CORE_COMM_UCX_PEER_CHECK_H_

#include <algorithm>

#include "absl/time/time.h"

namespace oneflow {
namespace ucx_backend {

constexpr absl::Duration kShortestCheckInterval = absl::Milliseconds(5);
constexpr absl::Duration kLongestCheckInterval = absl::Milliseconds(100);
constexpr int kCheckCostMultiple = 50;
constexpr absl::Duration kCheckAfterWaiting = absl::Milliseconds(5);

// The time from the start of a peer check that took `last_check` to the next one.
inline absl::Duration PeerCheckInterval(absl::Duration last_check) {
  return std::clamp(last_check * kCheckCostMultiple, kShortestCheckInterval,
                    kLongestCheckInterval);
}

}  // namespace ucx_backend
}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_UCX_PEER_CHECK_H_
