// The per-axis conversions: which pairs each handles, and their wire elements on uneven
// splits, computed by hand (largest balanced part, n-1 rounds).
#include <vector>

#include "gtest/gtest.h"
#include "sbp/boxing/all_gather.h"
#include "sbp/boxing/all_reduce.h"
#include "sbp/boxing/all_to_all.h"
#include "sbp/boxing/axis_step.h"
#include "sbp/boxing/conversion_list.h"
#include "sbp/boxing/local_partial.h"
#include "sbp/boxing/local_slice.h"
#include "sbp/boxing/reduce_scatter.h"
#include "sbp/boxing/split_to_partial.h"

namespace oneflow {
namespace boxing {
namespace {

std::vector<Sbp> OneAxisSbps(int64_t tensor_rank) {
  std::vector<Sbp> sbps = {Sbp::Broadcast(), Sbp::Partial()};
  for (int64_t axis = 0; axis < tensor_rank; ++axis) sbps.push_back(Sbp::Split(axis));
  return sbps;
}

TEST(ConversionListTest, EveryDistinctPairHasExactlyOneConversion) {
  for (const Sbp& src : OneAxisSbps(3)) {
    for (const Sbp& dst : OneAxisSbps(3)) {
      int handlers = 0;
      for (const AxisConversion* conversion : AxisConversions()) {
        if (conversion->CanHandle(src, dst)) ++handlers;
      }
      EXPECT_EQ(handlers, src == dst ? 0 : 1) << src.ToString() << " -> " << dst.ToString();
    }
  }
}

TEST(ConversionListTest, KindsOfTheCanonicalPairs) {
  auto kind_of = [](const char* src, const char* dst) {
    const AxisConversion* conversion = FindAxisConversion(*Sbp::Parse(src), *Sbp::Parse(dst));
    return conversion == nullptr ? "none" : BoxingKindName(conversion->kind());
  };
  EXPECT_EQ(kind_of("P", "B"), "all_reduce");
  EXPECT_EQ(kind_of("P", "S(1)"), "reduce_scatter");
  EXPECT_EQ(kind_of("S(0)", "B"), "all_gather");
  EXPECT_EQ(kind_of("S(0)", "S(1)"), "all_to_all");
  EXPECT_EQ(kind_of("B", "S(0)"), "local_slice");
  EXPECT_EQ(kind_of("B", "P"), "local_partial");
  EXPECT_EQ(kind_of("S(1)", "P"), "split_to_partial");
  EXPECT_EQ(kind_of("S(1)", "S(1)"), "none");
}

// A [5, 7] group tensor over 3 devices: rows split 2, 2, 1; columns 3, 2, 2.
TEST(ConversionTest, WireElementsOnUnevenSplits) {
  const AxisGroup group{Shape{5, 7}, 3};
  const Sbp rows = Sbp::Split(0);
  const Sbp columns = Sbp::Split(1);
  // 35 elements in chunks of ceil(35/3) = 12, 2(n-1) = 4 rounds.
  EXPECT_EQ(AllReduce().WireElements(group, Sbp::Partial(), Sbp::Broadcast()), 48);
  // 2 rounds of the largest row block, 2 x 7.
  EXPECT_EQ(ReduceScatter().WireElements(group, Sbp::Partial(), rows), 28);
  // 2 rounds of the largest column block, 5 x 3.
  EXPECT_EQ(AllGather().WireElements(group, columns, Sbp::Broadcast()), 30);
  // 2 rounds of a 2 x 3 block.
  EXPECT_EQ(AllToAll().WireElements(group, rows, columns), 12);
  EXPECT_EQ(LocalSlice().WireElements(group, Sbp::Broadcast(), rows), 0);
  EXPECT_EQ(LocalPartial().WireElements(group, Sbp::Broadcast(), Sbp::Partial()), 0);
  EXPECT_EQ(SplitToPartial().WireElements(group, rows, Sbp::Partial()), 0);
}

TEST(ConversionTest, EvenSplitsGiveTheTextbookFormulas) {
  // T = 8 x 8 = 64 elements over n = 4.
  const AxisGroup group{Shape{8, 8}, 4};
  EXPECT_EQ(AllReduce().WireElements(group, Sbp::Partial(), Sbp::Broadcast()), 2 * 3 * 64 / 4);
  EXPECT_EQ(ReduceScatter().WireElements(group, Sbp::Partial(), Sbp::Split(1)), 3 * 64 / 4);
  EXPECT_EQ(AllGather().WireElements(group, Sbp::Split(0), Sbp::Broadcast()), 3 * 64 / 4);
  EXPECT_EQ(AllToAll().WireElements(group, Sbp::Split(0), Sbp::Split(1)), 3 * 64 / 16);
}

TEST(ConversionTest, MoreDevicesThanRowsLeavesEmptyParts) {
  // 2 rows over 4 devices: parts 1, 1, 0, 0; the largest is one row of 3.
  const AxisGroup group{Shape{2, 3}, 4};
  EXPECT_EQ(AllGather().WireElements(group, Sbp::Split(0), Sbp::Broadcast()), 3 * 3);
  EXPECT_EQ(AllReduce().WireElements(group, Sbp::Partial(), Sbp::Broadcast()), 2 * 3 * 2);
}

TEST(AxisStepTest, InnerSplitOfTheSameTensorAxisBlocksTheOuterAxis) {
  const Shape grid{2, 2};
  const NdSbp nested = *NdSbp::Parse("[S(0), S(0)]");
  EXPECT_FALSE(IsAxisStepValid(nested, 0, Sbp::Broadcast(), grid));  // was S(0)
  EXPECT_TRUE(IsAxisStepValid(nested, 1, Sbp::Broadcast(), grid));   // innermost: always
  const NdSbp crossed = *NdSbp::Parse("[S(0), S(1)]");
  EXPECT_TRUE(IsAxisStepValid(crossed, 0, Sbp::Broadcast(), grid));
  EXPECT_FALSE(IsAxisStepValid(crossed, 0, Sbp::Split(1), grid));  // becomes S(1)
  EXPECT_TRUE(IsAxisStepValid(*NdSbp::Parse("[P, S(0)]"), 0, Sbp::Split(1), grid));
  EXPECT_FALSE(IsAxisStepValid(*NdSbp::Parse("[P, S(0)]"), 0, Sbp::Split(0), grid));
  // A one-device inner axis splits nothing.
  EXPECT_TRUE(IsAxisStepValid(nested, 0, Sbp::Broadcast(), Shape{2, 1}));
}

TEST(AxisStepTest, GroupTensorIsTheLargestGroupsSubTensor) {
  // [S(0), S(1)] on [2, 3] over [5, 7]: groups of axis 1 hold rows [0, 3) (3 x 7);
  // groups of axis 0 hold columns [0, 3) (5 x 3).
  const NdSbp nd_sbp = *NdSbp::Parse("[S(0), S(1)]");
  EXPECT_EQ(GroupTensorShape(Shape{5, 7}, nd_sbp, 1, Shape{2, 3}), (Shape{3, 7}));
  EXPECT_EQ(GroupTensorShape(Shape{5, 7}, nd_sbp, 0, Shape{2, 3}), (Shape{5, 3}));
}

}  // namespace
}  // namespace boxing
}  // namespace oneflow
