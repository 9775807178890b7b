#include "compiler/auto_parallel/kept_activations.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "compiler/auto_parallel/act_count.h"

namespace oneflow::auto_parallel {
namespace {

// Whether `actor` runs a backward kernel (an op named "FORWARD_grad/...").
bool RunsBackward(const proto::ActorDef& actor) {
  for (const proto::KernelDef& kernel : actor.kernels()) {
    if (ForwardOpOf(kernel.op_name()) != kernel.op_name()) return true;
  }
  return false;
}

// The logical tensor a register holds: its own, or for a boxing's output the tensor boxed
// ("x/boxing_3/0" -> "x").
absl::string_view LogicalTensorOf(absl::string_view tensor) {
  const size_t boxing = tensor.find("/boxing_");
  return boxing == absl::string_view::npos ? tensor : tensor.substr(0, boxing);
}

}  // namespace

absl::Status CountKeptActivations(const proto::Plan& probe_plan, int64_t probe_tp, int64_t probe_row_parts,
                                  ModelProfile* profile) {
  if (probe_plan.devices().empty() || probe_plan.devices(0).actors().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the probe plan of '", profile->job_name, "' has no actor on its first device"));
  }
  const proto::DevicePlan& device = probe_plan.devices(0);
  const int64_t first_actor = device.actors(0).id();
  // The register whose bytes a register's are (a view's owner), by following alias_of.
  auto owner_of = [&](const proto::RegisterDef& reg) -> const proto::RegisterDef& {
    const proto::RegisterDef* at = &reg;
    while (at->has_alias_of() && at->alias_of() >= 0 && at->alias_of() < device.registers_size()) {
      at = &device.registers(static_cast<int>(at->alias_of()));
    }
    return *at;
  };
  // Which unit's activation a logical tensor is, and whether the attention core makes it.
  absl::flat_hash_map<std::string, std::pair<size_t, bool>> activation_unit;
  for (size_t u = 0; u < profile->units.size(); ++u) {
    for (const UnitActivation& activation : profile->units[u].activations) {
      activation_unit.try_emplace(activation.tensor, u, activation.attention_core);
    }
  }
  absl::flat_hash_set<std::string> kept;
  absl::flat_hash_set<int64_t> counted;  // owner registers whose bytes are counted
  std::vector<int64_t> plan_bytes(profile->units.size(), 0);
  std::vector<int64_t> plan_core_bytes(profile->units.size(), 0);
  for (const proto::RegisterDef& reg : device.registers()) {
    bool read_by_backward = false;
    for (int64_t consumer : reg.consumer_actors()) {
      const int64_t index = consumer - first_actor;
      if (index >= 0 && index < device.actors_size() && RunsBackward(device.actors(static_cast<int>(index)))) {
        read_by_backward = true;
        break;
      }
    }
    if (!read_by_backward) continue;
    const proto::RegisterDef& owner = owner_of(reg);
    kept.insert(std::string(LogicalTensorOf(reg.tensor())));
    kept.insert(std::string(LogicalTensorOf(owner.tensor())));
    // The bytes the plan keeps: the owner's, once, when it is an activation's (its own
    // register or a boxing's output of it) in the arena.
    const auto unit = activation_unit.find(std::string(LogicalTensorOf(owner.tensor())));
    if (unit == activation_unit.end() || owner.persistent() || owner.per_iteration() ||
        !counted.insert(owner.id()).second) {
      continue;
    }
    plan_bytes[unit->second.first] += owner.size_bytes();
    if (unit->second.second) plan_core_bytes[unit->second.first] += owner.size_bytes();
  }
  for (size_t u = 0; u < profile->units.size(); ++u) {
    ProfileUnit& unit = profile->units[u];
    unit.kept_activation_bytes = 0;
    unit.kept_tp_activation_bytes = 0;
    unit.kept_attention_core_activation_bytes = 0;
    for (const UnitActivation& activation : unit.activations) {
      if (!kept.contains(activation.tensor)) continue;
      unit.kept_activation_bytes += activation.bytes;
      if (activation.tp_split) unit.kept_tp_activation_bytes += activation.bytes;
      if (activation.attention_core) unit.kept_attention_core_activation_bytes += activation.bytes;
    }
    unit.planned_kept_bytes = plan_bytes[u];
    unit.planned_kept_attention_core_bytes = plan_core_bytes[u];
  }
  profile->kept_activations_counted = true;
  profile->planned_kept_tp = probe_tp;
  profile->planned_kept_row_parts = probe_row_parts;
  return absl::OkStatus();
}

}  // namespace oneflow::auto_parallel
