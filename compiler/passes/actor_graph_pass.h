#ifndef COMPILER_PASSES_ACTOR_GRAPH_PASS_H_
#define COMPILER_PASSES_ACTOR_GRAPH_PASS_H_

#include "compiler/pass.h"

namespace oneflow {

// Turns each device program into actors and registers: one actor per node (compute
// thread, or communication thread for collective boxing steps), one register per output
// with its producer, consumers, slot count (the device's, from pipeline_schedule; 1
// persistent slot for variables) and size. Each device's pipeline stage and each compute
// actor's act kind (ZB-H1) are the pipeline_schedule pass's. An in-place update waits for every other reader of the
// variable it updates (control predecessors). The output of a view op (reshape,
// identity) whose slice is its input's bytes becomes a view of the input's register
// (RegisterDef.alias_of): it takes no memory and its actor moves no data.
class ActorGraphPass : public CompilerPass {
 public:
  absl::string_view name() const override { return "actor_graph"; }
  VerifierChecks Checks() const override { return VerifierChecks{.plan_structure = true}; }
  absl::StatusOr<bool> Run(Compilation* compilation) override;
  StateParts Reads() const override {
    return {StatePart::kJob,     StatePart::kGraph,               StatePart::kBoxings,
            StatePart::kBuckets, StatePart::kDevices,             StatePart::kDeviceRegisterCount,
            StatePart::kPipelineSchedule};
  }
  StateParts Writes() const override { return {StatePart::kPlan, StatePart::kBoxingStepActors}; }
};

}  // namespace oneflow

#endif  // COMPILER_PASSES_ACTOR_GRAPH_PASS_H_
