// Before a multi-node job trains, its workers agree on the transport of their
// cross-process groups (`--transport=`, oneflow_core/comm/transport.h). Each node publishes
// "transport/<node>" in the job's rendezvous store: the transport's name, or
// "unavailable:<name>:<reason>" when this process cannot run it (UCX's library failing to
// initialize). Then it reads every node's entry and fails, naming the node, when one
// cannot run its transport or runs another one. Every node reaches the same verdict from
// the same entries, so either all train or none does, and none waits out a collective
// timeout for peers that joined other groups. Node 0 returns only once every node has read
// the entries (or after 10 s), since without daemons node 0 serves the store and takes it
// down when it exits.
#ifndef TOOLS_WORKER_TRANSPORT_AGREEMENT_H_
#define TOOLS_WORKER_TRANSPORT_AGREEMENT_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "oneflow_core/comm/key_value_store.h"
#include "oneflow_core/comm/transport.h"

namespace oneflow::worker {

// `available`: this process's TransportAvailable(transport). Waits up to `timeout` for
// every node's entry (DEADLINE_EXCEEDED naming the missing nodes). FAILED_PRECONDITION:
//   node 1 cannot run transport 'ucx': UCX could not initialize: ...
//   node 1 runs transport 'gloo' but node 0 runs 'ucx'; every node must be started with the
//   same --transport
absl::Status AgreeOnTransport(KeyValueStore& store, int64_t node, int64_t nodes, Transport transport,
                              const absl::Status& available, absl::Duration timeout);

}  // namespace oneflow::worker

#endif  // TOOLS_WORKER_TRANSPORT_AGREEMENT_H_
