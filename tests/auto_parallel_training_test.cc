// --auto_parallel end to end on the examples' small gpt, mlp and llama: the chosen plan
// verifies (Compile runs the verifier; TrainPlan refuses a plan that does not), trains, and
// follows the one-device loss curve within 1e-4, on 4 devices of one node, 6 of two or
// three nodes and 8 of two, with fast links, a slow inter-node link, and a memory limit
// below pure data parallelism's peak. Each case also checks the decision the plan records.
#include <string>
#include <vector>

#include "actors/runtime.h"
#include "compiler/auto_parallel/candidate.h"
#include "compiler/compiler.h"
#include "examples/common/auto_parallel_driver.h"
#include "examples/gpt/gpt_model.h"
#include "examples/llama/llama_model.h"
#include "examples/mlp/mlp_model.h"
#include "gtest/gtest.h"
#include "tests/loss_curves.h"
#include "tests/tiny_llama.h"

namespace oneflow {
namespace {

using examples::ParallelFlags;
using examples::ParallelLayout;

constexpr int kIterations = 12;

examples::JobBuilder Mlp() {
  return [](const ParallelLayout& layout) {
    examples::MlpConfig config;
    config.batch = 32;
    config.in_features = 16;
    config.hidden = 32;
    config.classes = 4;
    return examples::BuildMlp(config, layout);
  };
}

examples::JobBuilder Gpt() {
  return [](const ParallelLayout& layout) {
    examples::GptConfig config;
    config.batch = 8;
    config.seq = 8;
    config.layers = 2;
    config.hidden = 32;
    config.heads = 4;
    config.vocab = 32;
    config.learning_rate = 1e-2;
    config.warmup_steps = 5;
    return examples::BuildGpt(config, layout);
  };
}

// The tiny llama (tests/tiny_llama.h) with 3 blocks and 12 sequences: a batch that 2, 3,
// 4 and 6 data-parallel devices split evenly, and blocks for up to 3 pipeline stages.
examples::JobBuilder Llama() {
  return [](const ParallelLayout& layout) {
    examples::LlamaConfig config = testing::TinyLlama();
    config.layers = 3;
    config.batch = 12;
    return examples::BuildLlama(config, layout);
  };
}

std::vector<double> Losses(const proto::Plan& plan) {
  actors::TrainOptions train;
  train.node = -1;  // every node of the plan in this process
  train.iterations = kIterations;
  train.progress_timeout = std::chrono::milliseconds(20000);
  absl::StatusOr<actors::TrainResult> result = actors::TrainPlan(plan, train);
  EXPECT_TRUE(result.ok()) << result.status();
  std::vector<double> losses;
  if (result.ok()) {
    for (const actors::IterationMetrics& m : result->iterations) losses.push_back(m.loss);
  }
  return losses;
}

std::vector<double> Reference(const examples::JobBuilder& build) {
  absl::StatusOr<ParallelLayout> layout = ParallelLayout::Create(ParallelFlags{});
  EXPECT_TRUE(layout.ok());
  absl::StatusOr<proto::Job> job = build(*layout);
  EXPECT_TRUE(job.ok()) << job.status();
  CompileOptions options;
  options.cluster = layout->cluster();
  absl::StatusOr<proto::Plan> plan = Compile(*job, options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return Losses(*plan);
}

examples::AutoParallelRequest Request(int64_t nodes, int64_t devices_per_node, double inter_node_bandwidth) {
  examples::AutoParallelRequest request;
  request.cluster.nodes = nodes;
  request.cluster.devices_per_node = devices_per_node;
  request.cluster.inter_node_bandwidth = inter_node_bandwidth;
  request.settings.compression.compression = "off";  // the oracle compares dense boxing
  request.settings.links.inter_node_bandwidth = inter_node_bandwidth;
  request.settings.links.inter_node_bandwidth_given = true;
  return request;
}

proto::Plan AutoPlan(const examples::JobBuilder& build, const examples::AutoParallelRequest& request) {
  absl::StatusOr<examples::AutoParallelResult> result = examples::AutoParallelCompile(build, request);
  EXPECT_TRUE(result.ok()) << result.status();
  if (!result.ok()) return {};
  EXPECT_TRUE(result->plan.has_auto_parallel());
  const proto::AutoParallelLayout& chosen = result->plan.auto_parallel().chosen().layout();
  EXPECT_EQ(chosen.dp() * chosen.tp() * chosen.pp(), request.cluster.nodes * request.cluster.devices_per_node);
  EXPECT_EQ(result->plan.devices_size(), request.cluster.nodes * request.cluster.devices_per_node);
  return result->plan;
}

TEST(AutoParallelTrainingTest, MlpOnFourAndEightDevicesMatchesOneDevice) {
  const std::vector<double> reference = Reference(Mlp());
  for (auto [nodes, per_node] : {std::pair<int64_t, int64_t>{1, 4}, {2, 4}}) {
    const proto::Plan plan = AutoPlan(Mlp(), Request(nodes, per_node, 12.5e9));
    EXPECT_TRUE(testing::MatchesReference(Losses(plan), reference, kIterations))
        << auto_parallel::LayoutName(plan.auto_parallel().chosen().layout());
  }
}

TEST(AutoParallelTrainingTest, GptOnFourAndEightDevicesWithSlowInterNodeLinkMatchesOneDevice) {
  const std::vector<double> reference = Reference(Gpt());
  for (auto [nodes, per_node, inter] : {std::tuple<int64_t, int64_t, double>{1, 4, 12.5e9}, {2, 4, 1.25e8}}) {
    const proto::Plan plan = AutoPlan(Gpt(), Request(nodes, per_node, inter));
    const proto::AutoParallelLayout& chosen = plan.auto_parallel().chosen().layout();
    // Tensor-parallel groups are consecutive devices: they stay inside a node.
    EXPECT_EQ(per_node % chosen.tp(), 0) << auto_parallel::LayoutName(chosen);
    EXPECT_TRUE(testing::MatchesReference(Losses(plan), reference, kIterations)) << auto_parallel::LayoutName(chosen);
  }
}

// 6 devices (3 nodes x 2, 2 nodes x 3) with fast and slow links, the gpt and the llama, and
// the llama on 4 and 8: every chosen plan trains as one device does.
TEST(AutoParallelTrainingTest, SixDevicesAndTheLlamaMatchOneDevice) {
  struct Case {
    const char* model;
    int64_t nodes;
    int64_t per_node;
    double inter;
  };
  const std::vector<double> gpt = Reference(Gpt());
  const std::vector<double> llama = Reference(Llama());
  for (const Case& c : {Case{"gpt", 3, 2, 12.5e9}, Case{"gpt", 2, 3, 1.25e8}, Case{"llama", 3, 2, 1.25e8},
                        Case{"llama", 2, 3, 12.5e9}, Case{"llama", 1, 4, 12.5e9}, Case{"llama", 2, 4, 1.25e8}}) {
    const bool is_gpt = std::string(c.model) == "gpt";
    const proto::Plan plan = AutoPlan(is_gpt ? Gpt() : Llama(), Request(c.nodes, c.per_node, c.inter));
    const proto::AutoParallelLayout& chosen = plan.auto_parallel().chosen().layout();
    EXPECT_TRUE(testing::MatchesReference(Losses(plan), is_gpt ? gpt : llama, kIterations))
        << c.model << " on " << c.nodes << " x " << c.per_node << ": " << auto_parallel::LayoutName(chosen);
  }
}

// A limit below pure data parallelism's planned peak: the search must give memory up
// (ZeRO, pipeline stages, micro-batches, recomputation or tp), the plan's real peak must
// respect the limit, and the curve must still match.
TEST(AutoParallelTrainingTest, GptUnderAMemoryLimitShardsAndMatchesOneDevice) {
  const std::vector<double> reference = Reference(Gpt());
  examples::AutoParallelRequest request = Request(1, 4, 12.5e9);
  const proto::Plan unlimited = AutoPlan(Gpt(), request);
  const proto::AutoParallelLayout& free_choice = unlimited.auto_parallel().chosen().layout();
  ASSERT_EQ(free_choice.dp(), 4) << "the small gpt on one fast node should be pure data parallel: "
                                 << auto_parallel::LayoutName(free_choice);
  request.device_memory = unlimited.auto_parallel().planned_peak_bytes() - 1;
  const proto::Plan limited = AutoPlan(Gpt(), request);
  const proto::AutoParallelDecision& decision = limited.auto_parallel();
  EXPECT_NE(auto_parallel::LayoutName(decision.chosen().layout()), auto_parallel::LayoutName(free_choice));
  EXPECT_LE(decision.planned_peak_bytes(), request.device_memory);
  EXPECT_EQ(decision.device_memory(), request.device_memory);
  EXPECT_TRUE(testing::MatchesReference(Losses(limited), reference, kIterations))
      << auto_parallel::LayoutName(decision.chosen().layout());
}

}  // namespace
}  // namespace oneflow
