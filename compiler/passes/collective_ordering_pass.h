#ifndef COMPILER_PASSES_COLLECTIVE_ORDERING_PASS_H_
#define COMPILER_PASSES_COLLECTIVE_ORDERING_PASS_H_

#include "compiler/pass.h"

namespace oneflow {

// Creates one CollectiveDef per (boxing step, communicator group) and fixes the static
// order: collectives are numbered in the single topological order of the boxings, so
// every device issues its collectives in increasing id and every group's members agree
// on its sequence. It also puts each collective on a communication stream
// (CollectiveDef.stream, Plan.streams): one per class of groups (a hierarchy axis of a
// placement; classes sharing a group merged), each device running one communication
// thread per stream it uses, so collectives of different axes (data-parallel buckets,
// tensor-parallel activations) that nothing orders do not wait for each other. Each
// stream's order is the device's order restricted to it, a subsequence of one
// topological order, so no wait cycle arises; the plan verifier checks that every group
// is on one stream and proves the absence of wait cycles over the streams' orders.
// The node-crossing gradient reductions that the cost model finds still queued when
// backward ends are the one exception to that order: they are numbered in the order the
// next forward needs them (reduction_tail_order.h), which is still a topological order
// (none of them waits for another).
class CollectiveOrderingPass : public CompilerPass {
 public:
  absl::string_view name() const override { return "collective_ordering"; }
  VerifierChecks Checks() const override { return VerifierChecks{.collective_order = true}; }
  absl::StatusOr<bool> Run(Compilation* compilation) override;
  StateParts Reads() const override {
    return {StatePart::kJob,     StatePart::kGraph,            StatePart::kBoxings,
            StatePart::kBuckets, StatePart::kDevices,          StatePart::kBoxingStepActors,
            StatePart::kPipelineSchedule, StatePart::kPlan};
  }
  StateParts Writes() const override {
    return {StatePart::kPlan, StatePart::kBoxingStepCollective, StatePart::kBucketCollective};
  }
};

}  // namespace oneflow

#endif  // COMPILER_PASSES_COLLECTIVE_ORDERING_PASS_H_
