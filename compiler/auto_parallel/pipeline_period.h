// The steady state of a 1F1B pipeline: how long each stage takes per micro-batch once
// the transfers between the stages are on its path as the schedule puts them.
//
// Stage s runs pp - s forwards of warm-up, then a forward and a backward in turn. Across
// cut e (between stages e - 1 and e) that order closes a loop every two micro-batches:
// stage e - 1's forward of micro-batch m, the activation's transfer, stage e's forward and
// (pp - e - 1 micro-batches later, in its own steady state) its backward of m, the
// gradient's transfer, and stage e - 1's backward of m, after which stage e - 1 starts the
// forward of micro-batch m + pp - e + 1. Stage e's other work in between is its steady
// state's, so two periods hold one of each stage's micro-batches and both transfers:
//   period >= (stage[e - 1] + stage[e] + forward[e] + backward[e]) / 2.
// With one micro-batch the loop is the whole iteration (F + B of both stages and both
// transfers), which the sum says exactly. The link of a cut carries one direction's
// transfers one after another, so it is a bound too: period >= what it carries one way.
//
// Before (session 44), each stage was priced as its compute plus both of its receives,
// as if it waited on each in full: with a tied embedding's gradient sent before the
// activation's gradient every micro-batch across 2 emulated hosts, that charged stage 0 the
// whole 1.75 ms transfer per micro-batch where the trace shows the two stages overlapping
// it (docs/auto_parallel_measurements.md, "Pipelines across hosts, traced").
#ifndef COMPILER_AUTO_PARALLEL_PIPELINE_PERIOD_H_
#define COMPILER_AUTO_PARALLEL_PIPELINE_PERIOD_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace oneflow::auto_parallel {

// The transfers of one micro-batch across a cut, seconds.
struct PipelineCutTransfers {
  // What the receiving stage waits on (latency + bytes / rate): the activation (and
  // whatever else goes forward) and the gradient coming back, from when the sender has it.
  double forward_seconds = 0;
  double backward_seconds = 0;
  // What the cut's link carries one way per micro-batch, waited on or not. (Until
  // session 45 a tied embedding's gradient, sent early in the stage's backward every
  // micro-batch, was carried and not waited on while the backward after it lasted longer;
  // now it crosses once per iteration, after the pipeline's drain, and price.cc prices it
  // there, so the price puts the same transfers here as above.)
  double forward_link_seconds = 0;
  double backward_link_seconds = 0;
};

// `stage_seconds[s]`: one micro-batch's forward and backward on stage s and the waits that
// hold it (tp's collectives), no pipeline transfer. `cuts[e]` (e = 1 .. pp - 1; index 0
// unused): the transfers across cut e. Returns each stage's seconds per micro-batch: the
// larger of its own and the bounds of the cuts next to it. (The pipeline's period is the
// largest.) INVALID_ARGUMENT when there is no stage, `cuts` is not pp long, or a time is
// negative.
absl::StatusOr<std::vector<double>> PipelineStageSeconds(const std::vector<double>& stage_seconds,
                                                         const std::vector<PipelineCutTransfers>& cuts);

// Each transfer across a cut is a collective call on both of its ranks (send_recv runs an
// all-to-all of the two stages' union group, kernels/boxing/send_recv.cc), and every
// collective call costs its ranks `call_seconds` (PriceOptions::collective_call_seconds,
// as StageCollectives::Calls charges the others), on the thread that leads the stage's
// compute: per micro-batch a stage pays it for the activation and the gradient of each
// neighbouring stage. Returns those seconds per stage of a `pp`-stage pipeline (the
// middle stages 4 x call_seconds, the two ends 2 x, one stage none). Unpriced, the
// pipelines' error grew with their handoffs in every stored hosts sweep of sessions 59-62
// (0.17-1.14 ms a handoff beyond the model; docs/auto_parallel.md, "Session 62").
std::vector<double> PipelineTransferCallSeconds(int64_t pp, double call_seconds);

}  // namespace oneflow::auto_parallel

#endif  // COMPILER_AUTO_PARALLEL_PIPELINE_PERIOD_H_
