// The plan verifier's checks of recomputed ops (OpDef.recompute_of,
// compiler/passes/recompute_pass.h): a copy runs what its original ran, where it ran,
// and only once the original's output is dead.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "plan/plan_verifier.h"
#include "plan/plan_verifier_internal.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

using plan_verifier_internal::DeviceText;
using plan_verifier_internal::Fail;

// Per op name, the indices (on one device) of the actors running its kernels.
absl::flat_hash_map<std::string, std::vector<int>> ActorsByOp(const proto::DevicePlan& device) {
  absl::flat_hash_map<std::string, std::vector<int>> actors;
  for (int a = 0; a < device.actors_size(); ++a) {
    for (const proto::KernelDef& kernel : device.actors(a).kernels()) {
      std::vector<int>& list = actors[kernel.op_name()];
      if (list.empty() || list.back() != a) list.push_back(a);
    }
  }
  return actors;
}

// The same argument names with the same SBPs (compared per entry: a map's serialization
// is in no fixed order).
bool SameArguments(const google::protobuf::Map<std::string, proto::NdSbp>& a,
                   const google::protobuf::Map<std::string, proto::NdSbp>& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [name, sbp] : a) {
    auto found = b.find(name);
    if (found == b.end() || found->second.SerializeAsString() != sbp.SerializeAsString()) return false;
  }
  return true;
}

}  // namespace

absl::Status VerifyRecompute(const proto::Plan& plan) {
  const proto::Job& job = plan.job();
  absl::flat_hash_map<std::string, const proto::OpDef*> ops;
  for (const proto::OpDef& op : job.ops()) ops[op.name()] = &op;
  absl::flat_hash_map<std::string, const proto::LogicalOpSbp*> sbps;
  for (const proto::LogicalOpSbp& sbp : plan.op_sbps()) sbps[sbp.op_name()] = &sbp;
  std::vector<const proto::OpDef*> copies;
  for (const proto::OpDef& op : job.ops()) {
    if (op.recompute_of().empty()) continue;
    const std::string who = absl::StrCat("recomputed op '", op.name(), "'");
    auto original = ops.find(op.recompute_of());
    if (original == ops.end() || !original->second->recompute_of().empty()) {
      return Fail(absl::StrCat(who, " re-runs '", op.recompute_of(), "', which is not an op the user wrote"));
    }
    const proto::OpDef& of = *original->second;
    if (op.type() != of.type() || op.attrs_size() != of.attrs_size()) {
      return Fail(absl::StrCat(who, " (", op.type(), ") differs in type or attributes from '", of.name(), "' (",
                               of.type(), ")"));
    }
    auto copy_sbp = sbps.find(op.name());
    auto original_sbp = sbps.find(of.name());
    if (copy_sbp == sbps.end() || original_sbp == sbps.end() ||
        copy_sbp->second->placement().SerializeAsString() != original_sbp->second->placement().SerializeAsString() ||
        !SameArguments(copy_sbp->second->signature().inputs(), original_sbp->second->signature().inputs()) ||
        !SameArguments(copy_sbp->second->signature().outputs(), original_sbp->second->signature().outputs())) {
      return Fail(absl::StrCat(who, " does not have the placement and SBP signature of '", of.name(),
                               "'; a re-run must compute the same slices on the same devices"));
    }
    copies.push_back(&op);
  }
  if (copies.empty()) return absl::OkStatus();
  for (const proto::DevicePlan& device : plan.devices()) {
    const absl::flat_hash_map<std::string, std::vector<int>> actors = ActorsByOp(device);
    const int64_t first_actor = device.actors_size() > 0 ? device.actors(0).id() : 0;
    for (const proto::OpDef* copy : copies) {
      auto copy_actors = actors.find(copy->name());
      auto original_actors = actors.find(copy->recompute_of());
      const bool copy_here = copy_actors != actors.end();
      const bool original_here = original_actors != actors.end();
      if (copy_here != original_here) {
        return Fail(absl::StrCat("device ", DeviceText(device.device()), ": recomputed op '", copy->name(),
                                 copy_here ? "' runs here but '" : "' does not run here but '", copy->recompute_of(),
                                 "' does", copy_here ? " not" : ""));
      }
      if (!copy_here) continue;
      // The original's outputs die at their last reader; the copy comes after it, so the
      // two never hold memory at once (else recomputing saved nothing).
      int last_reader = -1;
      for (int a : original_actors->second) {
        last_reader = std::max(last_reader, a);
        for (int64_t produced : device.actors(a).produced_registers()) {
          for (int64_t reader : device.registers(static_cast<int>(produced)).consumer_actors()) {
            last_reader = std::max(last_reader, static_cast<int>(reader - first_actor));
          }
        }
      }
      const int first_copy = *std::min_element(copy_actors->second.begin(), copy_actors->second.end());
      if (first_copy <= last_reader) {
        return Fail(absl::StrCat("device ", DeviceText(device.device()), ": recomputed op '", copy->name(),
                                 "' runs at actor index ", first_copy, ", not after the last reader (index ",
                                 last_reader, ") of what '", copy->recompute_of(), "' produced"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace oneflow
