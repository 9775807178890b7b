// The auto-parallel search: every layout of EnumerateLayouts priced by PriceLayout (a
// pipeline both with balanced cuts and with the cuts the DP over stage boundaries chose,
// stage_cuts.h), those whose predicted peak exceeds the device memory dropped, the rest
// ranked by predicted iteration time (exact ties: the simpler layout, candidate.h; the
// balanced cuts before chosen ones). Deterministic: the same profile and options give the
// same ranking.
//
// It prices, it does not compile: the caller compiles the cheapest layout the model
// accepts (examples/common/auto_parallel_driver.h), checks memory planning's real peak
// against the limit, and falls back to the next on refusal, recording why.
#ifndef COMPILER_AUTO_PARALLEL_SEARCH_H_
#define COMPILER_AUTO_PARALLEL_SEARCH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/auto_parallel/model_profile.h"
#include "compiler/auto_parallel/price.h"
#include "proto/plan.pb.h"

namespace oneflow::auto_parallel {

struct SearchOptions {
  PriceOptions price;
  // Bytes one device may hold (--device_memory); 0: no limit.
  int64_t device_memory = 0;
  int64_t max_micro_batches = 64;
  // Most pipeline stages a layout may have; 0: as many as the model has blocks or layers.
  // A model written without a stage map (a graph text: every op on the default placement)
  // takes 1.
  int64_t max_pipeline_stages = 0;
  // Price each distinct tensor-parallel edge once for all layouts (edge_price_cache.h):
  // with --compression other than off, the boxing planner's price of an edge is reused by
  // every layout that boxes the same tensor on the same group. The ranking is the same
  // either way; false is the reference of bench/auto_parallel:search_bench.
  bool cache_edge_prices = true;
  // For each layout with pp > 1, also the pipeline cuts of ChooseStageBlocks (price.h: the
  // DP over the cuts, within device_memory) when they differ from the balanced ones, priced
  // as a layout of their own (AutoParallelLayout.stage_blocks). false: balanced cuts only.
  bool search_stage_cuts = true;
  // Predictions within this fraction of the cheapest are ones the model cannot tell apart:
  // of those, the simplest layout (candidate.h SimplerFamily: fewer pipeline stages, then
  // less tp, fewer micro-batches, lower ZeRO stage, less recomputation; the cheaper of two
  // that differ only in their pipeline cuts) goes first. The
  // model's median |error| is 8-9% on emulated hosts (docs/auto_parallel.md), and where its
  // errors lean they lean on the complex side (pipelines priced 5-9% short on 3 hosts):
  // both 3 x 1 sweeps (sessions 54, 55) chose pp = 3 with 6 micro-batches, predicted 1.3%
  // and 0.8% under dp = 3, measured 1.24-1.27 x slower. 3%: the noise the distributed
  // bench allows (issue 24). 0: the cheapest prediction wins, ties by simplicity.
  double near_tie_fraction = 0.03;
};

struct SearchResult {
  // Layouts within the memory limit, cheapest first, but for the near tie
  // (SearchOptions::near_tie_fraction): the simplest of the layouts within it of the
  // cheapest first, the rest in order.
  std::vector<proto::AutoParallelPrediction> fitting;
  // Layouts over it, cheapest first.
  std::vector<proto::AutoParallelPrediction> over_memory;
  int64_t candidates = 0;
  // Tensor-parallel edges the boxing planner planned, and the prices reused from the
  // cache (both 0 without compression, whose edges are priced by formula).
  int64_t edges_planned = 0;
  int64_t edges_reused = 0;
  // Layouts priced with chosen pipeline cuts besides their balanced twin.
  int64_t cut_layouts = 0;
  // SearchOptions::near_tie_fraction as searched (the decision record's reasons say it).
  double near_tie_fraction = 0;
};

// INVALID_ARGUMENT when the cluster has no device or no layout suits the model (naming
// the batch and the devices); RESOURCE_EXHAUSTED when every layout is over
// --device_memory, naming the smallest predicted peak and its layout:
//   --device_memory=1.00 MiB (1048576 B) is below every layout's predicted peak; the
//   smallest is 1.52 MiB (1593344 B), with --dp=1 --tp=4 --pp=1 ...
absl::StatusOr<SearchResult> Search(const ModelProfile& profile, const SearchOptions& options);

// Why `alternative` lost to `chosen`, prefixed by what differs:
//   "tp=4: +38% step: exposed communication +1.20 ms"
//   "pp=2 micro_batches=2: peak 1.90 GiB > --device_memory=1.00 GiB"
//   "pp=3 micro_batches=6: -0.8% step, within the 3% the model cannot tell apart: the simpler layout wins"
std::string WhyLost(const proto::AutoParallelPrediction& alternative, const proto::AutoParallelPrediction& chosen,
                    int64_t device_memory, double near_tie_fraction = 0);

// The decision record of choosing result.fitting[chosen]: the chosen prediction, up to
// `alternatives` of the next fitting layouts and of the cheapest over-memory layouts that
// would have won (as fast or faster), each with WhyLost, and `refused` as given.
proto::AutoParallelDecision DecisionRecord(const SearchResult& result, size_t chosen, int64_t device_memory,
                                           int alternatives,
                                           const std::vector<proto::AutoParallelPrediction>& refused);

// One priced edge as a line: "block0 block0/attn/out (forward all-reduce): fp8e4m3 G=128
// hadamard 0.0123 ms, dense 0.0456 ms: <the planner's comparison>" (the codec "dense" when none).
std::string EdgeText(const proto::AutoParallelEdge& edge);

// "1.90 GiB (2040109465 B)", binary units.
std::string BytesText(int64_t bytes);

}  // namespace oneflow::auto_parallel

#endif  // COMPILER_AUTO_PARALLEL_SEARCH_H_
