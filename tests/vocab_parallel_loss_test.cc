// Megatron's vocab-parallel cross-entropy in the examples (docs/llama.md, "The loss"):
// llama (the default) and gpt (--vocab_parallel_loss) at tp=2 and dp=2 x tp=2 follow one
// device's curve within 1e-4 for 20 iterations, and the loss's boxings move rows, not
// logits: counted on the plan with the whole-row loss and with the vocab-parallel one.
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/compiler.h"
#include "examples/gpt/gpt_model.h"
#include "examples/llama/llama_model.h"
#include "gtest/gtest.h"
#include "tests/loss_curves.h"
#include "tests/plan_losses.h"
#include "tests/tiny_llama.h"

namespace oneflow {
namespace {

using examples::ParallelFlags;
using examples::ParallelLayout;

constexpr int kIterations = 20;

struct Layout {
  const char* name;
  int64_t dp = 1, tp = 1;
};

// Both models: batch 4 x 8 positions (32 rows of logits), vocabulary 32, 2 blocks.
examples::LlamaConfig TinyLlama(bool vocab_parallel) {
  examples::LlamaConfig config = testing::TinyLlama();
  config.vocab_parallel_loss = vocab_parallel;
  return config;
}

examples::GptConfig TinyGpt(bool vocab_parallel) {
  examples::GptConfig config;
  config.batch = 4;
  config.seq = 8;
  config.layers = 2;
  config.hidden = 32;
  config.heads = 4;
  config.vocab = 32;
  config.learning_rate = 1e-2;
  config.warmup_steps = 5;
  config.vocab_parallel_loss = vocab_parallel;
  return config;
}

absl::StatusOr<proto::Plan> CompileModel(bool gpt, bool vocab_parallel, const Layout& l) {
  ParallelFlags flags;
  flags.devices_per_node = l.dp * l.tp;
  flags.dp = l.dp;
  flags.tp = l.tp;
  absl::StatusOr<ParallelLayout> layout = ParallelLayout::Create(flags);
  if (!layout.ok()) return layout.status();
  absl::StatusOr<proto::Job> job = gpt ? examples::BuildGpt(TinyGpt(vocab_parallel), *layout)
                                       : examples::BuildLlama(TinyLlama(vocab_parallel), *layout);
  if (!job.ok()) return job.status();
  CompileOptions options;
  options.cluster = layout->cluster();
  return Compile(*job, options);
}

std::vector<double> Train(bool gpt, bool vocab_parallel, const Layout& l) {
  absl::StatusOr<proto::Plan> plan = CompileModel(gpt, vocab_parallel, l);
  EXPECT_TRUE(plan.ok()) << l.name << ": " << plan.status();
  if (!plan.ok()) return {};
  const std::vector<float> losses = testing::TrainedLosses(*plan, kIterations);
  return std::vector<double>(losses.begin(), losses.end());
}

// One device with the whole-row loss is the reference: the vocab-parallel loss is the
// same mathematics (sums reassociated), on one device and split over tp.
TEST(VocabParallelLossTest, LlamaAndGptFollowTheOneDeviceWholeRowCurve) {
  for (const bool gpt : {false, true}) {
    const char* model = gpt ? "gpt" : "llama";
    const std::vector<double> reference = Train(gpt, /*vocab_parallel=*/false, {"1 device"});
    for (const Layout& layout : {Layout{"1 device"}, Layout{"tp=2", 1, 2}, Layout{"dp=2 x tp=2", 2, 2}}) {
      EXPECT_TRUE(testing::MatchesReference(Train(gpt, /*vocab_parallel=*/true, layout), reference, kIterations))
          << model << " " << layout.name << " with the vocab-parallel loss";
    }
  }
}

// What the loss's boxings move per iteration on tp=2, with the whole-row cross-entropy and
// with Megatron's vocab-parallel one: the logits [b * s, vocab] (forward) and their
// gradient (backward), and the per-row reductions of the vocab-parallel loss.
struct LossTraffic {
  int logits_gathers = 0;       // all_gather steps of the logits
  int64_t logits_bytes = 0;     // every step moving the logits or their gradient
  int row_reductions = 0;       // all_reduce / reduce_scatter steps of reduce_max / vocab_cross_entropy outputs
  int64_t row_bytes = 0;
  std::vector<std::string> max_reductions;  // the all_reduce steps of P(max), as "src -> dst"
};

LossTraffic TrafficOfTheLoss(const proto::Plan& plan) {
  std::map<std::string, std::string> producer_type;
  std::string logits;
  for (const proto::OpDef& op : plan.job().ops()) {
    for (const auto& [arg, tensor] : op.outputs()) producer_type[tensor] = op.type();
    if ((op.type() == "sparse_softmax_cross_entropy" || op.type() == "vocab_cross_entropy") && logits.empty()) {
      logits = op.inputs().at("logits");
    }
  }
  EXPECT_FALSE(logits.empty());
  LossTraffic traffic;
  for (const proto::BoxingDef& boxing : plan.boxings()) {
    const std::string& producer = producer_type[boxing.tensor()];
    const bool moves_logits = boxing.tensor() == logits || producer == "sparse_softmax_cross_entropy_grad" ||
                              producer == "vocab_cross_entropy_grad";
    const bool row_part = producer == "reduce_max" || producer == "vocab_cross_entropy";
    for (const proto::BoxingStepDef& step : boxing.steps()) {
      if (moves_logits) {
        traffic.logits_bytes += step.bytes_per_device();
        if (step.kind() == proto::STEP_ALL_GATHER) ++traffic.logits_gathers;
      }
      if (row_part && (step.kind() == proto::STEP_ALL_REDUCE || step.kind() == proto::STEP_REDUCE_SCATTER)) {
        ++traffic.row_reductions;
        traffic.row_bytes += step.bytes_per_device();
        if (producer == "reduce_max") {
          traffic.max_reductions.push_back(absl::StrCat(NdSbp::FromProto(step.src_sbp())->ToString(), " -> ",
                                                        NdSbp::FromProto(step.dst_sbp())->ToString()));
        }
      }
    }
  }
  return traffic;
}

// Before: the whole-row loss needs whole rows, so boxings move the [32, 32] f32 logits
// split by vocabulary over tp=2 (at least a quarter of them, 1 KiB, per device). After
// (the parts hinted P over tp): nothing moves the logits or their gradient;
// the loss reduces rows of 32 floats instead: the maximum by an all-reduce (2 (n - 1) / n
// x 128 B = 128 B), the sum of exponentials by an all-reduce or a reduce-scatter, and the
// target logit likewise or, kept a partial sum through the loss's sub and mean, as part
// of the scalar loss's reduction; on tp=2 and on dp=2 x tp=2 (rows split over dp: half
// of that per tp group).
TEST(VocabParallelLossTest, TheLossReducesRowsNotLogits) {
  for (const bool gpt : {false, true}) {
    SCOPED_TRACE(gpt ? "gpt" : "llama");
    absl::StatusOr<proto::Plan> before = CompileModel(gpt, /*vocab_parallel=*/false, {"tp=2", 1, 2});
    ASSERT_TRUE(before.ok()) << before.status();
    const LossTraffic whole = TrafficOfTheLoss(*before);
    EXPECT_GE(whole.logits_bytes, 32 * 32 * 4 / 4);
    EXPECT_EQ(whole.row_reductions, 0);

    absl::StatusOr<proto::Plan> after = CompileModel(gpt, /*vocab_parallel=*/true, {"tp=2", 1, 2});
    ASSERT_TRUE(after.ok()) << after.status();
    const LossTraffic vocab_parallel = TrafficOfTheLoss(*after);
    EXPECT_EQ(vocab_parallel.logits_gathers, 0);
    EXPECT_EQ(vocab_parallel.logits_bytes, 0);
    EXPECT_GE(vocab_parallel.row_reductions, 2);
    EXPECT_LE(vocab_parallel.row_reductions, 3);
    EXPECT_GT(vocab_parallel.row_bytes, 0);
    EXPECT_LE(vocab_parallel.row_bytes, 3 * 128);
    EXPECT_EQ(vocab_parallel.max_reductions, std::vector<std::string>{"P(max) -> B"});

    absl::StatusOr<proto::Plan> grid = CompileModel(gpt, /*vocab_parallel=*/true, {"dp=2 x tp=2", 2, 2});
    ASSERT_TRUE(grid.ok()) << grid.status();
    const LossTraffic nested = TrafficOfTheLoss(*grid);
    EXPECT_EQ(nested.logits_bytes, 0);
    EXPECT_GE(nested.row_reductions, 2);
    EXPECT_LE(nested.row_reductions, 3);
    EXPECT_GT(nested.row_bytes, 0);
    EXPECT_LE(nested.row_bytes, 3 * 64);
    EXPECT_EQ(nested.max_reductions, std::vector<std::string>{"[S(0), P(max)] -> [S(0), B]"});
  }
}

}  // namespace
}  // namespace oneflow
