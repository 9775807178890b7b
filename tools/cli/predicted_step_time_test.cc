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
    options.cluster.set_gemm_shape_flops_per_second(rates->gemm_shape_flops_per_second());
    options.cluster.set_gemm_shape_operand_bytes_per_second(rates->gemm_shape_operand_bytes_per_second());
    options.cluster.set_gemm_shape_call_seconds(rates->gemm_shape_call_seconds());
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

// With the calibration's GEMM shape model (Cluster.gemm_shape_*, sbp/gemm_shape_model.h)
// every GEMM kernel is priced by its shape: a model of the same peak and nothing else
// gives the FLOPs over the rate again, and a cost per call adds it once per GEMM kernel
// of the device: 3 per forward product (itself and its two input gradients), 8 products
// a block and the tied output projection.
TEST(PredictedStepTimeTest, WithAShapeModelEachGemmKernelIsPricedByItsShape) {
  const examples::GptConfig config = SmallGpt(64);
  proto::Cluster rates;
  rates.set_intra_node_bandwidth(1e10);
  rates.set_gemm_flops_per_second(1e10);
  rates.set_memory_bytes_per_second(1e9);
  rates.set_gemm_shape_flops_per_second(1e10);
  const absl::StatusOr<StepTimePrediction> peak_only = PredictStepTime(CompileGpt(config, 1, &rates));
  ASSERT_TRUE(peak_only.ok()) << peak_only.status();
  EXPECT_NEAR(peak_only->devices[0].gemm_seconds, GptGemmFlops(config) / 1e10, 1e-9);
  constexpr double kCall = 1e-3;
  rates.set_gemm_shape_call_seconds(kCall);
  const absl::StatusOr<StepTimePrediction> with_call = PredictStepTime(CompileGpt(config, 1, &rates));
  ASSERT_TRUE(with_call.ok()) << with_call.status();
  EXPECT_NEAR(with_call->devices[0].gemm_seconds - peak_only->devices[0].gemm_seconds,
              kCall * 3 * (8 * config.layers + 1), 1e-9);
  // The operands' bytes: more than nothing, and the memory-bound kernels unchanged.
  rates.set_gemm_shape_call_seconds(0);
  rates.set_gemm_shape_operand_bytes_per_second(1e9);
  const absl::StatusOr<StepTimePrediction> with_bytes = PredictStepTime(CompileGpt(config, 1, &rates));
  ASSERT_TRUE(with_bytes.ok()) << with_bytes.status();
  EXPECT_GT(with_bytes->devices[0].gemm_seconds, peak_only->devices[0].gemm_seconds);
  EXPECT_EQ(with_bytes->devices[0].memory_bound_seconds, peak_only->devices[0].memory_bound_seconds);
}

}  // namespace
}  // namespace oneflow::cli
