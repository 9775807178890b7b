#include "actors/reduction_overlap.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "actors/bubble.h"

namespace oneflow::actors {
namespace {

bool IsOptimizerOp(const std::string& type) {
  return type == "sgd_update" || type == "adamw_update" || type == "sgd_step" || type == "adamw_step";
}

// The ops the compiler may put between a gradient and its optimizer op: ZeRO-1's
// re-layout (identity) and the micro-batch accumulator. The tensor they read is a
// gradient too (its reduction may happen before them).
bool PassesGradientOn(const std::string& type) { return type == "identity" || type == "accumulate"; }

}  // namespace

GradientReductions::GradientReductions(const proto::Plan& plan) : plan_(plan) {
  const proto::Job& job = plan.job();
  absl::flat_hash_map<std::string, const proto::OpDef*> producer;
  for (const proto::OpDef& op : job.ops()) {
    for (const auto& [argument, tensor] : op.outputs()) producer[tensor] = &op;
  }
  absl::flat_hash_set<std::string> gradients;
  for (const proto::OpDef& op : job.ops()) {
    if (!IsOptimizerOp(op.type())) continue;
    auto grad = op.inputs().find("grad");
    if (grad == op.inputs().end()) continue;
    std::string tensor = grad->second;
    // Back through identities and accumulators; a chain ends at the gradient autograd made.
    for (int hops = 0; hops <= job.ops_size() && gradients.insert(tensor).second; ++hops) {
      auto from = producer.find(tensor);
      if (from == producer.end() || !PassesGradientOn(from->second->type()) || from->second->inputs().size() != 1) {
        break;
      }
      tensor = from->second->inputs().begin()->second;
    }
  }
  boxing_reduces_gradient_.assign(plan.boxings_size(), false);
  for (int b = 0; b < plan.boxings_size(); ++b) {
    boxing_reduces_gradient_[b] = gradients.contains(plan.boxings(b).tensor());
  }
}

bool GradientReductions::Contains(const proto::ActorDef& actor) const {
  if (actor.has_bucket_id()) return true;
  if (actor.kind() != proto::ACTOR_BOXING || actor.boxing_id() < 0 || actor.boxing_id() >= plan_.boxings_size() ||
      !boxing_reduces_gradient_[actor.boxing_id()]) {
    return false;
  }
  const proto::BoxingDef& boxing = plan_.boxings(static_cast<int>(actor.boxing_id()));
  if (actor.boxing_step() < 0 || actor.boxing_step() >= boxing.steps_size()) return false;
  const proto::BoxingStepKind kind = boxing.steps(static_cast<int>(actor.boxing_step())).kind();
  return kind == proto::STEP_ALL_REDUCE || kind == proto::STEP_REDUCE_SCATTER;
}

absl::StatusOr<ReductionOverlap> MeasureReductionOverlap(const proto::Plan& plan, const std::vector<ActRecord>& acts,
                                                         int64_t warmup_iterations) {
  // MeasureBubble checks every act against the plan, finds the measured iterations and
  // the compute thread's busy time in their window.
  absl::StatusOr<MeasuredBubble> bubble = MeasureBubble(plan, acts, warmup_iterations);
  if (!bubble.ok()) return bubble.status();
  const int64_t micro_batches = std::max<int64_t>(1, plan.job().micro_batches());
  const GradientReductions reductions(plan);
  absl::flat_hash_map<int64_t, const proto::ActorDef*> actors;
  for (const proto::DevicePlan& device : plan.devices()) {
    for (const proto::ActorDef& actor : device.actors()) actors[actor.id()] = &actor;
  }
  // The starts of each call (collective, iteration) on every device, sorted. An act's last
  // arrival is the latest of them no later than its own end: a collective over several
  // groups (dp over each tp rank) has members that are no peers of this act, and one that
  // started after this act ended cannot be (the call cannot end before its last member came).
  absl::flat_hash_map<std::pair<int64_t, int64_t>, std::vector<int64_t>> call_starts;
  // The devices with an act of each call: a reduction's members.
  absl::flat_hash_map<std::pair<int64_t, int64_t>, absl::flat_hash_set<int>> call_devices;
  for (const ActRecord& act : acts) {
    const proto::ActorDef& actor = *actors.at(act.actor_id);
    if (actor.kind() != proto::ACTOR_BOXING || actor.collective_id() < 0) continue;
    call_starts[{actor.collective_id(), act.iteration}].push_back(act.start_ns);
    call_devices[{actor.collective_id(), act.iteration}].insert(act.device_index);
  }
  for (auto& [call, starts] : call_starts) std::sort(starts.begin(), starts.end());
  auto last_arrival = [&](const proto::ActorDef& actor, const ActRecord& act) {
    const std::vector<int64_t>& starts = call_starts.at({actor.collective_id(), act.iteration});
    auto after = std::upper_bound(starts.begin(), starts.end(), act.end_ns);
    return after == starts.begin() ? act.start_ns : *std::prev(after);
  };
  using Intervals = std::vector<std::pair<int64_t, int64_t>>;
  std::vector<Intervals> reduction(plan.devices_size()), compute(plan.devices_size());
  std::vector<Intervals> transfer(plan.devices_size());
  // Per device, the devices it reduces gradients with (itself included).
  std::vector<absl::flat_hash_set<int>> members(plan.devices_size());
  for (int d = 0; d < plan.devices_size(); ++d) members[d].insert(d);
  ReductionOverlap overlap;
  overlap.first_iteration = bubble->first_iteration;
  overlap.last_iteration = bubble->last_iteration;
  overlap.iterations = bubble->last_iteration - bubble->first_iteration + 1;
  for (const ActRecord& act : acts) {
    const proto::ActorDef& actor = *actors.at(act.actor_id);
    if (actor.thread() == proto::THREAD_COMPUTE) compute[act.device_index].push_back({act.start_ns, act.end_ns});
    const bool measured = (actor.per_iteration() ? act.iteration : act.iteration / micro_batches) >= warmup_iterations;
    if (measured && reductions.Contains(actor)) {
      reduction[act.device_index].push_back({act.start_ns, act.end_ns});
      ++overlap.reduction_acts;
      int64_t start = act.start_ns;
      if (actor.kind() == proto::ACTOR_BOXING && actor.collective_id() >= 0) {
        start = std::max(start, last_arrival(actor, act));
        for (int peer : call_devices.at({actor.collective_id(), act.iteration})) members[act.device_index].insert(peer);
      }
      if (start < act.end_ns) transfer[act.device_index].push_back({start, act.end_ns});
    }
  }
  // |R ∩ C| = |R| + |C| - |R ∪ C|, C clipped to R's span; R's union and |R ∩ C|.
  auto covered_and_hidden = [](Intervals reduced, Intervals computed) -> std::pair<int64_t, int64_t> {
    if (reduced.empty()) return {0, 0};
    int64_t from = std::numeric_limits<int64_t>::max(), to = std::numeric_limits<int64_t>::min();
    for (const auto& [start, end] : reduced) from = std::min(from, start), to = std::max(to, end);
    Intervals both = reduced;
    both.insert(both.end(), computed.begin(), computed.end());
    const int64_t r = CoveredNs(std::move(reduced), from, to);
    const int64_t c = CoveredNs(std::move(computed), from, to);
    return {r, r + c - CoveredNs(std::move(both), from, to)};
  };
  for (int d = 0; d < plan.devices_size(); ++d) {
    overlap.compute_ns += bubble->devices[d].busy_ns;
    const auto [reduced, hidden] = covered_and_hidden(std::move(reduction[d]), compute[d]);
    overlap.reduction_ns += reduced;
    overlap.hidden_ns += hidden;
    const auto [transferred, transfer_hidden] = covered_and_hidden(transfer[d], compute[d]);
    overlap.transfer_ns += transferred;
    overlap.transfer_hidden_ns += transfer_hidden;
    Intervals members_compute;
    for (int member : members[d]) {
      members_compute.insert(members_compute.end(), compute[member].begin(), compute[member].end());
    }
    overlap.transfer_hidden_by_members_ns += covered_and_hidden(transfer[d], std::move(members_compute)).second;
  }
  if (overlap.reduction_ns > 0) {
    overlap.hidden_fraction = static_cast<double>(overlap.hidden_ns) / static_cast<double>(overlap.reduction_ns);
  }
  if (overlap.transfer_ns > 0) {
    overlap.transfer_hidden_fraction =
        static_cast<double>(overlap.transfer_hidden_ns) / static_cast<double>(overlap.transfer_ns);
    overlap.transfer_hidden_by_members_fraction =
        static_cast<double>(overlap.transfer_hidden_by_members_ns) / static_cast<double>(overlap.transfer_ns);
  }
  return overlap;
}

}  // namespace oneflow::actors
