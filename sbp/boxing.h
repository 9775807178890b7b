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

// The bytes the busiest device receives when one per-axis step of a plan, `from` -> `to`
// (which differ on hierarchy axis `axis` only) on `placement`, runs dense: what `oneflow
// inspect` compares a compressed step's wire bytes with. INVALID_ARGUMENT naming the step
// when the SBPs do not fit or are not one conversion boxing makes.
absl::StatusOr<int64_t> DenseAxisStepBytes(const Shape& logical, DType dtype, const NdSbp& from, int64_t axis,
                                           const NdSbp& to, const Placement& placement);

}  // namespace oneflow

#endif  // SBP_BOXING_H_
