// examples/llama trained in one process (docs/llama.md): one device against dp=2 x tp=2,
// tp=4 with sequence parallelism (kv heads replicated: 4 devices, 2 kv heads), tp=2 (kv
// heads split), pp=2 x 4 micro-batches and ZeRO-2 over dp=2, each loss within 1e-4 of
// one device's for 20 iterations; the sequence-parallel plan's boxings; the loss falling
// on real text; and the flag errors.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "actors/runtime.h"
#include "compiler/compiler.h"
#include "examples/llama/llama_model.h"
#include "gtest/gtest.h"
#include "tests/loss_curves.h"
#include "tests/tiny_llama.h"

namespace oneflow {
namespace {

using examples::ParallelFlags;
using examples::ParallelLayout;

constexpr int kIterations = 20;

struct Layout {
  const char* name;
  int64_t dp = 1, tp = 1, pp = 1, micro_batches = 1, zero = 0;
};

using testing::TinyLlama;

absl::StatusOr<proto::Plan> CompileLlama(const examples::LlamaConfig& config, const Layout& l,
                                         proto::RecomputeMode recompute = proto::RECOMPUTE_NONE) {
  ParallelFlags flags;
  flags.devices_per_node = l.dp * l.tp * l.pp;
  flags.dp = l.dp;
  flags.tp = l.tp;
  flags.pp = l.pp;
  flags.micro_batches = l.micro_batches;
  flags.zero = l.zero;
  absl::StatusOr<ParallelLayout> layout = ParallelLayout::Create(flags);
  if (!layout.ok()) return layout.status();
  absl::StatusOr<proto::Job> job = examples::BuildLlama(config, *layout);
  if (!job.ok()) return job.status();
  CompileOptions options;
  options.cluster = layout->cluster();
  options.recompute = recompute;
  return Compile(*job, options);
}

std::vector<double> Train(const examples::LlamaConfig& config, const Layout& l, int iterations,
                          proto::RecomputeMode recompute = proto::RECOMPUTE_NONE) {
  absl::StatusOr<proto::Plan> plan = CompileLlama(config, l, recompute);
  EXPECT_TRUE(plan.ok()) << l.name << ": " << plan.status();
  if (!plan.ok()) return {};
  actors::TrainOptions train;
  train.node = -1;
  train.iterations = iterations;
  train.progress_timeout = std::chrono::milliseconds(20000);
  train.collective_timeout = absl::Seconds(20);
  absl::StatusOr<actors::TrainResult> result = actors::TrainPlan(*plan, train);
  EXPECT_TRUE(result.ok()) << l.name << ": " << result.status();
  std::vector<double> losses;
  if (result.ok()) {
    for (const actors::IterationMetrics& m : result->iterations) losses.push_back(m.loss);
  }
  return losses;
}

TEST(LlamaTrainingTest, EveryLayoutFollowsTheOneDeviceCurve) {
  const std::vector<double> reference = Train(TinyLlama(), {"1 device"}, kIterations);
  for (const Layout& layout : {Layout{"dp=2 x tp=2", 2, 2}, Layout{"tp=4 (kv heads replicated)", 1, 4},
                               Layout{"tp=2 (kv heads split)", 1, 2}, Layout{"pp=2 x 4 micro-batches", 1, 1, 2, 4},
                               Layout{"dp=2 zero=2", 2, 1, 1, 1, 2}}) {
    EXPECT_TRUE(testing::MatchesReference(Train(TinyLlama(), layout, kIterations), reference, kIterations))
        << layout.name;
  }
}

// Megatron's layout with sequence parallelism on tp=2 (whole kv heads per device): in the
// forward pass each block's two normalized activations reach the column-parallel products
// by an all-gather (S(1) -> B over tp) and its two row-parallel products (attention's wo,
// the feed-forward's w2) reach the residual stream by a reduce-scatter (P -> S(1)); no
// activation is all-reduced or moved all-to-all (the vocab-parallel loss's rows of maxima
// and parts aside), and no weight is gathered for a block.
TEST(LlamaTrainingTest, SequenceParallelismReduceScattersAndGathersTheResidualStream) {
  examples::LlamaConfig config = TinyLlama();
  config.hidden = 64;  // hd 16, 4 heads over 2 kv heads: one kv head per device.
  absl::StatusOr<proto::Plan> plan = CompileLlama(config, {"tp=2", 1, 2});
  ASSERT_TRUE(plan.ok()) << plan.status();
  std::map<std::string, std::string> type_of_op, producer_type;
  for (const proto::OpDef& op : plan->job().ops()) {
    type_of_op[op.name()] = op.type();
    for (const auto& [arg, tensor] : op.outputs()) producer_type[tensor] = op.type();
  }
  int reduce_scatters_into_adds = 0, gathers_of_norms = 0;
  for (const proto::BoxingDef& boxing : plan->boxings()) {
    const std::string& consumer = boxing.consumer_op();
    // The forward pass: neither backward ops nor optimizer steps nor the loss's sink.
    if (consumer.find("_grad") != std::string::npos || consumer.find("_update") != std::string::npos ||
        consumer == "loss_sink") {
      continue;
    }
    const std::string& producer = producer_type[boxing.tensor()];
    // The vocab-parallel loss's own reductions (VocabParallelLossReducesRowsNotLogits).
    if (producer == "reduce_max" || producer == "vocab_cross_entropy") continue;
    for (const proto::BoxingStepDef& step : boxing.steps()) {
      if (step.kind() == proto::STEP_REDUCE_SCATTER && type_of_op[consumer] == "add") ++reduce_scatters_into_adds;
      if (step.kind() == proto::STEP_ALL_GATHER && producer == "rms_norm") ++gathers_of_norms;
      EXPECT_NE(step.kind(), proto::STEP_ALL_REDUCE) << boxing.tensor() << " -> " << consumer;
      EXPECT_NE(step.kind(), proto::STEP_ALL_TO_ALL) << boxing.tensor() << " -> " << consumer;
      if (step.kind() == proto::STEP_ALL_GATHER && producer.empty()) {  // A variable.
        EXPECT_EQ(boxing.tensor().rfind("layers", 0), std::string::npos) << boxing.tensor() << " is gathered";
      }
    }
  }
  EXPECT_EQ(reduce_scatters_into_adds, 2 * config.layers);
  // Plus the final norm's, into the column-parallel output projection (the vocab-parallel loss).
  EXPECT_EQ(gathers_of_norms, 2 * config.layers + 1);
}

TEST(LlamaTrainingTest, LossFallsOnTheLicenseText) {
  constexpr char kLicense[] = "/usr/share/common-licenses/GPL-3";
  if (!std::ifstream(kLicense)) GTEST_SKIP() << kLicense << " is missing (Debian's base-files installs it)";
  examples::LlamaConfig config = TinyLlama();
  config.text_file = kLicense;
  config.batch = 8;
  config.seq = 32;
  config.learning_rate = 3e-3;
  const std::vector<double> losses = Train(config, {"1 device"}, 60);
  ASSERT_EQ(losses.size(), 60u);
  // A uniform guess over 256 byte values is ln 256 = 5.55 nats; the byte frequencies of
  // English text alone are worth more than 1 nat.
  EXPECT_GT(losses[0], 5.0);
  double last = 0;
  for (int i = 50; i < 60; ++i) last += losses[i] / 10;
  EXPECT_LT(last, losses[0] - 1.5) << "mean loss of iterations 50..59";
}

// Activation recomputation (compiler/passes/recompute_pass.h) re-runs the same kernels on
// the same inputs in the same order: losses bit-identical to none, on one device and with
// tensor + sequence parallelism; full keeps each block's input only.
TEST(LlamaTrainingTest, RecomputationIsBitIdenticalAndFullKeepsAThirdOfTheActivations) {
  for (const Layout& layout : {Layout{"1 device"}, Layout{"tp=2", 1, 2}}) {
    const std::vector<double> none = Train(TinyLlama(), layout, 6);
    ASSERT_EQ(none.size(), 6u) << layout.name;
    for (proto::RecomputeMode mode : {proto::RECOMPUTE_SELECTIVE, proto::RECOMPUTE_FULL}) {
      const std::vector<double> losses = Train(TinyLlama(), layout, 6, mode);
      ASSERT_EQ(losses.size(), none.size()) << layout.name;
      for (size_t i = 0; i < none.size(); ++i) {
        EXPECT_EQ(losses[i], none[i]) << layout.name << " " << proto::RecomputeMode_Name(mode) << " iteration " << i;
      }
    }
  }
  // The activation arena (memory block 1) of an 8-block llama on one device.
  examples::LlamaConfig config = TinyLlama();
  config.layers = 8;
  config.seq = 64;
  config.hidden = 64;
  config.ffn_hidden = 0;
  config.vocab = 64;
  absl::StatusOr<proto::Plan> none = CompileLlama(config, {"1 device"}, proto::RECOMPUTE_NONE);
  absl::StatusOr<proto::Plan> selective = CompileLlama(config, {"1 device"}, proto::RECOMPUTE_SELECTIVE);
  absl::StatusOr<proto::Plan> full = CompileLlama(config, {"1 device"}, proto::RECOMPUTE_FULL);
  ASSERT_TRUE(none.ok()) << none.status();
  ASSERT_TRUE(selective.ok()) << selective.status();
  ASSERT_TRUE(full.ok()) << full.status();
  const auto arena = [](const proto::Plan& plan) {
    return static_cast<double>(plan.devices(0).memory_blocks(1).size_bytes());
  };
  std::printf("llama arena bytes: none %.0f, selective %.3fx, full %.3fx\n", arena(*none),
              arena(*selective) / arena(*none), arena(*full) / arena(*none));
  EXPECT_LT(arena(*selective), arena(*none));
  EXPECT_LE(arena(*full), 0.35 * arena(*none));
}

TEST(LlamaTrainingTest, KvHeadsNotDividingHeadsIsAClearError) {
  examples::LlamaConfig config = TinyLlama();
  config.kv_heads = 3;
  EXPECT_EQ(examples::CheckLlamaConfig(config).message(),
            "--kv_heads=3 does not divide --heads=4; valid --kv_heads: 1, 2, 4");
  EXPECT_EQ(CompileLlama(config, {"1 device"}).status().code(), absl::StatusCode::kInvalidArgument);
  config.kv_heads = 0;
  EXPECT_EQ(examples::CheckLlamaConfig(config).message(), "--kv_heads=0 must be >= 1");
  config = TinyLlama();
  config.hidden = 36;  // 9 dimensions per head: RoPE needs pairs.
  EXPECT_EQ(examples::CheckLlamaConfig(config).message(),
            "--hidden=36 / --heads=4 = 9 dimensions per head must be even (rotary embeddings turn them in pairs)");
}

}  // namespace
}  // namespace oneflow
