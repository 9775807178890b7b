// Pipeline stages of a plan, as `oneflow inspect` and bench/pipeline report them: a
// stage is one placement of the plan's ops (Plan.op_sbps), i.e. one set of devices, and
// the figures are the compiler's (DevicePlan.peak_bytes) beside the 1F1B model of the
// bubble. The measured bubble comes from a trace (actors/bubble.h).
#ifndef TOOLS_CLI_PIPELINE_STAGES_H_
#define TOOLS_CLI_PIPELINE_STAGES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "proto/plan.pb.h"

namespace oneflow::cli {

struct PipelineStage {
  // The placement of its first op, as inspect spells it ("cpu{0:0-1}").
  std::string placement;
  // Indices into plan.devices, in the placement's order.
  std::vector<int> devices;
  // Logical ops placed on it (Plan.op_sbps entries, forward and backward and updates).
  int64_t num_ops = 0;
  // The largest over its devices of DevicePlan.peak_bytes, and of the persistent part
  // (variables and optimizer state). The devices of one stage differ only by uneven
  // splits, so the largest is the one that decides whether the stage fits.
  int64_t peak_bytes = 0;
  int64_t persistent_bytes = 0;
};

// The distinct device sets of the plan's op placements (ops with no placement left
// out), ordered the way the forward pass goes: by the first op in Plan.op_sbps that is
// placed on each (op_sbps lists the forward ops before their gradients), except that the
// stage holding the op that produces Job.loss comes last. One entry for a plan without
// pipeline stages; none for a plan without ops.
std::vector<PipelineStage> PipelineStages(const proto::Plan& plan);

// Job.micro_batches, or 1 when unset.
int64_t MicroBatches(const proto::Plan& plan);

// The 1F1B bubble fraction (Megatron-LM; Narayanan et al. 2021): (S - 1) / (M + S - 1)
// for S stages and M micro-batches: the fraction of an iteration each stage waits while
// the pipeline fills and drains. 0 for one stage.
double ModelledBubble(int64_t stages, int64_t micro_batches);

// The modelled bubble of `schedule` (Job.pipeline_schedule) with `virtual_stages` chunks
// per stage (interleaved only): (S - 1) / (k M + S - 1) with k = 1 for 1F1B, V for
// interleaved 1F1B (Narayanan et al. 2021), 3 for ZB-H1 (Qi et al. 2024: F, B and W take
// about equal time and W acts fill two thirds of 1F1B's bubble). 0 for one stage.
double ModelledBubble(int64_t stages, int64_t micro_batches, proto::PipelineSchedule schedule,
                      int64_t virtual_stages);

// The mean over the stage's devices of `device_idle` (indexed by plan.devices).
double StageMeasuredBubble(const PipelineStage& stage, const std::vector<double>& device_idle);

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_PIPELINE_STAGES_H_
