// Compressed boxing end to end: the compiler's choice (automatic compresses exactly the
// node-crossing floating reductions and gathers where the link is slow, nothing where
// links are fast) and training fidelity (every loss finite, the mean loss of 200
// iterations within a stated tolerance of the dense run's: 1% for the gpt with fp8, int8
// and automatic, 5% with int4; 10% for the far more sensitive mlp) for fp8, int8, int4
// and automatic on 2 nodes x 2 devices.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "actors/runtime.h"
#include "compiler/compiler.h"
#include "compiler/plan_checksum.h"
#include "examples/gpt/gpt_model.h"
#include "examples/mlp/mlp_model.h"
#include "gtest/gtest.h"
#include "oneflow_core/sbp.h"

namespace oneflow {
namespace {

examples::ParallelLayout TwoNodesDp2Tp2(double inter_node_bandwidth) {
  examples::ParallelFlags flags;
  flags.nodes = 2;
  flags.devices_per_node = 2;
  flags.dp = 2;
  flags.tp = 2;
  flags.inter_node_bandwidth = inter_node_bandwidth;
  return *examples::ParallelLayout::Create(flags);
}

proto::Job Gpt(const examples::ParallelLayout& layout) {
  examples::GptConfig config;
  config.batch = 8;
  config.seq = 16;
  config.layers = 2;
  config.hidden = 64;
  config.heads = 4;
  config.vocab = 64;
  config.learning_rate = 1e-2;
  config.warmup_steps = 5;
  return *examples::BuildGpt(config, layout);
}

proto::Job Mlp(const examples::ParallelLayout& layout) {
  examples::MlpConfig config;
  config.batch = 32;
  config.in_features = 16;
  config.hidden = 64;
  config.classes = 4;
  return *examples::BuildMlp(config, layout);
}

BoxingOptions Forced(BoxingOptions::Compression compression) {
  BoxingOptions options;
  options.compression = compression;
  options.compress_intra_node = true;
  return options;
}

BoxingOptions Automatic() {
  BoxingOptions options;
  options.compression = BoxingOptions::Compression::kFp8E4M3;
  options.automatic = true;
  return options;
}

proto::Plan CompileWith(const proto::Job& job, const examples::ParallelLayout& layout, const BoxingOptions& boxing) {
  CompileOptions options;
  options.cluster = layout.cluster();
  options.boxing = boxing;
  absl::StatusOr<proto::Plan> plan = Compile(job, options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *plan : proto::Plan();
}

std::vector<float> Train(const proto::Plan& plan, int64_t iterations) {
  actors::TrainOptions options;
  options.node = -1;
  options.iterations = iterations;
  absl::StatusOr<actors::TrainResult> result = actors::TrainPlan(plan, options);
  EXPECT_TRUE(result.ok()) << result.status();
  std::vector<float> losses;
  if (result.ok()) {
    for (const actors::IterationMetrics& m : result->iterations) losses.push_back(m.loss);
  }
  return losses;
}

TEST(CompressionTest, AutomaticCompressesNothingOnFastLinks) {
  const examples::ParallelLayout layout = TwoNodesDp2Tp2(12.5e9);
  for (const proto::Job& job : {Gpt(layout), Mlp(layout)}) {
    const proto::Plan dense = CompileWith(job, layout, BoxingOptions());
    const proto::Plan automatic = CompileWith(job, layout, Automatic());
    EXPECT_EQ(*SerializePlanDeterministically(dense), *SerializePlanDeterministically(automatic)) << job.name();
  }
}

// On [2, 2] = 2 nodes x 2 devices, hierarchy axis 0 (dp) crosses nodes and axis 1 (tp)
// stays inside a node.
TEST(CompressionTest, AutomaticCompressesExactlyTheSlowFloatingCollectives) {
  const examples::ParallelLayout layout = TwoNodesDp2Tp2(1e6);
  const proto::Job job = Gpt(layout);
  const proto::Plan plan = CompileWith(job, layout, Automatic());
  std::map<std::string, proto::DataType> dtypes;
  for (const proto::TensorDef& tensor : plan.job().tensors()) dtypes[tensor.name()] = tensor.dtype();
  int compressed = 0;
  for (const proto::BoxingDef& boxing : plan.boxings()) {
    for (const proto::BoxingStepDef& step : boxing.steps()) {
      const bool eligible = dtypes[boxing.tensor()] == proto::DTYPE_F32 && step.hierarchy_axis() == 0 &&
                            (step.kind() == proto::STEP_ALL_REDUCE || step.kind() == proto::STEP_REDUCE_SCATTER ||
                             step.kind() == proto::STEP_ALL_GATHER) &&
                            step.bytes_per_device() > 0;
      const bool is_compressed = step.compression().kind() != proto::Compression::NONE;
      // A tiny tensor (a few elements) may not shrink under a per-group scale: dense.
      if (is_compressed) {
        ++compressed;
        EXPECT_TRUE(eligible) << boxing.tensor() << " step on axis " << step.hierarchy_axis();
        EXPECT_EQ(step.compression().kind(), proto::Compression::FP8_E4M3);
        EXPECT_NE(step.reason().find(": compressed"), std::string::npos) << step.reason();
      } else if (eligible) {
        EXPECT_LE(step.bytes_per_device(), 8) << boxing.tensor() << ": an eligible step left dense";
      }
    }
  }
  EXPECT_GT(compressed, 20);
}

void ExpectFidelity(bool gpt) {
  constexpr int64_t kIterations = 200;
  const examples::ParallelLayout fast = TwoNodesDp2Tp2(12.5e9);
  const examples::ParallelLayout slow = TwoNodesDp2Tp2(1e6);
  const proto::Job job = gpt ? Gpt(fast) : Mlp(fast);
  const std::vector<float> dense = Train(CompileWith(job, fast, BoxingOptions()), kIterations);
  ASSERT_EQ(dense.size(), static_cast<size_t>(kIterations));
  ASSERT_LT(dense.back(), dense.front() * 0.8) << "the dense run does not train";
  struct Case {
    const char* name;
    proto::Plan plan;
    double tolerance;  // of the mean loss, relative
  };
  // Measured (this file's configurations, 200 iterations): gpt fp8 -0.2%, int8 +0.1%,
  // int4 +2.5%, auto +0.2%; the mlp (SGD with momentum 0.9 at lr 0.1 on new batches
  // every step) is far more sensitive to any perturbation of its gradients: fp8 +6.2%,
  // int8 +2.4%, int4 +5.2%, auto +3.5%, with final losses on both sides of dense's.
  const double loose = gpt ? 0.01 : 0.10;
  const std::vector<Case> cases = {
      {"fp8", CompileWith(job, fast, Forced(BoxingOptions::Compression::kFp8E4M3)), loose},
      {"int8", CompileWith(job, fast, Forced(BoxingOptions::Compression::kInt8)), loose},
      {"int4", CompileWith(job, fast, Forced(BoxingOptions::Compression::kInt4)), gpt ? 0.05 : 0.10},
      {"auto, slow inter-node link", CompileWith(gpt ? Gpt(slow) : Mlp(slow), slow, Automatic()), loose},
  };
  for (const Case& c : cases) {
    const std::vector<float> losses = Train(c.plan, kIterations);
    ASSERT_EQ(losses.size(), dense.size()) << c.name;
    for (size_t i = 0; i < losses.size(); ++i) ASSERT_TRUE(std::isfinite(losses[i])) << c.name << " " << i;
    // The codec really ran: a dense run (even one silently ignoring the codec) would
    // follow the dense curve to float reassociation, far below this difference.
    double largest_difference = 0;
    for (size_t i = 0; i < losses.size(); ++i) {
      largest_difference = std::max(largest_difference, std::abs(static_cast<double>(losses[i]) - dense[i]));
    }
    EXPECT_GT(largest_difference, 1e-4 * dense.front()) << c.name << ": the losses equal the dense run's";
    // The whole curve, not its last point: on these learnable synthetic tasks the loss
    // falls towards zero and single batches are noisy, so the mean loss over the run (the
    // area under the curve) is the stable measure of "trains like dense".
    double mean = 0, dense_mean = 0, tail = 0, dense_tail = 0;
    for (size_t i = 0; i < losses.size(); ++i) {
      mean += losses[i] / losses.size();
      dense_mean += dense[i] / dense.size();
      if (i + 20 >= losses.size()) {
        tail += losses[i] / 20;
        dense_tail += dense[i] / 20;
      }
    }
    printf("%s %s: mean loss %.5f vs dense %.5f (%+.3f%%); last 20: %.5f vs %.5f\n", gpt ? "gpt" : "mlp", c.name,
           mean, dense_mean, 100 * (mean / dense_mean - 1), tail, dense_tail);
    EXPECT_NEAR(mean, dense_mean, c.tolerance * dense_mean) << c.name;
  }
}

TEST(CompressionTest, GptTrainsLikeDense) { ExpectFidelity(true); }

TEST(CompressionTest, MlpTrainsLikeDense) { ExpectFidelity(false); }

}  // namespace
}  // namespace oneflow
