// --threads_per_device end to end: the mlp trained with 2 or 3 kernel threads per device
// follows the one-thread loss curve, on one device and under dp=2 (two pools in one
// process); counts outside [1, 256] are refused naming where they came from.
#include <cmath>
#include <vector>

#include "actors/runtime.h"
#include "compiler/compiler.h"
#include "gtest/gtest.h"
#include "tests/mlp_plan.h"

namespace oneflow::actors {
namespace {

// Big enough that the matmuls pass the split threshold (64 x 512 x 256 forward).
proto::Plan MlpPlan(int64_t dp, int64_t threads_per_device) {
  oneflow::testing::MlpPlanSpec spec;
  spec.layout = oneflow::testing::OnOneNode(dp);
  spec.model = examples::MlpConfig();
  spec.model.batch = 64;
  spec.model.in_features = 256;
  spec.model.hidden = 512;
  spec.threads_per_device = threads_per_device;
  absl::StatusOr<proto::Plan> plan = oneflow::testing::CompileMlpPlan(spec);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return *plan;
}

absl::StatusOr<std::vector<float>> Losses(const proto::Plan& plan, int64_t threads_override = 0) {
  TrainOptions options;
  options.node = -1;
  options.iterations = 6;
  options.threads_per_device = threads_override;
  absl::StatusOr<TrainResult> result = TrainPlan(plan, options);
  if (!result.ok()) return result.status();
  std::vector<float> losses;
  for (const IterationMetrics& m : result->iterations) losses.push_back(m.loss);
  return losses;
}

void ExpectSameCurve(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    // Splitting a matmul changes which sgemm computes an element, not its sum; only
    // OpenBLAS's blocking of a shorter call may round differently.
    EXPECT_NEAR(got[i], want[i], 1e-5 * std::abs(want[i])) << "iteration " << i;
  }
}

TEST(ThreadsPerDeviceTest, MoreThreadsFollowTheOneThreadLosses) {
  const absl::StatusOr<std::vector<float>> one = Losses(MlpPlan(1, 1));
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_EQ(one->size(), 6u);
  EXPECT_LT(one->back(), one->front());  // It trains.
  for (int64_t threads : {2, 3}) {
    SCOPED_TRACE(::testing::Message() << threads << " threads per device");
    const absl::StatusOr<std::vector<float>> many = Losses(MlpPlan(1, threads));
    ASSERT_TRUE(many.ok()) << many.status();
    ExpectSameCurve(*many, *one);
  }
  // Data parallel, each device with its own pool of 2.
  const absl::StatusOr<std::vector<float>> dp = Losses(MlpPlan(2, 2));
  ASSERT_TRUE(dp.ok()) << dp.status();
  const absl::StatusOr<std::vector<float>> dp_one = Losses(MlpPlan(2, 1));
  ASSERT_TRUE(dp_one.ok()) << dp_one.status();
  ExpectSameCurve(*dp, *dp_one);
}

TEST(ThreadsPerDeviceTest, TheRunOptionOverridesThePlan) {
  const proto::Plan plan = MlpPlan(1, 1);
  const absl::StatusOr<std::vector<float>> planned = Losses(plan);
  const absl::StatusOr<std::vector<float>> overridden = Losses(plan, 2);
  ASSERT_TRUE(planned.ok()) << planned.status();
  ASSERT_TRUE(overridden.ok()) << overridden.status();
  ExpectSameCurve(*overridden, *planned);
}

TEST(ThreadsPerDeviceTest, PlansWithoutTheFieldRunOnOneThread) {
  // Compiled with the field unset (the plan's checksum covers it: no editing afterwards).
  const proto::Plan plan = MlpPlan(1, 0);
  ASSERT_EQ(plan.cluster().threads_per_device(), 0);
  const absl::StatusOr<std::vector<float>> losses = Losses(plan);
  EXPECT_TRUE(losses.ok()) << losses.status();
}

TEST(ThreadsPerDeviceTest, BadCountsAreRefusedNamingTheirSource) {
  absl::StatusOr<std::vector<float>> losses = Losses(MlpPlan(1, 1), -1);
  EXPECT_EQ(losses.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(losses.status().message(),
            "TrainOptions.threads_per_device=-1 is not a valid thread count: a CPU device runs "
            "its kernels on 1 to 256 threads (its compute thread plus helpers)");
  // The compiler records the field as given; the runtime is where a count takes effect.
  losses = Losses(MlpPlan(1, 1000));
  EXPECT_EQ(losses.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(losses.status().message(),
            "the plan's cluster.threads_per_device=1000 is not a valid thread count: a CPU device "
            "runs its kernels on 1 to 256 threads (its compute thread plus helpers)");
}

}  // namespace
}  // namespace oneflow::actors
