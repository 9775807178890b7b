#include "oneflow_core/balanced_splitter.h"

#include "gtest/gtest.h"

namespace oneflow {
namespace {

TEST(BalancedSplitTest, FirstPartsAreOneLarger) {
  EXPECT_EQ(*BalancedSplit(10, 4),
            (std::vector<Range>{{0, 3}, {3, 6}, {6, 8}, {8, 10}}));
  EXPECT_EQ(*BalancedSplit(8, 4),
            (std::vector<Range>{{0, 2}, {2, 4}, {4, 6}, {6, 8}}));
}

TEST(BalancedSplitTest, MorePartsThanElementsLeavesTrailingPartsEmpty) {
  EXPECT_EQ(*BalancedSplit(2, 3), (std::vector<Range>{{0, 1}, {1, 2}, {2, 2}}));
  EXPECT_EQ(*BalancedSplit(0, 2), (std::vector<Range>{{0, 0}, {0, 0}}));
}

TEST(BalancedSplitTest, PartsTileTheRangeForManySizes) {
  for (int64_t total = 0; total <= 40; ++total) {
    for (int64_t parts = 1; parts <= 9; ++parts) {
      const std::vector<Range> ranges = *BalancedSplit(total, parts);
      ASSERT_EQ(static_cast<int64_t>(ranges.size()), parts);
      int64_t next = 0;
      for (int64_t i = 0; i < parts; ++i) {
        EXPECT_EQ(ranges[i].begin, next);
        const int64_t size = ranges[i].size();
        EXPECT_TRUE(size == total / parts || size == total / parts + 1);
        if (i > 0) {
          EXPECT_LE(size, ranges[i - 1].size());  // Larger parts first.
        }
        EXPECT_EQ(BalancedPart(total, parts, i), ranges[i]);
        next = ranges[i].end;
      }
      EXPECT_EQ(next, total);
    }
  }
}

TEST(BalancedSplitTest, RejectsBadArguments) {
  EXPECT_EQ(BalancedSplit(10, 0).status().message(),
            "cannot split 10 into 0 parts: parts must be >= 1");
  EXPECT_EQ(BalancedSplit(-3, 2).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace oneflow
