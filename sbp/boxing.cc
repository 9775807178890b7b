#include "sbp/boxing.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "oneflow_core/status.h"
#include "oneflow_core/tensor_slice.h"
#include "sbp/boxing/axis_step.h"
#include "sbp/boxing/context.h"
#include "sbp/boxing/sbp_search.h"
#include "sbp/boxing/send_recv.h"

namespace oneflow {

// Friend of BoxingSearchCache: the only code that reads or fills it.
class BoxingSearchCacheAccess {
 public:
  static const boxing::SbpSearch& Get(const boxing::BoxingContext& context, const Placement& placement,
                                      boxing::StateSpace space, const NdSbp& anchor,
                                      boxing::SbpSearch::Direction direction,
                                      BoxingSearchCache* searches) {
    std::string key = absl::StrCat(
        direction == boxing::SbpSearch::Direction::kFromAnchor ? "from " : "to ", anchor.ToString(),
        " on ", placement.ToString(), " ", DTypeName(context.dtype), context.logical.ToString(), " links ",
        absl::StrFormat("%a %a %a %a", context.links.intra_node_bandwidth,
                        context.links.inter_node_bandwidth, context.links.intra_node_latency,
                        context.links.inter_node_latency),
        " options ", BoxingOptionsKey(context.options), " space");
    for (const std::vector<Sbp>& candidates : space.per_axis) {
      absl::StrAppend(&key, " |");
      for (const Sbp& sbp : candidates) absl::StrAppend(&key, " ", sbp.ToString());
    }
    std::unique_ptr<const boxing::SbpSearch>& search = searches->searches_[key];
    if (search == nullptr) {
      search = std::make_unique<const boxing::SbpSearch>(context, placement, std::move(space), anchor,
                                                         direction);
      ++searches->searches_run_;
    }
    return *search;
  }
};

BoxingSearchCache::BoxingSearchCache() = default;
BoxingSearchCache::~BoxingSearchCache() = default;

namespace {

using boxing::BoxingContext;
using boxing::PathCost;
using boxing::SbpSearch;
using boxing::StateSpace;

bool HasPartial(const NdSbp& nd_sbp) {
  for (const Sbp& sbp : nd_sbp.sbps()) {
    if (sbp.is_partial()) return true;
  }
  return false;
}

// P(max) and P(min) box only out of a source, by an all-reduce or a reduce-scatter (or
// unchanged): making one needs an identity element other than zero (local_partial,
// split_to_partial write zeros), so no destination may hold one that the source does not
// hold on the same hierarchy axis. reduce_max's P(max) output reaches B that way.
absl::Status CheckPartialReductions(const NdSbp& src, const NdSbp& dst) {
  for (int64_t axis = 0; axis < dst.size(); ++axis) {
    const Sbp& to = dst.at(axis);
    if (!to.is_partial() || to.reduce_op() == ReduceOp::kSum) continue;
    if (axis < src.size() && src.at(axis) == to) continue;
    return absl::UnimplementedError(absl::StrCat(
        "destination SBP ", dst.ToString(), ": boxing makes partial sums (P) only; ",
        to.ToString(), " can only be reduced (to B or S), not made"));
  }
  return absl::OkStatus();
}

absl::Status CheckRequest(const Shape& logical, DType dtype, const NdSbp& src,
                          const Placement& src_placement, const NdSbp& dst,
                          const Placement& dst_placement, const LinkModel& links,
                          const BoxingOptions& options) {
  for (int64_t dim : logical.dims()) {
    if (dim < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape ", logical.ToString(), " has a negative dimension"));
    }
  }
  OF_RETURN_IF_ERROR(
      WithContext(CheckNdSbpFits(logical, src, src_placement.hierarchy()), "source"));
  OF_RETURN_IF_ERROR(
      WithContext(CheckNdSbpFits(logical, dst, dst_placement.hierarchy()), "destination"));
  OF_RETURN_IF_ERROR(CheckPartialReductions(src, dst));
  OF_RETURN_IF_ERROR(CheckLinkModel(links));
  using Named = std::pair<const char*, const CompressionChoice*>;
  for (const auto& [what, choice] : {Named{"in-node reductions", &options.reduce_in_node},
                                     Named{"cross-node reductions", &options.reduce_cross_node},
                                     Named{"gathers", &options.gather}}) {
    if (!choice->compressed()) continue;
    if (!IsFloating(dtype)) {
      return absl::InvalidArgumentError(absl::StrCat("compression ", CompressionChoiceText(*choice), " (", what,
                                                     ") needs a floating-point tensor, got ", DTypeName(dtype),
                                                     "; integer tensors move dense"));
    }
    OF_RETURN_IF_ERROR(CheckCompressionChoice(*choice));
  }
  return absl::OkStatus();
}

// The search from (kFromAnchor) or to (kToAnchor) `anchor` over `space`: from `searches`
// when an equal one ran before, else run now (and kept there when `searches` is not null).
const SbpSearch& Search(const BoxingContext& context, const Placement& placement, StateSpace space,
                        const NdSbp& anchor, SbpSearch::Direction direction,
                        BoxingSearchCache* searches, std::unique_ptr<const SbpSearch>* owned) {
  if (searches == nullptr) {
    *owned = std::make_unique<const SbpSearch>(context, placement, std::move(space), anchor, direction);
    return **owned;
  }
  return BoxingSearchCacheAccess::Get(context, placement, std::move(space), anchor, direction,
                                      searches);
}

BoxingPlan MakePlan(std::vector<BoxingStep> steps) {
  BoxingPlan plan;
  plan.steps = std::move(steps);
  for (const BoxingStep& step : plan.steps) {
    plan.bytes_per_device += step.bytes_per_device;
    plan.seconds += step.seconds;
  }
  return plan;
}

// Convert on the source placement to a P-free layout, send/recv it to some layout on
// the destination placement, convert there: the cheapest such triple.
absl::StatusOr<BoxingPlan> PlanAcrossPlacements(const BoxingContext& context, const NdSbp& src,
                                                const Placement& src_placement, const NdSbp& dst,
                                                const Placement& dst_placement,
                                                BoxingSearchCache* searches) {
  OF_ASSIGN_OR_RETURN(StateSpace src_space,
                      boxing::MakeStateSpace(context.logical, src.size(), {src, dst}));
  OF_ASSIGN_OR_RETURN(StateSpace dst_space,
                      boxing::MakeStateSpace(context.logical, dst.size(), {src, dst}));
  std::unique_ptr<const SbpSearch> owned_before, owned_after;
  const SbpSearch& before = Search(context, src_placement, std::move(src_space), src,
                                   SbpSearch::Direction::kFromAnchor, searches, &owned_before);
  const SbpSearch& after = Search(context, dst_placement, std::move(dst_space), dst,
                                  SbpSearch::Direction::kToAnchor, searches, &owned_after);
  std::optional<PathCost> best_cost;
  std::vector<BoxingStep> best_steps;
  for (int64_t i = 0; i < static_cast<int64_t>(before.states().size()); ++i) {
    const NdSbp& sent = before.states()[i];
    if (HasPartial(sent)) continue;
    for (int64_t j = 0; j < static_cast<int64_t>(after.states().size()); ++j) {
      const PathCost around = before.cost(i).Plus(after.cost(j));
      if (best_cost.has_value() && !boxing::CheaperThan(around, *best_cost)) continue;
      BoxingStep send_recv =
          boxing::MakeSendRecvStep(context, sent, src_placement, after.states()[j], dst_placement);
      const PathCost total = around.Plus(send_recv);
      if (best_cost.has_value() && !boxing::CheaperThan(total, *best_cost)) continue;
      best_cost = total;
      best_steps = before.Path(i);
      best_steps.push_back(std::move(send_recv));
      for (BoxingStep& step : after.Path(j)) best_steps.push_back(std::move(step));
    }
  }
  return MakePlan(std::move(best_steps));
}

}  // namespace

absl::StatusOr<BoxingPlan> PlanBoxing(const Shape& logical, DType dtype, const NdSbp& src,
                                      const Placement& src_placement, const NdSbp& dst,
                                      const Placement& dst_placement, const LinkModel& links,
                                      const BoxingOptions& options) {
  return PlanBoxing(logical, dtype, src, src_placement, dst, dst_placement, links, options,
                    /*searches=*/nullptr);
}

absl::StatusOr<BoxingPlan> PlanBoxing(const Shape& logical, DType dtype, const NdSbp& src,
                                      const Placement& src_placement, const NdSbp& dst,
                                      const Placement& dst_placement, const LinkModel& links,
                                      const BoxingOptions& options, BoxingSearchCache* searches) {
  const std::string edge = absl::StrCat("boxing ", DTypeName(dtype), " ", logical.ToString(),
                                        " from ", src.ToString(), " on ", src_placement.ToString(),
                                        " to ", dst.ToString(), " on ", dst_placement.ToString());
  OF_RETURN_IF_ERROR(WithContext(
      CheckRequest(logical, dtype, src, src_placement, dst, dst_placement, links, options), edge));
  // A maximum or minimum travels dense: codecs reduce by summing, and a lossy gather after
  // a reduce-scatter of maxima would leave the devices different values of what must be
  // one (the vocab-parallel loss's shift cancels only if every device uses the same).
  BoxingOptions effective = options;
  for (const Sbp& sbp : src.sbps()) {
    if (sbp.is_partial() && sbp.reduce_op() != ReduceOp::kSum) {
      effective.reduce_in_node = effective.reduce_cross_node = effective.gather = CompressionChoice();
    }
  }
  const BoxingContext context{logical, dtype, links, effective};
  if (src_placement != dst_placement) {
    absl::StatusOr<BoxingPlan> plan =
        PlanAcrossPlacements(context, src, src_placement, dst, dst_placement, searches);
    if (!plan.ok()) return WithContext(plan.status(), edge);
    return plan;
  }
  if (src == dst) return BoxingPlan();
  absl::StatusOr<StateSpace> space = boxing::MakeStateSpace(logical, src.size(), {src, dst});
  if (!space.ok()) return WithContext(space.status(), edge);
  std::unique_ptr<const SbpSearch> owned;
  const SbpSearch& search = Search(context, src_placement, *std::move(space), src,
                                   SbpSearch::Direction::kFromAnchor, searches, &owned);
  return MakePlan(search.Path(search.IndexOf(dst)));
}

absl::StatusOr<int64_t> DenseAxisStepBytes(const Shape& logical, DType dtype, const NdSbp& from, int64_t axis,
                                           const NdSbp& to, const Placement& placement) {
  const std::string step = absl::StrCat("step ", from.ToString(), " -> ", to.ToString(), " on hierarchy axis ", axis,
                                        " of ", placement.ToString(), " for ", DTypeName(dtype), " ",
                                        logical.ToString());
  if (axis < 0 || axis >= placement.hierarchy().rank() || from.size() != placement.hierarchy().rank() ||
      to.size() != from.size()) {
    return absl::InvalidArgumentError(absl::StrCat(step, ": the axis or an SBP does not fit the hierarchy ",
                                                   placement.hierarchy().ToString()));
  }
  for (int64_t other = 0; other < from.size(); ++other) {
    if (other != axis && from.at(other) != to.at(other)) {
      return absl::InvalidArgumentError(absl::StrCat(step, ": the SBPs differ on hierarchy axis ", other, " too"));
    }
  }
  OF_RETURN_IF_ERROR(WithContext(CheckNdSbpFits(logical, from, placement.hierarchy()), step));
  OF_RETURN_IF_ERROR(WithContext(CheckNdSbpFits(logical, to, placement.hierarchy()), step));
  // Bytes do not depend on the link speeds; any valid model will do.
  const BoxingContext context{logical, dtype, LinkModel{1, 1}, BoxingOptions()};
  const std::optional<BoxingStep> made = boxing::MakeAxisStep(context, placement, from, axis, to.at(axis));
  if (!made.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(step, ": not a single-axis conversion boxing makes"));
  }
  return made->bytes_per_device;
}

}  // namespace oneflow
