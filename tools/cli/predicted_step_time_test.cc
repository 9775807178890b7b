// The predicted step time: its compute part against the gpt's FLOPs counted by hand, and
// how it scales with the rates and with data parallelism.
#include "tools/cli/predicted_step_time.h"

#include "compiler/compiler.h"
#include "examples/gpt/gpt_model.h"
#include "gtest/gtest.h"

namespace oneflow::cli {
namespace {

examples::GptConfig SmallGpt(int64_t hidden) {
  examples::GptConfig config;
  config.batch = 8;
  config.seq = 32;
  config.layers = 2;
  config.hidden = hidden;
  config.heads = 4;
  config.vocab = 256;
  return config;
}

proto::Plan CompileGpt(const examples::GptConfig& config, int64_t dp, const proto::Cluster* rates) {
  examples::ParallelFlags flags;
  flags.devices_per_node = dp;
  flags.dp = dp;
  const examples::ParallelLayout layout = *examples::ParallelLayout::Create(flags);
  CompileOptions options;
  options.cluster = layout.cluster();
  if (rates != nullptr) {
    options.cluster.set_intra_node_bandwidth(rates->intra_node_bandwidth());
    options.cluster.set_intra_node_latency(rates->intra_node_latency());
    options.cluster.set_gemm_flops_per_second(rates->gemm_flops_per_second());
    options.cluster.set_memory_bytes_per_second(rates->memory_bytes_per_second());
  }
  absl::StatusOr<proto::Plan> plan = oneflow::Compile(*examples::BuildGpt(config, layout), options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *plan : proto::Plan();
}

// Forward GEMMs of the gpt on T = b s tokens: per block q, k, v, o (4 x 2 T h h), the
// attention scores and their product with v (2 x 2 b s s h), the MLP (2 x 2 T h 4h);
// the tied output projection 2 T h v. Backward: two products per forward product.
double GptGemmFlops(const examples::GptConfig& c) {
  const double tokens = c.batch * c.seq, h = c.hidden;
  const double block = 8 * tokens * h * h + 4.0 * c.batch * c.seq * c.seq * h + 16 * tokens * h * h;
  return 3 * (c.layers * block + 2 * tokens * h * c.vocab);
}

TEST(PredictedStepTimeTest, GemmTimeIsTheModelsFlopsOverTheRate) {
  const examples::GptConfig config = SmallGpt(64);
  proto::Cluster rates;
  rates.set_intra_node_bandwidth(1e10);
  rates.set_gemm_flops_per_second(1e10);
  rates.set_memory_bytes_per_second(1e9);
  const absl::StatusOr<StepTimePrediction> one = PredictStepTime(CompileGpt(config, 1, &rates));
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_EQ(one->devices.size(), 1u);
  EXPECT_NEAR(one->devices[0].gemm_seconds, GptGemmFlops(config) / 1e10, 1e-12);
  EXPECT_GT(one->devices[0].memory_bound_seconds, 0);
  EXPECT_EQ(one->devices[0].communication_seconds, 0);  // one device: no collective
  // Twice the rates, half the time.
  rates.set_gemm_flops_per_second(2e10);
  rates.set_memory_bytes_per_second(2e9);
  const absl::StatusOr<StepTimePrediction> faster = PredictStepTime(CompileGpt(config, 1, &rates));
  ASSERT_TRUE(faster.ok()) << faster.status();
  EXPECT_NEAR(faster->seconds(), one->seconds() / 2, 1e-12);
  // Data parallel over 2: each device computes half the batch and reduces the gradients
  // (one bucket): compute halves, communication appears.
  const absl::StatusOr<StepTimePrediction> two = PredictStepTime(CompileGpt(config, 2, &rates));
  ASSERT_TRUE(two.ok()) << two.status();
  ASSERT_EQ(two->devices.size(), 2u);
  EXPECT_NEAR(two->devices[0].gemm_seconds, faster->devices[0].gemm_seconds / 2, 1e-12);
  EXPECT_GT(two->devices[0].communication_seconds, 0);
}

}  // namespace
}  // namespace oneflow::cli
