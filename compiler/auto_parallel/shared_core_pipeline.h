// A 1F1B (or ZB-H1) pipeline whose devices take turns on fewer host cores than they are (every device
// of the cluster simulated in one process: `oneflow run`, the examples' --run), played out
// task by task.
//
// The cost model's bound for devices sharing cores, every device's compute over the cores,
// holds when every device is busy the whole iteration (data and tensor parallelism). A
// pipeline is not: while it fills and drains some stages have nothing to do, so the busy
// ones get more of the cores than their share, and in the steady state more devices are
// runnable than there are cores, so its critical path runs slower than one device alone.
// Neither (M + pp - 1) x the slowest stage nor the compute over the cores is the step then:
// 4 stages of the bench's gpt with 4 micro-batches on 2 cores measured 121 ms where the
// larger of the two predicted 89 ms, and the model ranked it among the fastest layouts
// (docs/auto_parallel_measurements.md, run 19).
//
// The play: each stage runs its tasks in 1F1B order (pp - s - 1 forwards of warm-up, then
// one forward and one backward in turn, then the remaining backwards); a forward waits for
// the stage before's forward of its micro-batch, a backward for the stage after's backward
// (the last stage: its own forward). Every stage is `devices` devices (dp x tp) running the
// task together; the devices of the stages with a task ready share `cores` equally
// (processor sharing), each at most one core.
//
// A task is its compute and then its waiting: the tensor-parallel all-reduces and the
// pipeline's receives the stage waits on (the first micro-batch's tasks also ZeRO-3's
// gathers, once per iteration). Waiting takes wall time but no core, so a
// stage that waits leaves the cores to the others. (Counted as compute, the waiting of
// tp = 2 × pp = 2 with 8 micro-batches and full recomputation put the play at 443 ms where
// the step measured 286: docs/auto_parallel_measurements.md, runs 24-27.)
#ifndef COMPILER_AUTO_PARALLEL_SHARED_CORE_PIPELINE_H_
#define COMPILER_AUTO_PARALLEL_SHARED_CORE_PIPELINE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/job.pb.h"

namespace oneflow::auto_parallel {

struct PipelineStageWork {
  // One micro-batch's forward and backward on one device of the stage, on a core of its own.
  double forward_seconds = 0;
  double backward_seconds = 0;
  int64_t devices = 1;  // devices of the stage running each task together (dp x tp)
  // After each forward and backward: the wall time the stage's devices wait on
  // communication (tensor-parallel all-reduces, the pipeline's receives), on no core.
  double forward_wait_seconds = 0;
  double backward_wait_seconds = 0;
  // Waiting once per iteration, added to the stage's first forward and first backward:
  // ZeRO-3's gathers of the stage's parameters for forward and again for backward (their
  // copies serve every micro-batch, so only the first one waits on them).
  double first_forward_wait_seconds = 0;
  double first_backward_wait_seconds = 0;
  // Of backward_seconds, the part ZB-H1 runs as W acts (the weights' gradients; on the
  // first stage all of backward): played only with that schedule.
  double weight_backward_seconds = 0;
};

// The wall time from the first forward to the last backward. With cores at least every
// device's count it is the 1F1B schedule's own length ((M + pp - 1) x (F + B) for equal
// stages, the waits included); one stage of g devices is
// M x ((F + B) x max(1, g / cores) + the waits).
//
// With `schedule` ZB-H1 each backward is its B act (backward_seconds less
// weight_backward_seconds, and the backward's waits) in 1F1B's order and a W act
// (weight_backward_seconds) the stage runs only when its next B or F is not ready, oldest
// first, as the engine holds W acts back (docs/pipeline.md, "ZB-H1's B and W"); a W act
// once started runs to its end. A forward of micro-batch k >= pp - s on stage s also waits
// for W of micro-batch k - (pp - s): the stage's pp - s activation slots are 1F1B's, and W
// reads the activations the slot holds. With F = B = W = 1 and a core per device that is
// M x 3 + (pp - 1) x 1 against 1F1B's (M + pp - 1) x 3 (the zero-bubble paper's H1).
// INVALID_ARGUMENT when there is no stage, micro_batches < 1, cores <= 0, a stage has no
// device, a negative time or a W part beyond its backward, or `schedule` is neither
// 1F1B nor ZB-H1.
absl::StatusOr<double> SharedCorePipelineSeconds(const std::vector<PipelineStageWork>& stages, int64_t micro_batches,
                                                 double cores,
                                                 proto::PipelineSchedule schedule = proto::PIPELINE_SCHEDULE_1F1B);

// What of 1F1B's bubble ZB-H1 leaves: both schedules played above with a core per device,
// the length beyond M x the slowest stage's micro-batch (its forward, backward and waits),
// ZB-H1's over 1F1B's, within [0, 1]; 1 when 1F1B has no bubble. The cost model keeps
// 1F1B's priced bubble (the pipeline's transfer loops, pipeline_period.h) and scales it by
// this share. 4 equal stages of F = 1, B = 2 (W 1), M = 8: (30 - 24) / (33 - 24) = 2/3.
// Errors as SharedCorePipelineSeconds'.
absl::StatusOr<double> ZeroBubbleShare(const std::vector<PipelineStageWork>& stages, int64_t micro_batches);

}  // namespace oneflow::auto_parallel

#endif  // COMPILER_AUTO_PARALLEL_SHARED_CORE_PIPELINE_H_
