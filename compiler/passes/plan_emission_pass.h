#ifndef COMPILER_PASSES_PLAN_EMISSION_PASS_H_
#define COMPILER_PASSES_PLAN_EMISSION_PASS_H_

#include "compiler/pass.h"

namespace oneflow {

// Completes the plan: format version, cluster, the final job, each op's SBP signature,
// the layouts of inputs and variables, the boxings with their steps, and bytes sent and
// received per device per iteration. Everything is emitted in a fixed order, so the
// same input always serializes to the same bytes.
class PlanEmissionPass : public CompilerPass {
 public:
  absl::string_view name() const override { return "plan_emission"; }
  absl::StatusOr<bool> Run(Compilation* compilation) override;
  StateParts Reads() const override {
    return {StatePart::kJob,
            StatePart::kGraph,
            StatePart::kBoxings,
            StatePart::kBuckets,
            StatePart::kBoxingStepCollective,
            StatePart::kBucketCollective,
            StatePart::kPlan};
  }
  StateParts Writes() const override { return {StatePart::kPlan}; }
};

}  // namespace oneflow

#endif  // COMPILER_PASSES_PLAN_EMISSION_PASS_H_
