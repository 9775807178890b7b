#include "tools/launcher/submit_validation.h"

#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "actors/thread_priority.h"
#include "plan/plan_verifier.h"
#include "oneflow_core/comm/transport_name.h"
#include "tools/launcher/address.h"
#include "tools/launcher/worker_status_file.h"

namespace oneflow::launcher {

absl::Status ValidateJobId(absl::string_view job_id) {
  if (job_id.empty()) return absl::InvalidArgumentError("the job id is empty");
  if (job_id.size() > 128) {
    return absl::InvalidArgumentError(absl::StrCat("job id '", job_id, "' is longer than 128 characters"));
  }
  if (job_id.front() == '.') {
    return absl::InvalidArgumentError(absl::StrCat("job id '", job_id, "' starts with '.'"));
  }
  for (char c : job_id) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') {
      return absl::InvalidArgumentError(
          absl::StrCat("job id '", job_id, "' has '", std::string(1, c), "'; use letters, digits, '.', '_', '-'"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateCheckpointOptions(const proto::RunOptions& options, absl::string_view prefix) {
  if (options.checkpoint_dir().empty() != (options.checkpoint_every() == 0) || options.checkpoint_every() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(prefix, "checkpoint_dir='", options.checkpoint_dir(), "' and ",
                                                   prefix, "checkpoint_every=", options.checkpoint_every(),
                                                   " go together: a directory and N >= 1"));
  }
  if (options.keep_checkpoints() < 0 || options.keep_checkpoint_every() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(prefix, "keep_checkpoints=", options.keep_checkpoints(), " and ",
                                                   prefix, "keep_checkpoint_every=", options.keep_checkpoint_every(),
                                                   " must be >= 0 (0 keeps every checkpoint; 0: none kept for "
                                                   "its iteration)"));
  }
  const std::pair<absl::string_view, const std::string*> paths[] = {{"checkpoint_dir", &options.checkpoint_dir()},
                                                                    {"resume_from", &options.resume_from()}};
  for (const auto& [name, path] : paths) {
    if (path->empty()) continue;
    if (path->front() != '/') {
      return absl::InvalidArgumentError(
          absl::StrCat(prefix, name, "='", *path,
                       "' is not an absolute path: every node's worker opens it, so name a directory all nodes "
                       "reach (a shared filesystem) from /"));
    }
    if (path->find('\0') != std::string::npos || path->find('\n') != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(prefix, name, " has a NUL or newline character"));
    }
  }
  return ValidateMemoryCheckpointOptions(options, prefix);
}

absl::Status ValidateMemoryCheckpointOptions(const proto::RunOptions& options, absl::string_view prefix) {
  if (options.memory_checkpoint_every() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(prefix, "memory_checkpoint_every=", options.memory_checkpoint_every(),
                                                   " must be >= 0 (0: no in-memory checkpoints)"));
  }
  if (options.memory_resume_iteration() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(prefix, "memory_resume_iteration=",
                                                   options.memory_resume_iteration(), " must be >= 0"));
  }
  if (options.memory_checkpoint_every() > 0 || options.memory_resume_iteration() > 0) {
    if (absl::Status status = ValidateJobId(options.memory_checkpoint_scope()); !status.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(prefix, "memory_checkpoint_scope: ", status.message()));
    }
  }
  for (const std::string& daemon : options.memory_checkpoint_daemons()) {
    if (absl::Status status = ParseHostPort(daemon, absl::StrCat(prefix, "memory_checkpoint_daemons")).status();
        !status.ok()) {
      return status;
    }
  }
  for (const std::string& holder : options.memory_resume_holders()) {
    if (holder.empty()) continue;
    if (absl::Status status = ParseHostPort(holder, absl::StrCat(prefix, "memory_resume_holders")).status();
        !status.ok()) {
      return status;
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateSubmitRequest(const proto::SubmitRequest& request, int64_t max_plan_bytes) {
  if (absl::Status status = ValidateJobId(request.job_id()); !status.ok()) return status;
  const int64_t plan_bytes = static_cast<int64_t>(request.plan().ByteSizeLong());
  if (plan_bytes > max_plan_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat("the plan is ", plan_bytes, " bytes, over this daemon's --max_plan_bytes=",
                                                     max_plan_bytes));
  }
  if (absl::Status status = VerifyPlan(request.plan()); !status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("the plan fails verification: ", status.message()));
  }
  if (absl::Status status = CheckDevicesRunHere(request.plan()); !status.ok()) return status;
  const int64_t nodes = request.plan().cluster().num_nodes();
  if (nodes < 1) {
    return absl::InvalidArgumentError(absl::StrCat("the plan's cluster has num_nodes=", nodes, "; it must be >= 1"));
  }
  const int64_t rank = request.node_rank();
  if (rank < 0 || rank >= nodes) {
    return absl::InvalidArgumentError(
        absl::StrCat("node_rank ", rank, " is outside the plan's cluster of ", nodes, " nodes (0..", nodes - 1, ")"));
  }
  if (NodeDeviceIndices(request.plan(), rank).empty()) {
    return absl::InvalidArgumentError(absl::StrCat("the plan has no device on node ", rank));
  }
  const proto::RunOptions& options = request.options();
  if (options.iterations() < 1) {
    return absl::InvalidArgumentError(absl::StrCat("options.iterations=", options.iterations(), " must be >= 1"));
  }
  if (!std::isfinite(options.collective_timeout_s()) || options.collective_timeout_s() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.collective_timeout_s=", options.collective_timeout_s(), " must be a number >= 0"));
  }
  if (absl::Status status = ParseHostPort(options.rendezvous_address(), "options.rendezvous_address").status();
      !status.ok()) {
    return status;
  }
  if (absl::Status status = ValidateCheckpointOptions(options, "options."); !status.ok()) return status;
  // A part per node: the ring of daemons and the holders name every node of the plan.
  if (options.memory_checkpoint_every() > 0 && options.memory_checkpoint_daemons_size() != nodes) {
    return absl::InvalidArgumentError(absl::StrCat("options.memory_checkpoint_daemons lists ",
                                                   options.memory_checkpoint_daemons_size(),
                                                   " daemons; the plan has ", nodes, " nodes"));
  }
  if (options.memory_resume_iteration() > 0 && options.memory_resume_holders_size() != nodes) {
    return absl::InvalidArgumentError(absl::StrCat("options.memory_resume_holders lists ",
                                                   options.memory_resume_holders_size(), " daemons; the plan has ",
                                                   nodes, " nodes"));
  }
  if (!options.transport().empty()) {
    if (absl::Status status = ParseTransport(options.transport()).status(); !status.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("options.transport: ", status.message()));
    }
  }
  if (options.has_communication_priority_levels()) {
    absl::Status levels = actors::ValidateCommunicationPriorityLevels(options.communication_priority_levels(),
                                                                      "options.communication_priority_levels");
    if (!levels.ok()) return levels;
  }
  for (char c : options.worker_host()) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != ':' && c != '[' &&
        c != ']' && c != '_') {
      return absl::InvalidArgumentError(
          absl::StrCat("options.worker_host='", options.worker_host(), "' is not a host name or address"));
    }
  }
  return absl::OkStatus();
}

}  // namespace oneflow::launcher
