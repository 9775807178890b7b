#include "oneflow_core/comm/collective_arguments.h"

#include <vector>

#include "gtest/gtest.h"

namespace oneflow {
namespace {

TEST(CollectiveArgumentsTest, Counts) {
  const std::vector<int64_t> counts = {3, 0, 2};
  EXPECT_TRUE(CheckCounts("counts", counts, 3).ok());
  EXPECT_EQ(CheckCounts("counts", counts, 4).message(), "counts has 3 entries; the call needs 4");
  const std::vector<int64_t> negative = {3, -1};
  EXPECT_EQ(CheckCounts("byte_counts", negative, 2).message(),
            "byte_counts[1] is -1; counts must be >= 0");
  EXPECT_EQ(SumOf(counts), 5);
  EXPECT_EQ(ExclusiveOffsets(counts), (std::vector<int64_t>{0, 3, 3}));
}

TEST(CollectiveArgumentsTest, BuffersAndRanks) {
  int x = 0;
  EXPECT_TRUE(CheckBuffer("input", nullptr, 0).ok());
  EXPECT_TRUE(CheckBuffer("input", &x, 4).ok());
  EXPECT_EQ(CheckBuffer("input", nullptr, 4).message(), "input is null but its size is 4");
  EXPECT_EQ(CheckBuffer("input", &x, -2).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(CheckRankInGroup("root", 2, 3).ok());
  EXPECT_EQ(CheckRankInGroup("root", 3, 3).message(), "root 3 is outside the group of 3 ranks");
  EXPECT_EQ(RanksText({3}), "rank 3");
  EXPECT_EQ(RanksText({1, 3}), "ranks 1, 3");
}

}  // namespace
}  // namespace oneflow
