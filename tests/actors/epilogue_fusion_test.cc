// Epilogue fusion end to end (compiler/passes/epilogue_fusion_pass.h): the mlp, whose
// layers are matmul -> bias_add -> relu, trains along the same loss curve with its chains
// fused into fused_matmul_bias as without, on one device, data parallel, tensor parallel
// (Megatron column/row pairs, where the row-parallel product adds its bias to a partial
// sum) and with a device thread pool; and the fused plan needs fewer actors and no more
// memory.
#include <cmath>
#include <vector>

#include "actors/runtime.h"
#include "compiler/compiler.h"
#include "gtest/gtest.h"
#include "tests/mlp_plan.h"

namespace oneflow::actors {
namespace {

proto::Plan MlpPlan(int64_t dp, int64_t tp, bool fuse, int64_t threads_per_device = 0) {
  oneflow::testing::MlpPlanSpec spec;
  spec.layout = oneflow::testing::OnOneNode(dp, tp);
  spec.model = examples::MlpConfig();
  spec.model.batch = 64;
  spec.model.in_features = 256;
  spec.model.hidden = 512;
  if (threads_per_device > 0) spec.threads_per_device = threads_per_device;
  spec.options.fuse_epilogues = fuse;
  absl::StatusOr<proto::Plan> plan = oneflow::testing::CompileMlpPlan(spec);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return *plan;
}

int CountOps(const proto::Plan& plan, const std::string& type) {
  int count = 0;
  for (const proto::OpDef& op : plan.job().ops()) count += op.type() == type;
  return count;
}

std::vector<float> Losses(const proto::Plan& plan) {
  TrainOptions options;
  options.node = -1;
  options.iterations = 6;
  absl::StatusOr<TrainResult> result = TrainPlan(plan, options);
  EXPECT_TRUE(result.ok()) << result.status();
  std::vector<float> losses;
  if (!result.ok()) return losses;
  for (const IterationMetrics& m : result->iterations) losses.push_back(m.loss);
  return losses;
}

void ExpectSameCurve(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  ASSERT_EQ(want.size(), 6u);
  EXPECT_LT(want.back(), want.front());  // It trains.
  for (size_t i = 0; i < want.size(); ++i) {
    // The fused GEMM adds the bias to the same f32 product; only where oneDNN adds it
    // (into its accumulator or after) may round differently.
    EXPECT_NEAR(got[i], want[i], 1e-5 * std::abs(want[i])) << "iteration " << i;
  }
}

struct Layout {
  int64_t dp, tp, threads;
};

TEST(EpilogueFusionTest, FusedPlansFollowTheUnfusedLosses) {
  for (const Layout& layout : {Layout{1, 1, 0}, Layout{2, 1, 0}, Layout{1, 2, 0}, Layout{2, 2, 0}, Layout{1, 1, 2}}) {
    SCOPED_TRACE(::testing::Message() << "dp=" << layout.dp << " tp=" << layout.tp << " threads=" << layout.threads);
    const proto::Plan fused = MlpPlan(layout.dp, layout.tp, true, layout.threads);
    const proto::Plan unfused = MlpPlan(layout.dp, layout.tp, false, layout.threads);
    EXPECT_EQ(CountOps(unfused, "fused_matmul_bias"), 0);
    EXPECT_GT(CountOps(fused, "fused_matmul_bias"), 0);
    EXPECT_LT(CountOps(fused, "bias_add"), CountOps(unfused, "bias_add"));
    for (int d = 0; d < fused.devices_size(); ++d) {
      EXPECT_LT(fused.devices(d).actors_size(), unfused.devices(d).actors_size()) << "device " << d;
      EXPECT_LE(fused.devices(d).peak_bytes(), unfused.devices(d).peak_bytes()) << "device " << d;
    }
    ExpectSameCurve(Losses(fused), Losses(unfused));
  }
}

// One device: every hidden layer's bias_add and relu go (the head's bias_add fuses too,
// its relu-free sum read by the loss).
TEST(EpilogueFusionTest, EveryMlpLayerFusesOnOneDevice) {
  const proto::Plan fused = MlpPlan(1, 1, true);
  const proto::Plan unfused = MlpPlan(1, 1, false);
  EXPECT_EQ(CountOps(fused, "fused_matmul_bias"), CountOps(unfused, "bias_add"));
  EXPECT_EQ(CountOps(fused, "bias_add"), 0);
  EXPECT_EQ(CountOps(fused, "relu"), 0);
  EXPECT_EQ(CountOps(fused, "matmul") + CountOps(fused, "fused_matmul_bias"), CountOps(unfused, "matmul"));
}

}  // namespace
}  // namespace oneflow::actors
