// Sparse embedding gradients end to end (compiler/sparse_boxing.h): the gpt with an
// untied token embedding on 4 data-parallel devices reduces the embedding's gradient
// row-sparse. The losses equal the dense path's and one device's; the bytes on the wire
// are the touched rows (with their indices) computed from the synthetic tokens; and the
// per-call density switch runs sparse on a large vocabulary and dense on a small one.
#include <cmath>
#include <set>
#include <vector>

#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "oneflow_core/dsl/ops.h"
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

// A table sharded by rows (S(0), 8 rows over 4 devices: device d owns rows 2d, 2d + 1)
// read data-parallel through Tensor::WithSparseRows(tokens): its gather (S(0) -> B) and
// its gradient's reduce-scatter (P -> S(0)) move exactly row_bytes x (devices that use a
// row other than its owner), summed over rows, for a routing fixed by a token file.
class FixedRoutingTest : public ::testing::Test {
 protected:
  static constexpr int64_t kRows = 8, kWidth = 16, kSeq = 4;

  // One window of kSeq + 1 token ids per device (device d reads sample d).
  std::string WriteTokens(const std::vector<std::vector<int32_t>>& windows) {
    const std::string path = absl::StrCat(::testing::TempDir(), "/tokens_", file_count_++, ".bin");
    std::ofstream file(path, std::ios::binary);
    for (const std::vector<int32_t>& window : windows) {
      file.write(reinterpret_cast<const char*>(window.data()), window.size() * sizeof(int32_t));
    }
    return path;
  }

  proto::Plan CompileTable(const std::string& tokens_path, int64_t devices, bool sparse) {
    Graph graph("table");
    graph.SetDefaultPlacement(*Placement::Grid(DeviceType::kCpu, 1, devices));
    graph.SetBatchSize(kDevices);
    graph.AddDataSource("data", DataSource::TokenFile(tokens_path));
    Tensor tokens = graph.Input("tokens", Shape{kDevices, kSeq}, DType::kI32, "data");
    tokens.WithSbp("S(0)");
    Tensor targets = graph.Input("targets", Shape{kDevices, kSeq}, DType::kI32, "data");
    targets.WithSbp("S(0)");
    Tensor table = graph.Variable("table", Shape{kRows, kWidth}, Initializer::Normal(0, 0.5, 3));
    table.WithSbp("S(0)").WithSparseRows(tokens);
    Tensor x = Embedding(table, tokens);
    x.WithSbp("S(0)");  // Data parallel: the table is gathered, not the tokens.
    Tensor w_out = graph.Variable("w_out", Shape{kWidth, kRows}, Initializer::Normal(0, 0.5, 4));
    Tensor logits = MatMul(Reshape(x, {kDevices * kSeq, kWidth}), w_out);
    graph.SetLoss(ReduceMean(SparseSoftmaxCrossEntropy(logits, Reshape(targets, {kDevices * kSeq}))));
    graph.SetOptimizer(Optimizer::Sgd(0.5));
    absl::StatusOr<proto::Job> job = graph.Build();
    EXPECT_TRUE(job.ok()) << job.status();
    CompileOptions options;
    options.cluster.set_num_nodes(1);
    options.cluster.set_devices_per_node(devices);
    options.cluster.set_intra_node_bandwidth(1e10);
    options.cluster.set_inter_node_bandwidth(1e9);
    options.sparse_boxing = sparse;
    absl::StatusOr<proto::Plan> plan = Compile(*job, options);
    EXPECT_TRUE(plan.ok()) << plan.status();
    return plan.ok() ? *plan : proto::Plan();
  }

  int file_count_ = 0;
};

TEST_F(FixedRoutingTest, BytesAreRowsTimesNeedersBesidesTheOwner) {
  // Rows used per device: {0, 2, 4}, {2, 3}, {1, 4}, {6, 7}. Beyond their owners: row 1
  // (owner 0) by device 2, row 2 (owner 1) by device 0, row 4 (owner 2) by device 0.
  const std::string path = WriteTokens({{0, 2, 4, 0, 2}, {2, 3, 2, 3, 2}, {1, 4, 1, 4, 1}, {6, 7, 6, 7, 6}});
  const proto::Plan plan = CompileTable(path, kDevices, true);
  ASSERT_EQ(SparseSteps(plan), 2);  // the gather and the gradient's reduce-scatter
  const std::vector<actors::IterationMetrics> sparse = Train(plan);
  const std::vector<actors::IterationMetrics> dense = Train(CompileTable(path, kDevices, false));
  const std::vector<actors::IterationMetrics> one = Train(CompileTable(path, 1, true));
  ASSERT_EQ(sparse.size(), static_cast<size_t>(kIterations));
  ASSERT_EQ(one.size(), static_cast<size_t>(kIterations));
  EXPECT_TRUE(testing::MatchesReference(Losses(sparse), Losses(one), kIterations));
  for (int i = 0; i < kIterations; ++i) {
    EXPECT_EQ(sparse[i].sparse.sparse_calls, 2 * kDevices) << "iteration " << i;
    EXPECT_EQ(sparse[i].sparse.payload_bytes, 2 * 3 * kWidth * 4) << "iteration " << i;
    EXPECT_EQ(sparse[i].sparse.rows_sent, 2 * 3) << "iteration " << i;
    EXPECT_NEAR(sparse[i].loss, dense[i].loss, 1e-5 * std::abs(dense[i].loss)) << "iteration " << i;
  }
}

TEST_F(FixedRoutingTest, NothingMovesWhenEveryDeviceUsesOnlyTheRowsItOwns) {
  const std::string path = WriteTokens({{0, 1, 0, 1, 0}, {2, 3, 2, 3, 2}, {4, 5, 4, 5, 4}, {6, 7, 6, 7, 6}});
  const std::vector<actors::IterationMetrics> sparse = Train(CompileTable(path, kDevices, true));
  ASSERT_EQ(sparse.size(), static_cast<size_t>(kIterations));
  for (const actors::IterationMetrics& m : sparse) {
    EXPECT_EQ(m.sparse.sparse_calls, 2 * kDevices);
    EXPECT_EQ(m.sparse.payload_bytes, 0);
    EXPECT_GT(m.sparse.dense_bytes, 0);
  }
}

}  // namespace
}  // namespace oneflow
