#include "oneflow_core/comm/reduce.h"

#include <cmath>
#include <limits>
#include <vector>

#include "gtest/gtest.h"

namespace oneflow {
namespace {

std::vector<float> Values(int64_t count, int seed) {
  std::vector<float> values(count);
  for (int64_t i = 0; i < count; ++i)
    values[i] = static_cast<float>((i * 37 + seed * 11) % 101) * 0.37f - 17.0f;
  return values;
}

// 5000 elements cross the 2048-element blocks; sums are compared exactly with a plain
// left-to-right loop.
TEST(ReduceFloatsTest, SumMaxMinInRankOrderAcrossBlocks) {
  const int64_t count = 5000;
  std::vector<std::vector<float>> inputs = {Values(count, 1), Values(count, 2), Values(count, 3)};
  const std::vector<const float*> pointers = {inputs[0].data(), inputs[1].data(), inputs[2].data()};
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin}) {
    std::vector<float> output(count);
    ReduceFloats(op, pointers, output.data(), count);
    for (int64_t i = 0; i < count; ++i) {
      float want = inputs[0][i];
      for (int r = 1; r < 3; ++r) {
        const float x = inputs[r][i];
        want = op == ReduceOp::kSum   ? want + x
               : op == ReduceOp::kMax ? std::max(want, x)
                                      : std::min(want, x);
      }
      ASSERT_EQ(output[i], want) << "op " << static_cast<int>(op) << " element " << i;
    }
  }
}

// The output may be any of the inputs (in-place all-reduce and reduce-scatter).
TEST(ReduceFloatsTest, OutputMayAliasAnyInput) {
  const int64_t count = 4100;
  for (int alias = 0; alias < 3; ++alias) {
    std::vector<std::vector<float>> inputs = {Values(count, 4), Values(count, 5), Values(count, 6)};
    std::vector<float> want(count);
    for (int64_t i = 0; i < count; ++i) want[i] = inputs[0][i] + inputs[1][i] + inputs[2][i];
    const std::vector<const float*> pointers = {inputs[0].data(), inputs[1].data(),
                                                inputs[2].data()};
    ReduceFloats(ReduceOp::kSum, pointers, inputs[alias].data(), count);
    EXPECT_EQ(inputs[alias], want) << "output aliases input " << alias;
  }
}

TEST(ReduceFloatsTest, OneInputCopiesAndZeroCountDoesNothing) {
  std::vector<float> input = Values(10, 7);
  std::vector<float> output(10, -1.0f);
  const std::vector<const float*> pointers = {input.data()};
  ReduceFloats(ReduceOp::kSum, pointers, output.data(), 10);
  EXPECT_EQ(output, input);
  std::vector<float> untouched(3, 9.0f);
  ReduceFloats(ReduceOp::kSum, pointers, untouched.data(), 0);
  EXPECT_EQ(untouched, std::vector<float>(3, 9.0f));
}

TEST(ReduceFloatsTest, MaxAndMinPropagateNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> a = {1.0f, nan};
  const std::vector<float> b = {nan, 2.0f};
  const std::vector<const float*> pointers = {a.data(), b.data()};
  for (ReduceOp op : {ReduceOp::kMax, ReduceOp::kMin}) {
    std::vector<float> output(2);
    ReduceFloats(op, pointers, output.data(), 2);
    EXPECT_TRUE(std::isnan(output[0]));
    EXPECT_TRUE(std::isnan(output[1]));
  }
}

}  // namespace
}  // namespace oneflow
