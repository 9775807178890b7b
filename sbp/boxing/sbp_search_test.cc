// The search space and the search on hierarchies too large to enumerate every SBP.
#include "sbp/boxing/sbp_search.h"

#include <string>

#include "gtest/gtest.h"

namespace oneflow {
namespace boxing {
namespace {

std::string Candidates(const StateSpace& space) {
  std::string text;
  for (const Sbp& sbp : space.per_axis[0]) text += sbp.ToString() + " ";
  return text;
}

TEST(StateSpaceTest, SmallSpacesHoldEverySbp) {
  absl::StatusOr<StateSpace> space =
      MakeStateSpace(Shape{5, 7}, 2, {*NdSbp::Parse("[P, P]"), *NdSbp::Parse("[B, B]")});
  ASSERT_TRUE(space.ok());
  EXPECT_EQ(Candidates(*space), "B P S(0) S(1) ");
  EXPECT_EQ(space->states.size(), 16u);
  EXPECT_EQ(space->states[1].ToString(), "[B, P]");  // Last axis fastest.
}

TEST(StateSpaceTest, LargeSpacesKeepTheAnchorsSplitsAndTheLongestAxis) {
  // A rank-5 tensor on 5 axes: 7^5 > kMaxFullSearchStates, so each axis keeps B, P, the
  // anchors' S(0) and S(2), and S(4), the longest tensor axis.
  absl::StatusOr<StateSpace> space =
      MakeStateSpace(Shape{2, 3, 4, 5, 6}, 5,
                     {*NdSbp::Parse("[S(0), B, B, B, S(2)]"), *NdSbp::Parse("[B, B, B, B, B]")});
  ASSERT_TRUE(space.ok());
  EXPECT_EQ(Candidates(*space), "B P S(0) S(2) S(4) ");
  EXPECT_EQ(space->states.size(), 5u * 5 * 5 * 5 * 5);
}

TEST(StateSpaceTest, RefusesSpacesBeyondTheLimit) {
  absl::StatusOr<StateSpace> space =
      MakeStateSpace(Shape{5, 7}, 8, {*NdSbp::Parse("[B, B, B, B, B, B, B, S(0)]")});
  EXPECT_EQ(space.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(space.status().message(),
            "boxing search over a 8-axis hierarchy would visit 65536 N-D SBPs (limit 20000); "
            "flatten some axes of the placement hierarchy");
}

TEST(SbpSearchTest, RestrictedSpaceStillFindsAPath) {
  const Placement placement = *Placement::Parse("cpu{0:0-15, 1:0-15}[2, 2, 2, 2, 2]");
  const BoxingContext context{Shape{2, 3, 4, 5, 6}, DType::kF32, LinkModel{1e9, 1e8}, {}};
  const NdSbp src = *NdSbp::Parse("[S(0), P, B, B, S(2)]");
  const NdSbp dst = *NdSbp::Parse("[B, B, S(4), B, B]");
  absl::StatusOr<StateSpace> space = MakeStateSpace(context.logical, 5, {src, dst});
  ASSERT_TRUE(space.ok());
  const SbpSearch search(context, placement, *std::move(space), src,
                         SbpSearch::Direction::kFromAnchor);
  const std::vector<BoxingStep> path = search.Path(search.IndexOf(dst));
  ASSERT_FALSE(path.empty());
  EXPECT_EQ(path.front().src, src);
  EXPECT_EQ(path.back().dst, dst);
}

TEST(PathCostTest, TiesGoToFewerBytesThenStepsThenReductions) {
  EXPECT_TRUE(CheaperThan(PathCost{1.0, 10, 3, 1}, PathCost{2.0, 1, 1, 0}));
  EXPECT_TRUE(CheaperThan(PathCost{1.0, 10, 3, 1}, PathCost{1.0 + 1e-12, 11, 1, 0}));
  EXPECT_TRUE(CheaperThan(PathCost{1.0, 10, 2, 1}, PathCost{1.0, 10, 3, 0}));
  EXPECT_TRUE(CheaperThan(PathCost{1.0, 10, 3, 0}, PathCost{1.0, 10, 3, 1}));
  EXPECT_FALSE(CheaperThan(PathCost{1.0, 10, 3, 1}, PathCost{1.0, 10, 3, 1}));
}

}  // namespace
}  // namespace boxing
}  // namespace oneflow
