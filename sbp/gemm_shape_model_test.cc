// The GEMM shape model: its seconds by the formula, and the fit recovering the figures
// timings were made from (with and without a term), deterministic and never negative.
#include "sbp/gemm_shape_model.h"

#include <vector>

#include "gtest/gtest.h"

namespace oneflow {
namespace {

std::vector<GemmTiming> TimingsOf(const GemmShapeModel& model, double noise = 0) {
  std::vector<GemmTiming> timings;
  int index = 0;
  for (const GemmShape& shape : kGemmCalibrationShapes) {
    // Alternating +-noise: a deterministic wobble the fit must average out.
    const double wobble = index++ % 2 == 0 ? 1 + noise : 1 - noise;
    timings.push_back({shape, model.Seconds(shape) * wobble});
  }
  return timings;
}

TEST(GemmShapeModelTest, SecondsAreTheFlopsTheBytesAndTheCall) {
  GemmShapeModel model;
  model.flops_per_second = 1e11;
  model.operand_bytes_per_second = 1e10;
  model.call_seconds = 2e-6;
  const GemmShape shape{4, 64, 32, 16};
  // 2 x 4 x 64 x 32 x 16 = 262144 FLOPs; 4 x 4 x (64 x 16 + 16 x 32 + 64 x 32) = 57344 bytes.
  EXPECT_DOUBLE_EQ(shape.Flops(), 262144);
  EXPECT_DOUBLE_EQ(shape.OperandBytes(), 57344);
  EXPECT_NEAR(model.Seconds(shape), 262144 / 1e11 + 57344 / 1e10 + 2e-6, 1e-15);
  // A thin product costs more per FLOP than a square one of as many FLOPs.
  const GemmShape square{1, 128, 128, 128};
  const GemmShape thin{1, 1024, 1024, 2};
  ASSERT_DOUBLE_EQ(square.Flops(), thin.Flops());
  EXPECT_GT(model.Seconds(thin), 2 * model.Seconds(square));
}

TEST(GemmShapeModelTest, TheFitRecoversTheFiguresOfItsTimings) {
  GemmShapeModel truth;
  truth.flops_per_second = 1.1e11;
  truth.operand_bytes_per_second = 6e9;
  truth.call_seconds = 1.5e-6;
  const GemmShapeModel fitted = FitGemmShapeModel(TimingsOf(truth));
  ASSERT_TRUE(fitted.measured());
  EXPECT_NEAR(fitted.flops_per_second / truth.flops_per_second, 1, 1e-6);
  EXPECT_NEAR(fitted.operand_bytes_per_second / truth.operand_bytes_per_second, 1, 1e-6);
  EXPECT_NEAR(fitted.call_seconds / truth.call_seconds, 1, 1e-6);
  EXPECT_LT(MedianRelativeError(fitted, TimingsOf(truth)), 1e-9);

  // With 5% noise the figures stay near and the median error near the noise.
  const std::vector<GemmTiming> noisy = TimingsOf(truth, 0.05);
  const GemmShapeModel rough = FitGemmShapeModel(noisy);
  ASSERT_TRUE(rough.measured());
  EXPECT_NEAR(rough.flops_per_second / truth.flops_per_second, 1, 0.1);
  EXPECT_LT(MedianRelativeError(rough, noisy), 0.08);
  // Deterministic.
  const GemmShapeModel again = FitGemmShapeModel(noisy);
  EXPECT_EQ(again.flops_per_second, rough.flops_per_second);
  EXPECT_EQ(again.operand_bytes_per_second, rough.operand_bytes_per_second);
  EXPECT_EQ(again.call_seconds, rough.call_seconds);
}

// Timings of a flat rate (no byte or call cost) give that rate and no other term: the fit
// never makes a term negative to absorb another's error.
TEST(GemmShapeModelTest, AFlatRateFitsAsAFlatRate) {
  GemmShapeModel flat;
  flat.flops_per_second = 9e10;
  const GemmShapeModel fitted = FitGemmShapeModel(TimingsOf(flat));
  ASSERT_TRUE(fitted.measured());
  EXPECT_NEAR(fitted.flops_per_second / 9e10, 1, 1e-9);
  EXPECT_NEAR(fitted.call_seconds, 0, 1e-15);
  EXPECT_TRUE(fitted.operand_bytes_per_second == 0 || fitted.operand_bytes_per_second > 1e18);
}

TEST(GemmShapeModelTest, TooFewTimingsFitNothing) {
  GemmShapeModel truth;
  truth.flops_per_second = 1e11;
  std::vector<GemmTiming> two = TimingsOf(truth);
  two.resize(2);
  EXPECT_FALSE(FitGemmShapeModel(two).measured());
  EXPECT_FALSE(FitGemmShapeModel({}).measured());
}

}  // namespace
}  // namespace oneflow
