// The process's one UCX context: every UCX communicator of the process creates its worker
// from it. Made on first use and kept until the process exits (UCX releases it then),
// since creating one reads UCX's configuration and opens every transport's resources:
// milliseconds, where a worker takes microseconds.
#ifndef ONEFLOW_CORE_COMM_UCX_CONTEXT_H_
#define ONEFLOW_CORE_COMM_UCX_CONTEXT_H_

#include <ucp/api/ucp.h>

#include "absl/status/statusor.h"

namespace oneflow {
namespace ucx_backend {

// The context, or UNAVAILABLE with UCX's reason ("UCX could not initialize: ..."); the
// same answer on every call.
absl::StatusOr<ucp_context_h> SharedContext();

}  // namespace ucx_backend
}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_UCX_CONTEXT_H_
