// What a Submit request must satisfy before the daemon writes anything or starts a
// worker. A request refused here leaves no trace on the node.
#ifndef TOOLS_LAUNCHER_SUBMIT_VALIDATION_H_
#define TOOLS_LAUNCHER_SUBMIT_VALIDATION_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "proto/launcher.pb.h"

namespace oneflow::launcher {

// A job id names a directory on every node: 1-128 of [A-Za-z0-9._-], not starting with
// '.' (so never "." or ".."). INVALID_ARGUMENT naming the id otherwise.
absl::Status ValidateJobId(absl::string_view job_id);

// Every check of a Submit request, in this order, each with its own message:
//   job id (above);
//   plan size: RESOURCE_EXHAUSTED "the plan is N bytes, over this daemon's
//     --max_plan_bytes=M" (gRPC refuses messages far over the limit by itself);
//   plan: INVALID_ARGUMENT "the plan fails verification: <the verifier's message>";
//   cluster: num_nodes >= 1, node_rank in [0, num_nodes), at least one device on the node;
//   options: iterations >= 1, collective_timeout_s finite and >= 0, rendezvous_address
//     host:port, worker_host a host name or address when given, the checkpoint options
//     (below).
absl::Status ValidateSubmitRequest(const proto::SubmitRequest& request, int64_t max_plan_bytes);

// checkpoint_dir and checkpoint_every set together (every >= 1), checkpoint_dir and
// resume_from absolute paths when set. INVALID_ARGUMENT naming the field as
// `prefix` + its name ("options." in a Submit, "--" in `oneflow launch`).
absl::Status ValidateCheckpointOptions(const proto::RunOptions& options, absl::string_view prefix);

// The in-memory checkpoint fields of RunOptions (docs/elastic.md): K >= 0, a scope that
// is a valid job id when they are used, HOST:PORT daemons. Called by
// ValidateCheckpointOptions; the counts against the plan's nodes are checked by
// ValidateSubmitRequest.
absl::Status ValidateMemoryCheckpointOptions(const proto::RunOptions& options, absl::string_view prefix);

}  // namespace oneflow::launcher

#endif  // TOOLS_LAUNCHER_SUBMIT_VALIDATION_H_
