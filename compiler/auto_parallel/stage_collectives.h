// The collectives of one candidate layout, priced on the placements its stages get: pp
// stages of dp x tp consecutive devices, tp innermost (as ParallelLayout builds them).
// Each collective is priced as the runtime runs it: dense by the link model
// (sbp/collective_cost.h), or with --compression as the boxing planner plans the edge
// under the policy's codecs for the tensor's role (sbp/boxing.h PlanBoxing), memoized in
// an EdgePriceCache shared by the search's layouts. price.cc decides which collectives an
// iteration runs and which of them backward hides; this file prices each one.
#ifndef COMPILER_AUTO_PARALLEL_STAGE_COLLECTIVES_H_
#define COMPILER_AUTO_PARALLEL_STAGE_COLLECTIVES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compiler/auto_parallel/edge_price_cache.h"
#include "compiler/auto_parallel/price.h"
#include "compiler/compiler.h"
#include "oneflow_core/placement.h"
#include "proto/plan.pb.h"
#include "sbp/boxing.h"
#include "sbp/collective_cost.h"
#include "sbp/compression_policy.h"

namespace oneflow::auto_parallel {

class StageCollectives {
 public:
  // `options` and `layout` must outlive this; `cache` may be null.
  StageCollectives(const PriceOptions& options, const proto::AutoParallelLayout& layout, EdgePriceCache* cache);

  // The stages' placements; call once before any price. INVALID_ARGUMENT when the cluster
  // cannot hold them.
  absl::Status BuildStages();

  const LinkModel& links() const { return links_; }

  // The hierarchy axis of dp / tp in the stage placements (-1 when the degree is 1).
  int64_t DpAxis() const { return layout_.dp() > 1 ? 0 : -1; }
  int64_t TpAxis() const { return layout_.tp() > 1 ? (layout_.dp() > 1 ? 1 : 0) : -1; }

  // Whether stage `stage`'s data-parallel groups span nodes.
  bool DpCrossesNodes(int64_t stage) const;
  // Whether stage `stage`'s tensor-parallel groups span nodes.
  bool TpCrossesNodes(int64_t stage) const;
  // Whether device i of stage a and device i of stage b are on different nodes for some i.
  bool StagesCrossNodes(int64_t a, int64_t b) const;
  // Whether the cut before stage `stage` (>= 1) crosses nodes.
  bool CutCrossesNodes(int64_t stage) const;

  // Dense: an all-reduce over `axis` of stage `stage` (`members` ranks, `group_bytes` in
  // all) in `calls` calls; a reduce-scatter or all-gather over the dp axis.
  double AllReduceSeconds(int64_t stage, int64_t axis, int64_t members, double group_bytes, int64_t calls = 1) const;
  double HalfSeconds(int64_t stage, BoxingKind kind, double group_bytes, int64_t calls) const;

  // A tensor-parallel collective of `kind` of a tensor with `role`, `group_bytes` per
  // member (TpAllReduceSeconds: an activation's all-reduce), dense or as planned; recorded
  // as an edge of `unit`'s `tensor` when options.record_edges.
  absl::StatusOr<double> TpAllReduceSeconds(int64_t stage, double group_bytes, const std::string& unit,
                                            const std::string& tensor);
  absl::StatusOr<double> TpCollectiveSeconds(int64_t stage, BoxingKind kind, TensorRole role, double group_bytes,
                                             const std::string& unit, const std::string& tensor);

  // A data-parallel collective of stage `stage`'s `tensors` variables (`bytes` on one
  // device), `repeats` times an iteration in `calls` calls each, `dense` its dense price:
  // with --compression, as planned for a variable of the mean size (details in the .cc);
  // recorded per iteration when options.record_edges.
  absl::StatusOr<double> DataParallelCollective(int64_t stage, BoxingKind kind, double bytes, int64_t tensors,
                                                int64_t calls, int64_t repeats, double dense);

  // The edges recorded so far, in pricing order (moved out).
  std::vector<proto::AutoParallelEdge> TakeEdges();

 private:
  double Calls(const CollectiveCost& cost, int64_t calls) const;
  absl::StatusOr<PricedEdge> PlanTpCollective(const Placement& placement, BoxingKind kind, TensorRole role,
                                              int64_t elements) const;
  absl::StatusOr<PricedEdge> PlanDataParallel(const Placement& placement, BoxingKind kind, int64_t elements) const;

  const PriceOptions& options_;
  const proto::AutoParallelLayout& layout_;
  const LinkModel links_;
  EdgePriceCache* cache_;  // may be null
  std::vector<Placement> stage_placements_;
  std::vector<proto::AutoParallelEdge> edges_;
};

}  // namespace oneflow::auto_parallel

#endif  // COMPILER_AUTO_PARALLEL_STAGE_COLLECTIVES_H_
