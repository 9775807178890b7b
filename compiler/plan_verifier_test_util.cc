#include "compiler/plan_verifier_test_util.h"

#include "compiler/compilation.h"
#include "compiler/pass_pipeline.h"
#include "compiler/passes/actor_graph_pass.h"
#include "compiler/passes/boxing_insertion_pass.h"
#include "compiler/passes/collective_ordering_pass.h"
#include "compiler/passes/lowering_pass.h"
#include "compiler/passes/memory_planning_pass.h"
#include "compiler/passes/pipeline_schedule_pass.h"
#include "compiler/passes/plan_emission_pass.h"
#include "compiler/passes/sbp_choice_pass.h"
#include "compiler/passes/shape_inference_pass.h"
#include "gtest/gtest.h"
#include "plan/plan_checksum.h"
#include "plan/plan_verifier.h"

namespace oneflow {

proto::Plan Compiled(Graph& graph, int64_t nodes, int64_t devices_per_node) {
  Compilation compilation;
  compilation.job = *graph.Build();
  compilation.options.cluster.set_num_nodes(nodes);
  compilation.options.cluster.set_devices_per_node(devices_per_node);
  compilation.links = LinkModel{100e9, 10e9};
  compilation.cluster_placement = *Placement::Grid(DeviceType::kCpu, nodes, devices_per_node);
  compilation.default_placement = compilation.cluster_placement;
  PassPipeline pipeline;
  pipeline.AddPass<ShapeInferencePass>();
  pipeline.AddPass<SbpChoicePass>();
  pipeline.AddPass<BoxingInsertionPass>();
  pipeline.AddPass<LoweringPass>();
  pipeline.AddPass<PipelineSchedulePass>();
  pipeline.AddPass<ActorGraphPass>();
  pipeline.AddPass<CollectiveOrderingPass>();
  pipeline.AddPass<MemoryPlanningPass>();
  pipeline.AddPass<PlanEmissionPass>();
  pipeline.Provide({StatePart::kBuckets});  // none: no gradient bucketing in an inference plan
  absl::Status status = pipeline.Run(&compilation);
  EXPECT_TRUE(status.ok()) << status;
  return compilation.plan;
}

absl::Status Resealed(proto::Plan plan) {
  EXPECT_TRUE(SealPlan(&plan).ok());
  return VerifyPlan(plan);
}

}  // namespace oneflow
