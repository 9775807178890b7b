// The compiler's standard pass pipeline (compiler.h's Compile runs it).
#ifndef COMPILER_STANDARD_PIPELINE_H_
#define COMPILER_STANDARD_PIPELINE_H_

#include "compiler/pass_pipeline.h"

namespace oneflow {

// In order: shape_inference, autograd, gradient_accumulation, optimizer,
// dead_op_elimination, sbp_choice, epilogue_fusion, recompute, boxing_insertion, gradient_bucketing,
// lowering, pipeline_schedule, actor_graph, collective_ordering, memory_planning, plan_emission.
PassPipeline StandardPipeline();

}  // namespace oneflow

#endif  // COMPILER_STANDARD_PIPELINE_H_
