#include "compiler/auto_parallel/act_count.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "compiler/auto_parallel/candidate.h"
#include "oneflow_core/status.h"

namespace oneflow::auto_parallel {
namespace {

// The logical op an actor runs: its first kernel's, or for a boxing actor the op that
// produced the tensor it moves.
std::string OpOf(const proto::Plan& plan, const proto::ActorDef& actor) {
  if (actor.kind() == proto::ACTOR_BOXING && actor.boxing_id() >= 0 && actor.boxing_id() < plan.boxings_size()) {
    return plan.boxings(actor.boxing_id()).producer_op();
  }
  return actor.kernels().empty() ? std::string() : actor.kernels(0).op_name();
}

}  // namespace

bool BoxingActMeetsPeers(const proto::Plan& plan, const proto::ActorDef& actor) {
  if (actor.kind() != proto::ACTOR_BOXING) return false;
  if (actor.boxing_id() < 0 || actor.boxing_id() >= plan.boxings_size()) return true;
  for (const proto::BoxingStepDef& step : plan.boxings(actor.boxing_id()).steps()) {
    switch (step.kind()) {
      case proto::STEP_IDENTITY:
      case proto::STEP_LOCAL_SLICE:
      case proto::STEP_LOCAL_PARTIAL:
      case proto::STEP_SPLIT_TO_PARTIAL:
        continue;
      default:
        return true;
    }
  }
  return false;
}

namespace {

bool RunsPerIteration(const proto::ActorDef& actor, absl::string_view op) {
  return actor.per_iteration() || actor.kind() == proto::ACTOR_VARIABLE ||
         op.find("_update/") != absl::string_view::npos;
}

// Every unit's acts on the first device of `plan` (checked to have one with actors).
std::vector<UnitActs> CountUnitActs(const proto::Plan& plan, const ModelProfile& profile) {
  std::vector<UnitActs> counts(profile.units.size());
  absl::flat_hash_map<std::string, size_t> unit_of_op;
  for (size_t u = 0; u < profile.units.size(); ++u) {
    for (const std::string& op : profile.units[u].op_names) unit_of_op.emplace(op, u);
  }
  // Per-iteration actors outside any unit (a variable's own actor, named after the
  // variable): spread over the units by their trainable variables below.
  int64_t unplaced_per_iteration = 0;
  for (const proto::ActorDef& actor : plan.devices(0).actors()) {
    const std::string op = OpOf(plan, actor);
    const bool per_iteration = RunsPerIteration(actor, op);
    // Priced at the boxing act's cost only when its ranks meet: a boxing of local steps
    // alone (ZeRO's slices of a gradient to its shard) is one device's copy.
    const bool boxing = BoxingActMeetsPeers(plan, actor);
    auto it = unit_of_op.find(ForwardOpOf(op));
    if (it == unit_of_op.end()) {
      if (per_iteration && !boxing) {
        ++unplaced_per_iteration;
      } else if (!counts.empty()) {
        // A boxing of no unit's op (a variable's gather) to the prologue, like the
        // data source's acts.
        UnitActs& first = counts.front();
        ++(per_iteration ? first.per_iteration : first.per_micro_batch);
        if (boxing) ++(per_iteration ? first.boxing_per_iteration : first.boxing_per_micro_batch);
      }
      continue;
    }
    UnitActs& unit = counts[it->second];
    ++(per_iteration ? unit.per_iteration : unit.per_micro_batch);
    if (boxing) ++(per_iteration ? unit.boxing_per_iteration : unit.boxing_per_micro_batch);
  }
  int64_t tensors = 0;
  for (const ProfileUnit& unit : profile.units) tensors += unit.parameter_tensors;
  // Whole acts per variable tensor (the same count for every tensor: a variable and its
  // update), the remainder to the first unit with variables.
  const int64_t each = tensors > 0 ? unplaced_per_iteration / tensors : 0;
  int64_t remainder = unplaced_per_iteration - each * tensors;
  for (size_t u = 0; u < profile.units.size(); ++u) {
    counts[u].per_iteration += each * profile.units[u].parameter_tensors;
    if (remainder > 0 && profile.units[u].parameter_tensors > 0) {
      counts[u].per_iteration += remainder;
      remainder = 0;
    }
  }
  if (remainder > 0 && !counts.empty()) counts.front().per_iteration += remainder;
  return counts;
}

absl::Status CheckHasActors(const proto::Plan& plan, const ModelProfile& profile, absl::string_view which) {
  if (plan.devices().empty() || plan.devices(0).actors().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the ", which, " plan of '", profile.job_name, "' has no actor to count on its first device"));
  }
  return absl::OkStatus();
}

bool SameLayout(const proto::AutoParallelLayout& a, const proto::AutoParallelLayout& b) {
  return a.dp() == b.dp() && a.tp() == b.tp() && a.pp() == b.pp() && a.micro_batches() == b.micro_batches() &&
         a.zero() == b.zero() && a.zero3_kept() == b.zero3_kept() && a.recompute() == b.recompute();
}

}  // namespace

absl::string_view ForwardOpOf(absl::string_view op) {
  const size_t grad = op.find("_grad/");
  return grad == absl::string_view::npos ? op : op.substr(0, grad);
}

absl::Status CountActs(const proto::Plan& probe_plan, ModelProfile* profile) {
  OF_RETURN_IF_ERROR(CheckHasActors(probe_plan, *profile, "probe"));
  const std::vector<UnitActs> counts = CountUnitActs(probe_plan, *profile);
  for (size_t u = 0; u < profile->units.size(); ++u) {
    profile->units[u].acts_per_micro_batch = counts[u].per_micro_batch;
    profile->units[u].acts_per_iteration = counts[u].per_iteration;
    profile->units[u].boxing_acts_per_micro_batch = counts[u].boxing_per_micro_batch;
    profile->units[u].boxing_acts_per_iteration = counts[u].boxing_per_iteration;
  }
  profile->acts_counted = true;
  return absl::OkStatus();
}

proto::AutoParallelLayout ActFamilyProbe(const proto::AutoParallelLayout& layout) {
  proto::AutoParallelLayout probe;
  probe.set_dp(layout.dp() > 1 ? 2 : 1);
  probe.set_tp(layout.tp() > 1 ? 2 : 1);
  probe.set_pp(1);
  probe.set_micro_batches(layout.micro_batches() > 1 ? 2 : 1);
  probe.set_zero(layout.dp() > 1 ? layout.zero() : 0);
  probe.set_zero3_kept(layout.dp() > 1 && layout.zero3_kept());
  probe.set_recompute(proto::RECOMPUTE_NONE);
  return probe;
}

absl::Status CountLayoutActs(const proto::Plan& plan, const proto::AutoParallelLayout& probe, ModelProfile* profile) {
  if (!SameLayout(ActFamilyProbe(probe), probe)) {
    return absl::InvalidArgumentError(absl::StrCat(LayoutName(probe), " is no family probe; its family's is ",
                                                   LayoutName(ActFamilyProbe(probe))));
  }
  OF_RETURN_IF_ERROR(CheckHasActors(plan, *profile, LayoutName(probe)));
  LayoutActs counted;
  counted.probe = probe;
  counted.units = CountUnitActs(plan, *profile);
  for (LayoutActs& family : profile->layout_acts) {
    if (SameLayout(family.probe, probe)) {
      family = std::move(counted);
      return absl::OkStatus();
    }
  }
  profile->layout_acts.push_back(std::move(counted));
  return absl::OkStatus();
}

absl::Status CountFullRecomputation(const proto::Plan& plan, ModelProfile* profile) {
  OF_RETURN_IF_ERROR(CheckHasActors(plan, *profile, "--recompute=full"));
  constexpr absl::string_view kCopy = "/recompute";
  // Registers that own no bytes: the producer of a view acts without running its kernel
  // (proto RegisterDef.alias_of). Traced on 2 emulated hosts (the bench's gpt, dp = 2),
  // the re-run reshapes took 0.02 ms of the 5.8 ms the copies ran, where their bytes at
  // the memory rate priced 2.1 ms (docs/auto_parallel_measurements.md, "Full recomputation, traced").
  absl::flat_hash_set<int64_t> views;
  for (const proto::RegisterDef& register_def : plan.devices(0).registers()) {
    if (register_def.has_alias_of()) views.insert(register_def.id());
  }
  absl::flat_hash_set<std::string> copied;
  absl::flat_hash_set<std::string> copied_views;  // of `copied`: every output a view
  for (const proto::ActorDef& actor : plan.devices(0).actors()) {
    for (const proto::KernelDef& kernel : actor.kernels()) {
      const absl::string_view op = kernel.op_name();
      if (!absl::EndsWith(op, kCopy)) continue;
      std::string original(op.substr(0, op.size() - kCopy.size()));
      bool only_views = !kernel.outputs().empty();
      for (const auto& [port, output] : kernel.outputs()) only_views = only_views && views.contains(output);
      if (only_views) copied_views.insert(original);
      copied.insert(std::move(original));
    }
  }
  int64_t found = 0;
  for (ProfileUnit& unit : profile->units) {
    unit.full_recompute = OpWork();
    unit.full_recompute_ops = 0;
    for (size_t o = 0; o < unit.op_names.size() && o < unit.op_work.size(); ++o) {
      if (!copied.contains(unit.op_names[o])) continue;
      ++unit.full_recompute_ops;
      ++found;
      if (copied_views.contains(unit.op_names[o])) continue;
      const OpWork& work = unit.op_work[o];
      unit.full_recompute.gemm_flops += work.gemm_flops;
      unit.full_recompute.tp_gemm_flops += work.tp_gemm_flops;
      unit.full_recompute.memory_bytes += work.memory_bytes;
      unit.full_recompute.tp_memory_bytes += work.tp_memory_bytes;
    }
  }
  if (profile->has_blocks && found == 0) {
    return absl::InvalidArgumentError(absl::StrCat("the plan of '", profile->job_name,
                                                   "' re-runs no op of its blocks: compile it with --recompute=full"));
  }
  profile->full_recompute_counted = true;
  return absl::OkStatus();
}

UnitActs ActsOf(const ModelProfile& profile, size_t unit, const proto::AutoParallelLayout& layout) {
  const proto::AutoParallelLayout probe = ActFamilyProbe(layout);
  for (const LayoutActs& family : profile.layout_acts) {
    if (SameLayout(family.probe, probe) && unit < family.units.size()) return family.units[unit];
  }
  const ProfileUnit& counted = profile.units[unit];
  return UnitActs{counted.acts_per_micro_batch, counted.acts_per_iteration, counted.boxing_acts_per_micro_batch,
                  counted.boxing_acts_per_iteration};
}

}  // namespace oneflow::auto_parallel
