// Activation recomputation end to end on gpt (compiler/passes/recompute_pass.h): the same
// kernels on the same inputs in the same order, so every loss is bit-identical to no
// recomputation, on one device and on tensor-, data- and pipeline-parallel layouts; and
// the planned activation memory it saves.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "actors/runtime.h"
#include "compiler/compiler.h"
#include "plan/plan_verifier.h"
#include "examples/common/compile_driver.h"
#include "examples/gpt/gpt_model.h"
#include "gtest/gtest.h"

namespace oneflow {
namespace {

using examples::ParallelFlags;
using examples::ParallelLayout;

constexpr int kIterations = 8;

struct Layout {
  const char* name;
  int64_t devices, dp, tp, pp, micro_batches;
};

absl::StatusOr<proto::Plan> CompileGpt(const examples::GptConfig& config, const Layout& l,
                                       proto::RecomputeMode mode) {
  ParallelFlags flags;
  flags.devices_per_node = l.devices;
  flags.dp = l.dp;
  flags.tp = l.tp;
  flags.pp = l.pp;
  flags.micro_batches = l.micro_batches;
  absl::StatusOr<ParallelLayout> layout = ParallelLayout::Create(flags);
  if (!layout.ok()) return layout.status();
  absl::StatusOr<proto::Job> job = examples::BuildGpt(config, *layout);
  if (!job.ok()) return job.status();
  CompileOptions options;
  options.cluster = layout->cluster();
  options.recompute = mode;
  return Compile(*job, options);
}

examples::GptConfig TinyGpt() {
  examples::GptConfig config;
  config.batch = 4;
  config.seq = 8;
  config.layers = 2;
  config.hidden = 32;
  config.heads = 4;
  config.vocab = 32;
  config.learning_rate = 1e-2;
  config.warmup_steps = 2;
  return config;
}

std::vector<float> Train(const Layout& layout, proto::RecomputeMode mode) {
  absl::StatusOr<proto::Plan> plan = CompileGpt(TinyGpt(), layout, mode);
  EXPECT_TRUE(plan.ok()) << layout.name << ": " << plan.status();
  if (!plan.ok()) return {};
  actors::TrainOptions train;
  train.iterations = kIterations;
  train.progress_timeout = std::chrono::milliseconds(20000);
  absl::StatusOr<actors::TrainResult> result = actors::TrainPlan(*plan, train);
  EXPECT_TRUE(result.ok()) << layout.name << ": " << result.status();
  std::vector<float> losses;
  if (result.ok()) {
    for (const actors::IterationMetrics& m : result->iterations) losses.push_back(m.loss);
  }
  return losses;
}

int CountCopies(const proto::Plan& plan) {
  int copies = 0;
  for (const proto::OpDef& op : plan.job().ops()) copies += !op.recompute_of().empty();
  return copies;
}

TEST(RecomputeTest, LossesAreBitIdenticalToNoRecomputation) {
  for (const Layout& layout : {Layout{"1 device", 1, 1, 1, 1, 1}, Layout{"dp=2 x tp=2", 4, 2, 2, 1, 1},
                               Layout{"pp=2 x M=2", 2, 1, 1, 2, 2}}) {
    const std::vector<float> none = Train(layout, proto::RECOMPUTE_NONE);
    ASSERT_EQ(none.size(), static_cast<size_t>(kIterations)) << layout.name;
    EXPECT_LT(none.back(), none.front()) << layout.name << ": the loss does not decrease";
    for (proto::RecomputeMode mode : {proto::RECOMPUTE_SELECTIVE, proto::RECOMPUTE_FULL}) {
      const std::vector<float> losses = Train(layout, mode);
      ASSERT_EQ(losses.size(), none.size()) << layout.name;
      for (int i = 0; i < kIterations; ++i) {
        EXPECT_EQ(losses[i], none[i]) << layout.name << " " << proto::RecomputeMode_Name(mode) << " iteration " << i;
      }
    }
  }
}

// The arena (memory block 1) holds every activation register; full recomputation keeps
// only each block's input from forward to backward, plus one block's re-run values.
int64_t ArenaBytes(const proto::Plan& plan) { return plan.devices(0).memory_blocks(1).size_bytes(); }

TEST(RecomputeTest, FullKeepsAThirdOfTheActivationsOrLess) {
  examples::GptConfig config;
  config.batch = 4;
  config.seq = 64;
  config.layers = 8;
  config.hidden = 64;
  config.heads = 4;
  config.vocab = 64;
  const Layout one{"1 device", 1, 1, 1, 1, 1};
  absl::StatusOr<proto::Plan> none = CompileGpt(config, one, proto::RECOMPUTE_NONE);
  absl::StatusOr<proto::Plan> selective = CompileGpt(config, one, proto::RECOMPUTE_SELECTIVE);
  absl::StatusOr<proto::Plan> full = CompileGpt(config, one, proto::RECOMPUTE_FULL);
  ASSERT_TRUE(none.ok()) << none.status();
  ASSERT_TRUE(selective.ok()) << selective.status();
  ASSERT_TRUE(full.ok()) << full.status();
  EXPECT_EQ(CountCopies(*none), 0);
  EXPECT_GT(CountCopies(*selective), 0);
  EXPECT_GT(CountCopies(*full), CountCopies(*selective));
  const double selective_ratio = static_cast<double>(ArenaBytes(*selective)) / ArenaBytes(*none);
  const double full_ratio = static_cast<double>(ArenaBytes(*full)) / ArenaBytes(*none);
  // The figures, for the docs (the assertions below are the test).
  std::printf("arena bytes: none %lld, selective %lld (%.3fx), full %lld (%.3fx)\n",
              static_cast<long long>(ArenaBytes(*none)), static_cast<long long>(ArenaBytes(*selective)),
              selective_ratio, static_cast<long long>(ArenaBytes(*full)), full_ratio);
  EXPECT_LT(selective_ratio, 1.0) << ArenaBytes(*selective) << " vs " << ArenaBytes(*none);
  EXPECT_LE(full_ratio, 0.35) << ArenaBytes(*full) << " vs " << ArenaBytes(*none);
  EXPECT_LT(full_ratio, selective_ratio);
  // What the plan records per block agrees: full keeps less than selective, which keeps
  // less than none, and only recomputation re-runs FLOPs.
  ASSERT_EQ(full->job().recompute_blocks_size(), config.layers);
  const proto::RecomputeBlockDef& n = none->job().recompute_blocks(3);
  const proto::RecomputeBlockDef& s = selective->job().recompute_blocks(3);
  const proto::RecomputeBlockDef& f = full->job().recompute_blocks(3);
  EXPECT_EQ(n.activation_bytes_kept(), n.activation_bytes_without());
  EXPECT_EQ(n.recompute_flops(), 0);
  EXPECT_LT(s.activation_bytes_kept(), n.activation_bytes_kept());
  EXPECT_LT(f.activation_bytes_kept(), s.activation_bytes_kept());
  EXPECT_GT(f.recompute_flops(), s.recompute_flops());
  EXPECT_GT(s.recompute_flops(), 0);
}

// The plan verifier holds every copy to its original: an op the user wrote, with its
// placement and SBP signature.
TEST(RecomputeTest, VerifierChecksTheCopies) {
  absl::StatusOr<proto::Plan> plan = CompileGpt(TinyGpt(), Layout{"dp=2 x tp=2", 4, 2, 2, 1, 1}, proto::RECOMPUTE_FULL);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_TRUE(VerifyPlanContents(*plan).ok());
  int copy = -1;
  for (int o = 0; o < plan->job().ops_size() && copy < 0; ++o) {
    if (!plan->job().ops(o).recompute_of().empty()) copy = o;
  }
  ASSERT_GE(copy, 0);
  const std::string name = plan->job().ops(copy).name();
  proto::Plan unknown = *plan;
  unknown.mutable_job()->mutable_ops(copy)->set_recompute_of("nowhere");
  absl::Status status = VerifyPlanContents(unknown);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(),
            "recomputed op '" + name + "' re-runs 'nowhere', which is not an op the user wrote");
  proto::Plan moved = *plan;
  for (proto::LogicalOpSbp& entry : *moved.mutable_op_sbps()) {
    if (entry.op_name() == name) entry.mutable_placement()->clear_devices();
  }
  status = VerifyPlanContents(moved);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("does not have the placement and SBP signature of"), std::string::npos)
      << status.message();
}

TEST(RecomputeTest, UnknownModeNamesTheFlag) {
  ParallelFlags flags;
  absl::StatusOr<ParallelLayout> layout = ParallelLayout::Create(flags);
  ASSERT_TRUE(layout.ok());
  examples::CompileSettings settings;
  settings.recompute = "some";
  std::string dump;
  absl::StatusOr<CompileOptions> options = examples::CompileOptionsFor(*layout, settings, &dump);
  EXPECT_EQ(options.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(options.status().message(), "--recompute=some is not one of: none, selective, full");
  settings.recompute = "full";
  options = examples::CompileOptionsFor(*layout, settings, &dump);
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->recompute, proto::RECOMPUTE_FULL);
}

// Recomputation re-indexes the job; the variables' gradients stay gradients, so dp's
// gradient all-reduces are bucketed as without it (they were not, before the pass read
// the gradients).
TEST(RecomputeTest, GradientsStayBucketed) {
  const Layout layout{"dp=2 x tp=2", 4, 2, 2, 1, 1};
  absl::StatusOr<proto::Plan> none = CompileGpt(TinyGpt(), layout, proto::RECOMPUTE_NONE);
  absl::StatusOr<proto::Plan> full = CompileGpt(TinyGpt(), layout, proto::RECOMPUTE_FULL);
  ASSERT_TRUE(none.ok()) << none.status();
  ASSERT_TRUE(full.ok()) << full.status();
  EXPECT_GT(none->buckets_size(), 0);
  EXPECT_EQ(full->buckets_size(), none->buckets_size());
}

}  // namespace
}  // namespace oneflow
