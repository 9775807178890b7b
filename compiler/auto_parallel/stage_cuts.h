// Where a pipeline cuts the model: how many consecutive blocks (stageable units) each of
// pp stages holds. Two answers:
//
//   BalancedStageBlocks   by block count, as ParallelLayout::StageOf cuts without
//                         --stage_blocks (stage s holds blocks [s K / pp, (s + 1) K / pp)).
//   MinimizeSlowestStage  a dynamic program over the cuts (Alpa's and Galvatron's stage
//                         partitioning): the counts whose slowest stage, in seconds per
//                         micro-batch, is the least, among those where every stage's
//                         memory fits the limit.
//
// The program sees each segment's cost on each stage: segment k is stageable unit k with
// the units that go where it goes (the prologue with the first block, the epilogue with the
// last: the embedding always on stage 0, the output layer and loss always on the last), so
// a stage's cost is the sum of its segments'. The cost depends on the stage (its placement
// decides which collectives cross nodes) and so does the memory (1F1B keeps
// min(micro_batches, pp - s) micro-batches' activations on stage s, so the first stages
// hold the most). Why the slowest stage: 1F1B's iteration is (micro_batches + pp - 1) x the
// slowest stage's time per micro-batch (price.h), so the bottleneck is what cuts move.
// The caller (price.h ChooseStageBlocks) prices the program's answer with the whole cost
// model beside the balanced cuts and the search keeps the cheaper.
#ifndef COMPILER_AUTO_PARALLEL_STAGE_CUTS_H_
#define COMPILER_AUTO_PARALLEL_STAGE_CUTS_H_

#include <cstdint>
#include <optional>
#include <vector>

namespace oneflow::auto_parallel {

struct StageCutCosts {
  // seconds[s][k]: segment k's time per micro-batch on one device of stage s.
  std::vector<std::vector<double>> seconds;
  // bytes[s][k]: what segment k adds to the peak of a device of stage s (its parameters,
  // gradients, optimizer state and the activations stage s keeps in flight).
  std::vector<std::vector<double>> bytes;
  // Bytes a device may hold; 0: no limit.
  double memory_limit = 0;
};

// Blocks per stage for `blocks` blocks on `stages` stages (stages <= blocks), balanced by
// count: the first stages take the smaller share ({1, 2, 1, 2} for 6 on 4).
std::vector<int64_t> BalancedStageBlocks(int64_t blocks, int64_t stages);

// The counts (one per stage, each >= 1, summing to the segments) whose slowest stage is
// the least within the memory limit; among equally slow ones (within 1e-9 relative), the
// one with fewer blocks on earlier stages (which keep more micro-batches in flight).
// nullopt when no cut fits the limit (or the costs are malformed: stages above segments,
// rows of unequal length).
std::optional<std::vector<int64_t>> MinimizeSlowestStage(const StageCutCosts& costs);

}  // namespace oneflow::auto_parallel

#endif  // COMPILER_AUTO_PARALLEL_STAGE_CUTS_H_
