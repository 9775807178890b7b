// absl::Status <-> grpc::Status. The canonical codes are the same numbers in both
// (oneflow_core/status.h relies on that), so only the message may need context.
#ifndef TOOLS_LAUNCHER_GRPC_STATUS_H_
#define TOOLS_LAUNCHER_GRPC_STATUS_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "grpcpp/support/status.h"

namespace oneflow::launcher {

grpc::Status ToGrpcStatus(const absl::Status& status);

// `status` as an absl::Status whose message starts with "context: " (no context: the
// message alone).
absl::Status FromGrpcStatus(const grpc::Status& status, absl::string_view context = "");

}  // namespace oneflow::launcher

#endif  // TOOLS_LAUNCHER_GRPC_STATUS_H_
