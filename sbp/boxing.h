// Boxing: the data movement the graph compiler inserts on an edge whose producer's SBP or
// placement differs from what its consumer needs.
//
//   P -> B      all-reduce        S(i) -> B     all-gather      B -> S(i)   local slice
//   P -> S(i)   reduce-scatter    S(i) -> S(j)  all-to-all      B -> P      local partial
//   S(i) -> P   split to partial  other placement: send/recv (+ conversions around it)
//
// PlanBoxing is the single entry point. On one placement it searches the cheapest
// sequence of per-hierarchy-axis conversions (sbp/boxing/sbp_search.h); between two
// placements it picks the cheapest "convert on the source, send/recv, convert on the
// destination". Costs come from LinkModel, so slow inter-node links steer traffic into
// nodes. The formulas and a worked example are in docs/sbp_and_boxing.md.
//
//   LinkModel links{/*intra_node_bandwidth=*/100e9, /*inter_node_bandwidth=*/10e9};
//   OF_ASSIGN_OR_RETURN(BoxingPlan plan,
//                       PlanBoxing(Shape{1024, 1024}, DType::kF32, *NdSbp::Parse("P"),
//                                  placement, *NdSbp::Parse("B"), placement, links));
//   // plan.steps: one all_reduce; BoxingPlanToString(plan) prints it.
#ifndef SBP_BOXING_H_
#define SBP_BOXING_H_

#include <memory>
#include <string>

#include "absl/container/node_hash_map.h"
#include "absl/status/statusor.h"
#include "oneflow_core/dtype.h"
#include "oneflow_core/placement.h"
#include "oneflow_core/sbp.h"
#include "oneflow_core/shape.h"
#include "sbp/boxing_options.h"
#include "sbp/boxing_plan.h"
#include "sbp/link_model.h"

namespace oneflow {

// Plans the conversion of a tensor of shape `logical` and element type `dtype` from
// `src` on `src_placement` to `dst` on `dst_placement`.
//
// Same placement and SBP: an empty plan. Otherwise the cheapest plan under `links`, with
// ties broken by fewer bytes, then fewer steps, then a fixed order (the same input
// always gives the same plan). Errors name the edge ("boxing f32 [5, 7] from S(2) on
// cpu{0:0-3} to B on cpu{0:0-3}: ...") and then what is wrong:
//   INVALID_ARGUMENT  an SBP that does not fit the shape or the hierarchy (the message
//                     of CheckNdSbpFits, which lists the valid split axes), a negative
//                     dimension, a bad link model, compression of a non-floating dtype
//                     or a codec configuration CheckCompressionChoice refuses;
//   UNIMPLEMENTED     P(max) / P(min) (only partial sums box today), a hierarchy too
//                     large to search.
absl::StatusOr<BoxingPlan> PlanBoxing(const Shape& logical, DType dtype, const NdSbp& src,
                                      const Placement& src_placement, const NdSbp& dst,
                                      const Placement& dst_placement, const LinkModel& links,
                                      const BoxingOptions& options = BoxingOptions());

namespace boxing {
class SbpSearch;
}  // namespace boxing

// The searches of earlier PlanBoxing calls, for the calls that follow. One search from a
// source SBP finds the cheapest path to every state of its space, and the SBP choice
// asks, per input, for the paths from the producer's SBP to each of the consumer's
// candidate signatures: on a 3-axis hierarchy (dp x tp x cp) a few hundred states and
// dozens of candidates per op, one search each before this cache (~40 s for a small
// llama). A search is reused only for the same tensor shape, dtype, anchor, direction,
// placement, options, links and state space, so the plans are the ones PlanBoxing
// computes alone. Precondition: every BoxingOptions given with one cache carries the same
// codec throughput table (one compilation's; BoxingOptionsKey, part of the key, leaves it
// out). Not thread-safe.
class BoxingSearchCache {
 public:
  BoxingSearchCache();
  ~BoxingSearchCache();
  BoxingSearchCache(const BoxingSearchCache&) = delete;
  BoxingSearchCache& operator=(const BoxingSearchCache&) = delete;

  // The number of searches run (not served from the cache) so far.
  int64_t searches_run() const { return searches_run_; }

 private:
  friend class BoxingSearchCacheAccess;
  absl::node_hash_map<std::string, std::unique_ptr<const boxing::SbpSearch>> searches_;
  int64_t searches_run_ = 0;
};

// PlanBoxing with its searches taken from, and added to, `searches` (not null): the same
// plan and errors as PlanBoxing.
absl::StatusOr<BoxingPlan> PlanBoxing(const Shape& logical, DType dtype, const NdSbp& src,
                                      const Placement& src_placement, const NdSbp& dst,
                                      const Placement& dst_placement, const LinkModel& links,
                                      const BoxingOptions& options, BoxingSearchCache* searches);

// The bytes the busiest device receives when one per-axis step of a plan, `from` -> `to`
// (which differ on hierarchy axis `axis` only) on `placement`, runs dense: what `oneflow
// inspect` compares a compressed step's wire bytes with. INVALID_ARGUMENT naming the step
// when the SBPs do not fit or are not one conversion boxing makes.
absl::StatusOr<int64_t> DenseAxisStepBytes(const Shape& logical, DType dtype, const NdSbp& from, int64_t axis,
                                           const NdSbp& to, const Placement& placement);

}  // namespace oneflow

#endif  // SBP_BOXING_H_
