#ifndef COMPILER_PASSES_PIPELINE_SCHEDULE_PASS_H_
#define COMPILER_PASSES_PIPELINE_SCHEDULE_PASS_H_

#include <cstdint>

#include "compiler/pass.h"

namespace oneflow {

// The pipeline schedule (docs/pipeline.md, "Schedules"): with pipeline stages (several
// placements on the forward path to the loss) and micro-batches, decides per device
//   - its stage: S - 1 - depth, the depth being the most placement changes on a forward
//     path from an op of its placement to the loss;
//   - the slots of its activation registers (Compilation::device_register_count), which
//     the engine's gate turns into the most micro-batches the device has in flight:
//     depth + 1 (S - s on stage s of S for 1F1B and ZB-H1; with interleaved chunks the
//     depth counts every chunk boundary, V S - s on stage s);
//   - each per-micro-batch op's act kind (Compilation::pipeline_schedule.op_act,
//     ActorDef.pipeline_act): forward (the loss depends on it), backward-input B (a
//     backward op from which an op of another placement is reached: what the previous
//     stage waits for) or backward-weight W (the rest: weight gradients, their
//     accumulation). Autograd already emits the two gradients of a matmul as separate ops,
//     so no op needs splitting. Under every schedule the engine runs a ready forward act
//     before the thread's other acts (the next stage waits for it). Under ZB-H1 only, the
//     engine runs W acts only when nothing else is ready and each device's program puts
//     them after its last B op (DeferWeightGradients in the .cc), so memory planning keeps
//     their inputs live until then instead of making a later B wait for them.
// Without stages or micro-batches every device gets CompileOptions::register_count and the
// plan is what it was before schedules existed, but for ZB-H1 asked for with one
// micro-batch: its act kinds and program order as above (each stage's W beside the stage
// before's B). The schedule chosen and its chunks per
// stage are recorded in Job.pipeline_schedule / Job.virtual_stages (left unset for 1F1B).
//
// AUTO picks the schedule with the smallest modelled bubble (tools/cli/pipeline_stages.h)
// among those the layout allows: interleaved when the model has V > 1 chunks per stage
// (the chunks are the model's, so it is the only one), otherwise ZB-H1 (1F1B's memory,
// a smaller bubble). With CompileOptions::device_memory > 0 it fails, naming the device,
// when the estimated need (slots x one micro-batch's op output bytes, an upper bound
// without reuse, plus the variables' bytes) exceeds it.
class PipelineSchedulePass : public CompilerPass {
 public:
  absl::string_view name() const override { return "pipeline_schedule"; }
  absl::StatusOr<bool> Run(Compilation* compilation) override;
  StateParts Reads() const override {
    return {StatePart::kJob, StatePart::kGraph, StatePart::kBoxings, StatePart::kBuckets, StatePart::kDevices};
  }
  StateParts Writes() const override {
    return {StatePart::kJob, StatePart::kDevices, StatePart::kDeviceRegisterCount, StatePart::kPipelineSchedule};
  }
};

// "1f1b", "interleaved", "zb", "auto": the --pp_schedule spellings.
absl::string_view PipelineScheduleName(proto::PipelineSchedule schedule);
absl::StatusOr<proto::PipelineSchedule> ParsePipelineSchedule(absl::string_view name);

}  // namespace oneflow

#endif  // COMPILER_PASSES_PIPELINE_SCHEDULE_PASS_H_
