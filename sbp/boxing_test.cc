// Every (source, destination) pair of N-D SBPs, planned and then executed on real data:
// the plan must be a consistent chain and the simulated result exact.
//
// The tensor is [5, 7], so every split is uneven on every hierarchy here, and 2-D
// hierarchies contain the orders that are invalid axis by axis ([S(0), S(0)] -> [B, S(0)],
// [S(0), S(1)] -> [S(1), S(0)]). The per-pair expectations are the properties every plan
// has; boxing_cost_test.cc pins down particular plans.
#include "sbp/boxing.h"

#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "oneflow_core/placement.h"
#include "oneflow_core/sbp.h"
#include "sbp/boxing_simulator.h"

namespace oneflow {
namespace {

const Shape kLogical{5, 7};
constexpr float kTolerance = 1e-4f;

// Slow links between nodes, so node-crossing and intra-node choices differ.
const LinkModel kLinks{/*intra_node_bandwidth=*/1e9, /*inter_node_bandwidth=*/1e8};

// Every N-D SBP over `hierarchy_rank` axes built from {B, P, S(0), ..., S(rank-1)}.
std::vector<NdSbp> AllNdSbps(int64_t tensor_rank, int64_t hierarchy_rank) {
  std::vector<Sbp> one_axis = {Sbp::Broadcast(), Sbp::Partial()};
  for (int64_t axis = 0; axis < tensor_rank; ++axis) one_axis.push_back(Sbp::Split(axis));
  std::vector<std::vector<Sbp>> prefixes = {{}};
  for (int64_t axis = 0; axis < hierarchy_rank; ++axis) {
    std::vector<std::vector<Sbp>> longer;
    for (const std::vector<Sbp>& prefix : prefixes) {
      for (const Sbp& sbp : one_axis) {
        longer.push_back(prefix);
        longer.back().push_back(sbp);
      }
    }
    prefixes = std::move(longer);
  }
  std::vector<NdSbp> all;
  for (std::vector<Sbp>& sbps : prefixes) all.push_back(NdSbp(std::move(sbps)));
  return all;
}

std::vector<float> LogicalValues(const Shape& logical) {
  std::vector<float> values(logical.NumElements());
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 11) * 0.5f - 2.0f;
  return values;
}

// Plans src -> dst, checks the plan's invariants and runs it in the simulator.
void ExpectExactPlan(const NdSbp& src, const Placement& src_placement, const NdSbp& dst,
                     const Placement& dst_placement, const Shape& logical = kLogical,
                     const BoxingOptions& options = BoxingOptions()) {
  SCOPED_TRACE(src.ToString() + " on " + src_placement.ToString() + " -> " + dst.ToString() +
               " on " + dst_placement.ToString());
  absl::StatusOr<BoxingPlan> plan =
      PlanBoxing(logical, DType::kF32, src, src_placement, dst, dst_placement, kLinks, options);
  ASSERT_TRUE(plan.ok()) << plan.status();

  const bool same_placement = src_placement == dst_placement;
  if (same_placement && src == dst) {
    EXPECT_TRUE(plan->steps.empty());
  }
  int64_t send_recv_steps = 0;
  int64_t bytes = 0;
  double seconds = 0;
  NdSbp current = src;
  for (const BoxingStep& step : plan->steps) {
    EXPECT_EQ(step.src, current) << BoxingPlanToString(*plan);
    current = step.dst;
    EXPECT_GE(step.bytes_per_device, 0);
    EXPECT_FALSE(step.reason.empty());
    if (step.kind == BoxingKind::kSendRecv) ++send_recv_steps;
    bytes += step.bytes_per_device;
    seconds += step.seconds;
  }
  EXPECT_EQ(current, dst);
  EXPECT_EQ(send_recv_steps, same_placement ? 0 : 1);
  EXPECT_EQ(plan->bytes_per_device, bytes);
  EXPECT_DOUBLE_EQ(plan->seconds, seconds);

  const std::vector<float> values = LogicalValues(logical);
  absl::StatusOr<SimulatedTensor> result =
      SimulatePlan(logical, values, src, src_placement, *plan, dst_placement, /*seed=*/11);
  ASSERT_TRUE(result.ok()) << result.status() << "\nplan:\n" << BoxingPlanToString(*plan);
  const absl::Status exact = CheckHoldsLogical(logical, values, *result, dst_placement, kTolerance);
  EXPECT_TRUE(exact.ok()) << exact << "\nplan:\n" << BoxingPlanToString(*plan);
}

class SamePlacementTest : public testing::TestWithParam<std::string> {};

TEST_P(SamePlacementTest, EveryPairPlansAndSimulatesExactly) {
  const Placement placement = *Placement::Parse(GetParam());
  const std::vector<NdSbp> all = AllNdSbps(kLogical.rank(), placement.hierarchy().rank());
  for (const NdSbp& src : all) {
    for (const NdSbp& dst : all) ExpectExactPlan(src, placement, dst, placement);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Placements, SamePlacementTest,
    testing::Values("cpu{0:0}", "cpu{0:0-1}", "cpu{0:0-2}", "cpu{0:0-3}", "cpu{0:0-4}",
                    "cpu{0:0-1, 1:0-2}",  // 1-D across two nodes
                    "cpu{0:0-1, 1:0-1}[2, 2]", "cpu{0:0-2, 1:0-2}[2, 3]",
                    "cpu{0:0-2, 1:0-2}[3, 2]",     // inner axis crosses nodes
                    "cpu{0:0-1, 1:0-1}[2, 1, 2]",  // a one-device axis in the middle
                    "cpu{0:0-3, 1:0-3}[2, 2, 2]"));

struct PlacementPair {
  std::string src;
  std::string dst;
};

class AcrossPlacementsTest : public testing::TestWithParam<PlacementPair> {};

TEST_P(AcrossPlacementsTest, EveryPairPlansAndSimulatesExactly) {
  const Placement src_placement = *Placement::Parse(GetParam().src);
  const Placement dst_placement = *Placement::Parse(GetParam().dst);
  for (const NdSbp& src : AllNdSbps(kLogical.rank(), src_placement.hierarchy().rank())) {
    for (const NdSbp& dst : AllNdSbps(kLogical.rank(), dst_placement.hierarchy().rank())) {
      ExpectExactPlan(src, src_placement, dst, dst_placement);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Placements, AcrossPlacementsTest,
    testing::Values(PlacementPair{"cpu{0:0-1}", "cpu{0:2-4}"},  // disjoint, one node
                    PlacementPair{"cpu{0:0-3}", "cpu{1:0-3}"},  // across nodes
                    PlacementPair{"cpu{0:0}", "cpu{0:0-3}"},    // overlapping
                    PlacementPair{"cpu{0:0-3}", "cpu{0:0-1, 1:0-1}[2, 2]"},
                    PlacementPair{"cpu{0:0-1, 1:0-1}[2, 2]", "cpu{0:0-1, 1:0-1}"},  // re-shape
                    PlacementPair{"cpu{0:0-2, 1:0-2}[2, 3]", "cuda{0:0-1, 1:0-1}[2, 2]"},
                    PlacementPair{"cuda{0:0-3}", "cpu{0:0-3}"}));  // same ids, other type

// Other tensor ranks: a vector, a rank-3 tensor, a tensor with fewer rows and columns
// than devices on the split axes (empty parts), and a scalar.
TEST(OtherShapesTest, EveryPairPlansAndSimulatesExactly) {
  const Placement grid = *Placement::Parse("cpu{0:0-2, 1:0-2}[2, 3]");
  for (const Shape& logical : {Shape{7}, Shape{3, 4, 5}, Shape{1, 2}, Shape{}}) {
    const std::vector<NdSbp> all = AllNdSbps(logical.rank(), grid.hierarchy().rank());
    for (const NdSbp& src : all) {
      for (const NdSbp& dst : all) ExpectExactPlan(src, grid, dst, grid, logical);
    }
  }
}

// Compression changes costs, so it may change the chosen route; the route must stay
// valid (the simulator moves dense data: compression is a cost model here).
TEST(CompressedPlansTest, EveryPairStaysValid) {
  const Placement grid = *Placement::Parse("cpu{0:0-2, 1:0-2}[2, 3]");
  BoxingOptions options = BoxingOptions::Everywhere({CompressionKind::kInt4, 4, false});
  options.compress_intra_node = false;
  const std::vector<NdSbp> all = AllNdSbps(kLogical.rank(), 2);
  for (const NdSbp& src : all) {
    for (const NdSbp& dst : all) ExpectExactPlan(src, grid, dst, grid, kLogical, options);
  }
}

// The shared searches (BoxingSearchCache) give PlanBoxing's plans, step for step, on one
// placement and across two, and run one search per source (one more per destination
// across placements): the compiler's SBP choice asks for many destinations per source.
TEST(BoxingSearchCacheTest, SharedSearchesGiveTheSamePlans) {
  for (const auto& [src_text, dst_text] :
       {std::pair<std::string, std::string>{"cpu{0:0-2, 1:0-2}[2, 3]", "cpu{0:0-2, 1:0-2}[2, 3]"},
        std::pair<std::string, std::string>{"cpu{0:0-1, 1:0-1}[2, 2]", "cpu{0:0-3}"}}) {
    const Placement src_placement = *Placement::Parse(src_text);
    const Placement dst_placement = *Placement::Parse(dst_text);
    const std::vector<NdSbp> sources = AllNdSbps(kLogical.rank(), src_placement.hierarchy().rank());
    const std::vector<NdSbp> targets = AllNdSbps(kLogical.rank(), dst_placement.hierarchy().rank());
    BoxingSearchCache searches;
    for (const NdSbp& src : sources) {
      for (const NdSbp& dst : targets) {
        const absl::StatusOr<BoxingPlan> alone =
            PlanBoxing(kLogical, DType::kF32, src, src_placement, dst, dst_placement, kLinks);
        const absl::StatusOr<BoxingPlan> shared = PlanBoxing(
            kLogical, DType::kF32, src, src_placement, dst, dst_placement, kLinks, BoxingOptions(), &searches);
        ASSERT_TRUE(alone.ok() && shared.ok()) << alone.status() << shared.status();
        EXPECT_EQ(BoxingPlanToString(*shared), BoxingPlanToString(*alone))
            << src.ToString() << " -> " << dst.ToString() << " on " << src_text;
      }
    }
    const bool same = src_placement == dst_placement;
    // On one placement src == dst needs no search: every source's search still runs for
    // its other targets. Across placements one search from each source, one to each target.
    const int64_t expected = same ? static_cast<int64_t>(sources.size())
                                  : static_cast<int64_t>(sources.size() + targets.size());
    EXPECT_EQ(searches.searches_run(), expected) << src_text << " -> " << dst_text;
  }
}

}  // namespace
}  // namespace oneflow
