// The order of the node-crossing gradient reductions left when backward ends: the order
// the next forward needs them, not the order backward produced them (P3's priority
// propagation, ByteScheduler's priorities, made static).
//
// A device issues the reductions of its data-parallel group in one static order
// (collective_ordering_pass.h), by default the order backward produces the gradients.
// Where the link is slower than backward, several of them are still queued when backward
// ends, and the last one queued holds the gradients backward produced last: the
// embeddings' and the first block's, which the next forward needs first. So the next
// forward waited for every queued reduction, and the link idled while it ran (traced on
// 3 emulated hosts at 1 Gbit/s, gpt h512 L4 dp = 3: the link idle ~150 ms of a 790 ms
// step, next forward 290 ms after backward in the dp3 x tp2 gpt). Issued in the order the
// next forward reads their parameters, the first block's update runs while the later
// blocks' gradients still cross, and forward overlaps the link.
//
// Which reductions are "left when backward ends" is the cost model's call, on a timeline
// of one device of the group: its compute actors in program order, each priced as
// `oneflow inspect`'s predicted step prices it (actor_compute_seconds.h; times the cores'
// share when every node runs on one machine, CompileOptions::shared_machine_cores), the
// collectives its backward waits for at their modelled seconds, and the node-crossing
// reductions one after another on their stream, each at its modelled seconds times the
// groups that share a node's link (dp x tp: the tp ranks' rings cross the same NIC). A
// reduction whose modelled start is at or after the last gradient's modelled production
// is in the tail; the tail is issued by the first forward reader of its members'
// parameters, earliest first, where that ends the next forward (modelled: each forward op
// after the reductions of the parameters it reads) sooner than backward's order does by
// kModelledGainShare of the modelled iteration. A reduction followed by a step on another stream (the
// in-node all-gather of a 2-D chain) goes first: the next iteration's collectives of
// that stream (tensor parallelism) wait behind its follower in that stream's order; the
// loss's reduction alone, which no forward needs, goes last. Reordering only inside the
// tail never starts a reduction before its gradients exist in the model, so it adds no
// idle link there; where the model overestimates the backlog, the stream waits for the
// last gradient with earlier ones queued behind it.
//
// One stream is reordered: the class of groups (placement, hierarchy axis) with the most
// node-crossing reductions. Not with pipeline stages (each stage's next forward differs),
// not under ZeRO (its parameter all-gathers, which the next forward waits for, follow
// every reduction on the same stream, so no order of the reductions lets it start
// sooner; gpt_dp3tp2 with --zero=3 kept measured 0.94-1.08x either way), and not with
// CompileOptions::reorder_reduction_tail = false (the backward order, for comparisons).
#ifndef COMPILER_PASSES_REDUCTION_TAIL_ORDER_H_
#define COMPILER_PASSES_REDUCTION_TAIL_ORDER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/compilation.h"

namespace oneflow {

// One node-crossing gradient reduction that runs as one call per group: a gradient bucket
// (`bucket` >= 0), or a reduction alone in its bucket that runs early (`boxing` >= 0, its
// step 0, kAloneEarly).
struct TailReduction {
  int64_t bucket = -1;
  int64_t boxing = -1;
  friend bool operator==(const TailReduction& a, const TailReduction& b) {
    return a.bucket == b.bucket && a.boxing == b.boxing;
  }
};

struct ReductionTailOrder {
  // The reductions of the stream reordered, in the order collective_ordering emits them
  // (backward's).
  std::vector<TailReduction> reductions;
  // reductions[first..] is the tail; first == reductions.size(): nothing is reordered.
  size_t first = 0;
  // The tail in its new order: indices into `reductions`.
  std::vector<size_t> order;
  // Per entry of `order`: why it is there, for the collective's reason.
  std::vector<std::string> reasons;
  // The model's timeline on `device` (an index into plan.devices): when the last
  // gradient is produced, in seconds from the iteration's start.
  int device = -1;
  double backward_end_seconds = 0;
  // The next forward's modelled end in the new order and in backward's (0 where no tail
  // was found).
  double forward_end_seconds = 0;
  double backward_order_forward_end_seconds = 0;
};

// The share of the modelled backward end by which the new order must end the next
// forward sooner than backward's order, or backward's order stays.
inline constexpr double kModelledGainShare = 0.05;

// Every node-crossing reduction of `compilation` (buckets and kAloneEarly steps), in
// emission order (`emitted`: what collective_ordering's walk meets, in its order), and
// the tail to reorder. Reads the plan's actors (actor_graph) and the boxings' prices.
ReductionTailOrder ChooseReductionTailOrder(const Compilation& compilation, const std::vector<TailReduction>& emitted);

// (boxing, step) of every member: a bucket's members, or step 0 of a reduction alone.
std::vector<std::pair<int64_t, int64_t>> ReductionMembers(const Compilation& compilation, const TailReduction& reduction);

// Whether `step` of `boxing` is a node-crossing step over groups that span nodes.
bool StepCrossesNodes(const Compilation& compilation, int64_t boxing, int64_t step, int64_t placement);

}  // namespace oneflow

#endif  // COMPILER_PASSES_REDUCTION_TAIL_ORDER_H_
