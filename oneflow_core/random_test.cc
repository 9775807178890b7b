#include "oneflow_core/random.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "oneflow_core/placement.h"

namespace oneflow {
namespace {

using Block = std::array<uint32_t, 4>;

TEST(PhiloxTest, MatchesRandom123KnownAnswers) {
  // Random123's tests/kat_vectors for philox4x32_10.
  EXPECT_EQ(Philox4x32_10({0, 0, 0, 0}, {0, 0}),
            (Block{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(Philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
                          {0xffffffff, 0xffffffff}),
            (Block{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(Philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                          {0xa4093822, 0x299f31d0}),
            (Block{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(LogicalRandomTest, SeedAndStreamSelectIndependentSequences) {
  const LogicalRandom a(7), b(8), c(7, /*stream=*/1);
  int same_seed_and_stream = 0, differs_by_seed = 0, differs_by_stream = 0;
  for (int64_t i = 0; i < 1000; ++i) {
    same_seed_and_stream += a.Bits(i) == LogicalRandom(7).Bits(i);
    differs_by_seed += a.Bits(i) != b.Bits(i);
    differs_by_stream += a.Bits(i) != c.Bits(i);
  }
  EXPECT_EQ(same_seed_and_stream, 1000);
  EXPECT_EQ(differs_by_seed, 1000);
  EXPECT_EQ(differs_by_stream, 1000);
  // Index bits above 32 reach the counter.
  EXPECT_NE(a.Bits(5), a.Bits(5 + (int64_t{1} << 32)));
}

TEST(LogicalRandomTest, UniformAndNormalHaveTheRightMoments) {
  const LogicalRandom random(2024);
  const int64_t n = 200000;
  double uniform_sum = 0, uniform_sq = 0, normal_sum = 0, normal_sq = 0;
  float uniform_min = 1, uniform_max = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double u = random.Uniform(i);
    const double z = random.Normal(i);
    uniform_sum += u;
    uniform_sq += u * u;
    normal_sum += z;
    normal_sq += z * z;
    uniform_min = std::min<float>(uniform_min, u);
    uniform_max = std::max<float>(uniform_max, u);
    ASSERT_TRUE(std::isfinite(z));
  }
  EXPECT_GE(uniform_min, 0.0f);
  EXPECT_LT(uniform_max, 1.0f);
  // Standard errors for n = 2e5: mean ~0.0006 (uniform), ~0.0022 (normal).
  EXPECT_NEAR(uniform_sum / n, 0.5, 0.003);
  EXPECT_NEAR(uniform_sq / n - 0.25, 1.0 / 12.0, 0.003);
  EXPECT_NEAR(normal_sum / n, 0.0, 0.01);
  EXPECT_NEAR(normal_sq / n, 1.0, 0.01);
}

// Generates the whole tensor on one "device", then each device's slice, and checks that
// every device holds bit-identical values for its part of the logical tensor.
void ExpectValuesIndependentOfLayout(const Shape& logical, const NdSbp& nd_sbp,
                                     const Placement& placement) {
  const LogicalRandom random(/*seed=*/99, /*stream=*/3);
  std::vector<float> whole(logical.NumElements());
  FillNormal(logical, TensorSlice::Whole(logical), random, 0.5f, 2.0f, whole.data());
  for (int64_t rank = 0; rank < placement.num_devices(); ++rank) {
    const TensorSlice slice = *DeviceSlice(logical, nd_sbp, placement, rank);
    std::vector<float> local(slice.NumElements());
    FillNormal(logical, slice, random, 0.5f, 2.0f, local.data());
    ForEachContiguousRun(logical, slice, [&](int64_t at, int64_t offset, int64_t length) {
      for (int64_t i = 0; i < length; ++i) {
        ASSERT_EQ(local[at + i], whole[offset + i])
            << "rank " << rank << " slice " << slice.ToString() << " of " << logical.ToString()
            << " under " << nd_sbp.ToString();
      }
    });
  }
}

TEST(LogicalRandomTest, ValuesDoNotDependOnTheSlicing) {
  const Placement line = *Placement::Grid(DeviceType::kCpu, 1, 3);
  const Placement grid = *Placement::Grid(DeviceType::kCpu, 2, 2, Shape{2, 2});
  const Shape logical{7, 10};
  for (const NdSbp& nd_sbp : {NdSbp{Sbp::Split(0)}, NdSbp{Sbp::Split(1)}, NdSbp{Sbp::Broadcast()}}) {
    ExpectValuesIndependentOfLayout(logical, nd_sbp, line);
  }
  for (const NdSbp& nd_sbp : {NdSbp{Sbp::Split(0), Sbp::Split(1)},
                              NdSbp{Sbp::Split(1), Sbp::Split(1)},
                              NdSbp{Sbp::Broadcast(), Sbp::Split(0)}}) {
    ExpectValuesIndependentOfLayout(logical, nd_sbp, grid);
  }
}

TEST(LogicalRandomTest, FillUniformRespectsBounds) {
  const Shape logical{1000};
  std::vector<float> values(1000);
  FillUniform(logical, TensorSlice::Whole(logical), LogicalRandom(1), -0.25f, 0.25f,
              values.data());
  for (float v : values) {
    EXPECT_GE(v, -0.25f);
    EXPECT_LT(v, 0.25f);
  }
}

}  // namespace
}  // namespace oneflow
