#include "compiler/auto_parallel/act_count.h"

#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace oneflow::auto_parallel {
namespace {

// The forward op a compiled op comes from: "matmul_3_grad/matmul_9" -> "matmul_3".
absl::string_view ForwardOp(absl::string_view op) {
  const size_t grad = op.find("_grad/");
  return grad == absl::string_view::npos ? op : op.substr(0, grad);
}

// The logical op an actor runs: its first kernel's, or for a boxing actor the op that
// produced the tensor it moves.
std::string OpOf(const proto::Plan& plan, const proto::ActorDef& actor) {
  if (actor.kind() == proto::ACTOR_BOXING && actor.boxing_id() >= 0 && actor.boxing_id() < plan.boxings_size()) {
    return plan.boxings(actor.boxing_id()).producer_op();
  }
  return actor.kernels().empty() ? std::string() : actor.kernels(0).op_name();
}

bool RunsPerIteration(const proto::ActorDef& actor, absl::string_view op) {
  return actor.per_iteration() || actor.kind() == proto::ACTOR_VARIABLE ||
         op.find("_update/") != absl::string_view::npos;
}

}  // namespace

absl::Status CountActs(const proto::Plan& probe_plan, ModelProfile* profile) {
  if (probe_plan.devices().empty() || probe_plan.devices(0).actors().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the probe plan of '", profile->job_name, "' has no actor to count on its first device"));
  }
  absl::flat_hash_map<std::string, size_t> unit_of_op;
  for (size_t u = 0; u < profile->units.size(); ++u) {
    profile->units[u].acts_per_micro_batch = 0;
    profile->units[u].acts_per_iteration = 0;
    for (const std::string& op : profile->units[u].op_names) unit_of_op.emplace(op, u);
  }
  // Per-iteration actors outside any unit (a variable's own actor, named after the
  // variable): spread over the units by their trainable variables below.
  int64_t unplaced_per_iteration = 0;
  for (const proto::ActorDef& actor : probe_plan.devices(0).actors()) {
    const std::string op = OpOf(probe_plan, actor);
    const bool per_iteration = RunsPerIteration(actor, op);
    auto it = unit_of_op.find(ForwardOp(op));
    if (it == unit_of_op.end()) {
      if (per_iteration) {
        ++unplaced_per_iteration;
      } else if (!profile->units.empty()) {
        ++profile->units.front().acts_per_micro_batch;
      }
      continue;
    }
    ProfileUnit& unit = profile->units[it->second];
    ++(per_iteration ? unit.acts_per_iteration : unit.acts_per_micro_batch);
  }
  int64_t tensors = 0;
  for (const ProfileUnit& unit : profile->units) tensors += unit.parameter_tensors;
  // Whole acts per variable tensor (the same count for every tensor: a variable and its
  // update), the remainder to the first unit with variables.
  const int64_t each = tensors > 0 ? unplaced_per_iteration / tensors : 0;
  int64_t remainder = unplaced_per_iteration - each * tensors;
  for (ProfileUnit& unit : profile->units) {
    unit.acts_per_iteration += each * unit.parameter_tensors;
    if (remainder > 0 && unit.parameter_tensors > 0) {
      unit.acts_per_iteration += remainder;
      remainder = 0;
    }
  }
  if (remainder > 0 && !profile->units.empty()) profile->units.front().acts_per_iteration += remainder;
  profile->acts_counted = true;
  return absl::OkStatus();
}

}  // namespace oneflow::auto_parallel
