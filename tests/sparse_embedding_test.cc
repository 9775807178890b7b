// Sparse embedding gradients end to end (compiler/sparse_boxing.h): the gpt with an
// untied token embedding on 4 data-parallel devices reduces the embedding's gradient
// row-sparse. The losses equal the dense path's and one device's; the bytes on the wire
// are the touched rows (with their indices) computed from the synthetic tokens; and the
// per-call density switch runs sparse on a large vocabulary and dense on a small one.
#include <cmath>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "actors/behaviors/synthetic_data.h"
#include "actors/runtime.h"
#include "compiler/compiler.h"
#include "examples/gpt/gpt_model.h"
#include "gtest/gtest.h"
#include "oneflow_core/tensor_slice.h"
#include "tests/loss_curves.h"

namespace oneflow {
namespace {

constexpr int kIterations = 9;
constexpr int64_t kDevices = 4;

examples::GptConfig SmallGpt(int64_t vocab) {
  examples::GptConfig config;
  config.batch = 8;
  config.seq = 32;
  config.layers = 1;
  config.hidden = 64;
  config.heads = 2;
  config.vocab = vocab;
  config.tied_embeddings = false;  // The embedding's gradient comes from embedding_grad alone.
  config.learning_rate = 3e-3;
  config.warmup_steps = 1;
  return config;
}

proto::Plan CompileGpt(const examples::GptConfig& config, int64_t dp, bool sparse) {
  examples::ParallelFlags flags;
  flags.devices_per_node = dp;
  flags.dp = dp;
  absl::StatusOr<examples::ParallelLayout> layout = examples::ParallelLayout::Create(flags);
  EXPECT_TRUE(layout.ok()) << layout.status();
  absl::StatusOr<proto::Job> job = examples::BuildGpt(config, *layout);
  EXPECT_TRUE(job.ok()) << job.status();
  CompileOptions options;
  options.cluster = layout->cluster();
  options.sparse_boxing = sparse;
  absl::StatusOr<proto::Plan> plan = Compile(*job, options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *plan : proto::Plan();
}

std::vector<actors::IterationMetrics> Train(const proto::Plan& plan) {
  actors::TrainOptions options;
  options.node = -1;
  options.iterations = kIterations;
  absl::StatusOr<actors::TrainResult> result = actors::TrainPlan(plan, options);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? result->iterations : std::vector<actors::IterationMetrics>{};
}

std::vector<double> Losses(const std::vector<actors::IterationMetrics>& metrics) {
  std::vector<double> losses;
  for (const actors::IterationMetrics& m : metrics) losses.push_back(m.loss);
  return losses;
}

// The row-sparse steps of a plan.
int SparseSteps(const proto::Plan& plan) {
  int steps = 0;
  for (const proto::BoxingDef& boxing : plan.boxings()) {
    for (const proto::BoxingStepDef& step : boxing.steps()) steps += step.sparsity().kind() != proto::Sparsity::DENSE;
  }
  return steps;
}

// What the sparse all-reduce sends in iteration `iteration`: each device's distinct
// token ids, each row (hidden f32 values and a 4-byte index) to the 3 other devices.
int64_t ExpectedPayload(const examples::GptConfig& config, int64_t iteration) {
  int64_t bytes = 0;
  const Shape tokens{config.batch, config.seq};
  const int64_t rows_per_device = config.batch / kDevices;
  for (int64_t d = 0; d < kDevices; ++d) {
    TensorLayout layout{tokens, TensorSlice({Range{d * rows_per_device, (d + 1) * rows_per_device},
                                             Range{0, config.seq}})};
    std::vector<int32_t> ids(rows_per_device * config.seq);
    actors::FillSyntheticTokens(config.seed, iteration, config.vocab, 0, layout, ids.data());
    const std::set<int32_t> distinct(ids.begin(), ids.end());
    bytes += static_cast<int64_t>(distinct.size()) * (kDevices - 1) * (config.hidden * 4 + 4);
  }
  return bytes;
}

TEST(SparseEmbeddingTest, SameLossesAsDenseAndOneDeviceAndOnlyTouchedRowsTravel) {
  const examples::GptConfig config = SmallGpt(512);
  const proto::Plan sparse_plan = CompileGpt(config, kDevices, true);
  const proto::Plan dense_plan = CompileGpt(config, kDevices, false);
  EXPECT_EQ(SparseSteps(sparse_plan), 1);  // The token embedding's gradient.
  EXPECT_EQ(SparseSteps(dense_plan), 0);
  const std::vector<actors::IterationMetrics> sparse = Train(sparse_plan);
  const std::vector<actors::IterationMetrics> dense = Train(dense_plan);
  const std::vector<double> one_device = Losses(Train(CompileGpt(config, 1, true)));
  ASSERT_EQ(sparse.size(), static_cast<size_t>(kIterations));
  ASSERT_EQ(dense.size(), static_cast<size_t>(kIterations));
  EXPECT_TRUE(testing::MatchesReference(Losses(sparse), one_device, kIterations));
  for (int i = 0; i < kIterations; ++i) {
    // The same reduction order as the dense all-reduce: equal within 1e-5 relative.
    EXPECT_NEAR(sparse[i].loss, dense[i].loss, 1e-5 * std::abs(dense[i].loss)) << "iteration " << i;
    EXPECT_EQ(sparse[i].sparse.sparse_calls, kDevices) << "iteration " << i;
    EXPECT_EQ(sparse[i].sparse.dense_calls, 0) << "iteration " << i;
    EXPECT_EQ(sparse[i].sparse.payload_bytes, ExpectedPayload(config, i)) << "iteration " << i;
    EXPECT_LT(sparse[i].sparse.payload_bytes * 3, sparse[i].sparse.dense_bytes) << "iteration " << i;
    EXPECT_EQ(dense[i].sparse.sparse_calls + dense[i].sparse.dense_calls, 0) << "iteration " << i;
  }
}

// 64 ids per device over 48 rows touch at least 32 of them (two windows of 32 consecutive
// ids): above the crossover density (about 2/4 on 4 devices), so every call runs dense,
// with the same losses as the plan compiled dense.
TEST(SparseEmbeddingTest, DenseBatchFallsBackToTheDenseCollective) {
  const examples::GptConfig config = SmallGpt(48);
  const proto::Plan sparse_plan = CompileGpt(config, kDevices, true);
  ASSERT_EQ(SparseSteps(sparse_plan), 1);
  const std::vector<actors::IterationMetrics> sparse = Train(sparse_plan);
  const std::vector<actors::IterationMetrics> dense = Train(CompileGpt(config, kDevices, false));
  ASSERT_EQ(sparse.size(), static_cast<size_t>(kIterations));
  ASSERT_EQ(dense.size(), static_cast<size_t>(kIterations));
  for (int i = 0; i < kIterations; ++i) {
    EXPECT_EQ(sparse[i].sparse.sparse_calls, 0) << "iteration " << i;
    EXPECT_EQ(sparse[i].sparse.dense_calls, kDevices) << "iteration " << i;
    EXPECT_EQ(sparse[i].sparse.payload_bytes, sparse[i].sparse.dense_bytes) << "iteration " << i;
    EXPECT_NEAR(sparse[i].loss, dense[i].loss, 1e-5 * std::abs(dense[i].loss)) << "iteration " << i;
  }
}

}  // namespace
}  // namespace oneflow
