#include "compiler/passes/reduction_tail_order.h"

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "compiler/actor_compute_seconds.h"
#include "compiler/cluster_compute_rates.h"
#include "compiler/passes/bucket_cap.h"
#include "compiler/passes/gradient_bucketing_pass.h"
#include "sbp/collective_cost.h"
#include "sbp/link_model.h"

namespace oneflow {
namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

// The (placement, hierarchy axis) whose groups a reduction runs over: its stream's class.
std::pair<int64_t, int64_t> ClassOf(const Compilation& compilation, const TailReduction& reduction) {
  if (reduction.bucket >= 0) {
    const GradientBucket& bucket = compilation.buckets[reduction.bucket];
    return {bucket.placement, bucket.hierarchy_axis};
  }
  const Boxing& boxing = compilation.boxings[reduction.boxing];
  return {compilation.graph.tensors[boxing.tensor].placement, boxing.plan.steps[0].hierarchy_axis};
}

// The groups of `axis` of `placement` that share one node's link: the placement's devices
// on the node of its first device over those of the first device's group there.
double LinkSharers(const Placement& placement, int64_t axis) {
  const int64_t node = placement.device(0).node;
  int64_t on_node = 0;
  for (const DeviceId& device : placement.devices()) on_node += device.node == node;
  std::vector<int64_t> coordinate = placement.Coordinate(0);
  int64_t group_on_node = 0;
  for (int64_t i = 0; i < placement.hierarchy().dim(axis); ++i) {
    coordinate[axis] = i;
    group_on_node += placement.device(placement.RankOf(coordinate)).node == node;
  }
  return static_cast<double>(on_node) / static_cast<double>(std::max<int64_t>(1, group_on_node));
}

// A bucket's modelled seconds as the runtime runs it: a dense one as one collective of
// its register (DenseBucketSeconds, as the predicted step prices it); a compressed one as
// its members' steps with the calls' latency once.
double BucketSeconds(const Compilation& compilation, const GradientBucket& bucket) {
  bool compressed = false;
  double members = 0;
  double shared_latency = 0;
  for (const auto& [b, s] : bucket.members) {
    const BoxingStep& step = compilation.boxings[b].plan.steps[s];
    compressed = compressed || step.compression.compressed() || step.cross_node_compression.compressed();
    members += step.seconds - step.bucket_shared_latency_seconds;
    shared_latency = std::max(shared_latency, step.bucket_shared_latency_seconds);
  }
  if (compressed) return members + shared_latency;
  return DenseBucketSeconds(compilation.links, compilation.graph.placements[bucket.placement], bucket.hierarchy_axis,
                            bucket.kind == BoxingKind::kReduceScatter, bucket.size_bytes);
}

double ReductionSeconds(const Compilation& compilation, const TailReduction& reduction) {
  if (reduction.bucket >= 0) return BucketSeconds(compilation, compilation.buckets[reduction.bucket]);
  return compilation.boxings[reduction.boxing].plan.steps[0].seconds;
}

// How much longer an act takes than the model's one core per device: the devices' kernel
// threads over the cores' worth they get, when every node shares one machine
// (CompileOptions::shared_machine_cores).
double SharedCoreScale(const CompileOptions& options) {
  if (options.shared_machine_cores <= 0) return 1;
  const proto::Cluster& cluster = options.cluster;
  const double threads = static_cast<double>(cluster.num_nodes() * cluster.devices_per_node()) *
                         static_cast<double>(std::max<int64_t>(1, cluster.threads_per_device()));
  return std::max(1.0, threads / options.shared_machine_cores);
}

// Whether a member's boxing has a collective step after the member's (a 2-D chain's
// in-node all-gather): it runs on another stream and holds that stream's order.
bool HasFollower(const Compilation& compilation, const std::vector<std::pair<int64_t, int64_t>>& members) {
  for (const auto& [b, s] : members) {
    const std::vector<BoxingStep>& steps = compilation.boxings[b].plan.steps;
    for (size_t next = static_cast<size_t>(s) + 1; next < steps.size(); ++next) {
      if (IsCollective(steps[next].kind)) return true;
    }
  }
  return false;
}

// The first op reading the parameter of any member's gradient, and that parameter; -1
// where no member is a parameter's gradient (the loss's reduction).
std::pair<int64_t, int64_t> FirstForwardReader(const Compilation& compilation,
                                               const std::vector<std::pair<int64_t, int64_t>>& members) {
  std::pair<int64_t, int64_t> first{-1, -1};
  for (const auto& [b, s] : members) {
    const int64_t variable = compilation.graph.tensors[compilation.boxings[b].tensor].gradient_of;
    if (variable < 0) continue;
    const std::vector<int64_t>& readers = compilation.graph.tensors[variable].consumers;
    if (readers.empty()) continue;
    if (first.first < 0 || readers.front() < first.first) first = {readers.front(), variable};
  }
  return first;
}

}  // namespace

std::vector<std::pair<int64_t, int64_t>> ReductionMembers(const Compilation& compilation, const TailReduction& reduction) {
  if (reduction.bucket >= 0) return compilation.buckets[reduction.bucket].members;
  return {{reduction.boxing, 0}};
}

bool StepCrossesNodes(const Compilation& compilation, int64_t boxing, int64_t step, int64_t placement) {
  const BoxingStep& s = compilation.boxings[boxing].plan.steps[step];
  if (s.kind == BoxingKind::kSendRecv || s.hierarchy_axis < 0) return false;
  return AxisCrossesNodes(compilation.graph.placements[placement], s.hierarchy_axis);
}

ReductionTailOrder ChooseReductionTailOrder(const Compilation& compilation, const std::vector<TailReduction>& emitted) {
  ReductionTailOrder result;
  // ZeRO's parameter all-gathers run on the same stream after every reduction of the
  // iteration, and the next forward waits for them: reordering the reductions cannot
  // let it start sooner there.
  if (!compilation.options.reorder_reduction_tail || !compilation.pipeline_schedule.device_stage.empty() ||
      compilation.job.optimizer().zero_stage() > 0) {
    result.first = 0;
    return result;
  }
  // The stream with the most node-crossing reductions.
  std::map<std::pair<int64_t, int64_t>, int64_t> count;
  for (const TailReduction& reduction : emitted) ++count[ClassOf(compilation, reduction)];
  if (count.empty()) return result;
  const auto busiest = std::max_element(count.begin(), count.end(),
                                        [](const auto& a, const auto& b) { return a.second < b.second; });
  for (const TailReduction& reduction : emitted) {
    if (ClassOf(compilation, reduction) == busiest->first) result.reductions.push_back(reduction);
  }
  result.first = result.reductions.size();
  if (result.reductions.size() < 2) return result;

  // The timeline's device: the first device of the stream's placement, where each
  // reduction has its actor (a bucket's by Actor.bucket_id, a step's by
  // boxing_step_actors).
  const DeviceId first_device = compilation.graph.placements[busiest->first.first].device(0);
  int d = -1;
  for (size_t i = 0; i < compilation.devices.size(); ++i) {
    if (compilation.devices[i].device == first_device) d = static_cast<int>(i);
  }
  if (d < 0 || d >= compilation.plan.devices_size()) return result;
  result.device = d;
  const proto::DevicePlan& device = compilation.plan.devices(d);
  absl::flat_hash_map<int64_t, size_t> reduction_of_bucket;
  absl::flat_hash_map<int, size_t> reduction_of_actor;
  for (size_t k = 0; k < result.reductions.size(); ++k) {
    const TailReduction& reduction = result.reductions[k];
    if (reduction.bucket >= 0) {
      reduction_of_bucket[reduction.bucket] = k;
      continue;
    }
    for (const auto& [device_index, actor] : compilation.boxing_step_actors[reduction.boxing][0]) {
      if (device_index == d) reduction_of_actor[actor] = k;
    }
  }
  for (int a = 0; a < device.actors_size(); ++a) {
    if (!device.actors(a).has_bucket_id()) continue;
    if (const auto it = reduction_of_bucket.find(device.actors(a).bucket_id()); it != reduction_of_bucket.end()) {
      reduction_of_actor[a] = it->second;
    }
  }
  if (reduction_of_actor.size() != result.reductions.size()) return result;  // Not all on this device.
  // The device's other boxing actors: (boxing, step) of each.
  absl::flat_hash_map<int, std::pair<int64_t, int64_t>> step_of_actor;
  for (size_t b = 0; b < compilation.boxing_step_actors.size(); ++b) {
    for (size_t s = 0; s < compilation.boxing_step_actors[b].size(); ++s) {
      for (const auto& [device_index, actor] : compilation.boxing_step_actors[b][s]) {
        if (device_index == d) step_of_actor[actor] = {static_cast<int64_t>(b), static_cast<int64_t>(s)};
      }
    }
  }

  // The timeline of backward on device d (the class comment).
  const RegistersById registers = RegistersOf(device);
  absl::flat_hash_map<int64_t, int> index_of_id;
  for (int a = 0; a < device.actors_size(); ++a) index_of_id[device.actors(a).id()] = a;
  const ComputeRates rates = ClusterComputeRates(compilation.options.cluster);
  const double scale = SharedCoreScale(compilation.options);
  const int64_t micro_batches = std::max<int64_t>(1, compilation.job.micro_batches());
  std::vector<double> end(device.actors_size(), 0);
  std::vector<char> seen(device.actors_size(), 0);
  std::vector<char> after_reduction(device.actors_size(), 0);
  std::vector<double> ready(result.reductions.size(), 0);
  absl::flat_hash_map<std::string, double> compute_seconds_of_op;  // By actor (op) name.
  double clock = 0;
  for (int a = 0; a < device.actors_size(); ++a) {
    const proto::ActorDef& actor = device.actors(a);
    double inputs = 0;
    bool downstream = false;
    for (int64_t id : actor.consumed_registers()) {
      const auto reg = registers.find(id);
      if (reg == registers.end()) continue;
      const auto producer = index_of_id.find(reg->second->producer_actor());
      if (producer == index_of_id.end() || !seen[producer->second]) continue;  // Earlier iteration's.
      downstream = downstream || after_reduction[producer->second];
      inputs = std::max(inputs, end[producer->second]);
    }
    seen[a] = 1;
    if (const auto reduction = reduction_of_actor.find(a); reduction != reduction_of_actor.end()) {
      ready[reduction->second] = inputs;
      after_reduction[a] = 1;
      continue;
    }
    if (downstream) {  // An update and what follows it: not backward.
      after_reduction[a] = 1;
      continue;
    }
    const double repeats = micro_batches > 1 && !actor.per_iteration() ? static_cast<double>(micro_batches) : 1;
    if (actor.thread() == proto::THREAD_COMPUTE) {
      const double start = std::max(clock, inputs);
      end[a] = start + repeats * scale * PriceActorKernels(actor, registers, rates).seconds();
      compute_seconds_of_op[actor.name()] = end[a] - start;
      clock = end[a];
    } else if (actor.has_bucket_id() && actor.bucket_id() >= 0 &&
               actor.bucket_id() < static_cast<int64_t>(compilation.buckets.size())) {
      end[a] = inputs + BucketSeconds(compilation, compilation.buckets[actor.bucket_id()]);
    } else if (const auto step = step_of_actor.find(a); step != step_of_actor.end()) {
      end[a] = inputs + compilation.boxings[step->second.first].plan.steps[step->second.second].seconds;
    } else {
      end[a] = inputs;
    }
  }

  // The stream in backward's order: the first reduction to start at or after the last
  // gradient exists begins the tail.
  const auto [placement, axis] = busiest->first;
  const double sharers = LinkSharers(compilation.graph.placements[placement], axis);
  std::vector<double> link_seconds;  // Each reduction's on the stream, the link shared.
  for (const TailReduction& reduction : result.reductions) {
    link_seconds.push_back(sharers * ReductionSeconds(compilation, reduction));
  }
  result.backward_end_seconds = *std::max_element(ready.begin(), ready.end());
  double stream = 0;
  double tail_start = 0;
  for (size_t k = 0; k < result.reductions.size(); ++k) {
    const double start = std::max(stream, ready[k]);
    if (start >= result.backward_end_seconds && result.first == result.reductions.size()) {
      result.first = k;
      tail_start = start;
    }
    stream = start + link_seconds[k];
  }
  if (result.reductions.size() - result.first < 2) {
    result.first = result.reductions.size();
    return result;
  }
  // The tail by need: followers first, then by the first forward reader, the loss last;
  // among equals the later-produced first.
  struct Need {
    int followers_last;  // 0: has a follower.
    double reader;       // First forward reader's op index, kNever for none.
    int64_t later_first; // -emission index.
    size_t index;
    int64_t variable;
  };
  std::vector<Need> needs;
  for (size_t k = result.first; k < result.reductions.size(); ++k) {
    const std::vector<std::pair<int64_t, int64_t>> members = ReductionMembers(compilation, result.reductions[k]);
    const auto [reader, variable] = FirstForwardReader(compilation, members);
    needs.push_back({HasFollower(compilation, members) ? 0 : 1, reader < 0 ? kNever : static_cast<double>(reader),
                     -static_cast<int64_t>(k), k, variable});
  }
  std::sort(needs.begin(), needs.end(), [](const Need& a, const Need& b) {
    return std::tie(a.followers_last, a.reader, a.later_first) < std::tie(b.followers_last, b.reader, b.later_first);
  });
  // A reduction whose boxing another one of the tail reduces at an earlier step (a 2-D
  // chain's levels) goes after it, whatever its need: the first in need order whose
  // earlier levels are placed, each time.
  const auto waits_for = [&](size_t later, size_t earlier) {
    for (const auto& [b, s] : ReductionMembers(compilation, result.reductions[later])) {
      for (const auto& [b2, s2] : ReductionMembers(compilation, result.reductions[earlier])) {
        if (b == b2 && s2 < s) return true;
      }
    }
    return false;
  };
  std::vector<Need> placed;
  while (!needs.empty()) {
    size_t pick = 0;
    while (pick + 1 < needs.size() && std::any_of(needs.begin(), needs.end(), [&](const Need& other) {
             return other.index != needs[pick].index && waits_for(needs[pick].index, other.index);
           })) {
      ++pick;
    }
    placed.push_back(needs[pick]);
    needs.erase(needs.begin() + static_cast<std::ptrdiff_t>(pick));
  }
  // What the order buys: the next forward's end on the model's timeline, starting when
  // backward ends, each forward op after the reductions of the parameters it reads (those
  // outside the tail are done by then), in backward's order and in the new one. Where the
  // new order does not end it kModelledGainShare of the modelled backward end sooner (the
  // parameter read right after the embedding is in the last reduction either way, say),
  // backward's order stays: the model's compute prices are not that exact.
  const auto forward_end = [&](const std::vector<size_t>& order) {
    absl::flat_hash_map<int64_t, double> parameter_ready;
    double at = tail_start;
    for (size_t k : order) {
      at += link_seconds[k];
      for (const auto& [b, s] : ReductionMembers(compilation, result.reductions[k])) {
        const int64_t variable = compilation.graph.tensors[compilation.boxings[b].tensor].gradient_of;
        if (variable >= 0) parameter_ready[variable] = at;
      }
    }
    const int64_t last_forward_op =
        compilation.graph.loss >= 0 ? compilation.graph.tensors[compilation.graph.loss].producer : -1;
    double time = result.backward_end_seconds;
    for (int64_t o = 0; o <= last_forward_op; ++o) {
      const LogicalOp& op = compilation.graph.ops[static_cast<size_t>(o)];
      for (int64_t input : op.inputs) {
        if (const auto it = parameter_ready.find(input); it != parameter_ready.end()) time = std::max(time, it->second);
      }
      if (const auto it = compute_seconds_of_op.find(op.name); it != compute_seconds_of_op.end()) time += it->second;
    }
    return time;
  };
  std::vector<size_t> backward_order;
  for (size_t k = result.first; k < result.reductions.size(); ++k) backward_order.push_back(k);
  std::vector<size_t> need_order;
  for (const Need& need : placed) need_order.push_back(need.index);
  result.backward_order_forward_end_seconds = forward_end(backward_order);
  result.forward_end_seconds = forward_end(need_order);
  if (result.backward_order_forward_end_seconds - result.forward_end_seconds <
      kModelledGainShare * result.backward_end_seconds) {
    result.first = result.reductions.size();
    return result;
  }
  const size_t tail = placed.size();
  for (size_t i = 0; i < placed.size(); ++i) {
    const Need& need = placed[i];
    result.order.push_back(need.index);
    std::string why;
    if (need.followers_last == 0) {
      why = "a step on another stream follows it, and that stream's next collectives wait for it";
    } else if (need.variable >= 0) {
      why = absl::StrCat("the next forward reads ", compilation.graph.tensors[need.variable].name, " at op ",
                         compilation.graph.ops[static_cast<size_t>(need.reader)].name);
    } else {
      why = "the next forward reads nothing it reduces";
    }
    result.reasons.push_back(absl::StrCat(
        "tail order: ", i + 1, " of the ", tail, " node-crossing reductions left when backward ends (modelled ",
        FormatMilliseconds(result.backward_end_seconds), " into the iteration; the next forward ends ",
        FormatMilliseconds(result.forward_end_seconds), " against ",
        FormatMilliseconds(result.backward_order_forward_end_seconds), " in backward's order): ", why));
  }
  return result;
}

}  // namespace oneflow
