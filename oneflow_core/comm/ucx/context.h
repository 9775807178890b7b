// The process's UCX contexts: every UCX communicator of the process creates its worker
// from one of them. Each is made on first use and kept until the process exits (UCX
// releases it then), since creating one reads UCX's configuration and opens every
// transport's resources: milliseconds, where a worker takes microseconds.
//
// Two, because UCX 1.13 takes one eager/rendezvous threshold per context, not per
// transport: groups whose peers are all on other hosts (TCP) use the backend's chosen
// settings (settings.h: eager at every size); a group with a peer on this host keeps
// UCX's defaults, whose rendezvous lets shared memory move a large message in one copy
// (cross-memory attach) instead of 8 KiB segments through a FIFO both threads must drain.
#ifndef ONEFLOW_CORE_COMM_UCX_CONTEXT_H_
#define ONEFLOW_CORE_COMM_UCX_CONTEXT_H_

#include <ucp/api/ucp.h>

#include "absl/status/statusor.h"

namespace oneflow {
namespace ucx_backend {

enum class PeerPlacement {
  kAllOnOtherHosts,   // the chosen settings (settings.h)
  kSomeOnThisHost,    // UCX's defaults, under whatever the environment sets
};

// The context for groups of that placement, or UNAVAILABLE with UCX's reason ("UCX could
// not initialize: ..."); the same answer on every call.
absl::StatusOr<ucp_context_h> SharedContext(PeerPlacement placement);

}  // namespace ucx_backend
}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_UCX_CONTEXT_H_
