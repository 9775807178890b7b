#include "compiler/standard_pipeline.h"

#include "compiler/pass_pipeline.h"
#include "compiler/passes/activation_storage_pass.h"
#include "compiler/passes/actor_graph_pass.h"
#include "compiler/passes/autograd_pass.h"
#include "compiler/passes/boxing_insertion_pass.h"
#include "compiler/passes/collective_ordering_pass.h"
#include "compiler/passes/dead_op_elimination_pass.h"
#include "compiler/passes/epilogue_fusion_pass.h"
#include "compiler/passes/gradient_accumulation_pass.h"
#include "compiler/passes/gradient_bucketing_pass.h"
#include "compiler/passes/lowering_pass.h"
#include "compiler/passes/memory_planning_pass.h"
#include "compiler/passes/optimizer_pass.h"
#include "compiler/passes/pipeline_schedule_pass.h"
#include "compiler/passes/plan_emission_pass.h"
#include "compiler/passes/precision_pass.h"
#include "compiler/passes/recompute_pass.h"
#include "compiler/passes/sbp_choice_pass.h"
#include "compiler/passes/sbp_search_pass.h"
#include "compiler/passes/shape_inference_pass.h"

namespace oneflow {

PassPipeline StandardPipeline() {
  PassPipeline pipeline;
  pipeline.AddPass<ShapeInferencePass>();
  pipeline.AddPass<AutogradPass>();
  pipeline.AddPass<GradientAccumulationPass>();
  pipeline.AddPass<OptimizerPass>();
  pipeline.AddPass<DeadOpEliminationPass>();
  pipeline.AddPass<SbpChoicePass>();
  pipeline.AddPass<SbpSearchPass>();
  pipeline.AddPass<EpilogueFusionPass>();
  pipeline.AddPass<PrecisionPass>();
  pipeline.AddPass<RecomputePass>();
  pipeline.AddPass<ActivationStoragePass>();
  pipeline.AddPass<BoxingInsertionPass>();
  pipeline.AddPass<GradientBucketingPass>();
  pipeline.AddPass<LoweringPass>();
  pipeline.AddPass<PipelineSchedulePass>();
  pipeline.AddPass<ActorGraphPass>();
  pipeline.AddPass<CollectiveOrderingPass>();
  pipeline.AddPass<MemoryPlanningPass>();
  pipeline.AddPass<PlanEmissionPass>();
  return pipeline;
}

}  // namespace oneflow
